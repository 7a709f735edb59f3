//! Which files are "the worker sources", by rule, and which repository paths are acceptable.
//!
//! The sets are defined by a rule, not a list, so that adding or removing a file is detected:
//!
//! * **stock**: every member (see [`crate::freeze`]) of the trees `tools/stock/` and
//!   `tools/kit/python/` (the Python worker kit the stock worker is built on).
//! * **controlled**: every member of the trees of [`CONTROLLED_CRATES`] (the crates the
//!   controlled worker is built from) whose name ends in `.rs` or is `Cargo.toml` (build scripts
//!   are `.rs`), every member of `crates/mlx-sys/native/`, and `Cargo.lock` (the resolved
//!   versions the controlled worker is built from, mlx-rs among them). The root package's
//!   `worker` subcommand only calls the controlled crate's entry point, so it is not a source.
//!
//! * **a declared adapter** (`adapters.<name>` in the manifest): every member of each folder
//!   named in its `sources`, and each file named there, relative to the manifest's folder.
//!
//! A folder of a rule that does not exist contributes nothing; an empty set is an error of the
//! guard, not of the rule. Keys are `/`-separated paths relative to the adapter's
//! [`sources_root`].

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
};

use decode_baseline_wire::{
    source_rule::{CONTROLLED_CRATES, CONTROLLED_FILES, CONTROLLED_WHOLE_TREES, STOCK_ROOTS},
    Adapter,
};

use crate::freeze::{list_tree, TreeError};

/// The folder `adapter`'s pinned sources are relative to: the repository for the built-in
/// adapters, the manifest's folder for a declared one (the same folder for the repository's own
/// `workloads.json`). It is what a worker job's `repo_root` names.
pub fn sources_root(adapter: &Adapter, repo: &Path, manifest_path: &Path) -> PathBuf {
    if adapter.is_built_in() {
        repo.to_owned()
    } else {
        manifest_path.parent().map_or_else(|| PathBuf::from("."), Path::to_owned)
    }
}

/// `adapter`'s worker source files by its rule, relative to `root` (its [`sources_root`]),
/// sorted: for a declared adapter, the files and the members of the folders of `declared` (its
/// `sources`), which the built-ins' fixed rules do not read.
pub fn adapter_sources(adapter: &Adapter, root: &Path, declared: &[String]) -> Result<BTreeSet<String>, TreeError> {
    match adapter {
        Adapter::Stock => stock_sources(root),
        Adapter::Controlled => controlled_sources(root),
        Adapter::Declared(_) => {
            let mut out = BTreeSet::new();
            for entry in declared {
                let path = root.join(entry);
                match path.symlink_metadata() {
                    Ok(meta) if meta.is_dir() => out.extend(tree_members(root, entry, |_| true)?),
                    Ok(meta) if meta.is_file() => {
                        out.insert(entry.clone());
                    }
                    // A link (or a device, a socket) in place of a source could point anywhere.
                    Ok(meta) => {
                        let kind = if meta.file_type().is_symlink() { "symbolic link" } else { "special file" };
                        return Err(TreeError::NotRegular { path, kind });
                    }
                    Err(_) => {}
                }
            }
            Ok(out)
        }
    }
}

/// The stock worker's source files under `repo`, sorted.
pub fn stock_sources(repo: &Path) -> Result<BTreeSet<String>, TreeError> {
    let mut out = BTreeSet::new();
    for root in STOCK_ROOTS {
        out.extend(tree_members(repo, root, |_| true)?);
    }
    Ok(out)
}

/// The controlled worker's source files under `repo`, sorted.
pub fn controlled_sources(repo: &Path) -> Result<BTreeSet<String>, TreeError> {
    let is_rust = |name: &str| name.ends_with(".rs") || name == "Cargo.toml";
    let mut out = BTreeSet::new();
    for root in CONTROLLED_CRATES {
        out.extend(tree_members(repo, root, is_rust)?);
    }
    for root in CONTROLLED_WHOLE_TREES {
        out.extend(tree_members(repo, root, |_| true)?);
    }
    for file in CONTROLLED_FILES {
        let path = repo.join(file);
        // symlink_metadata: a link in place of a source is not followed (the guard reports it).
        if path.symlink_metadata().is_ok() {
            out.insert((*file).to_owned());
        }
    }
    Ok(out)
}

/// Members of `repo/root` whose file name satisfies `keep`, as repository-relative paths.
fn tree_members(repo: &Path, root: &str, keep: impl Fn(&str) -> bool) -> Result<BTreeSet<String>, TreeError> {
    let dir = repo.join(root);
    if !dir.is_dir() {
        return Ok(BTreeSet::new());
    }
    Ok(list_tree(&dir)?
        .into_iter()
        .filter(|rel| keep(rel.rsplit('/').next().unwrap_or_default()))
        .map(|rel| format!("{root}/{rel}"))
        .collect())
}

/// Why a repository-relative path is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathRefusal {
    Empty,
    Absolute,
    Backslash,
    /// An empty, `.` or `..` component.
    NotNormal,
}

impl PathRefusal {
    pub fn as_str(self) -> &'static str {
        match self {
            PathRefusal::Empty => "is empty",
            PathRefusal::Absolute => "is absolute",
            PathRefusal::Backslash => "contains a backslash",
            PathRefusal::NotNormal => "has an empty, `.` or `..` component",
        }
    }
}

