//! The code version a report records: the state of the repository a worker runs from.

use std::path::Path;

/// `git rev-parse HEAD` of `repo`, `+dirty` when `git status --porcelain` prints anything,
/// `unknown` when git cannot tell.
pub fn code_version(repo: &Path) -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(repo)
            .args(args)
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
    };
    match (git(&["rev-parse", "HEAD"]), git(&["status", "--porcelain"])) {
        (Some(head), Some(status)) => {
            format!("{}{}", head.trim(), if status.trim().is_empty() { "" } else { "+dirty" })
        }
        _ => "unknown".to_owned(),
    }
}
