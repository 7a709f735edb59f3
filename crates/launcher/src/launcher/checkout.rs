//! Which checkout of the repository the launcher serves, found at run time (`req/session.md`,
//! "The checkout").
//!
//! In order: `--repo DIR` (which the binary passes on as `$DECODE_BASELINE_REPO`), else
//! `$DECODE_BASELINE_REPO`, else the nearest folder at or above the current one that is a
//! checkout (it holds `workloads.json`, `Cargo.toml` and `tools/env/`), else the checkout the
//! executable was built in. The served checkout's `workloads.json`, models, workers and `.venv`
//! are the ones measured; the workers the launcher starts inherit the choice through
//! `$DECODE_BASELINE_REPO`.
//!
//! An executable serves another checkout than the one it was built in only when it stands inside
//! it (a copied or moved checkout with its own `target/`, whose `$ORIGIN`-relative rpath loads
//! that checkout's own libmlx) or when told to with `--repo`/`$DECODE_BASELINE_REPO`. Found
//! from the current folder, anything else is refused ([`CheckoutError::OtherBuild`]): the
//! executable would measure one checkout's loop with another's sources and pins.

use std::path::{Path, PathBuf};

use decode_baseline_pins::installed::REPO_ENV;

/// How the served checkout was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `--repo` or `$DECODE_BASELINE_REPO`.
    Named,
    /// The nearest checkout at or above the current folder.
    CurrentFolder,
    /// No checkout around the current folder: the one the executable was built in.
    Build,
}

/// The checkout served, and the one the executable was built in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkout {
    /// The repository root served.
    pub root: PathBuf,
    /// How it was chosen.
    pub origin: Origin,
    /// The repository root the executable was compiled in.
    pub built_in: PathBuf,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CheckoutError {
    #[error(
        "this decode-baseline ({exe}) was built in the checkout {built_in}, but the current folder is in \
         the checkout {served}; it would measure one with the other's build. Build and run the executable \
         of {served} (`cd {served} && cargo run --release -- …`), or name the checkout to serve with \
         `--repo {built_in}`"
    )]
    OtherBuild { exe: String, built_in: String, served: String },
}

/// The repository root the executable was compiled in (this crate is `crates/launcher` in it).
pub fn built_in() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.ancestors().nth(2).unwrap_or(manifest_dir).to_owned()
}

/// Whether `dir` is a checkout of this repository.
pub fn is_checkout(dir: &Path) -> bool {
    dir.join("workloads.json").is_file() && dir.join("Cargo.toml").is_file() && dir.join("tools/env").is_dir()
}

/// Chooses the checkout from the named one (`--repo` or the variable), the current folder and
/// the build's, without checking it.
pub fn choose(named: Option<&Path>, current: Option<&Path>, built_in: &Path) -> Checkout {
    let built_in = built_in.to_owned();
    if let Some(root) = named {
        return Checkout { root: root.to_owned(), origin: Origin::Named, built_in };
    }
    match current.and_then(|cwd| cwd.ancestors().find(|dir| is_checkout(dir))) {
        Some(root) => Checkout { root: root.to_owned(), origin: Origin::CurrentFolder, built_in },
        None => Checkout { root: built_in.clone(), origin: Origin::Build, built_in },
    }
}

impl Checkout {
    /// The checkout for this process: `$DECODE_BASELINE_REPO`, the current folder, the build.
    pub fn current() -> Self {
        let named = std::env::var_os(REPO_ENV).filter(|v| !v.is_empty()).map(PathBuf::from);
        let cwd = std::env::current_dir().ok();
        choose(named.as_deref(), cwd.as_deref(), &built_in())
    }

    /// Refuses a checkout found from the current folder that is not the build's, unless the
    /// executable `exe` stands inside it.
    pub fn check(&self, exe: &Path) -> Result<(), CheckoutError> {
        if self.origin != Origin::CurrentFolder || same(&self.root, &self.built_in) {
            return Ok(());
        }
        let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_owned());
        if canonical(exe).starts_with(canonical(&self.root)) {
            return Ok(());
        }
        Err(CheckoutError::OtherBuild {
            exe: exe.display().to_string(),
            built_in: self.built_in.display().to_string(),
            served: self.root.display().to_string(),
        })
    }
}

fn same(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The repository the launcher serves (see the module documentation).
pub fn repo_root() -> PathBuf {
    Checkout::current().root
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkout(dir: &Path) {
        std::fs::create_dir_all(dir.join("tools/env")).unwrap();
        std::fs::write(dir.join("workloads.json"), "{}").unwrap();
        std::fs::write(dir.join("Cargo.toml"), "").unwrap();
    }

    #[test]
    fn named_then_current_folder_upward_then_the_build() {
        let tmp = tempfile::tempdir().unwrap();
        let (original, copy) = (tmp.path().join("original"), tmp.path().join("copy"));
        checkout(&original);
        checkout(&copy);
        let deep = copy.join("jobs/mine");
        std::fs::create_dir_all(&deep).unwrap();
        let chosen = choose(None, Some(&deep), &original);
        assert_eq!((chosen.root.as_path(), chosen.origin), (copy.as_path(), Origin::CurrentFolder));
        let chosen = choose(Some(&original), Some(&deep), &original);
        assert_eq!((chosen.root.as_path(), chosen.origin), (original.as_path(), Origin::Named));
        let chosen = choose(None, Some(tmp.path()), &original);
        assert_eq!((chosen.root.as_path(), chosen.origin), (original.as_path(), Origin::Build));
        // A folder with a workloads.json alone (a test's or bench's manifest) is not a checkout.
        let bare = tmp.path().join("bare");
        std::fs::create_dir_all(&bare).unwrap();
        std::fs::write(bare.join("workloads.json"), "{}").unwrap();
        assert_eq!(choose(None, Some(&bare), &original).origin, Origin::Build);
    }

    #[test]
    fn another_checkout_is_served_only_by_its_own_executable_or_when_named() {
        let tmp = tempfile::tempdir().unwrap();
        let (original, copy) = (tmp.path().join("original"), tmp.path().join("copy"));
        checkout(&original);
        checkout(&copy);
        let found = choose(None, Some(&copy), &original);
        let own_exe = copy.join("target/release/decode-baseline");
        let other_exe = original.join("target/release/decode-baseline");
        assert_eq!(found.check(&own_exe), Ok(()));
        let refused = found.check(&other_exe).unwrap_err();
        let message = refused.to_string();
        for part in [original.display().to_string(), copy.display().to_string(), "--repo".into()] {
            assert!(message.contains(&part), "{message}");
        }
        assert_eq!(choose(Some(&copy), None, &original).check(&other_exe), Ok(()));
        assert_eq!(choose(None, Some(&original), &original).check(&other_exe), Ok(()));
    }
}
