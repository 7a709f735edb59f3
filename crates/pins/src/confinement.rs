//! Confinement: every path the manifest names stays where it belongs. Case folders and worker
//! sources are normal and relative to the repository (or, for a declared adapter, the
//! manifest's folder), also through symbolic links; an absolute case folder is allowed, normal;
//! artifact file names are one plain component.

use std::path::{Component, Path, PathBuf};

use decode_baseline_wire::manifest::{Case, Manifest};

use crate::{
    error::{FieldPath, PinError, PinProblem},
    sources::{check_relative, sources_root, PathRefusal},
};

/// `field`'s `path` escapes the repository (or the manifest's folder) for `reason`.
pub(crate) fn escape(field: FieldPath, path: &str, reason: PathRefusal) -> PinError {
    PinError::at(field, PinProblem::PathEscape { path: path.to_owned(), reason: reason.as_str() })
}

/// Checks that a repository-relative path stays inside `repo` once symbolic links are
/// resolved (when it exists; a missing path is reported by the check that reads it).
pub(crate) fn check_resolved(repo: &Path, field: FieldPath, rel: &str) -> Result<(), PinError> {
    let Ok(resolved) = repo.join(rel).canonicalize() else { return Ok(()) };
    let root = repo
        .canonicalize()
        .map_err(|source| PinError::at(field.clone(), PinProblem::FileRead { path: repo.to_owned(), source }))?;
    if resolved.starts_with(&root) {
        Ok(())
    } else {
        Err(PinError::at(
            field,
            PinProblem::PathEscape {
                path: rel.to_owned(),
                reason: "resolves through a symbolic link to a place outside it",
            },
        ))
    }
}

/// The folder of a case: a relative path must be normal and stay inside the repository (also
/// through symbolic links); an absolute path is an artifact outside the repository, allowed
/// because every file of it is pinned, but it must be normal too (no `.` or `..`).
pub fn case_dir(repo: &Path, id: &str, case: &Case) -> Result<PathBuf, PinError> {
    let field = FieldPath::case(id).key("path");
    let text = case.path.to_string_lossy();
    if case.path.is_absolute() {
        let normal = case.path.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        if !normal {
            return Err(escape(field, &text, PathRefusal::NotNormal));
        }
        return Ok(case.path.clone());
    }
    check_relative(&text).map_err(|reason| escape(field.clone(), &text, reason))?;
    check_resolved(repo, field, &text)?;
    Ok(repo.join(&case.path))
}

/// Every path the manifest names, against the confinement rules: case folders
/// ([`case_dir`]), artifact file names (one plain component each), worker sources (normal,
/// repository-relative, and inside the repository through links).
pub fn check_confinement(repo: &Path, manifest_path: &Path, manifest: &Manifest) -> Vec<PinError> {
    let mut out = Vec::new();
    for (id, case) in &manifest.cases {
        if let Err(err) = case_dir(repo, id, case) {
            out.push(err);
        }
        for name in case.files.keys() {
            if name.contains('/') || check_relative(name).is_err() {
                out.push(PinError::at(
                    FieldPath::case(id).key("files"),
                    PinProblem::PathEscape {
                        path: name.clone(),
                        reason: "is not a plain file name inside the artifact folder",
                    },
                ));
            }
        }
    }
    for (adapter, files) in &manifest.worker_sources {
        let root = sources_root(adapter, repo, manifest_path);
        for rel in files.keys() {
            let field = FieldPath::worker_sources(adapter).entry(rel);
            match check_relative(rel) {
                Err(reason) => out.push(escape(field, rel, reason)),
                Ok(()) => {
                    if let Err(err) = check_resolved(&root, field, rel) {
                        out.push(err);
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn absolute_case_paths_must_be_normal_and_relative_ones_confined() {
        let case = |path: &str| Case {
            path: path.into(),
            architecture: "qwen3".into(),
            dtype: "float32".into(),
            files: BTreeMap::new(),
            stop_ids: vec![1],
        };
        let repo = Path::new("/nonexistent-repo");
        assert_eq!(case_dir(repo, "a", &case("/models/m")).unwrap(), Path::new("/models/m"));
        assert!(matches!(
            case_dir(repo, "a", &case("/models/../etc")),
            Err(PinError { problem: PinProblem::PathEscape { .. }, .. })
        ));
        assert!(matches!(
            case_dir(repo, "a", &case("../models")),
            Err(PinError { problem: PinProblem::PathEscape { .. }, .. })
        ));
        assert_eq!(case_dir(repo, "a", &case("fixtures/m")).unwrap(), repo.join("fixtures/m"));
    }
}
