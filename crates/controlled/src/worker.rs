//! The controlled worker's [`Driver`]: the frozen protocol comes from the shared runtime
//! (`decode_baseline_worker_runtime::run_worker`); this file supplies validation (the shared
//! job checks, then the model folder's config, the MLX version and the libmlx actually mapped),
//! the model load, and one request per call through [`crate::decode`].
//!
//! The loop polls `before_prefill_chunk` before each chunk of `prompt[:-1]` and
//! `before_seed_forward` before the last prompt token's forward, as stock's `generate_step`
//! reaches them (in fixed-continuation, which has no seed forward, the last token's forward is
//! the prefill's last chunk).
//!
//! Answering to [`COMPILED`], the loop runs its decode step under MLX's `compile`
//! ([`crate::compiled`]), one trace per position, kept across the run's requests: the first
//! request traces (the cold one the session reports apart), the others replay.
//!
//! As one rank of a rank group (`job.group`), the eager loop joins MLX's distributed group
//! ([`crate::group`]) and loads its shard of the model as mlx_lm's `sharded_load` does
//! ([`Model::load_shard`]); a model mlx_lm does not shard so is refused at validation. The
//! compiled loop does not run in groups.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use decode_baseline_wire::group::{RankIdentity, RankJob};
use decode_baseline_wire::{hooks::Site, Adapter, DeviceKind, ExitCode, Identity, Mode, RequestRecord, WorkerJob};
use decode_baseline_worker_runtime::{
    chain, check_device, check_mapped_libmlx, check_mlx_version, identity, validate_job, Driver, Refusal,
    RequestContext, RequestError, RequestSpec, Runtime,
};

use crate::compiled::CompiledSteps;
use crate::config::ModelConfig;
use crate::decode::{run_request, Checkpoint, Options, Request, RunError, Stepper};
use crate::group::Group;
use crate::model::{shard, LoadError, Model};

/// The declared adapter name under which this build runs the compiled step.
pub const COMPILED: &str = "controlled-compiled";

/// Runs the frozen worker protocol around the controlled loop on `out_dir`, answering to
/// `adapter`: the entry point of both executables that carry the loop (`decode-baseline worker`
/// and `decode-baseline-controlled worker`).
pub fn serve(out_dir: &Path, adapter: Adapter) -> ExitCode {
    let mut driver = ControlledDriver::new(built_repo(), adapter);
    decode_baseline_worker_runtime::run_worker(out_dir, &mut driver)
}

