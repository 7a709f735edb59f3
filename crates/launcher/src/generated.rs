//! The committed files generated from the Rust types, and the one check that they are current:
//! the JSON Schemas under `schemas/` ([`decode_baseline_wire::schema`]) and the Python kit's
//! `protocol_constants.json` ([`decode_baseline_wire::constants`]).
//!
//! `cargo test --release -p decode-baseline-launcher --lib generated` fails when one is stale or missing;
//! `DECODE_BASELINE_WRITE_SCHEMAS=1` in front of it rewrites them all. (A test module only.)

use std::path::Path;

use decode_baseline_wire::{constants, schema};

/// Every generated file: its path relative to the repository, and its text now.
fn generated() -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> =
        schema::all().into_iter().map(|(name, text)| (format!("schemas/{name}"), text)).collect();
    files.push((constants::CONSTANTS_FILE.to_owned(), constants::document()));
    files
}

/// Writes the files under `repo` when `DECODE_BASELINE_WRITE_SCHEMAS=1`; otherwise returns the
/// paths whose committed text differs.
fn write_or_find_stale(repo: &Path, files: &[(String, String)]) -> Vec<String> {
    let write = std::env::var("DECODE_BASELINE_WRITE_SCHEMAS").is_ok_and(|v| v == "1");
    let mut stale = Vec::new();
    for (rel, text) in files {
        let path = repo.join(rel);
        if write {
            std::fs::create_dir_all(path.parent().expect("a file has a folder")).expect("the folder can be made");
            std::fs::write(&path, text).expect("a generated file can be written");
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            stale.push(path.display().to_string());
        }
    }
    stale
}

#[test]
fn committed_files_are_current() {
    let repo = crate::launcher::session_job::repo_root();
    let stale = write_or_find_stale(&repo, &generated());
    assert!(
        stale.is_empty(),
        "stale or missing generated files (regenerate with DECODE_BASELINE_WRITE_SCHEMAS=1 cargo test --release -p decode-baseline-launcher --lib generated): {stale:?}"
    );
}

#[test]
fn a_changed_file_is_stale_and_nothing_is_written_without_the_variable() {
    if std::env::var_os("DECODE_BASELINE_WRITE_SCHEMAS").is_some() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let files = vec![("a/x.json".to_owned(), "{}\n".to_owned()), ("y.json".to_owned(), "[]\n".to_owned())];
    std::fs::create_dir_all(tmp.path().join("a")).unwrap();
    std::fs::write(tmp.path().join("a/x.json"), "{}\n").unwrap();
    std::fs::write(tmp.path().join("y.json"), "[1]\n").unwrap();
    let stale = write_or_find_stale(tmp.path(), &files);
    assert_eq!(stale, [tmp.path().join("y.json").display().to_string()]);
    assert_eq!(std::fs::read_to_string(tmp.path().join("y.json")).unwrap(), "[1]\n");
}
