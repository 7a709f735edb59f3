//! A session's id and its folder, and the UTC stamps a session is named and dated by.

use std::{
    path::{Path, PathBuf},
    time::SystemTime,
};

/// A new session's id: its UTC start stamp and the launcher's pid.
pub(super) fn session_id(started_utc: &str) -> String {
    format!("{}-{}", started_utc.replace([':', '-'], ""), std::process::id())
}

/// A new, empty session folder below `root`, named as `run` names its own.
pub fn new_session_dir(root: &Path) -> anyhow::Result<PathBuf> {
    create_session_dir(root, &session_id(&utc_now()))
}

/// Creates `<root>/<id>`, refusing to reuse an existing folder. The root itself may be created.
/// Returns the canonical path, so that every path printed and recorded is absolute and free of
/// `..` (a job in `jobs/` with `output_root: "../out"`).
pub(super) fn create_session_dir(root: &Path, id: &str) -> anyhow::Result<PathBuf> {
    let cannot = || format!("output_root {} cannot be created; expected a writable folder", root.display());
    std::fs::create_dir_all(root).map_err(|err| io_failure(err, cannot()))?;
    let dir = root.canonicalize().map_err(|err| io_failure(err, cannot()))?.join(id);
    std::fs::create_dir(&dir).map_err(|err| {
        io_failure(err, format!("failed to create session folder {} (output_root must be writable)", dir.display()))
    })?;
    Ok(dir)
}

/// An I/O error on a folder the job named: the input's fault (exit 2) when the folder is not
/// one the user may write (permissions, a read-only file system, a file in the way), anything
/// else (a full disk, an I/O error) unexpected (exit 9).
pub(super) fn io_failure(err: std::io::Error, what: String) -> anyhow::Error {
    use std::io::ErrorKind::*;
    match err.kind() {
        PermissionDenied | ReadOnlyFilesystem | NotADirectory | AlreadyExists | NotFound => {
            crate::exit::bad_input(format!("{what}: {err}"))
        }
        _ => anyhow::Error::new(err).context(what),
    }
}

/// Now, as an RFC 3339 UTC stamp to the second.
pub(super) fn utc_now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}
