//! Job validation for Rust workers: the checks of `req/protocol.md` §3, in the same order and
//! with the same field names as the Python workers' (the stock worker's among them)
//! `tools/kit/python/decode_baseline_worker/validate.py`, built on the manifest checks of
//! [`decode_baseline_pins`].
//!
//! [`validate_job`] does everything that needs no MLX; the driver then checks what it found
//! at run time ([`check_mlx_version`], [`check_mapped_libmlx`]) and assembles the identity
//! ([`identity`]).

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use super::refusal::Refusal;
use decode_baseline_pins::{
    self as pins,
    installed::{mlx_dir_override, venv_dir, Installed},
    PinError, PinProblem,
};
use decode_baseline_wire::{
    job::token_ids_sha256,
    manifest::{Cell, Manifest},
    DeviceKind, Identity, Mode, Sha256Digest, WorkerJob,
};

/// What validation established, for the identity block.
#[derive(Debug, Clone)]
pub struct Validated {
    pub manifest: Manifest,
    pub manifest_sha256: Sha256Digest,
    pub installed: Installed,
    /// The freeze of the installed mlx_lm package, as checked.
    pub mlx_lm_freeze_sha256: Sha256Digest,
}

/// A pin failure as a refusal naming its field (`fallback_field` for a problem of the manifest
/// file as a whole) and saying its problem.
fn refusal(err: &PinError, fallback_field: &str) -> Refusal {
    let field = if err.field.is_root() { fallback_field.to_owned() } else { err.field.to_string() };
    Refusal::new(field, err.problem.to_string())
}

fn first(errors: Vec<PinError>, fallback_field: &str) -> Result<(), Refusal> {
    match errors.first() {
        Some(err) => Err(refusal(err, fallback_field)),
        None => Ok(()),
    }
}

