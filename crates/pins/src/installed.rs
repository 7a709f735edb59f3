//! Where the pinned Python environment and its files are, found without importing Python or
//! linking MLX (the launcher and the guard need neither).
//!
//! * The suite holds one default environment (its lock files in `tools/env/`) and any number of
//!   named ones (in `tools/env/envs/<name>/`), each with its own virtual environment and its
//!   own controlled build. `$DECODE_BASELINE_ENV` selects a named one; unset, empty or
//!   `default`, the default. An executable that links MLX sets it to the environment it was
//!   built against (`select_environment` in `src/main.rs`).
//! * The virtual environment is `$DECODE_BASELINE_VENV`, else `<repo>/.venv` for the default
//!   environment and `<repo>/.venv-<name>` for a named one.
//! * Its site-packages folder is the one folder matching `<venv>/lib/python3*/site-packages`.
//! * The installed `mlx_lm` package is `<site-packages>/mlx_lm`.
//! * `libmlx` is `$MLX_DIR/lib/<name>` when `MLX_DIR` is set (the override the mlx-sys build
//!   also honours), else `<site-packages>/mlx/lib/<name>`, where `<name>` is `libmlx.so` on Linux
//!   and `libmlx.dylib` on macOS.
//! * A distribution's version is the `Version:` header of the `METADATA` file in the one folder
//!   `<site-packages>/<name>-<version>.dist-info` whose name part equals `<name>` exactly
//!   (`mlx`, `mlx_lm`); `mlx_cpu-*.dist-info` is not `mlx`'s.
//! * The lock file is `requirements-linux.lock` on Linux and `requirements-macos.lock` on
//!   macOS, in the environment's folder.
//!
//! `tools/env/provision.py` and the Python workers' validation,
//! `tools/kit/python/decode_baseline_worker/validate.py`, follow the same rules.

use std::{
    fs,
    path::{Path, PathBuf},
};

use decode_baseline_wire::manifest::ENV_NAME_ENV;

pub use decode_baseline_wire::manifest::environment_name;

/// Environment variable naming the repository the executables run from when it is not the
/// folder they were built in (a build moved to another machine, as the GPU-host bundle is:
/// `tools/gpu/host.sh`). The worker still checks that repository's sources against the pins.
pub const REPO_ENV: &str = "DECODE_BASELINE_REPO";

/// Environment variable the launcher hands every worker it starts: the folder of the served
/// checkout's Python worker kit (`tools/kit/python`), so a Python worker imports the kit at any
/// depth and from outside the checkout (`req/protocol.md` §8).
pub const KIT_ENV: &str = "DECODE_BASELINE_KIT";
/// The repository-relative folder of the Python worker kit.
pub const KIT_DIR: &str = "tools/kit/python";

/// The repository to run from: `$DECODE_BASELINE_REPO` if set and non-empty, else `built_in`
/// (the folder the executable was compiled in).
pub fn repo_root(built_in: &Path) -> PathBuf {
    match std::env::var_os(REPO_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => built_in.to_owned(),
    }
}

/// Environment variable naming the virtual environment to use instead of `<repo>/.venv`.
pub const VENV_ENV: &str = "DECODE_BASELINE_VENV";
/// The repository-relative folder of the default environment's lock files.
pub const DEFAULT_ENV_DIR: &str = "tools/env";
/// The repository-relative folder holding one folder per named environment.
pub const NAMED_ENVS_DIR: &str = "tools/env/envs";
/// The name reports and messages give the default environment.
pub const DEFAULT_ENV_NAME: &str = decode_baseline_wire::manifest::DEFAULT_ENVIRONMENT;
/// Environment variable naming another MLX install (the folder that holds `lib/`).
pub const MLX_DIR_ENV: &str = "MLX_DIR";

/// The file name of the MLX shared library on this platform.
pub const LIBMLX_NAME: &str = if cfg!(target_os = "macos") { "libmlx.dylib" } else { "libmlx.so" };

