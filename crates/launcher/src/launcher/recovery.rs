//! Sessions whose launcher ended without `session.json`: found by the next launcher and marked
//! `incomplete`.
//!
//! Every session folder gets `launcher.json` when it starts and `session.json` when it ends. A
//! folder with the first and not the second, found while this launcher holds the host lease,
//! belonged to a launcher that is gone (the lease would still be held otherwise): it died, or it
//! could not write `session.json` and exited 8 (`OutputFailed`); the folder cannot tell which,
//! so the words cover both. It gets a
//! `session.json` with status `incomplete`, listing the worker reports found, none of them
//! validated or used. Nothing in the folder is changed or overwritten.

use std::path::Path;

use decode_baseline_wire::session::{
    LauncherMarker, SessionReport, SessionStatus, WorkerRun, SESSION_REPORT_SCHEMA_VERSION,
};

use super::{output, validate};

pub const MARKER: &str = "launcher.json";

/// Writes `launcher.json` into a new session folder, once (create-new).
pub fn write_marker(session_dir: &Path, marker: &LauncherMarker) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(marker).expect("marker serializes");
    bytes.push(b'\n');
    decode_baseline_pins::once::create_new(&session_dir.join(MARKER), &bytes)
}

/// Marks every abandoned session below `output_root` incomplete; returns one line per session.
pub fn recover(output_root: &Path, by_session: &str, finished_utc: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(output_root) else { return Vec::new() };
    let mut lines = Vec::new();
    for dir in entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()) {
        if dir.join("session.json").exists() {
            continue;
        }
        let Ok(bytes) = std::fs::read(dir.join(MARKER)) else { continue };
        let Ok(marker) = serde_json::from_slice::<LauncherMarker>(&bytes) else {
            lines.push(format!("{}: unreadable {MARKER}, left alone", dir.display()));
            continue;
        };
        let report = SessionReport {
            schema_version: SESSION_REPORT_SCHEMA_VERSION,
            session_id: marker.session_id.clone(),
            status: SessionStatus::Incomplete,
            reference: marker.job.reference(),
            job: marker.job,
            manifest_path: marker.manifest_path,
            manifest_sha256: marker.manifest_sha256,
            model_files: None,
            host: None,
            device: None,
            lease: None,
            started_utc: marker.started_utc,
            finished_utc: finished_utc.to_owned(),
            wall_ns: 0,
            launcher_overhead_ns: 0,
            quiet_wait_ns: None,
            workers: abandoned_workers(&dir),
            analysis: None,
            problems: vec![format!(
                "the launcher (pid {}) ended without writing session.json (died, or could not write it); \
                 marked incomplete by session {by_session}",
                marker.pid
            )],
            // The marker does not record the programs; the workers of an incomplete session are
            // never used.
            unpinned: false,
            replaced_programs: Default::default(),
            energy: None,
            placement: None,
            sequential: None,
            decisions: None,
        };
        match output::write_session(&dir, &report) {
            Ok(()) => lines.push(format!(
                "{}: marked incomplete (launcher pid {} ended without writing session.json: died, or could not write it)",
                dir.display(),
                marker.pid
            )),
            Err(err) => lines.push(format!("{}: could not be marked incomplete: {err}", dir.display())),
        }
    }
    lines
}

/// The worker folders of an abandoned session (`<cell>/<adapter>-<n>`), with any report found.
fn abandoned_workers(session_dir: &Path) -> Vec<WorkerRun> {
    let folders = std::fs::read_dir(session_dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .flat_map(|cell| {
            std::fs::read_dir(cell.path())
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok())
                .map(move |w| (cell.file_name(), w.path()))
        });
    let mut runs: Vec<WorkerRun> = folders
        .filter_map(|(cell, worker_dir)| {
            let job: decode_baseline_wire::WorkerJob =
                serde_json::from_slice(&std::fs::read(worker_dir.join("job.json")).ok()?).ok()?;
            // Ranks past rank 0 of a group belong to rank 0's run.
            if job.group.as_ref().is_some_and(|g| g.rank > 0) {
                return None;
            }
            let report = validate::read_report(&worker_dir).ok();
            Some(WorkerRun {
                run_id: job.run_id,
                cell: cell.to_string_lossy().into_owned(),
                adapter: job.adapter,
                repetition: 0,
                aa: crate::schedule::is_aa_folder(&worker_dir),
                sequence: 0,
                command: Vec::new(),
                pid: report.as_ref().map(|r| r.pid),
                exit_code: None,
                signal: None,
                intervention: None,
                wall_ns: 0,
                validation_errors: vec!["not validated: the launcher ended without writing session.json".to_owned()],
                host_activity: None,
                energy: None,
                report,
                ranks: Vec::new(),
            })
        })
        .collect();
    runs.sort_by(|a, b| a.run_id.cmp(&b.run_id));
    runs
}
