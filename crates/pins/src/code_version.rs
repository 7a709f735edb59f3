//! The code version a report records: the state of the repository a worker runs from, or of the
//! installed program files when it runs from an installed wheel (`req/install.md`).

use std::path::Path;

use crate::install_marker::InstallMarker;

/// The marker's `code_version` when `repo` holds an [`INSTALL_MARKER`](crate::INSTALL_MARKER); else `git rev-parse
/// HEAD` of `repo`, `+dirty` when `git status --porcelain` prints anything; `unknown` when
/// neither can tell.
pub fn code_version(repo: &Path) -> String {
    if let Some(marker) = InstallMarker::read(repo) {
        return marker.ok().and_then(|m| m.code_version).unwrap_or_else(|| "unknown".to_owned());
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::INSTALL_MARKER;

    #[test]
    fn an_installed_tree_gives_its_marked_version_and_a_bare_folder_unknown() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(code_version(tmp.path()), "unknown");
        std::fs::write(tmp.path().join(INSTALL_MARKER), r#"{"code_version": "64147c8+wheel-0.1.0"}"#).unwrap();
        assert_eq!(code_version(tmp.path()), "64147c8+wheel-0.1.0");
        std::fs::write(tmp.path().join(INSTALL_MARKER), "{}").unwrap();
        assert_eq!(code_version(tmp.path()), "unknown");
    }
}
