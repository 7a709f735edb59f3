//! The worker sources: every adapter's files by its rule ([`crate::sources`]), hashed for
//! `manifest pin`, and checked against the manifest's `worker_sources` (a changed byte, an added
//! or removed file, a pinned path outside the rule or escaping the adapter's folder).

use std::{collections::BTreeMap, path::Path};

use decode_baseline_wire::{
    manifest::{Manifest, WorkerSources},
    Adapter,
};

use crate::{
    confinement::{check_resolved, escape},
    error::{FieldPath, PinError, PinProblem},
    file_digest::of_file,
    file_pin::check_digest,
    sources::{adapter_sources, check_relative, sources_root},
};

/// Every adapter's worker sources by its rule, hashed: what `manifest pin` writes. The
/// manifest at `manifest_path` supplies the declared adapters and their folder.
pub fn worker_sources(repo: &Path, manifest_path: &Path, manifest: &Manifest) -> Result<WorkerSources, PinError> {
    let adapters: Vec<(Adapter, &[String])> =
        manifest.all_adapters().into_iter().map(|a| (a.clone(), manifest.declared_sources(&a))).collect();
    hash_sources(repo, manifest_path, &adapters)
}

/// The two built-in adapters' worker sources by their rules, hashed (a manifest that declares
/// no adapter pins exactly these).
pub fn built_in_sources(repo: &Path) -> Result<WorkerSources, PinError> {
    hash_sources(repo, repo, &[(Adapter::Controlled, &[]), (Adapter::Stock, &[])])
}

/// The files of each `(adapter, declared sources)`, hashed.
fn hash_sources(
    repo: &Path,
    manifest_path: &Path,
    adapters: &[(Adapter, &[String])],
) -> Result<WorkerSources, PinError> {
    let mut out = WorkerSources::new();
    for (adapter, declared) in adapters {
        let root = sources_root(adapter, repo, manifest_path);
        let set = FieldPath::worker_sources(adapter);
        let files = adapter_sources(adapter, &root, declared)
            .map_err(|source| PinError::at(set.clone(), PinProblem::Tree { source }))?;
        let hashed = files
            .into_iter()
            .map(|rel| {
                let digest = of_file(&root.join(&rel))
                    .map_err(|source| PinError::at(set.clone().entry(&rel), PinProblem::Hash { source }))?;
                Ok((rel, digest))
            })
            .collect::<Result<_, PinError>>()?;
        out.insert(adapter.clone(), hashed);
    }
    Ok(out)
}

/// Checks every adapter's pinned worker sources against the files its rule finds now: a changed
/// byte, an added file, a removed file, a pinned path outside the rule, and paths escaping the
/// adapter's folder are each reported.
pub fn check_worker_sources(repo: &Path, manifest_path: &Path, manifest: &Manifest) -> Vec<PinError> {
    manifest
        .all_adapters()
        .iter()
        .flat_map(|adapter| check_adapter_sources(repo, manifest_path, manifest, adapter))
        .collect()
}

/// [`check_worker_sources`] for one adapter.
pub fn check_adapter_sources(
    repo: &Path,
    manifest_path: &Path,
    manifest: &Manifest,
    adapter: &Adapter,
) -> Vec<PinError> {
    let mut out = Vec::new();
    let set = FieldPath::worker_sources(adapter);
    let root = sources_root(adapter, repo, manifest_path);
    let found = match adapter_sources(adapter, &root, manifest.declared_sources(adapter)) {
        Ok(found) => found,
        Err(source) => return vec![PinError::at(set, PinProblem::Tree { source })],
    };
    let empty = BTreeMap::new();
    let pinned = manifest.worker_sources.get(adapter).unwrap_or(&empty);
    for rel in found.iter().filter(|rel| !pinned.contains_key(*rel)) {
        out.push(PinError::at(set.clone(), PinProblem::UnpinnedSource { path: root.join(rel) }));
    }
    for (rel, expected) in pinned {
        let field = set.clone().entry(rel);
        if let Err(reason) = check_relative(rel) {
            out.push(escape(field, rel, reason));
            continue;
        }
        if let Err(err) = check_resolved(&root, field.clone(), rel) {
            out.push(err);
            continue;
        }
        let path = root.join(rel);
        if !found.contains(rel) {
            if path.symlink_metadata().is_ok() {
                out.push(PinError::at(field, PinProblem::OutsideRule { path }));
            } else {
                out.push(PinError::at(field, PinProblem::Missing { path }));
            }
            continue;
        }
        out.extend(check_digest(field, path, *expected));
    }
    out
}
