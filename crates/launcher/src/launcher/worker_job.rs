//! Building each worker's job from the manifest: the cell's case, prompt, continuation, stop
//! set, run policy and the pins of the environment the adapter runs in, with absolute paths.

use std::path::{Path, PathBuf};

use decode_baseline_wire::{
    job::WorkerJob,
    manifest::{Cell, Manifest},
    Adapter, Mode, Sha256Digest, WORKER_JOB_SCHEMA_VERSION,
};

#[derive(Debug, thiserror::Error)]
pub enum WorkerJobError {
    #[error("manifest {path}: cell {cell} names case {case:?}, which is not in cases")]
    UnknownCase { path: PathBuf, cell: String, case: String },
    #[error("manifest {path}: cell {cell} names prompt {prompt:?}, which is not in prompts")]
    UnknownPrompt { path: PathBuf, cell: String, prompt: String },
    #[error("manifest {path}")]
    Environment {
        path: PathBuf,
        #[source]
        source: Box<decode_baseline_pins::PinError>,
    },
}

/// The manifest as the launcher uses it: parsed, with the digest of the exact bytes read.
#[derive(Debug, Clone)]
pub struct LoadedManifest {
    pub path: PathBuf,
    pub sha256: Sha256Digest,
    pub manifest: Manifest,
}

/// The absolute model folder of `case`. A relative case path is relative to the repository
/// (req/manifest.md §4), which is what every worker checks `model_dir` against; the manifest's
/// own folder only coincides with it for the repository's `workloads.json`.
pub fn model_dir(case: &decode_baseline_wire::manifest::Case, repo: &Path) -> PathBuf {
    if case.path.is_absolute() {
        case.path.clone()
    } else {
        repo.join(&case.path)
    }
}

/// What the session decides for each of its worker runs beyond the cell and the adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSettings {
    /// The job's prefill step size (`SessionJob::prefill_step_size`).
    pub prefill_step_size: u32,
    /// Whether the worker waits at the launcher's gate before each request.
    pub gate: bool,
}

/// One worker's job: `cell` for `adapter`, with the session's [`RunSettings`].
pub fn build(
    loaded: &LoadedManifest,
    cell: &Cell,
    adapter: &Adapter,
    run_id: String,
    repo: &Path,
    RunSettings { prefill_step_size, gate }: RunSettings,
) -> Result<WorkerJob, WorkerJobError> {
    let manifest = &loaded.manifest;
    let case = manifest.cases.get(&cell.case).ok_or_else(|| WorkerJobError::UnknownCase {
        path: loaded.path.clone(),
        cell: cell.name(),
        case: cell.case.clone(),
    })?;
    let prompt = manifest.prompts.get(&cell.prompt).ok_or_else(|| WorkerJobError::UnknownPrompt {
        path: loaded.path.clone(),
        cell: cell.name(),
        prompt: cell.prompt.clone(),
    })?;
    let model_dir = model_dir(case, repo);
    let environment = decode_baseline_pins::adapter_pins(manifest, adapter)
        .map_err(|source| WorkerJobError::Environment { path: loaded.path.clone(), source: Box::new(source) })?
        .clone();
    Ok(WorkerJob {
        schema_version: WORKER_JOB_SCHEMA_VERSION,
        run_id,
        adapter: adapter.clone(),
        mode: cell.mode,
        repo_root: repo.to_owned(),
        manifest_path: loaded.path.clone(),
        manifest_sha256: loaded.sha256,
        case_id: cell.case.clone(),
        model_dir,
        prompt_id: cell.prompt.clone(),
        prompt_ids: prompt.ids.clone(),
        prompt_sha256: prompt.sha256,
        continuation: (cell.mode == Mode::FixedContinuation).then(|| prompt.continuation.clone()),
        stop_ids: case.stop_ids.clone(),
        run_policy: manifest.run_policy.clone(),
        prefill_step_size,
        device: environment.backend().device(),
        environment,
        gate,
        group: None,
    })
}
