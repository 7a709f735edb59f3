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
    temp.write_all(&bytes).and_then(|_| temp.as_file().sync_all()).map_err(wrap)?;
    match std::fs::hard_link(temp.path(), &path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Err(OutputError::Exists { path }),
        Err(source) => Err(OutputError::Write { path, source }),
    }
    // `temp` is removed when dropped, on every path.
}

/// Formats nanoseconds for people: `612.3 µs`, `1.24 ms`, `2.50 s`.
pub fn human_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.1} µs", ns / 1e3)
    }
}
