//! Every check of `workloads.json` against its pin and the files it pins, as a library: the
//! guard runs them all, the controlled worker and the launcher call the ones they need, and the
//! Python stock worker re-implements them from `req/manifest.md`.
//!
//! Each failure is one [`PinError`] that names the manifest field, the path, and what was
//! expected and found. Checks that look at many things return every failure they find, so the
//! guard can print them all; callers that only need a yes/no take the first.
//!
//! The same rules compute the pins ([`case_files`], [`worker_sources`], [`environment_pins`]),
//! so what `manifest pin` writes is by construction what the checks expect.

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::{Component, Path, PathBuf},
};

use crate::{
    digest::DigestIoError,
    freeze::{freeze_tree, Freeze, TreeError},
    installed::{lock_path, selected_environment, Installed, InstalledError},
    job::{token_ids_sha256, EnvironmentPins},
    manifest::{Case, Manifest, Prompt, WorkerSources, MANIFEST_SCHEMA_VERSION},
    policy::PolicyError,
    sources::{adapter_sources, check_relative, sources_root, PathRefusal},
    Adapter, Backend, RunPolicy, Sha256Digest,
};

/// The file name of the manifest's pin, beside the manifest: `<manifest name>.sha256`.
pub fn pin_path(manifest_path: &Path) -> PathBuf {
    let mut name = manifest_path.file_name().unwrap_or_default().to_owned();
    name.push(".sha256");
    manifest_path.with_file_name(name)
}

