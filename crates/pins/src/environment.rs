//! The environment: the lock file the environment was installed from, the installed mlx and
//! mlx_lm (versions, mlx_lm's source freeze) and the libmlx both workers map, against the
//! manifest's pins of the selected environment; and the same rules computing those pins.

use std::path::Path;

use decode_baseline_wire::{job::EnvironmentPins, manifest::Manifest, Adapter, Backend};

use crate::{
    error::{FieldPath, PinError, PinProblem},
    file_digest::{of_file, DigestIoError},
    file_pin::check_digest,
    freeze::{freeze_tree, Freeze},
    installed::{lock_path, lock_path_of, selected_environment, Installed},
};

/// Checks the selected environment's lock file for this platform ([`lock_path`]) against
/// `environment.lock_sha256`.
pub fn check_lock(repo: &Path, pins: &EnvironmentPins) -> Result<(), PinError> {
    let field = FieldPath::environment("lock_sha256");
    let path = repo.join(lock_path());
    let actual = of_file(&path).map_err(|source| PinError::at(field.clone(), PinProblem::Hash { source }))?;
    if actual != pins.lock_sha256 {
        return Err(PinError::at(field, PinProblem::Digest { path, expected: pins.lock_sha256, actual }));
    }
    let found = lock_backend(&path)?;
    if found != pins.backend() {
        return Err(PinError::at(
            FieldPath::environment("backend"),
            PinProblem::Backend {
                path,
                expected: format!("backend {}", pins.backend().as_str()),
                actual: format!("backend {}", found.as_str()),
            },
        ));
    }
    Ok(())
}

/// The backend the lock file at `path` installs ([`Backend::of_lock`]).
pub fn lock_backend(path: &Path) -> Result<Backend, PinError> {
    let field = FieldPath::environment("backend");
    let text = std::fs::read_to_string(path).map_err(|source| {
        PinError::at(field.clone(), PinProblem::Hash { source: DigestIoError { path: path.to_owned(), source } })
    })?;
    Backend::of_lock(&text).map_err(|err| {
        PinError::at(
            field,
            PinProblem::Backend {
                path: path.to_owned(),
                expected: "exactly one of mlx-cpu, mlx-cuda-*, mlx-metal".into(),
                actual: format!("{} MLX backend packages", err.found),
            },
        )
    })
}

/// The installed mlx_lm package's freeze (see [`crate::freeze`]).
pub fn mlx_lm_freeze(installed: &Installed) -> Result<Freeze, PinError> {
    freeze_tree(&installed.mlx_lm_dir)
        .map_err(|source| PinError::at(FieldPath::environment("mlx_lm_freeze_sha256"), PinProblem::Tree { source }))
}

/// Checks the installed environment: the mlx and mlx_lm versions, the mlx_lm source freeze and
/// the libmlx digest.
pub fn check_installed(installed: &Installed, pins: &EnvironmentPins) -> Vec<PinError> {
    let mut out = Vec::new();
    for (field, name, expected) in
        [("mlx_version", "mlx", &pins.mlx_version), ("mlx_lm_version", "mlx_lm", &pins.mlx_lm_version)]
    {
        match installed.dist_version(name) {
            Ok(actual) if actual == *expected => {}
            Ok(actual) => out.push(PinError::at(
                FieldPath::environment(field),
                PinProblem::Version { path: installed.site_packages.clone(), expected: expected.clone(), actual },
            )),
            Err(source) => out.push(PinError::at(FieldPath::environment(field), PinProblem::Installed { source })),
        }
    }
    match mlx_lm_freeze(installed) {
        Ok(freeze) if freeze.digest == pins.mlx_lm_freeze_sha256 => {}
        Ok(freeze) => out.push(PinError::at(
            FieldPath::environment("mlx_lm_freeze_sha256"),
            PinProblem::Freeze {
                path: installed.mlx_lm_dir.clone(),
                files: freeze.files,
                expected: pins.mlx_lm_freeze_sha256,
                actual: freeze.digest,
            },
        )),
        Err(err) => out.push(err),
    }
    out.extend(check_digest(FieldPath::environment("libmlx_sha256"), installed.libmlx.clone(), pins.libmlx_sha256));
    out
}

/// The manifest's pins of the selected environment ([`selected_environment`]).
pub fn selected_pins(manifest: &Manifest) -> Result<&EnvironmentPins, PinError> {
    let selected = selected_environment();
    manifest.environment_pins(selected.as_deref()).ok_or_else(|| {
        let name = selected.unwrap_or_default();
        PinError::at(FieldPath::field("environments").key(&name), PinProblem::EnvironmentNotPinned { name })
    })
}

/// The environment `adapter`'s workers run in (`None`: the default one): the one its
/// declaration names (`adapters.<name>.environment`), else the selected one.
pub fn adapter_environment(manifest: &Manifest, adapter: &Adapter) -> Option<String> {
    match manifest.declared_environment(adapter) {
        Some(named) => named.map(str::to_owned),
        None => selected_environment(),
    }
}

/// The pins of the environment `adapter`'s workers run in ([`adapter_environment`]): what its
/// jobs carry, and what its workers check themselves against.
pub fn adapter_pins<'m>(manifest: &'m Manifest, adapter: &Adapter) -> Result<&'m EnvironmentPins, PinError> {
    let environment = adapter_environment(manifest, adapter);
    manifest.environment_pins(environment.as_deref()).ok_or_else(|| {
        let name = environment.unwrap_or_default();
        let field = match manifest.declared_environment(adapter) {
            Some(_) => FieldPath::field("adapters").entry(adapter.as_str()).key("environment"),
            None => FieldPath::field("environments").key(&name),
        };
        PinError::at(field, PinProblem::EnvironmentNotPinned { name })
    })
}

/// The environment pins of what is installed now: what `manifest pin` writes.
pub fn environment_pins(repo: &Path, installed: &Installed) -> Result<EnvironmentPins, PinError> {
    environment_pins_of(repo, selected_environment().as_deref(), installed)
}

/// The pins of `environment` (`None`: the default one) as installed in `installed`: its lock
/// file and what the virtual environment holds.
pub fn environment_pins_of(
    repo: &Path,
    environment: Option<&str>,
    installed: &Installed,
) -> Result<EnvironmentPins, PinError> {
    let lock = repo.join(lock_path_of(environment));
    let version = |field: &str, name: &str| {
        installed
            .dist_version(name)
            .map_err(|source| PinError::at(FieldPath::environment(field), PinProblem::Installed { source }))
    };
    let digest = |field: &str, path: &Path| {
        of_file(path).map_err(|source| PinError::at(FieldPath::environment(field), PinProblem::Hash { source }))
    };
    Ok(EnvironmentPins {
        backend: Some(lock_backend(&lock)?),
        lock_sha256: digest("lock_sha256", &lock)?,
        mlx_version: version("mlx_version", "mlx")?,
        mlx_lm_version: version("mlx_lm_version", "mlx_lm")?,
        mlx_lm_freeze_sha256: mlx_lm_freeze(installed)?.digest,
        libmlx_sha256: digest("libmlx_sha256", &installed.libmlx)?,
    })
}
