//! The manifest and its pin: reading `workloads.json` (its version before its fields) and
//! checking its bytes against `<manifest>.sha256` beside it (that file's name and format are
//! [`crate::pin_file`]'s).

use std::{fs, path::Path};

use decode_baseline_wire::{
    manifest::{Manifest, MANIFEST_SCHEMA_VERSION},
    Sha256Digest,
};

use crate::{
    error::{PinError, PinProblem},
    pin_file::{parse_pin, pin_path},
};

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
    use crate::pin_file::pin_text;

    #[test]
    fn a_manifest_that_does_not_match_its_pin_names_both_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("workloads.json");
        fs::write(pin_path(&path), pin_text(&path, b"pinned")).unwrap();
        assert_eq!(verify_pin(&path, b"pinned").unwrap(), Sha256Digest::of_bytes(b"pinned"));
        let err = verify_pin(&path, b"edited").unwrap_err();
        let message = format!(
            "manifest {} does not match its pin {}: expected sha256 {}, found {} (edited without `manifest pin`?)",
            path.display(),
            dir.path().join("workloads.json.sha256").display(),
            Sha256Digest::of_bytes(b"pinned"),
            Sha256Digest::of_bytes(b"edited"),
        );
        assert_eq!(err.to_string(), message);
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
