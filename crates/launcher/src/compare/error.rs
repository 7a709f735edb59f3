//! Why `compare` (and `plot`, which reads sessions the same way) could not do its work: every
//! variant is bad input and ends with exit code 2.

use std::path::PathBuf;

/// A session that cannot be read, or settings that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("failed to read session report {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to parse session report {path}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("session report {path}: schema_version: expected {expected}, got {actual}")]
    SchemaVersion {
        path: PathBuf,
        /// The versions this code reads, e.g. `1 or 2`.
        expected: String,
        actual: String,
    },
    /// A report of an older version whose content cannot be converted to the current one.
    #[error("session report {path} (schema_version {version}): {detail}")]
    Upgrade { path: PathBuf, version: u64, detail: String },
    #[error("invalid test setting (--alpha, --margin or --floor)")]
    Settings(#[source] crate::stats::StatsError),
    #[error("nothing to compare: {detail}")]
    NothingToCompare { detail: String },
}
