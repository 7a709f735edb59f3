//! Why a session report could not be read: every variant is bad input (exit code 2) for the
//! commands that read one (`compare`, `report`, `plot`, `calibrate`).

use std::path::PathBuf;

/// A `session.json` that cannot be read, parsed or converted to the current version.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
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
}
