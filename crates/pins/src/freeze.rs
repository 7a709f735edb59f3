//! File-tree rules shared by every pin: which files a folder holds, and the canonical
//! "source freeze" digest over such a set.
//!
//! The rules are written out in `req/manifest.md` so that the Python stock worker can
//! re-implement them byte for byte:
//!
//! * A tree is listed recursively; every regular file is a member, named by its path relative to
//!   the tree root with `/` separators, except Python bytecode caches (a `*.pyc` file whose parent
//!   folder is named `__pycache__`). Bytecode caches are written by the interpreter on import,
//!   embed the source's mtime, and come and go with `PYTHONDONTWRITEBYTECODE`: hashing them would
//!   make the freeze depend on whether and when Python ran, not on what is installed. The sources
//!   they are compiled from are hashed.
//! * A symbolic link, a device, a socket or a non-UTF-8 name inside a tree is an error: a pin is
//!   of regular files only, and a link could point anywhere.
//! * Members are sorted by the bytes of their UTF-8 relative path (what Python's `sorted` does on
//!   `str`).
//! * The freeze digest of a set is SHA-256 over the concatenation, in that order, of one record
//!   per member: `path`, a NUL byte, the member's SHA-256 as 64 lowercase hex characters, `\n`.

use std::{
    fs,
    path::{Path, PathBuf},
};

use decode_baseline_wire::{digest::freeze_records, Sha256Digest};

use crate::file_digest::{of_file, DigestIoError};

/// A tree that cannot be listed or hashed under the rules above.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("failed to list {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is a {kind}, not a regular file or folder (trees hold regular files only)")]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("{path} has a name that is not UTF-8")]
    NotUtf8 { path: PathBuf },
    #[error(transparent)]
    Hash(#[from] DigestIoError),
}

/// True for a Python bytecode cache file: `*.pyc` directly inside a `__pycache__` folder.
pub fn is_bytecode_cache(rel: &str) -> bool {
    let mut parts = rel.rsplit('/');
    let name = parts.next().unwrap_or_default();
    let parent = parts.next().unwrap_or_default();
    parent == "__pycache__" && name.ends_with(".pyc")
}

/// Every member of the tree at `root`, as sorted relative paths (see the module docs).
pub fn list_tree(root: &Path) -> Result<Vec<String>, TreeError> {
    let mut out = Vec::new();
    walk(root, "", &mut out)?;
    out.retain(|rel| !is_bytecode_cache(rel));
    out.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    Ok(out)
}

fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) -> Result<(), TreeError> {
    let read = |source| TreeError::Read { path: dir.to_owned(), source };
    for entry in fs::read_dir(dir).map_err(read)? {
        let entry = entry.map_err(read)?;
        let path = entry.path();
        let name = entry.file_name().into_string().map_err(|_| TreeError::NotUtf8 { path: path.clone() })?;
        let rel = if prefix.is_empty() { name } else { format!("{prefix}/{name}") };
        // file_type() does not follow symbolic links, which is the point.
        let kind = entry.file_type().map_err(|source| TreeError::Read { path: path.clone(), source })?;
        if kind.is_dir() {
            walk(&path, &rel, out)?;
        } else if kind.is_file() {
            out.push(rel);
        } else {
            let kind = if kind.is_symlink() { "symbolic link" } else { "special file" };
            return Err(TreeError::NotRegular { path, kind });
        }
    }
    Ok(())
}

/// The SHA-256 of each member of the tree at `root`, in canonical order.
pub fn hash_tree(root: &Path) -> Result<Vec<(String, Sha256Digest)>, TreeError> {
    list_tree(root)?
        .into_iter()
        .map(|rel| {
            let digest = of_file(&root.join(&rel))?;
            Ok((rel, digest))
        })
        .collect()
}

/// The freeze of a tree: its digest and how many files it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Freeze {
    /// SHA-256 of [`freeze_records`] over the tree's members.
    pub digest: Sha256Digest,
    /// Number of member files.
    pub files: usize,
}

/// Lists, hashes and freezes the tree at `root`.
pub fn freeze_tree(root: &Path) -> Result<Freeze, TreeError> {
    let members = hash_tree(root)?;
    Ok(Freeze { digest: Sha256Digest::of_bytes(&freeze_records(&members)), files: members.len() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytecode_caches_are_only_pyc_inside_pycache() {
        assert!(is_bytecode_cache("__pycache__/a.cpython-311.pyc"));
        assert!(is_bytecode_cache("models/__pycache__/qwen3.cpython-311.pyc"));
        assert!(!is_bytecode_cache("models/qwen3.pyc"));
        assert!(!is_bytecode_cache("__pycache__/notes.txt"));
        assert!(!is_bytecode_cache("a.py"));
    }

    #[test]
    fn tree_is_sorted_by_bytes_skips_caches_and_refuses_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("sub/__pycache__")).unwrap();
        fs::write(root.join("b.py"), b"b").unwrap();
        fs::write(root.join("B.py"), b"B").unwrap();
        fs::write(root.join("sub/a.py"), b"a").unwrap();
        fs::write(root.join("sub/__pycache__/a.cpython-311.pyc"), b"cache").unwrap();
        assert_eq!(list_tree(root).unwrap(), ["B.py", "b.py", "sub/a.py"]);

        let before = freeze_tree(root).unwrap();
        assert_eq!(before.files, 3);
        fs::write(root.join("sub/__pycache__/a.cpython-311.pyc"), b"other cache").unwrap();
        assert_eq!(freeze_tree(root).unwrap(), before, "a cache file must not move the freeze");
        fs::write(root.join("sub/a.py"), b"A").unwrap();
        assert_ne!(freeze_tree(root).unwrap().digest, before.digest);

        std::os::unix::fs::symlink(root.join("b.py"), root.join("link.py")).unwrap();
        assert!(matches!(list_tree(root), Err(TreeError::NotRegular { kind: "symbolic link", .. })));
    }
}
