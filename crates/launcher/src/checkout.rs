//! Which checkout of the repository the launcher serves, found at run time (`req/session.md`,
//! "The checkout").
//!
//! In order: `--repo DIR` (which the binary passes on as `$DECODE_BASELINE_REPO`), else
//! `$DECODE_BASELINE_REPO`, else the program files of the wheel the executable was installed
//! from (`<env>/bin/decode-baseline` serves `<env>/lib/python3.*/site-packages/decode_baseline/`,
//! marked by its `installed.json`: `req/install.md`), else the nearest folder at or above the
//! current one that is a checkout (it holds `workloads.json`, `Cargo.toml` and `tools/env/`),
//! else the checkout the executable was built in. The served checkout's `workloads.json`,
//! models, workers and `.venv` are the ones measured; the workers the launcher starts inherit
//! the choice through `$DECODE_BASELINE_REPO`.
//!
//! An executable serves another checkout than the one it was built in only when it stands inside
//! it (a copied or moved checkout with its own `target/`, whose `$ORIGIN`-relative rpath loads
//! that checkout's own libmlx) or when told to with `--repo`/`$DECODE_BASELINE_REPO`. Found
//! from the current folder, anything else is refused ([`CheckoutError::OtherBuild`]): the
//! executable would measure one checkout's loop with another's sources and pins.

use std::path::{Path, PathBuf};

use decode_baseline_pins::{
    installed::{Installed, REPO_ENV},
    InstallMarker, INSTALL_MARKER,
};

/// How the served checkout was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `--repo` or `$DECODE_BASELINE_REPO`.
    Named,
    /// The program files of the installed wheel the executable came with.
    Installed,
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
    #[error(
        "this decode-baseline was built against {package} {built}, but the environment it is installed in \
         ({env}) has {package} {found}; both workers must load the libmlx it was built against. Reinstall \
         that version (`{env}/bin/python -m pip install {requirement}`), or install the decode-baseline \
         wheel built for {package} {found} into this environment"
    )]
    OtherMlx { package: String, built: String, found: String, env: String, requirement: String },
    #[error("the installed program files {root} are incomplete: {problem}; reinstall decode-baseline")]
    Incomplete { root: String, problem: String },
}

/// The repository root the executable was compiled in (this crate is `crates/launcher` in it).
pub fn built_in() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.ancestors().nth(2).unwrap_or(manifest_dir).to_owned()
}

/// The manifest's file name at the repository root (and a workspace's).
pub const MANIFEST_NAME: &str = "workloads.json";

/// Whether `dir` is a checkout of this repository.
pub fn is_checkout(dir: &Path) -> bool {
    dir.join(MANIFEST_NAME).is_file() && dir.join("Cargo.toml").is_file() && dir.join("tools/env").is_dir()
}

/// The program files of the wheel `exe` was installed from: `exe` is `<env>/bin/<name>` and
/// `<env>/lib/python3.*/site-packages/decode_baseline/` holds the install marker.
pub fn installed_root(exe: &Path) -> Option<PathBuf> {
    let env = exe.parent()?.parent()?;
    let site_packages = Installed::locate(env, None).ok()?.site_packages;
    let root = site_packages.join(INSTALLED_PACKAGE);
    root.join(INSTALL_MARKER).is_file().then_some(root)
}

/// The environment the program files `root` of an installed wheel were installed into (`<env>`
/// of `<env>/lib/python3.*/site-packages/decode_baseline`), once it is checked to hold the `mlx`
/// and `mlx_lm` versions the wheel was built against (its [`INSTALL_MARKER`] names them).
pub fn installed_environment(root: &Path) -> Result<PathBuf, CheckoutError> {
    let incomplete = |problem: String| CheckoutError::Incomplete { root: root.display().to_string(), problem };
    let env = root.ancestors().nth(4).ok_or_else(|| incomplete("not inside lib/python3.*/site-packages".into()))?;
    let marker = InstallMarker::read(root)
        .and_then(Result::ok)
        .ok_or_else(|| incomplete(format!("{} is missing or not JSON", root.join(INSTALL_MARKER).display())))?;
    let installed = Installed::locate(env, None).map_err(|err| incomplete(err.to_string()))?;
    let built = [
        ("mlx", "mlx", "mlx_version", &marker.mlx_version),
        ("mlx-lm", "mlx_lm", "mlx_lm_version", &marker.mlx_lm_version),
    ];
    for (package, dist, key, built) in built {
        let built = built.as_deref().ok_or_else(|| incomplete(format!("{INSTALL_MARKER} has no {key}")))?;
        let found = installed.dist_version(dist).unwrap_or_else(|_| "none".to_owned());
        if found != built {
            let requirement = match (package, marker.backend.as_deref()) {
                ("mlx", Some("cpu")) => format!("'mlx[cpu]=={built}'"),
                _ => format!("'{package}=={built}'"),
            };
            return Err(CheckoutError::OtherMlx {
                package: package.to_owned(),
                built: built.to_owned(),
                found,
                env: env.display().to_string(),
                requirement,
            });
        }
    }
    Ok(env.to_owned())
}

/// The program files this executable serves when it was installed from the wheel.
pub fn installed_program() -> Option<PathBuf> {
    std::env::current_exe().ok().and_then(|exe| installed_root(&exe))
}