/// Every check of the job that needs no MLX, for a worker whose code lives in `worker_repo`.
/// The common checks of [`super::run_worker`] (schema version, adapter, policy positive,
/// continuation present) have already passed.
pub fn validate_job(job: &WorkerJob, worker_repo: &Path) -> Result<Validated, Refusal> {
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_owned());
    let repo = canonical(worker_repo);
    if !job.repo_root.is_absolute() || canonical(&job.repo_root) != repo {
        return Err(Refusal::mismatch(
            "repo_root",
            format!("the repository this worker runs from ({})", repo.display()),
            job.repo_root.display(),
        ));
    }

    // The manifest, its digest and its pin.
    if !job.manifest_path.is_absolute() {
        return Err(Refusal::new("manifest_path", format!("must be absolute, found {}", job.manifest_path.display())));
    }
    let bytes = std::fs::read(&job.manifest_path).map_err(|err| {
        Refusal::new("manifest_path", format!("failed to read {}: {err}", job.manifest_path.display()))
    })?;
    let actual = Sha256Digest::of_bytes(&bytes);
    if actual != job.manifest_sha256 {
        return Err(Refusal::mismatch(
            "manifest_sha256",
            job.manifest_sha256,
            format!("{actual} for {}", job.manifest_path.display()),
        ));
    }
    pins::verify_pin(&job.manifest_path, &bytes).map_err(|err| refusal(&err, "manifest_sha256"))?;
    let (manifest, _) = pins::load_manifest(&job.manifest_path).map_err(|err| match &err.problem {
        PinProblem::SchemaVersion { expected, actual, .. } => {
            Refusal::mismatch("manifest.schema_version", expected, actual)
        }
        // serde's own words name the key or value it refused (an unknown field at any depth).
        PinProblem::ManifestParse { path, source } => {
            Refusal::new("manifest_path", format!("failed to parse {}: {source}", path.display()))
        }
        _ => refusal(&err, "manifest_path"),
    })?;

    // The case and its artifact.
    let case = manifest
        .cases
        .get(&job.case_id)
        .ok_or_else(|| Refusal::new("case_id", format!("{:?} is not a case of the manifest", job.case_id)))?;
    let case_dir = pins::case_dir(&repo, &job.case_id, case).map_err(|err| refusal(&err, "model_dir"))?;
    if canonical(&job.model_dir) != canonical(&case_dir) {
        return Err(Refusal::mismatch(
            "model_dir",
            format!("the case folder {}", case_dir.display()),
            job.model_dir.display(),
        ));
    }
    first(pins::check_case(&repo, &job.case_id, case), "model_dir")?;

    // The prompt, continuation, cell and stop set.
    let prompt = manifest
        .prompts
        .get(&job.prompt_id)
        .ok_or_else(|| Refusal::new("prompt_id", format!("{:?} is not a prompt of the manifest", job.prompt_id)))?;
    if prompt.case != job.case_id {
        return Err(Refusal::mismatch(
            "prompt_id",
            format!("a prompt of case {:?}", job.case_id),
            format!("one of case {:?}", prompt.case),
        ));
    }
    if job.prompt_ids != prompt.ids {
        return Err(Refusal::new("prompt_ids", format!("differ from prompts[{:?}].ids", job.prompt_id)));
    }
    if job.prompt_sha256 != prompt.sha256 {
        return Err(Refusal::mismatch("prompt_sha256", prompt.sha256, job.prompt_sha256));
    }
    let ids_digest = token_ids_sha256(&job.prompt_ids);
    if ids_digest != prompt.sha256 {
        return Err(Refusal::mismatch("prompt_sha256", prompt.sha256, format!("{ids_digest} for the ids as listed")));
    }
    if let Some(err) = pins::check_continuation_digest(&job.prompt_id, prompt) {
        return Err(refusal(&err, "prompts"));
    }
    if let (Mode::FixedContinuation, Some(continuation)) = (job.mode, &job.continuation) {
        if *continuation != prompt.continuation {
            return Err(Refusal::new(
                "continuation",
                format!("differs from prompts[{:?}].continuation", job.prompt_id),
            ));
        }
        let steps = manifest.run_policy.fixed_continuation_steps as usize;
        if continuation.len() != steps {
            return Err(Refusal::mismatch("continuation", format!("{steps} ids"), continuation.len()));
        }
    }
    let cell = Cell { case: job.case_id.clone(), prompt: job.prompt_id.clone(), mode: job.mode };
    if !manifest.cells.contains(&cell) {
        return Err(Refusal::new("cells", format!("the cell {} is not in the manifest", cell.name())));
    }
    if job.stop_ids != case.stop_ids {
        return Err(Refusal::mismatch(
            "stop_ids",
            format!("{:?} (cases[{:?}].stop_ids)", case.stop_ids, job.case_id),
            format!("{:?}", job.stop_ids),
        ));
    }

    // Policy and environment pins: the job's must be the manifest's.
    let by_field = |value: serde_json::Value| value.as_object().cloned().unwrap_or_default();
    let (found, expected) = (
        by_field(serde_json::to_value(&job.run_policy).unwrap()),
        by_field(serde_json::to_value(&manifest.run_policy).unwrap()),
    );
    for (name, want) in &expected {
        if found.get(name) != Some(want) {
            return Err(Refusal::mismatch(
                format!("run_policy.{name}"),
                format!("{want} (the manifest's)"),
                found.get(name).cloned().unwrap_or_default(),
            ));
        }
    }
    // An adapter that declares an environment of its own runs in it: the launcher selects it.
    if let Some(declared) = manifest.declared_environment(&job.adapter) {
        let selected = pins::installed::selected_environment();
        if declared != selected.as_deref() {
            let name = |e: Option<&str>| e.unwrap_or(pins::installed::DEFAULT_ENV_NAME).to_owned();
            return Err(Refusal::mismatch(
                format!("adapters.{}.environment", job.adapter),
                format!("{} (the environment the adapter declares)", name(declared)),
                format!("{} (${})", name(selected.as_deref()), decode_baseline_wire::manifest::ENV_NAME_ENV),
            ));
        }
    }
    let pinned = pins::selected_pins(&manifest).map_err(|err| refusal(&err, "environments"))?;
    let (found, expected) =
        (by_field(serde_json::to_value(&job.environment).unwrap()), by_field(serde_json::to_value(pinned).unwrap()));
    for (name, want) in &expected {
        if found.get(name) != Some(want) {
            return Err(Refusal::mismatch(
                format!("environment.{name}"),
                format!("{want} (the manifest's)"),
                found.get(name).cloned().unwrap_or_default(),
            ));
        }
    }

    let device = job.environment.backend().device();
    if job.device != device {
        return Err(Refusal::mismatch(
            "device",
            format!("{} (the device of backend {})", device.as_str(), job.environment.backend().as_str()),
            job.device.as_str(),
        ));
    }

    // This worker's own sources, then the lock file.
    let own = pins::check_adapter_sources(&repo, &job.manifest_path, &manifest, &job.adapter);
    first(own, &format!("worker_sources.{}", job.adapter))?;
    pins::check_lock(&repo, &job.environment).map_err(|err| refusal(&err, "environment.lock_sha256"))?;

    // The installed environment, as found on disk (versions, mlx_lm freeze, libmlx).
    let installed = Installed::locate(&venv_dir(&repo), mlx_dir_override().as_deref())
        .map_err(|err| Refusal::new("environment", format!("failed to locate the installed environment: {err}")))?;
    first(pins::check_installed(&installed, &job.environment), "environment")?;
    let mlx_lm_freeze_sha256 = job.environment.mlx_lm_freeze_sha256;
    let manifest_sha256 = actual;
    Ok(Validated { manifest, manifest_sha256, installed, mlx_lm_freeze_sha256 })
}

