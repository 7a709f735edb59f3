//! One failed pin check: where ([`FieldPath`], the manifest field it is about) and what
//! ([`PinProblem`]). The two are kept apart, so a worker's refusal names the field and says the
//! problem without taking a message apart.

use std::{fmt, path::PathBuf};

use decode_baseline_wire::{Adapter, Sha256Digest};

use crate::{file_digest::DigestIoError, freeze::TreeError, installed::InstalledError, pin_file::pin_path};

/// A path to a manifest field, printed as the manifest spells it: `run_policy.warmup_requests`,
/// `cases["tiny"].files["model.safetensors"]`, `cells[3].prompt`. The empty path is the manifest
/// file as a whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPath(Vec<Segment>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    /// `.name` (no dot at the start).
    Key(String),
    /// `["name"]`: an entry of a map keyed by a string the manifest chooses (an id, a file name).
    Entry(String),
    /// `[i]`: an item of a list.
    Index(usize),
}

impl FieldPath {
    /// The manifest file as a whole.
    pub fn root() -> Self {
        Self::default()
    }

    /// The top-level field `name`.
    pub fn field(name: &str) -> Self {
        Self::root().key(name)
    }

    /// `cases["<id>"]`: one case of the manifest.
    pub fn case(id: &str) -> Self {
        Self::field("cases").entry(id)
    }

    /// `worker_sources.<adapter>`: one adapter's pinned source set.
    pub fn worker_sources(adapter: &Adapter) -> Self {
        Self::field("worker_sources").key(adapter.as_str())
    }

    /// `environment.<name>`: a field of the pinned environment.
    pub fn environment(name: &str) -> Self {
        Self::field("environment").key(name)
    }

    /// This path's field `name`.
    pub fn key(mut self, name: &str) -> Self {
        self.0.push(Segment::Key(name.to_owned()));
        self
    }

    /// This path's map entry `name`.
    pub fn entry(mut self, name: &str) -> Self {
        self.0.push(Segment::Entry(name.to_owned()));
        self
    }

    /// This path's list item `i`.
    pub fn index(mut self, i: usize) -> Self {
        self.0.push(Segment::Index(i));
        self
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Key(name) if i == 0 => f.write_str(name)?,
                Segment::Key(name) => write!(f, ".{name}")?,
                Segment::Entry(name) => write!(f, "[{name:?}]")?,
                Segment::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

/// Compares with the printed form (`cases["t"].path`), which is how tests and readers name a
/// field.
impl PartialEq<str> for FieldPath {
    fn eq(&self, other: &str) -> bool {
        self.to_string().as_str() == other
    }
}

impl PartialEq<&str> for FieldPath {
    fn eq(&self, other: &&str) -> bool {
        self == *other
    }
}

impl PartialEq<String> for FieldPath {
    fn eq(&self, other: &String) -> bool {
        self == other.as_str()
    }
}

/// One failed check: the field and the problem, printed `field: problem` (the problem alone for
/// the manifest file as a whole).
#[derive(Debug)]
pub struct PinError {
    pub field: FieldPath,
    pub problem: PinProblem,
}

impl PinError {
    /// A problem of `field`.
    pub fn at(field: FieldPath, problem: PinProblem) -> Self {
        Self { field, problem }
    }

    /// A problem of the manifest file as a whole (reading it, parsing it, its pin).
    pub fn of_manifest(problem: PinProblem) -> Self {
        Self::at(FieldPath::root(), problem)
    }

    /// True when the manifest itself is unreadable or invalid (the guard's bad-input exit),
    /// rather than a pinned thing not matching its pin.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self.problem,
            PinProblem::ManifestRead { .. } | PinProblem::ManifestParse { .. } | PinProblem::SchemaVersion { .. }
        )
    }
}

impl fmt::Display for PinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_root() {
            write!(f, "{}", self.problem)
        } else {
            write!(f, "{}: {}", self.field, self.problem)
        }
    }
}

/// The problem's own cause (an I/O error, a parse error) is the error's source: the problem is
/// already in the message.
impl std::error::Error for PinError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.problem)
    }
}

/// What failed, without where: [`PinError`] adds the field.
#[derive(Debug, thiserror::Error)]
pub enum PinProblem {
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
    #[error("manifest {path} does not match its pin {}: expected sha256 {expected}, found {actual} (edited without `manifest pin`?)", pin_path(path).display())]
    ManifestPin { path: PathBuf, expected: Sha256Digest, actual: Sha256Digest },