/// The file name of this platform's hash-locked requirements in an environment's folder.
pub const LOCK_FILE_NAME: &str =
    if cfg!(target_os = "macos") { "requirements-macos.lock" } else { "requirements-linux.lock" };

/// The selected named environment, or `None` for the default one (`$DECODE_BASELINE_ENV`
/// unset, empty or [`DEFAULT_ENV_NAME`]).
pub fn selected_environment() -> Option<String> {
    std::env::var(ENV_NAME_ENV).ok().filter(|name| environment_name(name).is_some())
}

/// The repository-relative folder of `environment`'s lock files (`None`: the default one).
pub fn environment_dir(environment: Option<&str>) -> PathBuf {
    match environment {
        None => PathBuf::from(DEFAULT_ENV_DIR),
        Some(name) => Path::new(NAMED_ENVS_DIR).join(name),
    }
}

/// The repository-relative path of the selected environment's lock file for this platform.
pub fn lock_path() -> PathBuf {
    lock_path_of(selected_environment().as_deref())
}

/// The repository-relative path of `environment`'s lock file for this platform (`None`: the
/// default one).
pub fn lock_path_of(environment: Option<&str>) -> PathBuf {
    environment_dir(environment).join(LOCK_FILE_NAME)
}

/// The command that provisions `environment` (`None`: the default one) in a checkout:
/// `python3 tools/env/provision.py`, with `$DECODE_BASELINE_ENV` naming a named one.
pub fn provision_command(environment: Option<&str>) -> String {
    match environment {
        None => "python3 tools/env/provision.py".to_owned(),
        Some(name) => format!("{ENV_NAME_ENV}={name} python3 tools/env/provision.py"),
    }
}

/// The installed environment cannot be located or read.
#[derive(Debug, thiserror::Error)]
pub enum InstalledError {
    #[error("failed to list {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("expected exactly one {pattern} in {dir}, found {found}")]
    NotUnique { dir: PathBuf, pattern: String, found: usize },
    #[error("{path} has no `Version:` header")]
    NoVersion { path: PathBuf },
}

/// The located environment. Paths are not checked for existence beyond what locating needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The virtual environment's folder.
    pub venv: PathBuf,
    /// `<venv>/lib/python3*/site-packages`.
    pub site_packages: PathBuf,
    /// `<site-packages>/mlx_lm`.
    pub mlx_lm_dir: PathBuf,
    /// The libmlx both workers load.
    pub libmlx: PathBuf,
}

/// The virtual environment this process should use: `$DECODE_BASELINE_VENV`, else
/// `<repo>/.venv` (default environment) or `<repo>/.venv-<name>` (a named one).
pub fn venv_dir(repo: &Path) -> PathBuf {
    match std::env::var_os(VENV_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => own_venv_dir(repo, selected_environment().as_deref()),
    }
}

/// The virtual environment of `environment` (`None`: the default one): the selected one's is
/// [`venv_dir`] (which `$DECODE_BASELINE_VENV` may move), any other its own folder in `repo`.
pub fn venv_dir_of(repo: &Path, environment: Option<&str>) -> PathBuf {
    if environment == selected_environment().as_deref() {
        venv_dir(repo)
    } else {
        own_venv_dir(repo, environment)
    }
}

fn own_venv_dir(repo: &Path, environment: Option<&str>) -> PathBuf {
    match environment {
        None => repo.join(".venv"),
        Some(name) => repo.join(format!(".venv-{name}")),
    }
}

/// `$MLX_DIR` if set and non-empty.
pub fn mlx_dir_override() -> Option<PathBuf> {
    std::env::var_os(MLX_DIR_ENV).filter(|d| !d.is_empty()).map(PathBuf::from)
}