/// The MLX version the loaded library reports against the pin.
pub fn check_mlx_version(job: &WorkerJob, found: &str) -> Result<(), Refusal> {
    if found != job.environment.mlx_version {
        return Err(Refusal::mismatch("environment.mlx_version", &job.environment.mlx_version, found));
    }
    Ok(())
}

/// The device the worker runs on, once it made the job's `device` its default, against the job.
pub fn check_device(job: &WorkerJob, found: DeviceKind) -> Result<(), Refusal> {
    if found != job.device {
        return Err(Refusal::mismatch("device", job.device.as_str(), found.as_str()));
    }
    Ok(())
}

/// The libmlx actually mapped into the process against the pin; returns its digest.
pub fn check_mapped_libmlx(job: &WorkerJob, mapped: &Path) -> Result<Sha256Digest, Refusal> {
    let field = "environment.libmlx_sha256";
    let actual = pins::file_digest::of_file(mapped).map_err(|err| Refusal::new(field, err.to_string()))?;
    if actual != job.environment.libmlx_sha256 {
        return Err(Refusal::mismatch(
            field,
            job.environment.libmlx_sha256,
            format!("{actual} for {}", mapped.display()),
        ));
    }
    Ok(actual)
}

/// What the driver found at run time, for [`identity`].
#[derive(Debug, Clone)]
pub struct Runtime {
    pub mlx_version: String,
    pub libmlx_path: PathBuf,
    pub libmlx_sha256: Sha256Digest,
    /// The device the worker made its default (the job's `device`) and runs on.
    pub device: DeviceKind,
    /// MLX's `device_info()` of that device.
    pub device_info: BTreeMap<String, String>,
}

/// The identity block of a validated job.
pub fn identity(job: &WorkerJob, validated: &Validated, runtime: &Runtime) -> Identity {
    Identity {
        manifest_sha256: validated.manifest_sha256,
        code_version: decode_baseline_pins::code_version(&job.repo_root),
        worker_sources_sha256: validated.manifest.worker_sources_sha256(&job.adapter),
        lock_sha256: job.environment.lock_sha256,
        mlx_version: runtime.mlx_version.clone(),
        mlx_lm_version: job.environment.mlx_lm_version.clone(),
        mlx_lm_freeze_sha256: validated.mlx_lm_freeze_sha256,
        libmlx_path: runtime.libmlx_path.display().to_string(),
        libmlx_sha256: runtime.libmlx_sha256,
        device: runtime.device,
        backend: Some(job.environment.backend()),
        device_info: runtime.device_info.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_errors_become_refusals_naming_the_field_once() {
        let err = PinError::at(
            pins::FieldPath::field("cases").entry("t").key("files").entry("a"),
            PinProblem::Missing { path: "/x/a".into() },
        );
        let r = refusal(&err, "model_dir");
        assert_eq!(r.field, "cases[\"t\"].files[\"a\"]");
        assert_eq!(r.to_string(), "validation failed: cases[\"t\"].files[\"a\"]: pinned file /x/a is missing");
    }
}
