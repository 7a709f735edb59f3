//! What the launcher leaves behind and shows: `session.json`, written atomically and once, and
//! the summary table on the terminal.

use std::{io::Write, path::Path};

use decode_baseline_protocol::session::SessionReport;

#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("failed to write {path}")]
    Write {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} already exists; a session report is never overwritten")]
    Exists { path: std::path::PathBuf },
}

/// Writes `session.json` into `dir`: a temp file in the same folder, flushed and synced, then
/// hard-linked to the final name (which fails if it exists), then the temp removed. A failure
/// leaves neither the temp nor a partial report.
pub fn write_session(dir: &Path, report: &SessionReport) -> Result<(), OutputError> {
    let path = dir.join("session.json");
    let wrap = |source| OutputError::Write { path: path.clone(), source };
    let mut bytes = serde_json::to_vec_pretty(report).expect("session report serializes");
    bytes.push(b'\n');
    let mut temp = tempfile::Builder::new().prefix(".session.json.").tempfile_in(dir).map_err(wrap)?;
    // A temp file is private (0600); the report is for everyone who can read the folder.
    temp.as_file()
        .set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .and_then(|_| temp.write_all(&bytes))
        .and_then(|_| temp.as_file().sync_all())
        .map_err(wrap)?;
    match std::fs::hard_link(temp.path(), &path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Err(OutputError::Exists { path }),
        Err(source) => Err(OutputError::Write { path, source }),
    }
    // `temp` is removed when dropped, on every path.
}