/// One failed check.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    // --- the manifest file itself: bad input -------------------------------------------------
    #[error("failed to read the manifest {path}")]
    ManifestRead {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to parse the manifest {path}")]
    ManifestParse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("schema_version of {path}: expected {expected}, found {actual}")]
    SchemaVersion { path: PathBuf, expected: u32, actual: u32 },

    // --- the pin -----------------------------------------------------------------------------
    #[error("failed to read the manifest pin {path}")]
    PinRead {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("manifest pin {path}: expected one line `<64 hex>  {expected_name}`, found {line:?}")]
    PinFormat { path: PathBuf, expected_name: String, line: String },
    #[error("manifest {path} does not match its pin {pin}: expected sha256 {expected}, found {actual} (edited without `manifest pin`?)")]
    ManifestPin { path: PathBuf, pin: PathBuf, expected: Sha256Digest, actual: Sha256Digest },

    // --- structure ---------------------------------------------------------------------------
    #[error(transparent)]
    PolicyNotPositive(#[from] PolicyError),
    #[error("run_policy.{field}: expected the frozen value {expected}, found {actual}")]
    PolicyNotFrozen { field: String, expected: String, actual: String },
    #[error("{field}: {what} must not be empty")]
    Empty { field: String, what: &'static str },
    #[error("{field}: id {id:?} is not path-safe (use ASCII letters, digits, `-`, `_`, `.`; not starting with `.`)")]
    BadId { field: String, id: String },
    #[error("{field}: names case {id:?}, which is not in `cases`")]
    UnknownCase { field: String, id: String },
    #[error("{field}: names prompt {id:?}, which is not in `prompts`")]
    UnknownPrompt { field: String, id: String },
    #[error("{field}: expected the cell's case {expected:?}, found the prompt's case {actual:?}")]
    PromptCase { field: String, expected: String, actual: String },
    #[error("{field}: the cell {cell} is listed twice")]
    DuplicateCell { field: String, cell: String },
    #[error("{field}: expected {expected} ids (run_policy.fixed_continuation_steps), found {actual}")]
    ContinuationLength { field: String, expected: u32, actual: usize },
    #[error("{field}: expected token-id sha256 {expected}, found {actual} for the ids as listed")]
    TokenDigest { field: String, expected: Sha256Digest, actual: Sha256Digest },
    #[error("{field}: expected strictly ascending ids, found {actual:?}")]
    StopIdsOrder { field: String, actual: Vec<u32> },
    #[error("{field}: the artifact pins no `*.safetensors` file")]
    NoWeights { field: String },
    #[error("{field}: expected {expected:?} to be pinned, it is not")]
    MissingPin { field: String, expected: &'static str },
    #[error("{field}: {problem}")]
    BadAdapterName { field: String, problem: String },
    #[error("{field}: {name:?} is a built-in adapter; declare a loop under a name of its own")]
    BuiltInDeclared { field: String, name: String },
    #[error("{field}: adapter {name:?} is neither built in nor declared in `adapters`")]
    UndeclaredAdapter { field: String, name: String },

    // --- confinement -------------------------------------------------------------------------
    #[error("{field}: path {path:?} escapes the repository: it {reason}")]
    PathEscape { field: String, path: String, reason: &'static str },

    // --- files against their pins ------------------------------------------------------------
    #[error("{field}: failed to read {path}")]
    FileRead {
        field: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{field}: failed to hash a pinned file")]
    Hash {
        field: String,
        #[source]
        source: DigestIoError,
    },
    #[error("{field}: failed to list the files of a pinned tree")]
    Tree {
        field: String,
        #[source]
        source: TreeError,
    },
    #[error("{field}: pinned file {path} is missing")]
    Missing { field: String, path: PathBuf },
    #[error("{field}: {path} is in the artifact folder but not pinned (a stray file{note})")]
    StrayArtifact { field: String, path: PathBuf, note: &'static str },
    #[error("{field}: {path} is a worker source by the rule but not pinned (a file was added)")]
    UnpinnedSource { field: String, path: PathBuf },
    #[error("{field}: {path} is pinned but is not a worker source by the rule (outside the rule's folders or not a source file)")]
    OutsideRule { field: String, path: PathBuf },
    #[error("{field}: no file matches the rule, so nothing is pinned")]
    EmptySourceSet { field: String },
    #[error("{field}: {path}: expected sha256 {expected}, found {actual}")]
    Digest { field: String, path: PathBuf, expected: Sha256Digest, actual: Sha256Digest },

    // --- the installed environment -----------------------------------------------------------
    #[error("{field}: failed to locate the installed environment")]
    Installed {
        field: String,
        #[source]
        source: InstalledError,
    },
    #[error("{field}: {path}: expected version {expected}, found {actual}")]
    Version { field: String, path: PathBuf, expected: String, actual: String },
    #[error(
        "{field}: the installed mlx_lm at {path} ({files} files): expected freeze sha256 {expected}, found {actual}"
    )]
    Freeze { field: String, path: PathBuf, files: usize, expected: Sha256Digest, actual: Sha256Digest },
    #[error("{field}: the selected environment {name:?} (${var}) is not pinned; run `decode-baseline manifest pin` in it", var = crate::installed::ENV_NAME_ENV)]
    EnvironmentNotPinned { field: String, name: String },
    #[error("{field}: the lock {path} installs {actual}, expected {expected}")]
    Backend { field: String, path: PathBuf, expected: String, actual: String },
}

impl PinError {
    /// True when the manifest itself is unreadable or invalid (the guard's bad-input exit),
    /// rather than a pinned thing not matching its pin.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, PinError::ManifestRead { .. } | PinError::ManifestParse { .. } | PinError::SchemaVersion { .. })
    }

    /// The manifest field this failure is about (`""` for the manifest file as a whole).
    pub fn field(&self) -> &str {
        use PinError::*;
        match self {
            ManifestRead { .. } | ManifestParse { .. } | PinRead { .. } | PinFormat { .. } | ManifestPin { .. } => "",
            SchemaVersion { .. } => "schema_version",
            PolicyNotPositive(err) => err.field,
            PolicyNotFrozen { field, .. } => field,
            Empty { field, .. }
            | BadId { field, .. }
            | UnknownCase { field, .. }
            | UnknownPrompt { field, .. }
            | PromptCase { field, .. }
            | DuplicateCell { field, .. }
            | ContinuationLength { field, .. }
            | TokenDigest { field, .. }
            | StopIdsOrder { field, .. }
            | NoWeights { field }
            | MissingPin { field, .. }
            | BadAdapterName { field, .. }
            | BuiltInDeclared { field, .. }
            | UndeclaredAdapter { field, .. }
            | PathEscape { field, .. }
            | FileRead { field, .. }
            | Hash { field, .. }
            | Tree { field, .. }
            | Missing { field, .. }
            | StrayArtifact { field, .. }
            | UnpinnedSource { field, .. }
            | OutsideRule { field, .. }
            | EmptySourceSet { field }
            | Digest { field, .. }
            | Installed { field, .. }
            | Version { field, .. }
            | Freeze { field, .. }
            | EnvironmentNotPinned { field, .. }
            | Backend { field, .. } => field,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The manifest and its pin
// ---------------------------------------------------------------------------------------------

/// Reads and parses the manifest: an unknown `schema_version` is refused before the fields are
/// looked at (a newer manifest is a version error, not an unknown-field error); unknown fields
/// are refused. Returns the manifest and the exact bytes read, which the pin is over.
pub fn load_manifest(path: &Path) -> Result<(Manifest, Vec<u8>), PinError> {
    #[derive(serde::Deserialize)]
    struct Version {
        schema_version: u32,
    }
    let bytes = fs::read(path).map_err(|source| PinError::ManifestRead { path: path.to_owned(), source })?;
    let parse = |source| PinError::ManifestParse { path: path.to_owned(), source };
    let version: Version = serde_json::from_slice(&bytes).map_err(parse)?;
    if version.schema_version != MANIFEST_SCHEMA_VERSION {
        return Err(PinError::SchemaVersion {
            path: path.to_owned(),
            expected: MANIFEST_SCHEMA_VERSION,
            actual: version.schema_version,
        });
    }
    let manifest = serde_json::from_slice(&bytes).map_err(parse)?;
    Ok((manifest, bytes))
}

/// The text of a pin file for a manifest with these bytes: `sha256sum` output.
pub fn pin_text(manifest_path: &Path, manifest_bytes: &[u8]) -> String {
    let name = manifest_path.file_name().unwrap_or_default().to_string_lossy();
    format!("{}  {name}\n", Sha256Digest::of_bytes(manifest_bytes))
}

/// Parses a pin file: exactly one line `<64 lowercase hex><two spaces><manifest file name>`,
/// with or without a final newline.
pub fn parse_pin(text: &str, expected_name: &str) -> Option<Sha256Digest> {
    let line = text.strip_suffix('\n').unwrap_or(text);
    let (hex, name) = line.split_once("  ")?;
    if name != expected_name || line.contains('\n') {
        return None;
    }
    hex.parse().ok()
}

/// The manifest's digest as pinned beside it.
pub fn read_pin(manifest_path: &Path) -> Result<Sha256Digest, PinError> {
    let pin = pin_path(manifest_path);
    let text = fs::read_to_string(&pin).map_err(|source| PinError::PinRead { path: pin.clone(), source })?;
    let name = manifest_path.file_name().unwrap_or_default().to_string_lossy().into_owned();
    parse_pin(&text, &name).ok_or_else(|| PinError::PinFormat {
        path: pin,
        expected_name: name,
        line: text.lines().next().unwrap_or_default().to_owned(),
    })
}

/// Checks the manifest bytes against the pin beside the manifest.
pub fn verify_pin(manifest_path: &Path, manifest_bytes: &[u8]) -> Result<Sha256Digest, PinError> {
    let expected = read_pin(manifest_path)?;
    let actual = Sha256Digest::of_bytes(manifest_bytes);
    if actual != expected {
        return Err(PinError::ManifestPin {
            path: manifest_path.to_owned(),
            pin: pin_path(manifest_path),
            expected,
            actual,
        });
    }
    Ok(actual)
}

// ---------------------------------------------------------------------------------------------
// Structure (no file system)
// ---------------------------------------------------------------------------------------------

/// True for ids that are safe as one path component (cell names become folder names).
pub fn is_path_safe_id(id: &str) -> bool {
    !id.is_empty()
        && !id.starts_with('.')
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Compares a run policy with the frozen one, field by field.
pub fn check_policy(policy: &RunPolicy) -> Vec<PinError> {
    let mut out = Vec::new();
    if let Err(err) = policy.validate() {
        out.push(PinError::PolicyNotPositive(err));
    }
    let actual = serde_json::to_value(policy).expect("a policy serializes");
    let frozen = serde_json::to_value(RunPolicy::frozen()).expect("a policy serializes");
    for (field, expected) in frozen.as_object().expect("a policy is an object") {
        let found = &actual[field];
        if found != expected {
            out.push(PinError::PolicyNotFrozen {
                field: field.clone(),
                expected: expected.to_string(),
                actual: found.to_string(),
            });
        }
    }
    out
}

/// The prompt's `continuation_sha256` against its continuation as listed (a check of
/// [`check_structure`], and of every worker for its job's prompt).
pub fn check_continuation_digest(id: &str, prompt: &Prompt) -> Option<PinError> {
    let actual = token_ids_sha256(&prompt.continuation);
    (actual != prompt.continuation_sha256).then(|| PinError::TokenDigest {
        field: format!("prompts[{id:?}].continuation_sha256"),
        expected: prompt.continuation_sha256,
        actual,
    })
}

/// Every structural check: the policy, ids, references between cells, prompts and cases,
/// prompt and continuation digests, stop sets, and the shape of the artifact and source pins
/// (paths are checked by [`check_confinement`]).
pub fn check_structure(manifest: &Manifest) -> Vec<PinError> {
    let mut out = check_policy(&manifest.run_policy);
    if manifest.cases.is_empty() {
        out.push(PinError::Empty { field: "cases".into(), what: "the case set" });
    }
    if manifest.cells.is_empty() {
        out.push(PinError::Empty { field: "cells".into(), what: "the cell list" });
    }
    for (id, case) in &manifest.cases {
        let field = format!("cases[{id:?}]");
        if !is_path_safe_id(id) {
            out.push(PinError::BadId { field: "cases".into(), id: id.clone() });
        }
        if case.stop_ids.is_empty() {
            out.push(PinError::Empty { field: format!("{field}.stop_ids"), what: "the stop set" });
        } else if case.stop_ids.windows(2).any(|w| w[0] >= w[1]) {
            out.push(PinError::StopIdsOrder { field: format!("{field}.stop_ids"), actual: case.stop_ids.clone() });
        }
        if !case.files.keys().any(|name| name.ends_with(".safetensors")) {
            out.push(PinError::NoWeights { field: format!("{field}.files") });
        }
        if !case.files.contains_key("config.json") {
            out.push(PinError::MissingPin { field: format!("{field}.files"), expected: "config.json" });
        }
        for name in ["architecture", "dtype"] {
            let value = if name == "architecture" { &case.architecture } else { &case.dtype };
            if value.is_empty() {
                out.push(PinError::Empty { field: format!("{field}.{name}"), what: "the value" });
            }
        }
    }
    let steps = manifest.run_policy.fixed_continuation_steps;
    for (id, prompt) in &manifest.prompts {
        let field = format!("prompts[{id:?}]");
        if !is_path_safe_id(id) {
            out.push(PinError::BadId { field: "prompts".into(), id: id.clone() });
        }
        if !manifest.cases.contains_key(&prompt.case) {
            out.push(PinError::UnknownCase { field: format!("{field}.case"), id: prompt.case.clone() });
        }
        if prompt.ids.is_empty() {
            out.push(PinError::Empty { field: format!("{field}.ids"), what: "the prompt" });
        }
        let actual = token_ids_sha256(&prompt.ids);
        if actual != prompt.sha256 {
            out.push(PinError::TokenDigest { field: format!("{field}.sha256"), expected: prompt.sha256, actual });
        }
        if prompt.continuation.len() != steps as usize {
            out.push(PinError::ContinuationLength {
                field: format!("{field}.continuation"),
                expected: steps,
                actual: prompt.continuation.len(),
            });
        }
        out.extend(check_continuation_digest(id, prompt));
    }
    let mut seen = BTreeSet::new();
    for (i, cell) in manifest.cells.iter().enumerate() {
        let field = format!("cells[{i}]");
        if !manifest.cases.contains_key(&cell.case) {
            out.push(PinError::UnknownCase { field: format!("{field}.case"), id: cell.case.clone() });
        }
        match manifest.prompts.get(&cell.prompt) {
            None => out.push(PinError::UnknownPrompt { field: format!("{field}.prompt"), id: cell.prompt.clone() }),
            Some(prompt) if prompt.case != cell.case => out.push(PinError::PromptCase {
                field: format!("{field}.prompt"),
                expected: cell.case.clone(),
                actual: prompt.case.clone(),
            }),
            Some(_) => {}
        }
        if !seen.insert(cell.clone()) {
            out.push(PinError::DuplicateCell { field, cell: cell.name() });
        }
    }
    out.extend(check_declared(manifest));
    for adapter in manifest.all_adapters() {
        if manifest.worker_sources.get(&adapter).is_none_or(BTreeMap::is_empty) {
            out.push(PinError::EmptySourceSet { field: format!("worker_sources.{adapter}") });
        }
    }
    for adapter in manifest.worker_sources.keys().filter(|a| !manifest.knows(a)) {
        out.push(PinError::UndeclaredAdapter { field: format!("worker_sources.{adapter}"), name: adapter.to_string() });
    }
    out
}

/// The shape of every declared adapter: a name that is neither built in nor malformed, a
/// command, and source paths that stay inside the manifest's folder.
fn check_declared(manifest: &Manifest) -> Vec<PinError> {
    let mut out = Vec::new();
    for (name, declared) in &manifest.adapters {
        let field = format!("adapters[{name:?}]");
        match Adapter::parse(name) {
            Ok(Adapter::Declared(_)) => {}
            Ok(_) => out.push(PinError::BuiltInDeclared { field: field.clone(), name: name.clone() }),
            Err(problem) => out.push(PinError::BadAdapterName { field: field.clone(), problem }),
        }
        if declared.command.first().is_none_or(String::is_empty) {
            out.push(PinError::Empty { field: format!("{field}.command"), what: "the command (its first word)" });
        }
        if declared.sources.is_empty() {
            out.push(PinError::Empty { field: format!("{field}.sources"), what: "the source list" });
        }
        for (i, rel) in declared.sources.iter().enumerate() {
            if let Err(reason) = check_relative(rel) {
                out.push(escape(format!("{field}.sources[{i}]"), rel, reason));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Confinement
// ---------------------------------------------------------------------------------------------

fn escape(field: String, path: &str, reason: PathRefusal) -> PinError {
    PinError::PathEscape { field, path: path.to_owned(), reason: reason.as_str() }
}

/// Checks that a repository-relative path stays inside `repo` once symbolic links are
/// resolved (when it exists; a missing path is reported by the check that reads it).
fn check_resolved(repo: &Path, field: String, rel: &str) -> Result<(), PinError> {
    let Ok(resolved) = repo.join(rel).canonicalize() else { return Ok(()) };
    let root = repo.canonicalize().map_err(|source| PinError::FileRead {
        field: field.clone(),
        path: repo.to_owned(),
        source,
    })?;
    if resolved.starts_with(&root) {
        Ok(())
    } else {
        Err(PinError::PathEscape {
            field,
            path: rel.to_owned(),
            reason: "resolves through a symbolic link to a place outside it",
        })
    }
}

/// The folder of a case: a relative path must be normal and stay inside the repository (also
/// through symbolic links); an absolute path is an artifact outside the repository, allowed
/// because every file of it is pinned, but it must be normal too (no `.` or `..`).
pub fn case_dir(repo: &Path, id: &str, case: &Case) -> Result<PathBuf, PinError> {
    let field = format!("cases[{id:?}].path");
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
                out.push(PinError::PathEscape {
                    field: format!("cases[{id:?}].files"),
                    path: name.clone(),
                    reason: "is not a plain file name inside the artifact folder",
                });
            }
        }
    }
    for (adapter, files) in &manifest.worker_sources {
        let root = sources_root(adapter, repo, manifest_path);
        for rel in files.keys() {
            let field = format!("worker_sources.{adapter}[{rel:?}]");
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

// ---------------------------------------------------------------------------------------------
// Model artifacts
// ---------------------------------------------------------------------------------------------

/// The file at `path` against its pinned `expected` digest: `None` when they match, else the
/// difference (or the read failure) under `field`.
fn check_digest(field: String, path: PathBuf, expected: Sha256Digest) -> Option<PinError> {
    match Sha256Digest::of_file(&path) {
        Ok(actual) if actual == expected => None,
        Ok(actual) => Some(PinError::Digest { field, path, expected, actual }),
        Err(source) => Some(PinError::Hash { field, source }),
    }
}

/// The file names that make up the artifact in `dir`: every top-level entry that is not a
/// folder (symbolic links are followed: a Hugging Face cache snapshot is made of them) and
/// whose name does not start with `.`. Sorted.
pub fn artifact_file_names(dir: &Path) -> Result<Vec<String>, std::io::Error> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        // A dangling link is kept: reading it fails loudly rather than it being ignored.
        if fs::metadata(entry.path()).is_ok_and(|meta| meta.is_dir()) {
            continue;
        }
        out.push(name);
    }
    out.sort();
    Ok(out)
}

/// Hashes every file of the artifact in `dir` (see [`artifact_file_names`]).
pub fn case_files(dir: &Path) -> Result<BTreeMap<String, Sha256Digest>, DigestIoError> {
    let names = artifact_file_names(dir).map_err(|source| DigestIoError { path: dir.to_owned(), source })?;
    names.into_iter().map(|name| Ok((name.clone(), Sha256Digest::of_file(&dir.join(&name))?))).collect()
}

/// Checks one case's folder: it holds exactly the pinned files (a stray or missing file of any
/// kind is an error, `*.safetensors` included: mlx_lm loads every `model*.safetensors`), and each
/// has its pinned SHA-256.
pub fn check_case(repo: &Path, id: &str, case: &Case) -> Vec<PinError> {
    let dir = match case_dir(repo, id, case) {
        Ok(dir) => dir,
        Err(err) => return vec![err],
    };
    let field = format!("cases[{id:?}].files");
    let present = match artifact_file_names(&dir) {
        Ok(names) => names,
        Err(source) => return vec![PinError::FileRead { field: format!("cases[{id:?}].path"), path: dir, source }],
    };
    let mut out = Vec::new();
    for name in &present {
        if !case.files.contains_key(name) {
            let note = if name.ends_with(".safetensors") { ", and mlx_lm would load these weights" } else { "" };
            out.push(PinError::StrayArtifact { field: field.clone(), path: dir.join(name), note });
        }
    }
    for (name, expected) in &case.files {
        let path = dir.join(name);
        let field = format!("{field}[{name:?}]");
        if !present.contains(name) {
            out.push(PinError::Missing { field, path });
            continue;
        }
        out.extend(check_digest(field, path, *expected));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Worker sources
// ---------------------------------------------------------------------------------------------

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
        let set = format!("worker_sources.{adapter}");
        let files = adapter_sources(adapter, &root, declared)
            .map_err(|source| PinError::Tree { field: set.clone(), source })?;
        let hashed = files
            .into_iter()
            .map(|rel| {
                let digest = Sha256Digest::of_file(&root.join(&rel))
                    .map_err(|source| PinError::Hash { field: format!("{set}[{rel:?}]"), source })?;
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
    let set = format!("worker_sources.{adapter}");
    let root = sources_root(adapter, repo, manifest_path);
    let found = match adapter_sources(adapter, &root, manifest.declared_sources(adapter)) {
        Ok(found) => found,
        Err(source) => return vec![PinError::Tree { field: set, source }],
    };
    let empty = BTreeMap::new();
    let pinned = manifest.worker_sources.get(adapter).unwrap_or(&empty);
    for rel in found.iter().filter(|rel| !pinned.contains_key(*rel)) {
        out.push(PinError::UnpinnedSource { field: set.clone(), path: root.join(rel) });
    }
    for (rel, expected) in pinned {
        let field = format!("{set}[{rel:?}]");
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
                out.push(PinError::OutsideRule { field, path });
            } else {
                out.push(PinError::Missing { field, path });
            }
            continue;
        }
        out.extend(check_digest(field, path, *expected));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The environment
// ---------------------------------------------------------------------------------------------

/// Checks the selected environment's lock file for this platform ([`lock_path`]) against
/// `environment.lock_sha256`.
pub fn check_lock(repo: &Path, pins: &EnvironmentPins) -> Result<(), PinError> {
    let field = "environment.lock_sha256".to_owned();
    let path = repo.join(lock_path());
    let actual = Sha256Digest::of_file(&path).map_err(|source| PinError::Hash { field: field.clone(), source })?;
    if actual != pins.lock_sha256 {
        return Err(PinError::Digest { field, path, expected: pins.lock_sha256, actual });
    }
    let found = lock_backend(&path)?;
    if found != pins.backend() {
        return Err(PinError::Backend {
            field: "environment.backend".into(),
            path,
            expected: format!("backend {}", pins.backend().as_str()),
            actual: format!("backend {}", found.as_str()),
        });
    }
    Ok(())
}

/// The backend the lock file at `path` installs ([`Backend::of_lock`]).
pub fn lock_backend(path: &Path) -> Result<Backend, PinError> {
    let field = "environment.backend".to_owned();
    let text = std::fs::read_to_string(path).map_err(|source| PinError::Hash {
        field: field.clone(),
        source: DigestIoError { path: path.to_owned(), source },
    })?;
    Backend::of_lock(&text).map_err(|err| PinError::Backend {
        field,
        path: path.to_owned(),
        expected: "exactly one of mlx-cpu, mlx-cuda-*, mlx-metal".into(),
        actual: format!("{} MLX backend packages", err.found),
    })
}

/// The installed mlx_lm package's freeze (see [`crate::freeze`]).
pub fn mlx_lm_freeze(installed: &Installed) -> Result<Freeze, PinError> {
    freeze_tree(&installed.mlx_lm_dir)
        .map_err(|source| PinError::Tree { field: "environment.mlx_lm_freeze_sha256".into(), source })
}

/// Checks the installed environment: the mlx and mlx_lm versions, the mlx_lm source freeze and
/// the libmlx digest.
pub fn check_installed(installed: &Installed, pins: &EnvironmentPins) -> Vec<PinError> {
    let mut out = Vec::new();
    for (field, name, expected) in [
        ("environment.mlx_version", "mlx", &pins.mlx_version),
        ("environment.mlx_lm_version", "mlx_lm", &pins.mlx_lm_version),
    ] {
        match installed.dist_version(name) {
            Ok(actual) if actual == *expected => {}
            Ok(actual) => out.push(PinError::Version {
                field: field.into(),
                path: installed.site_packages.clone(),
                expected: expected.clone(),
                actual,
            }),
            Err(source) => out.push(PinError::Installed { field: field.into(), source }),
        }
    }
    match mlx_lm_freeze(installed) {
        Ok(freeze) if freeze.digest == pins.mlx_lm_freeze_sha256 => {}
        Ok(freeze) => out.push(PinError::Freeze {
            field: "environment.mlx_lm_freeze_sha256".into(),
            path: installed.mlx_lm_dir.clone(),
            files: freeze.files,
            expected: pins.mlx_lm_freeze_sha256,
            actual: freeze.digest,
        }),
        Err(err) => out.push(err),
    }
    let field = "environment.libmlx_sha256".to_owned();
    match Sha256Digest::of_file(&installed.libmlx) {
        Ok(actual) if actual == pins.libmlx_sha256 => {}
        Ok(actual) => {
            out.push(PinError::Digest { field, path: installed.libmlx.clone(), expected: pins.libmlx_sha256, actual })
        }
        Err(source) => out.push(PinError::Hash { field, source }),
    }
    out
}

/// The manifest's pins of the selected environment ([`selected_environment`]).
pub fn selected_pins(manifest: &Manifest) -> Result<&EnvironmentPins, PinError> {
    let selected = selected_environment();
    manifest.environment_pins(selected.as_deref()).ok_or_else(|| PinError::EnvironmentNotPinned {
        field: format!("environments.{}", selected.clone().unwrap_or_default()),
        name: selected.unwrap_or_default(),
    })
}

/// The environment pins of what is installed now: what `manifest pin` writes.
pub fn environment_pins(repo: &Path, installed: &Installed) -> Result<EnvironmentPins, PinError> {
    let version = |field: &str, name: &str| {
        installed.dist_version(name).map_err(|source| PinError::Installed { field: field.into(), source })
    };
    let digest = |field: &str, path: &Path| {
        Sha256Digest::of_file(path).map_err(|source| PinError::Hash { field: field.into(), source })
    };
    Ok(EnvironmentPins {
        backend: Some(lock_backend(&repo.join(lock_path()))?),
        lock_sha256: digest("environment.lock_sha256", &repo.join(lock_path()))?,
        mlx_version: version("environment.mlx_version", "mlx")?,
        mlx_lm_version: version("environment.mlx_lm_version", "mlx_lm")?,
        mlx_lm_freeze_sha256: mlx_lm_freeze(installed)?.digest,
        libmlx_sha256: digest("environment.libmlx_sha256", &installed.libmlx)?,
    })
}

// ---------------------------------------------------------------------------------------------
// Everything: the guard
// ---------------------------------------------------------------------------------------------

/// Whether and where the installed environment is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvironmentCheck {
    /// Skip the installed checks (the lock file is still checked).
    Skip,
    /// Check the environment in this venv if it exists; report a skip if it does not.
    IfPresent { venv: PathBuf, mlx_dir: Option<PathBuf> },
    /// Check the environment in this venv; its absence is a failure.
    Required { venv: PathBuf, mlx_dir: Option<PathBuf> },
}

/// What the guard did.
#[derive(Debug)]
pub struct GuardOutcome {
    /// The manifest's SHA-256 (of the bytes read).
    pub manifest_sha256: Sha256Digest,
    /// The parsed manifest.
    pub manifest: Manifest,
    /// Every failed check; empty when the guard passes.
    pub failures: Vec<PinError>,
    /// The environment that was checked, or why none was.
    pub environment: Result<Installed, String>,
}

/// Runs every check of `manifest_path` against the repository at `repo`. `Err` means the
/// manifest could not be read or parsed (nothing else can be checked then); every other
/// failure is collected in [`GuardOutcome::failures`].
pub fn guard(repo: &Path, manifest_path: &Path, environment: &EnvironmentCheck) -> Result<GuardOutcome, PinError> {
    let (manifest, bytes) = load_manifest(manifest_path)?;
    let manifest_sha256 = Sha256Digest::of_bytes(&bytes);
    let mut failures = Vec::new();
    if let Err(err) = verify_pin(manifest_path, &bytes) {
        failures.push(err);
    }
    failures.extend(check_structure(&manifest));
    failures.extend(check_confinement(repo, manifest_path, &manifest));
    for (id, case) in &manifest.cases {
        // A case whose path escapes was reported by check_confinement; do not read it.
        if case_dir(repo, id, case).is_ok() {
            failures.extend(check_case(repo, id, case));
        }
    }
    // Escaping source paths were reported by check_confinement and are skipped here too.
    failures.extend(
        check_worker_sources(repo, manifest_path, &manifest)
            .into_iter()
            .filter(|e| !matches!(e, PinError::PathEscape { .. })),
    );
    let pinned = match selected_pins(&manifest) {
        Ok(pinned) => Some(pinned.clone()),
        Err(err) => {
            failures.push(err);
            None
        }
    };
    if let Some(Err(err)) = pinned.as_ref().map(|pins| check_lock(repo, pins)) {
        failures.push(err);
    }
    let installed = match environment {
        EnvironmentCheck::Skip => Err("skipped (--no-environment)".to_owned()),
        EnvironmentCheck::IfPresent { venv, mlx_dir } | EnvironmentCheck::Required { venv, mlx_dir } => {
            let required = matches!(environment, EnvironmentCheck::Required { .. });
            if !required && !venv.exists() {
                Err(format!("skipped: no environment at {}", venv.display()))
            } else {
                match Installed::locate(venv, mlx_dir.as_deref()) {
                    Ok(installed) => {
                        failures.extend(pinned.iter().flat_map(|pins| check_installed(&installed, pins)));
                        Ok(installed)
                    }
                    Err(source) => {
                        failures.push(PinError::Installed { field: "environment".into(), source });
                        Err(format!("could not locate the environment in {}", venv.display()))
                    }
                }
            }
        }
    };
    Ok(GuardOutcome { manifest_sha256, manifest, failures, environment: installed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_lines_are_sha256sum_format() {
        let d = Sha256Digest::of_bytes(b"m");
        assert_eq!(parse_pin(&format!("{d}  workloads.json\n"), "workloads.json"), Some(d));
        assert_eq!(parse_pin(&format!("{d}  workloads.json"), "workloads.json"), Some(d));
        assert_eq!(parse_pin(&format!("{d} workloads.json\n"), "workloads.json"), None);
        assert_eq!(parse_pin(&format!("{d}  other.json\n"), "workloads.json"), None);
        assert_eq!(parse_pin(&format!("{d}  workloads.json\n{d}  workloads.json\n"), "workloads.json"), None);
        assert_eq!(parse_pin("abc  workloads.json\n", "workloads.json"), None);
        assert_eq!(pin_text(Path::new("/r/workloads.json"), b"m"), format!("{d}  workloads.json\n"));
        assert_eq!(pin_path(Path::new("/r/workloads.json")), Path::new("/r/workloads.json.sha256"));
    }

    #[test]
    fn ids_must_be_path_safe() {
        assert!(is_path_safe_id("tiny-qwen3.L16_x"));
        for bad in ["", ".hidden", "a/b", "a b", "..", "é"] {
            assert!(!is_path_safe_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn policy_changes_name_the_field() {
        let policy = RunPolicy { warmup_requests: 4, ..RunPolicy::frozen() };
        let errors = check_policy(&policy);
        assert!(matches!(errors.as_slice(), [PinError::PolicyNotFrozen { field, expected, actual }]
            if field == "warmup_requests" && expected == "5" && actual == "4"));
        let zero = RunPolicy { backstop_grace_s: 0, ..RunPolicy::frozen() };
        let errors = check_policy(&zero);
        assert!(matches!(errors.first(), Some(PinError::PolicyNotPositive(e)) if e.field == "backstop_grace_s"));
    }

    #[test]
    fn unknown_version_is_a_version_error_and_unknown_fields_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("workloads.json");
        fs::write(&path, br#"{"schema_version": 2, "whatever": 1}"#).unwrap();
        assert!(matches!(load_manifest(&path), Err(PinError::SchemaVersion { expected: 1, actual: 2, .. })));
        fs::write(&path, br#"{"schema_version": 1, "whatever": 1}"#).unwrap();
        let err = load_manifest(&path).unwrap_err();
        assert!(matches!(&err, PinError::ManifestParse { .. }) && err.is_bad_input());
        let source = std::error::Error::source(&err).unwrap().to_string();
        assert!(source.contains("unknown field `whatever`"), "{source}");
    }

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
        assert!(matches!(case_dir(repo, "a", &case("/models/../etc")), Err(PinError::PathEscape { .. })));
        assert!(matches!(case_dir(repo, "a", &case("../models")), Err(PinError::PathEscape { .. })));
        assert_eq!(case_dir(repo, "a", &case("fixtures/m")).unwrap(), repo.join("fixtures/m"));
    }
}
