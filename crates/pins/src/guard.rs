//! The guard: every check of `workloads.json` against its pin and the files it pins, each
//! failure collected, so that CI prints them all.

use std::path::{Path, PathBuf};

use decode_baseline_wire::{manifest::Manifest, Sha256Digest};

use crate::{
    artifacts::check_case,
    confinement::{case_dir, check_confinement},
    environment::{check_installed, check_lock, selected_pins},
    error::{FieldPath, PinError, PinProblem},
    installed::Installed,
    manifest_pin::{load_manifest, verify_pin},
    structure::check_structure,
    worker_sources::check_worker_sources,
};

/// Whether and where the installed environment is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvironmentCheck {
    /// Skip the installed checks (the lock file is still checked).
    Skip,
    /// Check the environment in this venv if it exists; report a skip if it does not.
    IfPresent { venv: PathBuf, mlx_dir: Option<PathBuf> },
    /// Check the environment in this venv; its absence is a failure.
    Required { venv: PathBuf, mlx_dir: Option<PathBuf> },
}

/// What the guard did.
#[derive(Debug)]
pub struct GuardOutcome {
    /// The manifest's SHA-256 (of the bytes read).
    pub manifest_sha256: Sha256Digest,
    /// The parsed manifest.
    pub manifest: Manifest,
    /// Every failed check; empty when the guard passes.
    pub failures: Vec<PinError>,
    /// The environment that was checked, or why none was.
    pub environment: Result<Installed, String>,
}

/// Runs every check of `manifest_path` against the repository at `repo`. `Err` means the
/// manifest could not be read or parsed (nothing else can be checked then); every other
/// failure is collected in [`GuardOutcome::failures`].
pub fn guard(repo: &Path, manifest_path: &Path, environment: &EnvironmentCheck) -> Result<GuardOutcome, PinError> {
    let (manifest, bytes) = load_manifest(manifest_path)?;
    let manifest_sha256 = Sha256Digest::of_bytes(&bytes);
    let mut failures = Vec::new();
    if let Err(err) = verify_pin(manifest_path, &bytes) {
        failures.push(err);
    }
    failures.extend(check_structure(&manifest));
    failures.extend(check_confinement(repo, manifest_path, &manifest));
    for (id, case) in &manifest.cases {
        // A case whose path escapes was reported by check_confinement; do not read it.
        if case_dir(repo, id, case).is_ok() {
            failures.extend(check_case(repo, id, case));
        }
    }
    // Escaping source paths were reported by check_confinement and are skipped here too.
    failures.extend(
        check_worker_sources(repo, manifest_path, &manifest)
            .into_iter()
            .filter(|e| !matches!(e.problem, PinProblem::PathEscape { .. })),
    );
    let pinned = match selected_pins(&manifest) {
        Ok(pinned) => Some(pinned.clone()),
        Err(err) => {
            failures.push(err);
            None
        }
    };
    if let Some(Err(err)) = pinned.as_ref().map(|pins| check_lock(repo, pins)) {
        failures.push(err);
    }
    let installed = match environment {
        EnvironmentCheck::Skip => Err("skipped (--no-environment)".to_owned()),
        EnvironmentCheck::IfPresent { venv, mlx_dir } | EnvironmentCheck::Required { venv, mlx_dir } => {
            let required = matches!(environment, EnvironmentCheck::Required { .. });
            if !required && !venv.exists() {
                Err(format!("skipped: no environment at {}", venv.display()))
            } else {
                match Installed::locate(venv, mlx_dir.as_deref()) {
                    Ok(installed) => {
                        failures.extend(pinned.iter().flat_map(|pins| check_installed(&installed, pins)));
                        Ok(installed)
                    }
                    Err(source) => {
                        failures.push(PinError::at(FieldPath::field("environment"), PinProblem::Installed { source }));
                        Err(format!("could not locate the environment in {}", venv.display()))
                    }
                }
            }
        }
    };
    Ok(GuardOutcome { manifest_sha256, manifest, failures, environment: installed })
}
