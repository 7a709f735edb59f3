//! `decode-baseline guard`: the CI manifest-digest guard.
//!
//! Runs every check of [`decode_baseline_pins`] against the repository the manifest
//! sits in, prints each failure, and exits 0 when all pass, 6 (`GuardMismatch`) when anything
//! does not match its pin, 2 (`BadInput`) when the manifest cannot be read or parsed. Needs no
//! MLX: the installed environment is inspected as files (see `req/manifest.md`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use decode_baseline_pins::{
    self as pins,
    installed::{mlx_dir_override, venv_dir},
    EnvironmentCheck,
};
use decode_baseline_wire::ExitCode;

pub use crate::checkout::MANIFEST_NAME;

#[derive(Debug, clap::Args)]
pub struct GuardArgs {
    /// The manifest; its folder is the repository root. Default: `workloads.json` in the nearest
    /// folder at or above the current one that has it.
    #[arg(long)]
    pub manifest: Option<PathBuf>,
    /// Skip the checks of the installed environment (versions, mlx_lm freeze, libmlx); the lock
    /// file is still checked. Without this flag they run when the environment exists
    /// (`$DECODE_BASELINE_VENV`, else `<repo>/.venv`), and are required when
    /// `$DECODE_BASELINE_VENV` is set.
    #[arg(long)]
    pub no_environment: bool,
}

/// The repository root and the manifest path: the given manifest, or the nearest
/// `workloads.json` at or above the current folder, and the folder its built-in workers' sources
/// are pinned against ([`served_for`]).
pub fn locate_manifest(manifest: Option<&Path>) -> anyhow::Result<(PathBuf, PathBuf)> {
    let manifest = match manifest {
        Some(path) => std::path::absolute(path).with_context(|| format!("failed to resolve {}", path.display()))?,
        None => {
            let cwd = std::env::current_dir().context("failed to read the current folder")?;
            cwd.ancestors().map(|dir| dir.join(MANIFEST_NAME)).find(|candidate| candidate.is_file()).ok_or_else(
                || crate::exit::bad_input(format!("no {MANIFEST_NAME} at or above {}; pass --manifest", cwd.display())),
            )?
        }
    };
    let folder = manifest.parent().ok_or_else(|| crate::exit::bad_input("the manifest path has no folder"))?;
    let repo = served_for(folder);
    Ok((repo, manifest))
}

/// The folder a manifest in `folder` pins the built-in workers' sources against: the program
/// files of an installed executable; else `folder` when it is a checkout, or not a workspace
/// (a manifest with the sources beside it); else, for the manifest of a workspace
/// (`crate::workspace`), the served checkout.
fn served_for(folder: &Path) -> PathBuf {
    use crate::{checkout, workspace};
    if let Some(program) = checkout::installed_program() {
        return program;
    }
    if checkout::is_checkout(folder) || !workspace::is_workspace(folder) {
        return folder.to_owned();
    }
    checkout::repo_root()
}

/// The installed-environment check the guard runs: required when the user named a venv, if
/// present otherwise.
pub fn environment_check(repo: &Path, skip: bool) -> EnvironmentCheck {
    if skip {
        return EnvironmentCheck::Skip;
    }
    let venv = venv_dir(repo);
    let mlx_dir = mlx_dir_override();
    if std::env::var_os(decode_baseline_pins::installed::VENV_ENV).is_some_and(|v| !v.is_empty()) {
        EnvironmentCheck::Required { venv, mlx_dir }
    } else {
        EnvironmentCheck::IfPresent { venv, mlx_dir }
    }
}

/// An error and its sources on one line (the same words a worker's report gives them).
pub use decode_baseline_pins::chain;

pub fn run(args: GuardArgs) -> anyhow::Result<ExitCode> {
    let (repo, manifest_path) = locate_manifest(args.manifest.as_deref())?;
    let environment = environment_check(&repo, args.no_environment);
    let outcome = match pins::guard(&repo, &manifest_path, &environment) {
        Ok(outcome) => outcome,
        Err(err) => {
            eprintln!("guard: invalid manifest: {}", chain(&err));
            return Ok(ExitCode::BadInput);
        }
    };
    for failure in &outcome.failures {
        eprintln!("guard: FAIL {}", chain(failure));
    }
    let m = &outcome.manifest;
    let sources: usize = m.worker_sources.values().map(|files| files.len()).sum();
    let environment = match &outcome.environment {
        Ok(installed) => format!("environment checked at {}", installed.venv.display()),
        Err(why) => format!("environment {why}"),
    };
    if outcome.failures.is_empty() {
        println!(
            "guard: ok: {} sha256 {}; {} cases, {} prompts, {} cells, {} worker sources; {}",
            manifest_path.display(),
            outcome.manifest_sha256,
            m.cases.len(),
            m.prompts.len(),
            m.cells.len(),
            sources,
            environment,
        );
        Ok(ExitCode::Ok)
    } else {
        eprintln!("guard: {} check(s) failed for {} ({environment})", outcome.failures.len(), manifest_path.display());
        Ok(ExitCode::GuardMismatch)
    }
}