impl Installed {
    /// Locates the environment in `venv`; `mlx_dir` overrides where libmlx is taken from.
    pub fn locate(venv: &Path, mlx_dir: Option<&Path>) -> Result<Self, InstalledError> {
        let lib = venv.join("lib");
        let pythons = matching_dirs(&lib, |name| name.starts_with("python3"))?;
        let site_packages = match pythons.as_slice() {
            [one] => one.join("site-packages"),
            _ => {
                return Err(InstalledError::NotUnique {
                    dir: lib,
                    pattern: "python3*/site-packages".to_owned(),
                    found: pythons.len(),
                })
            }
        };
        let libmlx = match mlx_dir {
            Some(dir) => dir.join("lib").join(LIBMLX_NAME),
            None => site_packages.join("mlx/lib").join(LIBMLX_NAME),
        };
        Ok(Self { venv: venv.to_owned(), mlx_lm_dir: site_packages.join("mlx_lm"), site_packages, libmlx })
    }

    /// The installed version of distribution `name` (`mlx`, `mlx_lm`), from its dist-info.
    pub fn dist_version(&self, name: &str) -> Result<String, InstalledError> {
        let infos = matching_dirs(&self.site_packages, |dir| {
            dir.strip_suffix(".dist-info").and_then(|stem| stem.split_once('-')).is_some_and(|(n, _)| n == name)
        })?;
        let [info] = infos.as_slice() else {
            return Err(InstalledError::NotUnique {
                dir: self.site_packages.clone(),
                pattern: format!("{name}-*.dist-info"),
                found: infos.len(),
            });
        };
        let path = info.join("METADATA");
        let text = fs::read_to_string(&path).map_err(|source| InstalledError::Read { path: path.clone(), source })?;
        parse_metadata_version(&text).ok_or(InstalledError::NoVersion { path })
    }
}

/// The value of the first `Version:` header of a core-metadata file (headers end at the first
/// blank line).
pub fn parse_metadata_version(text: &str) -> Option<String> {
    text.lines()
        .take_while(|line| !line.is_empty())
        .find_map(|line| line.strip_prefix("Version:"))
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// The sub-folders of `dir` whose names satisfy `keep`, sorted.
fn matching_dirs(dir: &Path, keep: impl Fn(&str) -> bool) -> Result<Vec<PathBuf>, InstalledError> {
    let read = |source| InstalledError::Read { path: dir.to_owned(), source };
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(read)? {
        let entry = entry.map_err(read)?;
        let keep_it = entry.file_name().to_str().is_some_and(&keep) && entry.path().is_dir();
        if keep_it {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_header_is_read_from_the_header_block_only() {
        let text = "Metadata-Version: 2.1\nName: mlx-lm\nVersion: 0.32.2\n\nVersion: 9\n";
        assert_eq!(parse_metadata_version(text).as_deref(), Some("0.32.2"));
        assert_eq!(parse_metadata_version("Name: x\n\nVersion: 1\n"), None);
        assert_eq!(parse_metadata_version("Version:   \n"), None);
    }

    #[test]
    fn locates_site_packages_and_tells_mlx_from_mlx_cpu() {
        let dir = tempfile::tempdir().unwrap();
        let sp = dir.path().join("lib/python3.11/site-packages");
        for (info, version) in [("mlx-0.32.2.dist-info", "0.32.2"), ("mlx_cpu-0.32.9.dist-info", "0.32.9")] {
            fs::create_dir_all(sp.join(info)).unwrap();
            fs::write(sp.join(info).join("METADATA"), format!("Name: x\nVersion: {version}\n")).unwrap();
        }
        let installed = Installed::locate(dir.path(), None).unwrap();
        assert_eq!(installed.site_packages, sp);
        assert_eq!(installed.libmlx, sp.join("mlx/lib").join(LIBMLX_NAME));
        assert_eq!(installed.dist_version("mlx").unwrap(), "0.32.2");
        assert!(matches!(installed.dist_version("mlx_lm"), Err(InstalledError::NotUnique { found: 0, .. })));

        let other = Installed::locate(dir.path(), Some(Path::new("/opt/mlx"))).unwrap();
        assert_eq!(other.libmlx, Path::new("/opt/mlx/lib").join(LIBMLX_NAME));

        fs::create_dir_all(dir.path().join("lib/python3.12/site-packages")).unwrap();
        assert!(matches!(Installed::locate(dir.path(), None), Err(InstalledError::NotUnique { found: 2, .. })));
    }
}
