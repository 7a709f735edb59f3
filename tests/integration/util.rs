//! Shared helpers for the integration tests: where things are, how to run them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root (the root package's manifest folder).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pinned environment's interpreter, provisioning the environment if needed.
pub fn venv_python() -> PathBuf {
    let out = Command::new("python3")
        .arg(repo_root().join("tools/env/provision.py"))
        .output()
        .expect("run provision.py");
    assert!(
        out.status.success(),
        "provisioning failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8(out.stdout).unwrap();
    let python = line
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("python="))
        .expect("python= in provision output");
    PathBuf::from(python)
}

/// The decode-baseline binary of this build.
pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_decode-baseline"))
}

/// Runs a command, returning its output; panics only if it cannot start.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|err| panic!("failed to start {cmd:?}: {err}"))
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every file below `dir`, relative, sorted, with its bytes.
pub fn snapshot_tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = walk(dir)
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            (path.strip_prefix(dir).unwrap().to_owned(), bytes)
        })
        .collect();
    files.sort();
    files
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