    // --- structure ---------------------------------------------------------------------------
    #[error("must be positive, found {value}")]
    PolicyNotPositive { value: u32 },
    #[error("expected the frozen value {expected}, found {actual}")]
    PolicyNotFrozen { expected: String, actual: String },
    #[error("{what} must not be empty")]
    Empty { what: &'static str },
    #[error("id {id:?} is not path-safe (use ASCII letters, digits, `-`, `_`, `.`; not starting with `.`)")]
    BadId { id: String },
    #[error("names case {id:?}, which is not in `cases`")]
    UnknownCase { id: String },
    #[error("names prompt {id:?}, which is not in `prompts`")]
    UnknownPrompt { id: String },
    #[error("expected the cell's case {expected:?}, found the prompt's case {actual:?}")]
    PromptCase { expected: String, actual: String },
    #[error("the cell {cell} is listed twice")]
    DuplicateCell { cell: String },
    #[error("expected {expected} ids (run_policy.fixed_continuation_steps), found {actual}")]
    ContinuationLength { expected: u32, actual: usize },
    #[error("expected token-id sha256 {expected}, found {actual} for the ids as listed")]
    TokenDigest { expected: Sha256Digest, actual: Sha256Digest },
    #[error("expected strictly ascending ids, found {actual:?}")]
    StopIdsOrder { actual: Vec<u32> },
    #[error("the artifact pins no `*.safetensors` file")]
    NoWeights,
    #[error("expected {expected:?} to be pinned, it is not")]
    MissingPin { expected: &'static str },
    #[error("{problem}")]
    BadAdapterName { problem: String },
    #[error("{name:?} is a built-in adapter; declare a loop under a name of its own")]
    BuiltInDeclared { name: String },
    #[error("adapter {name:?} is neither built in nor declared in `adapters`")]
    UndeclaredAdapter { name: String },

    // --- confinement -------------------------------------------------------------------------
    #[error("path {path:?} escapes the repository: it {reason}")]
    PathEscape { path: String, reason: &'static str },

    // --- files against their pins ------------------------------------------------------------
    #[error("failed to read {path}")]
    FileRead {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to hash a pinned file")]
    Hash {
        #[source]
        source: DigestIoError,
    },
    #[error("failed to list the files of a pinned tree")]
    Tree {
        #[source]
        source: TreeError,
    },
    #[error("pinned file {path} is missing")]
    Missing { path: PathBuf },
    #[error("{path} is in the artifact folder but not pinned (a stray file{note})")]
    StrayArtifact { path: PathBuf, note: &'static str },
    #[error("{path} is a worker source by the rule but not pinned (a file was added)")]
    UnpinnedSource { path: PathBuf },
    #[error(
        "{path} is pinned but is not a worker source by the rule (outside the rule's folders or not a source file)"
    )]
    OutsideRule { path: PathBuf },
    #[error("no file matches the rule, so nothing is pinned")]
    EmptySourceSet,
    #[error("{path}: expected sha256 {expected}, found {actual}")]
    Digest { path: PathBuf, expected: Sha256Digest, actual: Sha256Digest },

    // --- the installed environment -----------------------------------------------------------
    #[error("failed to locate the installed environment")]
    Installed {
        #[source]
        source: InstalledError,
    },
    #[error("{path}: expected version {expected}, found {actual}")]
    Version { path: PathBuf, expected: String, actual: String },
    #[error("the installed mlx_lm at {path} ({files} files): expected freeze sha256 {expected}, found {actual}")]
    Freeze { path: PathBuf, files: usize, expected: Sha256Digest, actual: Sha256Digest },
    #[error("environment {name:?} is not pinned in the manifest's `environments`; provision it (`tools/env/mlxenv add`) and pin it with `decode-baseline manifest pin --environment {name}`")]
    EnvironmentNotPinned { name: String },
    #[error("the lock {path} installs {actual}, expected {expected}")]
    Backend { path: PathBuf, expected: String, actual: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_print_as_the_manifest_spells_them() {
        let path = FieldPath::field("cases").entry("tiny \"q\"").key("files").entry("a.safetensors");
        assert_eq!(path.to_string(), r#"cases["tiny \"q\""].files["a.safetensors"]"#);
        assert_eq!(FieldPath::field("cells").index(3).key("prompt").to_string(), "cells[3].prompt");
        assert_eq!(FieldPath::field("worker_sources").key("python-sync"), "worker_sources.python-sync");
        assert!(FieldPath::root().is_root() && FieldPath::root().to_string().is_empty());
    }

    #[test]
    fn the_message_is_field_then_problem_and_the_root_has_no_prefix() {
        let err = PinError::at(FieldPath::field("cases").entry("t").key("files"), PinProblem::NoWeights);
        assert_eq!(err.to_string(), r#"cases["t"].files: the artifact pins no `*.safetensors` file"#);
        assert_eq!(err.problem.to_string(), "the artifact pins no `*.safetensors` file");
        let err = PinError::of_manifest(PinProblem::SchemaVersion { path: "/m.json".into(), expected: 1, actual: 2 });
        assert_eq!(err.to_string(), "schema_version of /m.json: expected 1, found 2");
        assert!(err.is_bad_input());
    }
}