/// The repository this crate was built in (or `$DECODE_BASELINE_REPO`): its sources are what
/// the manifest pins.
pub fn built_repo() -> PathBuf {
    decode_baseline_pins::installed::repo_root(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// The controlled loop, for a binary built from the repository at `repo`, answering to
/// `adapter`: `controlled`, or a name the manifest declares for it (say, an older build run
/// beside the current one in one interleaved session).
pub struct ControlledDriver {
    repo: PathBuf,
    adapter: Adapter,
    model: Option<Model>,
    /// The compiled steps, kept across requests, when answering to [`COMPILED`].
    compiled: Option<CompiledSteps>,
    /// The group joined, as one rank of a rank group.
    group: Option<Arc<Group>>,
}

impl ControlledDriver {
    pub fn new(repo: PathBuf, adapter: Adapter) -> Self {
        let compiled = (adapter.as_str() == COMPILED).then(CompiledSteps::new);
        ControlledDriver { repo, adapter, model: None, compiled, group: None }
    }

    /// The model, once loaded.
    #[cfg(test)]
    pub(crate) fn model(&self) -> Option<&Model> {
        self.model.as_ref()
    }
}

/// A rank group's refusals at validation: the compiled loop runs no groups, and a model mlx_lm
/// does not shard with the q/k/v/o + gate/up/down pattern, or not across `ranks`, is refused.
pub fn check_group(adapter: &Adapter, config: &ModelConfig, group: &RankJob) -> Result<(), Refusal> {
    if adapter.as_str() == COMPILED {
        return Err(Refusal::new("group", "the compiled loop does not run in rank groups"));
    }
    shard::check(config, group.ranks).map_err(|e| Refusal::new(e.field, e.reason))
}

impl Driver for ControlledDriver {
    fn adapter(&self) -> Adapter {
        self.adapter.clone()
    }

    fn validate(&mut self, job: &WorkerJob) -> Result<Identity, Refusal> {
        // As a declared adapter this build need not live in the launcher's repository: that is
        // `repo_root`, which must then only be a folder (req/protocol.md §3).
        let repo = if self.adapter.is_built_in() {
            self.repo.clone()
        } else if job.repo_root.is_absolute() && job.repo_root.is_dir() {
            job.repo_root.clone()
        } else {
            return Err(Refusal::mismatch(
                "repo_root",
                "the absolute path of the launcher's repository",
                job.repo_root.display(),
            ));
        };
        let validated = validate_job(job, &repo)?;
        // An architecture or quantization this loop does not implement is refused here, before
        // anything is loaded or timed.
        let config = ModelConfig::load(&job.model_dir).map_err(|e| Refusal::new("model_dir", chain(&e)))?;
        if let Some(group) = &job.group {
            check_group(&self.adapter, &config, group)?;
        }
        let version = crate::identity::mlx_version().map_err(|e| Refusal::new("environment.mlx_version", chain(&e)))?;
        check_mlx_version(job, &version)?;
        let libmlx =
            crate::identity::libmlx_path().map_err(|e| Refusal::new("environment.libmlx_sha256", chain(&e)))?;
        let libmlx_sha256 = check_mapped_libmlx(job, &libmlx)?;
        crate::identity::set_default_device(job.device).map_err(|e| Refusal::new("device", chain(&e)))?;
        let device = match mlx_rs::Device::try_default().and_then(|d| d.get_type()) {
            Ok(mlx_rs::DeviceType::Cpu) => DeviceKind::Cpu,
            Ok(mlx_rs::DeviceType::Gpu) => DeviceKind::Gpu,
            Err(e) => return Err(Refusal::new("device", e.to_string())),
        };
        check_device(job, device)?;
        let device_info = crate::identity::device_info(device).map_err(|e| Refusal::new("device", chain(&e)))?;
        Ok(identity(
            job,
            &validated,
            &Runtime { mlx_version: version, libmlx_path: libmlx, libmlx_sha256, device, device_info },
        ))
    }

    /// The runtime writes it with its sources, as `chain` did here before.
    type LoadError = LoadError;

    /// Joins MLX's group on the job's backend (strict); what it reports is the rank and size
    /// MLX found (from `MLX_RANK` and the host file), and the backend asked for.
    fn join_group(&mut self, group: &RankJob) -> Result<RankIdentity, Refusal> {
        let joined = Group::init(group.backend).map_err(|e| Refusal::new("group.backend", chain(&e)))?;
        let identity = RankIdentity { rank: joined.rank(), ranks: joined.size(), backend: joined.backend() };
        self.group = Some(Arc::new(joined));
        Ok(identity)
    }

    fn load(&mut self, job: &WorkerJob) -> Result<(), LoadError> {
        let model = match &self.group {
            Some(group) => Model::load_shard(&job.model_dir, Arc::clone(group))?,
            None => Model::load(&job.model_dir)?,
        };
        self.model = Some(model);
        Ok(())
    }

    fn run_request(
        &mut self,
        job: &WorkerJob,
        spec: RequestSpec,
        ctx: &RequestContext<'_>,
    ) -> Result<RequestRecord, RequestError> {
        let model = self.model.as_ref().ok_or_else(|| RequestError::Failed("the model is not loaded".into()))?;
        // Fixed-continuation has no seed forward (req/protocol.md §7): there the last prompt
        // token's forward is the prefill's last chunk.
        let mut poll = |at: Checkpoint| match at {
            Checkpoint::PrefillChunk { .. } => ctx.poll(Site::BeforePrefillChunk),
            Checkpoint::Seed if job.mode == Mode::FixedContinuation => ctx.poll(Site::BeforePrefillChunk),
            Checkpoint::Seed => ctx.poll(Site::BeforeSeedForward),
            Checkpoint::Step { .. } => ctx.poll(Site::BeforeDecodeStep),
        };
        let options = Options { prefill_step_size: job.prefill_step_size as usize, ..Options::default() };
        let (prompt, stop) = (&job.prompt_ids[..], &job.stop_ids[..]);
        let max_new_tokens = job.run_policy.max_new_tokens as usize;
        let request = match job.mode {
            Mode::Headline => Request::Headline { prompt, max_new_tokens, stop },
            Mode::ReferencePair => Request::Reference { prompt, max_new_tokens, stop },
            Mode::FixedContinuation => {
                Request::Fixed { prompt, continuation: job.continuation.as_deref().unwrap_or_default() }
            }
        };
        let stepper = match self.compiled.as_mut() {
            Some(compiled) => Stepper::Compiled(compiled),
            None => Stepper::Eager,
        };
        let result = run_request(model, request, options, stepper, &mut poll);
        match result {
            Ok(run) => {
                let mut record = run.record;
                record.index = spec.index;
                record.phase = spec.phase;
                Ok(record)
            }
            Err(RunError::Aborted { reason, .. }) => Err(RequestError::Interrupted(reason)),
            Err(RunError::Failed(e)) => Err(RequestError::Failed(Box::new(e))),
        }
    }
}
