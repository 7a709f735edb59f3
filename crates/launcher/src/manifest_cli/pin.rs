//! `manifest pin`: re-hash the worker sources and the installed environment into the manifest
//! and write its digest beside it. Nothing else is written: a fork that pins its own adapter gets
//! a diff in `workloads.json` and `workloads.json.sha256` only.

use std::path::Path;

use anyhow::Context;
use decode_baseline_pins::{
    environment_pins_of,
    installed::{
        environment_name, mlx_dir_override, provision_command, selected_environment, venv_dir_of, Installed,
        DEFAULT_ENV_NAME,
    },
    load_manifest, pin_path, pin_text, worker_sources,
};
use decode_baseline_wire::{job::EnvironmentPins, manifest::Manifest, ExitCode};

use super::{write_atomically, write_manifest, PinArgs};
use crate::guard::{chain, locate_manifest};

/// The installed `environment` (`None`: the default one): its virtual environment located.
pub fn installed(repo: &Path, environment: Option<&str>) -> anyhow::Result<Installed> {
    let venv = venv_dir_of(repo, environment);
    crate::ensure_input!(
        venv.is_dir(),
        "no environment at {} (provision it with `{}`)",
        venv.display(),
        provision_command(environment)
    );
    let mlx_dir = if environment == selected_environment().as_deref() { mlx_dir_override() } else { None };
    Installed::locate(&venv, mlx_dir.as_deref())
        .with_context(|| format!("failed to locate the installed environment in {}", venv.display()))
}

/// Re-hashes the worker sources (the built-ins' against `repo`) and the `installed`
/// `environment` (`None`: the default one) into `manifest`, the environment into its entry;
/// returns its pins. Writes nothing: [`write_pinned`] does. `manifest pin`, and `init` for a
/// new workspace.
pub fn repin(
    repo: &Path,
    manifest_path: &Path,
    manifest: &mut Manifest,
    environment: Option<&str>,
    installed: &Installed,
) -> anyhow::Result<EnvironmentPins> {
    manifest.worker_sources =
        worker_sources(repo, manifest_path, manifest).map_err(|e| crate::exit::bad_input(chain(&e)))?;
    let pinned = environment_pins_of(repo, environment, installed).map_err(|e| crate::exit::bad_input(chain(&e)))?;
    match environment {
        None => manifest.environment = pinned.clone(),
        Some(name) => {
            manifest.environments.insert(name.to_owned(), pinned.clone());
        }
    }
    Ok(pinned)
}

/// Writes `manifest` at `manifest_path`, then its pin beside it; returns the manifest's bytes.
pub fn write_pinned(manifest_path: &Path, manifest: &Manifest) -> anyhow::Result<Vec<u8>> {
    let bytes = write_manifest(manifest_path, manifest)?;
    write_atomically(&pin_path(manifest_path), pin_text(manifest_path, &bytes).as_bytes())?;
    Ok(bytes)
}

pub(super) fn pin(args: PinArgs) -> anyhow::Result<ExitCode> {
    let (repo, manifest_path) = locate_manifest(args.manifest.as_deref())?;
    let (mut manifest, _) = load_manifest(&manifest_path).map_err(|e| crate::exit::bad_input(chain(&e)))?;
    let environment = match &args.environment {
        Some(name) => environment_name(name).map(str::to_owned),
        None => selected_environment(),
    };
    let installed = installed(&repo, environment.as_deref())?;
    let pinned = repin(&repo, &manifest_path, &mut manifest, environment.as_deref(), &installed)?;
    for (adapter, files) in &manifest.worker_sources {
        if files.is_empty() {
            eprintln!("manifest pin: warning: no {adapter} worker source matches the rule; the guard will fail");
        }
    }
    let bytes = write_pinned(&manifest_path, &manifest)?;
    println!(
        "manifest pin: {} sha256 {} ({} worker sources, environment {}: mlx {} / mlx_lm {} at {})",
        manifest_path.display(),
        decode_baseline_wire::Sha256Digest::of_bytes(&bytes),
        manifest.worker_sources.iter().map(|(a, files)| format!("{} {a}", files.len())).collect::<Vec<_>>().join(" + "),
        environment.as_deref().unwrap_or(DEFAULT_ENV_NAME),
        pinned.mlx_version,
        pinned.mlx_lm_version,
        installed.venv.display(),
    );
    Ok(ExitCode::Ok)
}
