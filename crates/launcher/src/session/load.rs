//! Reading a session report given as `session.json` or as the session folder holding it.

use std::path::{Path, PathBuf};

use decode_baseline_wire::session::{
    SessionReport, SESSION_REPORT_OLDEST_SCHEMA_VERSION, SESSION_REPORT_SCHEMA_VERSION,
};

use super::{upgrade, ReadError};

/// A parsed session report and where it was read from.
#[derive(Debug, Clone)]
pub struct LoadedSession {
    /// The `session.json` file that was read.
    pub path: PathBuf,
    pub report: SessionReport,
}

impl LoadedSession {
    /// The session folder (where plots go by default).
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }
}

/// Reads `arg`: a `session.json`, or a folder holding one. The schema version is checked before
/// the strict parse, so a report from another version says so instead of naming a field. Every
/// version from [`SESSION_REPORT_OLDEST_SCHEMA_VERSION`] on is read: an older one is converted
/// to the current version first (`upgrade`), then parsed by the same strict types.
pub fn load_session(arg: &Path) -> Result<LoadedSession, ReadError> {
    let path = if arg.is_dir() { arg.join("session.json") } else { arg.to_owned() };
    let bytes = std::fs::read(&path).map_err(|source| ReadError::Read { path: path.clone(), source })?;
    let mut value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|source| ReadError::Parse { path: path.clone(), source })?;
    let readable = u64::from(SESSION_REPORT_OLDEST_SCHEMA_VERSION)..=u64::from(SESSION_REPORT_SCHEMA_VERSION);
    match value.get("schema_version").and_then(serde_json::Value::as_u64) {
        Some(v) if v < u64::from(SESSION_REPORT_SCHEMA_VERSION) && readable.contains(&v) => {
            upgrade::to_current(&mut value).map_err(|detail| ReadError::Upgrade {
                path: path.clone(),
                version: v,
                detail,
            })?;
        }
        Some(v) if readable.contains(&v) => {}
        other => {
            return Err(ReadError::SchemaVersion {
                path,
                expected: readable.map(|v| v.to_string()).collect::<Vec<_>>().join(" or "),
                actual: other.map_or_else(
                    || value.get("schema_version").map_or("nothing".to_owned(), |v| v.to_string()),
                    |v| v.to_string(),
                ),
            })
        }
    }
    let report = serde_json::from_value(value).map_err(|source| ReadError::Parse { path: path.clone(), source })?;
    Ok(LoadedSession { path, report })
}
