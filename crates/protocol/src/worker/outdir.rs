//! The worker's out dir: the folder the launcher created for exactly one worker run, and the
//! names of the files the protocol puts in it (see `req/protocol.md`, "Out dir layout").
//!
//! A worker refuses a missing folder, or anything else in its place, before it writes a byte:
//! there is no report target, so the refusal goes to stderr only.

use std::path::{Path, PathBuf};

/// The job the launcher wrote.
pub const JOB_FILE: &str = "job.json";
/// The exclusive claim, `{utc, pid}`, created before anything else.
pub const CLAIM_FILE: &str = "worker-claim";
/// Created after validation and load; the job deadline starts here.
pub const READY_FILE: &str = "worker-ready";
/// The report, hard-linked once.
pub const REPORT_FILE: &str = "report.json";
/// Prefix of the per-process temp file the report is written to before the link.
pub const REPORT_TEMP_PREFIX: &str = "report.json.tmp.";

/// Prefix of the request gate's files: `request-<i>-granted` (the launcher lets request `i`
/// start) and `request-<i>-done` (the worker finished it).
pub const REQUEST_FILE_PREFIX: &str = "request-";

/// The worker's wake-up FIFO of the request gate (created by the worker, removed at its end).
pub const GATE_FIFO: &str = "gate";

/// The tail of the refusal message both workers print for a missing or blocked out dir.
pub const LAUNCHER_MESSAGE: &str = "out_dir must be created by the launcher";

#[derive(Debug, thiserror::Error)]
pub enum OutDirError {
    #[error("out dir {path} does not exist: {LAUNCHER_MESSAGE}")]
    Missing { path: PathBuf },
    #[error("out dir {path} is not a directory: {LAUNCHER_MESSAGE}")]
    NotADirectory { path: PathBuf },
    #[error("failed to inspect out dir {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// An existing directory the worker may try to claim.
#[derive(Debug, Clone)]
pub struct OutDir {
    path: PathBuf,
}

impl OutDir {
    /// Checks that `path` is an existing directory (symlinks followed); writes nothing.
    pub fn open(path: &Path) -> Result<Self, OutDirError> {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => Ok(Self { path: path.to_owned() }),
            Ok(_) => Err(OutDirError::NotADirectory { path: path.to_owned() }),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                Err(OutDirError::Missing { path: path.to_owned() })
            }
            Err(source) => Err(OutDirError::Io { path: path.to_owned(), source }),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn job(&self) -> PathBuf {
        self.path.join(JOB_FILE)
    }

    pub fn claim(&self) -> PathBuf {
        self.path.join(CLAIM_FILE)
    }

    pub fn ready(&self) -> PathBuf {
        self.path.join(READY_FILE)
    }

    pub fn report(&self) -> PathBuf {
        self.path.join(REPORT_FILE)
    }

    /// Created by the launcher: request `index` may start (gated jobs only).
    pub fn granted(&self, index: u32) -> PathBuf {
        self.path.join(format!("{REQUEST_FILE_PREFIX}{index}-granted"))
    }

    /// The worker's wake-up FIFO (gated jobs only).
    pub fn gate(&self) -> PathBuf {
        self.path.join(GATE_FIFO)
    }

    /// Created by the worker: request `index` is complete (gated jobs only).
    pub fn done(&self, index: u32) -> PathBuf {
        self.path.join(format!("{REQUEST_FILE_PREFIX}{index}-done"))
    }

    /// This process's temp file for the report.
    pub fn report_temp(&self, pid: u32) -> PathBuf {
        self.path.join(format!("{REPORT_TEMP_PREFIX}{pid}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_missing_and_file_with_the_launcher_message() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("nope");
        let err = OutDir::open(&missing).unwrap_err();
        assert!(matches!(err, OutDirError::Missing { .. }), "{err}");
        assert!(err.to_string().contains(LAUNCHER_MESSAGE));

        let file = tmp.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        let err = OutDir::open(&file).unwrap_err();
        assert!(matches!(err, OutDirError::NotADirectory { .. }), "{err}");
        assert!(err.to_string().contains(LAUNCHER_MESSAGE));
        assert_eq!(std::fs::read(&file).unwrap(), b"x");

        assert!(OutDir::open(tmp.path()).is_ok());
    }
}
