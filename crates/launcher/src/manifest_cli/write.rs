//! Writing the manifest and its pin: stable pretty JSON, written atomically.

use std::{io::Write, path::Path};

use anyhow::{ensure, Context};
use decode_baseline_wire::manifest::Manifest;

/// The manifest as written: pretty JSON (two-space indent, fields in declaration order) with
/// arrays of numbers kept on one line, and a final newline.
pub fn manifest_json(manifest: &Manifest) -> String {
    collapse_number_arrays(&serde_json::to_string_pretty(manifest).expect("a manifest serializes"))
}

/// Rewrites serde_json's pretty output so that an array whose items are all numbers sits on
/// one line (`[1, 2, 3]`); everything else is left as it was.
fn collapse_number_arrays(pretty: &str) -> String {
    let mut out = String::with_capacity(pretty.len());
    let lines: Vec<&str> = pretty.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.ends_with('[') {
            // Find the closing bracket; collapse if everything between is a number.
            let mut j = i + 1;
            let mut items = Vec::new();
            while j < lines.len() {
                let item = lines[j].trim();
                if item == "]" || item == "]," {
                    break;
                }
                let number = item.strip_suffix(',').unwrap_or(item);
                if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit() || b == b'-' || b == b'.') {
                    items.clear();
                    j = usize::MAX;
                    break;
                }
                items.push(number);
                j += 1;
            }
            if j < lines.len() {
                out.push_str(line);
                out.push_str(&items.join(", "));
                out.push_str(lines[j].trim());
                out.push('\n');
                i = j + 1;
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
        i += 1;
    }
    out
}

/// Writes the manifest atomically and returns the bytes written.
pub fn write_manifest(path: &Path, manifest: &Manifest) -> anyhow::Result<Vec<u8>> {
    let text = manifest_json(manifest);
    // What is written must read back as the same manifest.
    let reparsed: Manifest = serde_json::from_str(&text).context("the written manifest does not parse back")?;
    ensure!(reparsed == *manifest, "the written manifest does not read back as the same manifest");
    write_atomically(path, text.as_bytes())?;
    Ok(text.into_bytes())
}

/// Writes `bytes` to `path` through a temp file in the same folder and a rename, so a reader
/// sees the old file or the new one, never a part.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path.parent().context("the target has no folder")?;
    let mut temp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("failed to create a temp file in {}", dir.display()))?;
    temp.write_all(bytes).with_context(|| format!("failed to write {}", temp.path().display()))?;
    // A temp file is created 0600; a manifest and its pin are for anyone who can read the folder.
    temp.as_file()
        .set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .with_context(|| format!("failed to set the permissions of {}", temp.path().display()))?;
    temp.as_file().sync_all().with_context(|| format!("failed to sync {}", temp.path().display()))?;
    temp.persist(path).with_context(|| format!("failed to rename into {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_arrays_are_kept_on_one_line_and_the_rest_is_pretty() {
        let value = serde_json::json!({"a": [1, 2, 3], "b": [{"c": [4]}], "d": [], "e": ["x", "y"]});
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        let collapsed = collapse_number_arrays(&pretty);
        assert_eq!(
            collapsed,
            "{\n  \"a\": [1, 2, 3],\n  \"b\": [\n    {\n      \"c\": [4]\n    }\n  ],\n  \"d\": [],\n  \"e\": [\n    \"x\",\n    \"y\"\n  ]\n}\n"
        );
        let back: serde_json::Value = serde_json::from_str(&collapsed).unwrap();
        assert_eq!(back, value);
    }
}