/// The folder of the wheel's program files in site-packages.
pub const INSTALLED_PACKAGE: &str = "decode_baseline";

/// Chooses the checkout from the named one (`--repo` or the variable), the installed program
/// files, the current folder and the build's, without checking it.
pub fn choose(named: Option<&Path>, installed: Option<&Path>, current: Option<&Path>, built_in: &Path) -> Checkout {
    let built_in = built_in.to_owned();
    if let Some(root) = named {
        return Checkout { root: root.to_owned(), origin: Origin::Named, built_in };
    }
    if let Some(root) = installed {
        return Checkout { root: root.to_owned(), origin: Origin::Installed, built_in };
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
        choose(named.as_deref(), installed_program().as_deref(), cwd.as_deref(), &built_in())
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
        let chosen = choose(None, None, Some(&deep), &original);
        assert_eq!((chosen.root.as_path(), chosen.origin), (copy.as_path(), Origin::CurrentFolder));
        let chosen = choose(Some(&original), None, Some(&deep), &original);
        assert_eq!((chosen.root.as_path(), chosen.origin), (original.as_path(), Origin::Named));
        let chosen = choose(None, None, Some(tmp.path()), &original);
        assert_eq!((chosen.root.as_path(), chosen.origin), (original.as_path(), Origin::Build));
        // A folder with a workloads.json alone (a test's or bench's manifest) is not a checkout.
        let bare = tmp.path().join("bare");
        std::fs::create_dir_all(&bare).unwrap();
        std::fs::write(bare.join("workloads.json"), "{}").unwrap();
        assert_eq!(choose(None, None, Some(&bare), &original).origin, Origin::Build);
    }

    #[test]
    fn another_checkout_is_served_only_by_its_own_executable_or_when_named() {
        let tmp = tempfile::tempdir().unwrap();
        let (original, copy) = (tmp.path().join("original"), tmp.path().join("copy"));
        checkout(&original);
        checkout(&copy);
        let found = choose(None, None, Some(&copy), &original);
        let own_exe = copy.join("target/release/decode-baseline");
        let other_exe = original.join("target/release/decode-baseline");
        assert_eq!(found.check(&own_exe), Ok(()));
        let refused = found.check(&other_exe).unwrap_err();
        let message = refused.to_string();
        for part in [original.display().to_string(), copy.display().to_string(), "--repo".into()] {
            assert!(message.contains(&part), "{message}");
        }
        assert_eq!(choose(Some(&copy), None, None, &original).check(&other_exe), Ok(()));
        assert_eq!(choose(None, None, Some(&original), &original).check(&other_exe), Ok(()));
    }

    /// An environment `tmp/env` with `mlx` and `mlx_lm` of these versions and, when `marked`,
    /// the wheel's program files built against 0.32.4 / 0.32.2.
    fn environment(tmp: &Path, mlx: &str, marked: bool) -> (PathBuf, PathBuf) {
        let env = tmp.join("env");
        let site = env.join("lib/python3.11/site-packages");
        for (name, version) in [("mlx", mlx), ("mlx_lm", "0.32.2")] {
            let info = site.join(format!("{name}-{version}.dist-info"));
            std::fs::create_dir_all(&info).unwrap();
            std::fs::write(info.join("METADATA"), format!("Name: {name}\nVersion: {version}\n\n")).unwrap();
        }
        let root = site.join(INSTALLED_PACKAGE);
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(env.join("bin")).unwrap();
        if marked {
            let marker = r#"{"mlx_version": "0.32.4", "mlx_lm_version": "0.32.2", "backend": "cpu"}"#;
            std::fs::write(root.join(INSTALL_MARKER), marker).unwrap();
        }
        (env, root)
    }

    #[test]
    fn an_installed_executable_serves_its_program_files_before_the_current_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let (env, root) = environment(tmp.path(), "0.32.4", true);
        let exe = env.join("bin/decode-baseline");
        assert_eq!(installed_root(&exe), Some(root.clone()));
        let unmarked = tempfile::tempdir().unwrap();
        let (other, _) = environment(unmarked.path(), "0.32.4", false);
        assert_eq!(installed_root(&other.join("bin/decode-baseline")), None, "no marker, no installation");

        let checkout_dir = tmp.path().join("checkout");
        checkout(&checkout_dir);
        let chosen = choose(None, Some(&root), Some(&checkout_dir), &checkout_dir);
        assert_eq!((chosen.root.as_path(), chosen.origin), (root.as_path(), Origin::Installed));
        let chosen = choose(Some(&checkout_dir), Some(&root), None, &checkout_dir);
        assert_eq!(chosen.origin, Origin::Named, "--repo still comes first");
        assert_eq!(installed_environment(&root), Ok(env));
    }

    #[test]
    fn an_environment_with_another_mlx_is_refused_with_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let (env, root) = environment(tmp.path(), "0.32.2", true);
        let refused = installed_environment(&root).unwrap_err();
        let message = refused.to_string();
        for part in ["built against mlx 0.32.4", "has mlx 0.32.2", "pip install 'mlx[cpu]==0.32.4'"] {
            assert!(message.contains(part), "{part:?} in {message}");
        }
        assert!(message.contains(&env.display().to_string()), "{message}");
        std::fs::remove_file(root.join(INSTALL_MARKER)).unwrap();
        assert!(matches!(installed_environment(&root), Err(CheckoutError::Incomplete { .. })));
    }
}