/// Checks that `rel` is a normal repository-relative path: not empty, not absolute, `/`
/// separators only, and no empty, `.` or `..` component. Such a path cannot name anything
/// outside the repository except through a symbolic link, which callers check separately.
pub fn check_relative(rel: &str) -> Result<(), PathRefusal> {
    if rel.is_empty() {
        Err(PathRefusal::Empty)
    } else if rel.starts_with('/') {
        Err(PathRefusal::Absolute)
    } else if rel.contains('\\') {
        Err(PathRefusal::Backslash)
    } else if rel.split('/').any(|part| part.is_empty() || part == "." || part == "..") {
        Err(PathRefusal::NotNormal)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn relative_paths_must_be_normal() {
        assert_eq!(check_relative("tools/stock/worker.py"), Ok(()));
        assert_eq!(check_relative(""), Err(PathRefusal::Empty));
        assert_eq!(check_relative("/etc/passwd"), Err(PathRefusal::Absolute));
        assert_eq!(check_relative("../outside.py"), Err(PathRefusal::NotNormal));
        assert_eq!(check_relative("tools/../../x"), Err(PathRefusal::NotNormal));
        assert_eq!(check_relative("tools//x"), Err(PathRefusal::NotNormal));
        assert_eq!(check_relative("./x"), Err(PathRefusal::NotNormal));
        assert_eq!(check_relative("tools\\x"), Err(PathRefusal::Backslash));
    }

    #[test]
    fn rules_pick_the_worker_files_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        let files = [
            "tools/stock/worker.py",
            "tools/stock/lib/helpers.py",
            "tools/stock/__pycache__/worker.cpython-311.pyc",
            "tools/kit/python/decode_baseline_worker.py",
            "tools/kit/README.md",
            "tools/manifest/derive_case.py",
            "crates/wire/Cargo.toml",
            "crates/wire/src/lib.rs",
            "crates/wire/README.md",
            "crates/pins/src/error.rs",
            "crates/worker-runtime/src/run.rs",
            "crates/mlx-sys/build.rs",
            "crates/mlx-sys/native/shim.h",
            "crates/controlled/src/lib.rs",
            "src/worker.rs",
            "src/worker/step.rs",
            "src/launcher.rs",
            "Cargo.lock",
            "Cargo.toml",
        ];
        for file in files {
            fs::create_dir_all(repo.join(file).parent().unwrap()).unwrap();
            fs::write(repo.join(file), file).unwrap();
        }
        let stock: Vec<_> = stock_sources(repo).unwrap().into_iter().collect();
        assert_eq!(
            stock,
            ["tools/kit/python/decode_baseline_worker.py", "tools/stock/lib/helpers.py", "tools/stock/worker.py"]
        );
        let controlled: Vec<_> = controlled_sources(repo).unwrap().into_iter().collect();
        assert_eq!(
            controlled,
            [
                "Cargo.lock",
                "crates/controlled/src/lib.rs",
                "crates/mlx-sys/build.rs",
                "crates/mlx-sys/native/shim.h",
                "crates/pins/src/error.rs",
                "crates/wire/Cargo.toml",
                "crates/wire/src/lib.rs",
                "crates/worker-runtime/src/run.rs",
            ]
        );
    }

    /// The controlled worker's rule names exactly the crates of this repository it is built
    /// from: the workspace members reachable from `decode-baseline-controlled` through normal and
    /// build dependencies (not dev ones), read from `cargo metadata --no-deps`.
    ///
    /// `--no-deps` reads only the workspace's own manifests, so the answer does not depend on
    /// what the Cargo registry happens to hold (a full `cargo metadata --offline` needs every
    /// package of `Cargo.lock` for every platform, which a Linux build never downloads). A
    /// dependency is the workspace's own when it is a path dependency or when the workspace
    /// patches it with a member of the same name (`[patch.crates-io] mlx-sys`).
    #[test]
    fn controlled_crates_are_the_workers_build() {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap();
        let out = std::process::Command::new(env!("CARGO"))
            .args(["metadata", "--format-version", "1", "--no-deps", "--offline", "--manifest-path"])
            .arg(repo.join("Cargo.toml"))
            .output()
            .unwrap();
        assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
        let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let members = meta["packages"].as_array().unwrap();
        let folder = |package: &serde_json::Value| {
            let manifest = std::path::Path::new(package["manifest_path"].as_str().unwrap());
            manifest.parent().unwrap().strip_prefix(&repo).unwrap().to_string_lossy().into_owned()
        };
        let member = |name: &str| members.iter().find(|p| p["name"] == name);
        let root = members.iter().find(|p| folder(p) == "crates/controlled").unwrap();
        let (mut seen, mut todo) = (BTreeSet::new(), vec![root]);
        while let Some(package) = todo.pop() {
            if !seen.insert(folder(package)) {
                continue;
            }
            for dep in package["dependencies"].as_array().unwrap() {
                if dep["kind"] == "dev" {
                    continue;
                }
                if let Some(local) = member(dep["name"].as_str().unwrap()) {
                    todo.push(local);
                }
            }
        }
        let rule: BTreeSet<String> = CONTROLLED_CRATES.iter().map(|c| (*c).to_owned()).collect();
        assert_eq!(seen, rule, "CONTROLLED_CRATES (wire's source_rule.rs) must be the crates the worker is built from");
    }
}
