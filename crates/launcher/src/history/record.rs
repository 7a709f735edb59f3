//! Recording sessions: the session's rows as it stored them (or tested now, for a session written
//! before rows were stored) turned into points and written to the history of its output root.

use std::path::{Path, PathBuf};

use decode_baseline_wire::session::SessionReport;

use super::entry::{point_entries, session_entry};
use super::store::{Store, FILE};

/// The history database of the output root `root`.
pub fn database_in(root: &Path) -> PathBuf {
    root.join(FILE)
}

/// The output root of a session folder: the folder that holds it.
pub fn root_of(session_dir: &Path) -> PathBuf {
    session_dir.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Records `session` (read from or written to `session_dir`) in `store`; returns how many points
/// it added.
pub fn record(store: &mut Store, session_dir: &Path, session: &SessionReport) -> anyhow::Result<usize> {
    let rows = crate::compare::default_rows(session);
    let entry = session_entry(session, &session_dir.display().to_string());
    let points = point_entries(&rows, &entry);
    store.record(&entry, &points)?;
    Ok(points.len())
}

/// Records a session the launcher just finished in its output root's history; a failure is a
/// warning (the session itself is complete), returned as its text.
pub fn record_finished(session_dir: &Path, session: &SessionReport) -> Result<usize, String> {
    let db = database_in(&root_of(session_dir));
    Store::open(&db)
        .and_then(|mut store| record(&mut store, session_dir, session))
        .map_err(|e| format!("history {} not updated: {e:#}", db.display()))
}
