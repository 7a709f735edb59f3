//! The manifest and its pin: reading `workloads.json` (its version before its fields) and
//! checking its bytes against `<manifest>.sha256` beside it.

use std::{
    fs,
    path::{Path, PathBuf},
};

use decode_baseline_wire::{
    manifest::{Manifest, MANIFEST_SCHEMA_VERSION},
    Sha256Digest,
};

use crate::error::{PinError, PinProblem};

/// The file name of the manifest's pin, beside the manifest: `<manifest name>.sha256`.
pub fn pin_path(manifest_path: &Path) -> PathBuf {
    let mut name = manifest_path.file_name().unwrap_or_default().to_owned();
    name.push(".sha256");
    manifest_path.with_file_name(name)
}

/// Reads and parses the manifest: an unknown `schema_version` is refused before the fields are
/// looked at (a newer manifest is a version error, not an unknown-field error); unknown fields
/// are refused. Returns the manifest and the exact bytes read, which the pin is over.
pub fn load_manifest(path: &Path) -> Result<(Manifest, Vec<u8>), PinError> {
    #[derive(serde::Deserialize)]
    struct Version {
        schema_version: u32,
    }
    let bytes = fs::read(path)
        .map_err(|source| PinError::of_manifest(PinProblem::ManifestRead { path: path.to_owned(), source }))?;
    let parse = |source| PinError::of_manifest(PinProblem::ManifestParse { path: path.to_owned(), source });
    let version: Version = serde_json::from_slice(&bytes).map_err(parse)?;
    if version.schema_version != MANIFEST_SCHEMA_VERSION {
        return Err(PinError::of_manifest(PinProblem::SchemaVersion {
            path: path.to_owned(),
            expected: MANIFEST_SCHEMA_VERSION,
            actual: version.schema_version,
        }));
    }
    let manifest = serde_json::from_slice(&bytes).map_err(parse)?;
    Ok((manifest, bytes))
}

/// The text of a pin file for a manifest with these bytes: `sha256sum` output.
pub fn pin_text(manifest_path: &Path, manifest_bytes: &[u8]) -> String {
    let name = manifest_path.file_name().unwrap_or_default().to_string_lossy();
    format!("{}  {name}\n", Sha256Digest::of_bytes(manifest_bytes))
}

/// Parses a pin file: exactly one line `<64 lowercase hex><two spaces><manifest file name>`,
/// with or without a final newline.
pub fn parse_pin(text: &str, expected_name: &str) -> Option<Sha256Digest> {
    let line = text.strip_suffix('\n').unwrap_or(text);
    let (hex, name) = line.split_once("  ")?;
    if name != expected_name || line.contains('\n') {
        return None;
    }
    hex.parse().ok()
}

/// The manifest's digest as pinned beside it.
pub fn read_pin(manifest_path: &Path) -> Result<Sha256Digest, PinError> {
    let pin = pin_path(manifest_path);
    let text = fs::read_to_string(&pin)
        .map_err(|source| PinError::of_manifest(PinProblem::PinRead { path: pin.clone(), source }))?;
    let name = manifest_path.file_name().unwrap_or_default().to_string_lossy().into_owned();
    parse_pin(&text, &name).ok_or_else(|| {
        PinError::of_manifest(PinProblem::PinFormat {
            path: pin,
            expected_name: name,
            line: text.lines().next().unwrap_or_default().to_owned(),
        })
    })
}

/// Checks the manifest bytes against the pin beside the manifest.
pub fn verify_pin(manifest_path: &Path, manifest_bytes: &[u8]) -> Result<Sha256Digest, PinError> {
    let expected = read_pin(manifest_path)?;
    let actual = Sha256Digest::of_bytes(manifest_bytes);
    if actual != expected {
        return Err(PinError::of_manifest(PinProblem::ManifestPin {
            path: manifest_path.to_owned(),
            expected,
            actual,
        }));
    }
    Ok(actual)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_lines_are_sha256sum_format() {
        let d = Sha256Digest::of_bytes(b"m");
        assert_eq!(parse_pin(&format!("{d}  workloads.json\n"), "workloads.json"), Some(d));
        assert_eq!(parse_pin(&format!("{d}  workloads.json"), "workloads.json"), Some(d));
        assert_eq!(parse_pin(&format!("{d} workloads.json\n"), "workloads.json"), None);
        assert_eq!(parse_pin(&format!("{d}  other.json\n"), "workloads.json"), None);
        assert_eq!(parse_pin(&format!("{d}  workloads.json\n{d}  workloads.json\n"), "workloads.json"), None);
        assert_eq!(parse_pin("abc  workloads.json\n", "workloads.json"), None);
        assert_eq!(pin_text(Path::new("/r/workloads.json"), b"m"), format!("{d}  workloads.json\n"));
        assert_eq!(pin_path(Path::new("/r/workloads.json")), Path::new("/r/workloads.json.sha256"));
    }

    #[test]
    fn unknown_version_is_a_version_error_and_unknown_fields_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("workloads.json");
        fs::write(&path, br#"{"schema_version": 2, "whatever": 1}"#).unwrap();
        assert!(matches!(
            load_manifest(&path),
            Err(PinError { problem: PinProblem::SchemaVersion { expected: 1, actual: 2, .. }, .. })
        ));
        fs::write(&path, br#"{"schema_version": 1, "whatever": 1}"#).unwrap();
        let err = load_manifest(&path).unwrap_err();
        assert!(matches!(err.problem, PinProblem::ManifestParse { .. }) && err.is_bad_input());
        let source = std::error::Error::source(&err).unwrap().to_string();
        assert!(source.contains("unknown field `whatever`"), "{source}");
    }
}
