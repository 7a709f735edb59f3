//! Opening the worker's out dir: a worker refuses a missing folder, or anything else in its
//! place, before it writes a byte; there is no report target, so the refusal goes to stderr
//! only. The layout and the file names are the wire crate's ([`OutDir`]).

use std::path::{Path, PathBuf};

use decode_baseline_wire::outdir::{OutDir, LAUNCHER_MESSAGE};

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

/// Checks that `path` is an existing directory (symlinks followed); writes nothing.
pub fn open(path: &Path) -> Result<OutDir, OutDirError> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(OutDir::at(path)),
        Ok(_) => Err(OutDirError::NotADirectory { path: path.to_owned() }),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Err(OutDirError::Missing { path: path.to_owned() }),
        Err(source) => Err(OutDirError::Io { path: path.to_owned(), source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_missing_and_file_with_the_launcher_message() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("nope");
        let err = open(&missing).unwrap_err();
        assert!(matches!(err, OutDirError::Missing { .. }), "{err}");
        assert!(err.to_string().contains(LAUNCHER_MESSAGE));

        let file = tmp.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        let err = open(&file).unwrap_err();
        assert!(matches!(err, OutDirError::NotADirectory { .. }), "{err}");
        assert!(err.to_string().contains(LAUNCHER_MESSAGE));
        assert_eq!(std::fs::read(&file).unwrap(), b"x");

        assert!(open(tmp.path()).is_ok());
    }
}
