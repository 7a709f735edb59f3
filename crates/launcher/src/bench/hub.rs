//! Hugging Face repo ids resolved from the local cache, without the network.
//!
//! The cache layout is `huggingface_hub`'s: `<cache>/models--<org>--<name>/refs/<branch>` holds a
//! commit hash, and `<cache>/models--<org>--<name>/snapshots/<commit>/` the files of that
//! revision (symbolic links into `blobs/`, which every reader here follows). The cache folder is
//! `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `$XDG_CACHE_HOME/huggingface/hub`, else
//! `~/.cache/huggingface/hub`, as `huggingface_hub.constants` resolves it.

use std::path::{Path, PathBuf};

/// Why a repo id could not be resolved from the cache.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error("{repo_id} is not a valid Hugging Face repo id: expected `org/name` of letters, digits, `-`, `_`, `.`")]
    BadId { repo_id: String },
    #[error(
        "{repo_id} (revision {revision}) is not in the Hugging Face cache {cache} ({missing}); fetch it with\n  {fetch}\nor pass --allow-network to let bench run that command"
    )]
    NotCached { repo_id: String, revision: String, cache: PathBuf, missing: String, fetch: String },
    #[error("failed to read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A repo id found in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedModel {
    pub repo_id: String,
    /// What was asked for: a branch (`main`), a tag or a commit hash.
    pub revision: String,
    /// The commit the snapshot is of.
    pub commit: String,
    /// `<cache>/models--<org>--<name>/snapshots/<commit>`.
    pub snapshot: PathBuf,
}

/// The cache folder `huggingface_hub` uses with this environment.
pub fn cache_dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(cache) = var("HF_HUB_CACHE") {
        return cache;
    }
    if let Some(home) = var("HF_HOME") {
        return home.join("hub");
    }
    let base =
        var("XDG_CACHE_HOME").unwrap_or_else(|| var("HOME").unwrap_or_else(|| PathBuf::from("/")).join(".cache"));
    base.join("huggingface").join("hub")
}

/// Whether `text` has the shape of a repo id: `org/name`, each part path-safe.
pub fn is_repo_id(text: &str) -> bool {
    let part = |p: &str| {
        !p.is_empty() && !p.starts_with('.') && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    };
    matches!(text.split_once('/'), Some((org, name)) if part(org) && part(name))
}

/// The command that fetches `repo_id` into `cache` the way `mlx_lm.load` does
/// (`mlx_lm.utils._download`: `snapshot_download` with mlx_lm's file patterns).
pub fn fetch_command(python: &Path, cache: &Path, repo_id: &str, revision: &str) -> String {
    format!(
        "HF_HUB_CACHE={} {} -c \"from mlx_lm.utils import _download; print(_download('{repo_id}', revision='{revision}'))\"",
        cache.display(),
        python.display()
    )
}

/// Finds `repo_id` at `revision` (a branch or tag under `refs/`, or a commit hash) in `cache`.
pub fn resolve(cache: &Path, repo_id: &str, revision: &str, python: &Path) -> Result<CachedModel, HubError> {
    if !is_repo_id(repo_id) {
        return Err(HubError::BadId { repo_id: repo_id.to_owned() });
    }
    let repo = cache.join(format!("models--{}", repo_id.replace('/', "--")));
    let not_cached = |missing: String| HubError::NotCached {
        repo_id: repo_id.to_owned(),
        revision: revision.to_owned(),
        cache: cache.to_owned(),
        missing,
        fetch: fetch_command(python, cache, repo_id, revision),
    };
    let is_commit = revision.len() == 40 && revision.bytes().all(|b| b.is_ascii_hexdigit());
    let commit = if is_commit {
        revision.to_ascii_lowercase()
    } else {
        let reference = repo.join("refs").join(revision);
        match std::fs::read_to_string(&reference) {
            Ok(text) => text.trim().to_owned(),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Err(not_cached(format!("no {}", reference.display())))
            }
            Err(source) => return Err(HubError::Read { path: reference, source }),
        }
    };
    let snapshot = repo.join("snapshots").join(&commit);
    if !snapshot.join("config.json").is_file() {
        return Err(not_cached(format!("no config.json in {}", snapshot.display())));
    }
    Ok(CachedModel { repo_id: repo_id.to_owned(), revision: revision.to_owned(), commit, snapshot })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_ids_have_two_path_safe_parts() {
        assert!(is_repo_id("mlx-community/Qwen3-0.6B-4bit"));
        assert!(!is_repo_id("mlx-community"));
        assert!(!is_repo_id("a/b/c"));
        assert!(!is_repo_id("../x"));
        assert!(!is_repo_id("a/"));
    }

    #[test]
    fn a_branch_resolves_through_refs_and_a_missing_one_names_the_fetch_command() {
        let cache = tempfile::tempdir().unwrap();
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let repo = cache.path().join("models--org--tiny");
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::create_dir_all(repo.join("snapshots").join(commit)).unwrap();
        std::fs::write(repo.join("refs/main"), format!("{commit}\n")).unwrap();
        std::fs::write(repo.join("snapshots").join(commit).join("config.json"), "{}").unwrap();
        let python = Path::new("/venv/bin/python");
        let found = resolve(cache.path(), "org/tiny", "main", python).unwrap();
        assert_eq!(found.commit, commit);
        assert_eq!(found.snapshot, repo.join("snapshots").join(commit));
        assert_eq!(
            resolve(cache.path(), "org/tiny", commit, python).unwrap(),
            CachedModel { revision: commit.into(), ..found }
        );

        let err = resolve(cache.path(), "org/other", "main", python).unwrap_err().to_string();
        assert!(err.contains(&fetch_command(python, cache.path(), "org/other", "main")), "{err}");
        assert!(err.contains("--allow-network"), "{err}");
        let err = resolve(cache.path(), "org/tiny", "v2", python).unwrap_err().to_string();
        assert!(err.contains("refs/v2"), "{err}");
    }
}
