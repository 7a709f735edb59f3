//! Files written exactly once and never replaced: the one writer for each of them.
//!
//! Two ways, chosen by what a reader may see while the file is being written:
//!
//! - [`create_new`]: the file itself is created exclusively (`O_CREAT|O_EXCL`), then filled and
//!   synced. Its existence is what counts, so a second writer always finds it; a reader may see
//!   it empty or partial for a moment. Used for `worker-claim` and `worker-ready` (the `{utc,
//!   pid}` markers), `request-<i>-done` (its `seq` line: the launcher re-reads a done file
//!   until the line is complete, `crates/launcher/src/launcher/interleave.rs`), each worker
//!   folder's `job.json` and the session folder's `launcher.json` (written before any reader
//!   starts).
//! - [`link_new`]: the bytes go to a temp file beside the target (create-new), synced, then
//!   hard-linked to the target, which fails if it exists; the temp is removed in every outcome.
//!   A reader sees the whole file or none. Used for `report.json` (temp `report.json.tmp.<pid>`,
//!   `req/protocol.md`), `request-<i>-granted` (temp `.request-<i>-granted.<pid>`: a waiting
//!   worker reads the grant's `seq` as soon as the file exists), `session.json` (temp `.session.json.<pid>`) and `bench`'s
//!   `bench.json` and `bench-job.json` (temp `.<name>.<pid>`).

use std::{
    io::Write,
    path::{Path, PathBuf},
};

/// Creates `path` exclusively, writes `bytes` and syncs them. `AlreadyExists` means someone
/// else made it and it was left untouched; an error after the create leaves the file.
pub fn create_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// How [`link_new`] ended when nothing went wrong with the file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Linked {
    /// The target now holds the bytes.
    Written,
    /// The target already existed and was left byte-identical; the bytes are not recorded.
    Exists,
}

#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("failed to write the temp file {path}")]
    Temp {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to link {temp} to {path}")]
    Link {
        temp: PathBuf,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Writes `bytes` to `target` once, by way of `temp` (in the same folder): a write failure
/// leaves neither, a refused link leaves the existing target as it was, and no temp is left.
pub fn link_new(temp: &Path, target: &Path, bytes: &[u8]) -> Result<Linked, LinkError> {
    if let Err(source) = create_new(temp, bytes) {
        // Best effort: the temp may not exist (create failed) or be partial (write failed).
        let _ = std::fs::remove_file(temp);
        return Err(LinkError::Temp { path: temp.to_owned(), source });
    }
    let linked = std::fs::hard_link(temp, target);
    let _ = std::fs::remove_file(temp);
    match linked {
        Ok(()) => {
            // Make the new directory entry durable; a failure here does not undo the file.
            if let Some(dir) = target.parent().and_then(|d| std::fs::File::open(d).ok()) {
                let _ = dir.sync_all();
            }
            Ok(Linked::Written)
        }
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Ok(Linked::Exists),
        Err(source) => Err(LinkError::Link { temp: temp.to_owned(), path: target.to_owned(), source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<_> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    #[test]
    fn create_new_refuses_an_existing_file_and_keeps_it() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("marker");
        create_new(&path, b"first").unwrap();
        let err = create_new(&path, b"second").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
    }

    #[test]
    fn link_new_writes_once_then_refuses_and_leaves_no_temp() {
        let tmp = tempfile::tempdir().unwrap();
        let (temp, target) = (tmp.path().join("t.tmp"), tmp.path().join("t"));
        assert_eq!(link_new(&temp, &target, b"first").unwrap(), Linked::Written);
        assert_eq!(link_new(&temp, &target, b"second").unwrap(), Linked::Exists);
        assert_eq!(std::fs::read(&target).unwrap(), b"first");
        assert_eq!(listing(tmp.path()), ["t"]);
    }

    #[test]
    fn a_temp_that_cannot_be_made_leaves_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let (temp, target) = (tmp.path().join("gone").join("t.tmp"), tmp.path().join("t"));
        assert!(matches!(link_new(&temp, &target, b"x"), Err(LinkError::Temp { .. })));
        assert!(listing(tmp.path()).is_empty());
    }
}
