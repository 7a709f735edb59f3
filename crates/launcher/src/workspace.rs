//! The workspace: the folder of a user's manifest (`workloads.json`, with its pin), jobs
//! (`jobs/`) and sessions (`out/`), apart from the program files the launcher serves
//! (`req/install.md`). `decode-baseline init DIR` writes one; a checkout of the repository is one.
//!
//! Which workspace a command works in: `--workspace DIR` (which the binary passes on as
//! `$DECODE_BASELINE_WORKSPACE`), else the nearest folder at or above the current one that is a
//! workspace (it holds `workloads.json` and a `jobs/` folder), else the served checkout. A job
//! whose `manifest` is null runs on the manifest of the workspace its file lies in (the nearest
//! such folder above it), else on the served checkout's.

use std::path::{Path, PathBuf};

use crate::checkout::MANIFEST_NAME;

/// Environment variable naming the workspace (`--workspace`).
pub const WORKSPACE_ENV: &str = "DECODE_BASELINE_WORKSPACE";
/// The workspace's folder of session jobs.
pub const JOBS_DIR: &str = "jobs";
/// The workspace's output root, where the jobs `init` writes put their sessions.
pub const OUT_DIR: &str = "out";

/// Whether `dir` is a workspace: it holds the manifest and a jobs folder.
pub fn is_workspace(dir: &Path) -> bool {
    dir.join(MANIFEST_NAME).is_file() && dir.join(JOBS_DIR).is_dir()
}

/// The nearest workspace at or above `dir`.
pub fn enclosing(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find(|d| is_workspace(d)).map(Path::to_owned)
}

/// The workspace this command works in (see the module documentation).
pub fn current() -> PathBuf {
    if let Some(dir) = std::env::var_os(WORKSPACE_ENV).filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    let cwd = std::env::current_dir().ok();
    cwd.as_deref().and_then(enclosing).unwrap_or_else(crate::checkout::repo_root)
}

/// The workspace's output root, the default of every command that writes or reads sessions
/// there (`bench`, `history`, `calibrate`).
pub fn output_root() -> PathBuf {
    current().join(OUT_DIR)
}

/// The manifest a job file at `job_path` runs on when it names none: its workspace's, else the
/// served checkout's.
pub fn default_manifest(job_path: &Path) -> PathBuf {
    let job_dir = std::path::absolute(job_path).ok().and_then(|p| p.parent().map(Path::to_owned));
    let root = job_dir.as_deref().and_then(enclosing).unwrap_or_else(crate::checkout::repo_root);
    root.join(MANIFEST_NAME)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workspace_is_a_manifest_beside_a_jobs_folder_found_upward() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(ws.join("jobs/nested")).unwrap();
        assert_eq!(enclosing(&ws.join("jobs/nested")), None, "no manifest yet");
        std::fs::write(ws.join(MANIFEST_NAME), "{}").unwrap();
        assert_eq!(enclosing(&ws.join("jobs/nested")), Some(ws.clone()));
        assert_eq!(default_manifest(&ws.join("jobs/smoke.json")), ws.join(MANIFEST_NAME));
        // A manifest alone (a test's, or bench's session folder) is not a workspace.
        let bare = tmp.path().join("bare");
        std::fs::create_dir_all(&bare).unwrap();
        std::fs::write(bare.join(MANIFEST_NAME), "{}").unwrap();
        assert!(!is_workspace(&bare));
    }
}
