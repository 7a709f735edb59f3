//! The manifest's pin file: where it lives (`<manifest name>.sha256` beside the manifest) and
//! its one line, in `sha256sum` format. Rules only, no I/O: reading the pin and checking the
//! manifest against it are [`crate::manifest_pin`]'s, and a mismatch's message
//! ([`crate::PinProblem::ManifestPin`]) names the file by the same rule.

use std::path::{Path, PathBuf};

use decode_baseline_wire::Sha256Digest;

/// The file name of the manifest's pin, beside the manifest: `<manifest name>.sha256`.
pub fn pin_path(manifest_path: &Path) -> PathBuf {
    let mut name = manifest_path.file_name().unwrap_or_default().to_owned();
    name.push(".sha256");
    manifest_path.with_file_name(name)
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
}
