//! The install marker: `installed.json` in the program files of an installed wheel
//! (`<site-packages>/decode_baseline/`, `req/install.md`), written by `tools/wheel/build.py`.
//! The launcher reads the versions it was built against from it, and every reader of a code
//! version its `code_version` ([`crate::code_version()`]).

use std::path::Path;

/// The marker's file name in the program files.
pub const INSTALL_MARKER: &str = "installed.json";

/// What the marker says; a field it lacks is `None`, one it has beyond these is ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
pub struct InstallMarker {
    /// `<commit>+wheel-<version>`, `+dirty` after the commit when built from a changed tree.
    pub code_version: Option<String>,
    /// The `mlx` version the executable was built against.
    pub mlx_version: Option<String>,
    /// The `mlx_lm` version the wheel requires.
    pub mlx_lm_version: Option<String>,
    /// The MLX backend of the environment built against (`cpu`, `cuda`, `metal`).
    pub backend: Option<String>,
}

impl InstallMarker {
    /// The marker in `dir`: `None` when it cannot be read (there is none), `Some(Err)` when it
    /// is not a JSON object of the marker's fields.
    pub fn read(dir: &Path) -> Option<Result<Self, serde_json::Error>> {
        let bytes = std::fs::read(dir.join(INSTALL_MARKER)).ok()?;
        Some(serde_json::from_slice(&bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_unreadable_and_read() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(InstallMarker::read(tmp.path()).is_none());
        std::fs::write(tmp.path().join(INSTALL_MARKER), "not json").unwrap();
        assert!(matches!(InstallMarker::read(tmp.path()), Some(Err(_))));
        let text = r#"{"package": "decode-baseline", "code_version": "c+wheel-0.1.0", "mlx_version": "0.32.4"}"#;
        std::fs::write(tmp.path().join(INSTALL_MARKER), text).unwrap();
        let marker = InstallMarker::read(tmp.path()).unwrap().unwrap();
        assert_eq!(marker.code_version.as_deref(), Some("c+wheel-0.1.0"));
        assert_eq!((marker.mlx_version.as_deref(), marker.mlx_lm_version), (Some("0.32.4"), None));
    }
}
