//! [`run_worker`]: the protocol around a decode loop, shared by every Rust worker.
//!
//! The order is fixed: refuse a bad out dir → claim → read the job → validate (the driver's
//! checks after the common ones) → load → `worker-ready` (the deadline starts) → the mode's
//! requests, each polled for cancellation and the deadline → `report.json`, once → exit code.
//! A [`Driver`] supplies the adapter-specific parts and calls [`RequestContext::poll`] before
//! every prefill chunk, the seed forward and every decode step.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use super::{
    cancel::CancelFlag,
    claim::{claim, ClaimError},
    gate::{signal_done, Gate},
    group::{check_joined, check_rank_job},
    hooks::{HookError, Hooks},
    interrupt::Interrupt,
    outdir::{self, OutDirError},
    ready::{signal_ready, ReadyError},
    refusal::Refusal,
    report_write::{write_once, WriteOutcome},
    slowdown::{Slowdown, SlowdownError},
    utc::utc_now_rfc3339,
    watchdog::Watchdog,
};
use decode_baseline_wire::{
    group::{RankIdentity, RankJob},
    hooks::Site,
    outdir::OutDir,
    Adapter, ExitCode, Identity, Mode, Phase, RequestRecord, Status, WorkerJob, WorkerReport, REPORT_SCHEMA_VERSION,
    WORKER_JOB_SCHEMA_VERSION,
};

/// A request that did not produce a record.
#[derive(Debug)]
pub enum RequestError {
    /// Stopped at a poll site: cancelled, or the deadline fired.
    Interrupted(Interrupt),
    /// The driver could not complete it; the report's error is the error's chain of causes.
    Failed(Box<dyn std::error::Error + Send + Sync>),
}

impl From<Interrupt> for RequestError {
    fn from(i: Interrupt) -> Self {
        RequestError::Interrupted(i)
    }
}

/// One request to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestSpec {
    /// 0-based index in the job.
    pub index: u32,
    /// Run-policy phase (`None` for reference-pair).
    pub phase: Option<Phase>,
    /// Whether this is the job's last request.
    pub last: bool,
}

/// The requests a job runs, in order ([`decode_baseline_wire::RunPolicy::request_plan`]).
pub fn request_plan(job: &WorkerJob) -> Vec<RequestSpec> {
    let phases = job.run_policy.request_plan(job.mode);
    let n = phases.len();
    phases.into_iter().enumerate().map(|(i, phase)| RequestSpec { index: i as u32, phase, last: i + 1 == n }).collect()
}

/// What a request's decode loop polls.
pub struct RequestContext<'a> {
    index: u32,
    cancel: &'a CancelFlag,
    watchdog: &'a Watchdog,
    hooks: &'a Hooks,
    slowdown: &'a Slowdown,
}

impl RequestContext<'_> {
    /// The stop check alone: cancellation first, then the deadline.
    pub fn check(&self) -> Result<(), Interrupt> {
        if self.cancel.is_cancelled() {
            Err(Interrupt::Cancelled)
        } else if self.watchdog.fired() {
            Err(Interrupt::Timeout)
        } else {
            Ok(())
        }
    }

    /// Call before every prefill chunk, the seed forward and every decode step, with the
    /// matching site: check → test hook → check again, so a signal that arrives while a hook
    /// holds the worker is seen before the next forward runs. At its site (`before_decode_step`
    /// unless set otherwise) the test-only slowdown, if set, spins here, inside the step's timed
    /// interval (or the request's time to first token).
    pub fn poll(&self, site: Site) -> Result<(), Interrupt> {
        self.check()?;
        if self.hooks.is_armed() {
            self.hooks.reach(site, Some(self.index), self.cancel, Some(self.watchdog));
            self.check()?;
        }
        self.slowdown.apply(site);
        Ok(())
    }
}

/// The adapter-specific parts of a worker.
pub trait Driver {
    /// The adapter this worker is; a job for the other one is refused.
    fn adapter(&self) -> Adapter;
    /// Checks the job against the manifest and what is installed, before anything is loaded;
    /// returns the identity found.
    fn validate(&mut self, job: &WorkerJob) -> Result<Identity, Refusal>;
    /// Why [`Driver::load`] fails: the driver's own error. The runtime writes it with its
    /// sources ([`crate::chain`]) after `failed to load the model from <model_dir>: `.
    type LoadError: std::error::Error + 'static;

    /// Joins the job's rank group (`req/distributed.md`) after validation and before the load,
    /// and returns what the initialized group reports of itself. The default refuses: a loop
    /// that cannot shard a model does not run as a rank.
    fn join_group(&mut self, group: &RankJob) -> Result<RankIdentity, Refusal> {
        let _ = group;
        Err(Refusal::new("group", format!("the {} worker does not run in rank groups", self.adapter().as_str())))
    }
    /// Loads the model (its rank's shard, in a group).
    fn load(&mut self, job: &WorkerJob) -> Result<(), Self::LoadError>;
    /// Runs one request; polls `ctx` before every forward.
    fn run_request(
        &mut self,
        job: &WorkerJob,
        spec: RequestSpec,
        ctx: &RequestContext<'_>,
    ) -> Result<RequestRecord, RequestError>;
}

/// The report under construction, shared with the watchdog's backstop.
struct Slot {
    report: WorkerReport,
    /// Someone (main loop or backstop) has taken over writing; the other must not.
    taken: bool,
}

type SharedSlot = Arc<Mutex<Slot>>;

/// Fills in the end state, writes the report once and returns the process's exit code.
/// Returns `None` if the other party already took over.
fn finish(
    out: &OutDir,
    slot: &SharedSlot,
    status: Status,
    error: Option<String>,
    before_write: impl FnOnce(),
) -> Option<ExitCode> {
    let mut guard = lock(slot);
    if guard.taken {
        return None;
    }
    guard.taken = true;
    before_write();
    let code = status.exit_code();
    let report = &mut guard.report;
    report.status = status;
    report.exit_code = code.code();
    report.error = error;
    report.finished_utc = utc_now_rfc3339();
    match write_once(out, report) {
        Ok(WriteOutcome::Written) => Some(code),
        Ok(WriteOutcome::Exists) => {
            eprintln!(
                "worker: {} already exists and was left untouched; this run's report (status {}) \
                 was not recorded, so the run ends failed",
                out.report().display(),
                if status == Status::Ok {
                    "ok, downgraded to failed".to_owned()
                } else {
                    format!("{status:?}").to_lowercase()
                }
            );
            Some(ExitCode::Failed)
        }
        Err(err) => {
            eprintln!("worker: {err}: {}; no report was left", err_source(&err));
            Some(ExitCode::Failed)
        }
    }
}

fn lock(slot: &SharedSlot) -> std::sync::MutexGuard<'_, Slot> {
    slot.lock().unwrap_or_else(|e| e.into_inner())
}

fn err_source(err: &(dyn std::error::Error + 'static)) -> String {
    err.source().map(|s| s.to_string()).unwrap_or_default()
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Why the worker stops before its requests, from whichever phase found it: every phase up
/// to `worker-ready` returns it, and [`stop`] alone handles it.
///
/// Its message is the whole line written to stderr and, once the job is read, to the failed
/// report's `error`. A cause that this line spells out is a plain field (`error`), not a
/// `#[source]` that a chain printer would write a second time; a wrapped error
/// (`transparent`) keeps its own message and sources.
#[derive(Debug, thiserror::Error)]
enum Stop {
    #[error("failed to install the SIGTERM/SIGINT handlers: {error}")]
    CancelHandlers { error: std::io::Error },
    #[error("failed to install the SIGXFSZ handler: {error}")]
    FileSizeHandler { error: std::io::Error },
    #[error(transparent)]
    OutDir(#[from] OutDirError),
    #[error(transparent)]
    Hooks(#[from] HookError),
    #[error(transparent)]
    Slowdown(#[from] SlowdownError),
    #[error(transparent)]
    Claim(#[from] ClaimError),
    #[error("failed to read {path}: {error}")]
    ReadJob { path: PathBuf, error: std::io::Error },
    #[error("failed to parse {path}: {error}")]
    ParseJob { path: PathBuf, error: serde_json::Error },
    /// The common checks' or the driver's refusal of the job.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The driver's [`Driver::LoadError`], written with its sources.
    #[error("failed to load the model from {model_dir}: {}", decode_baseline_pins::chain(.error.as_ref()))]
    Load { model_dir: PathBuf, error: Box<dyn std::error::Error> },
    #[error(transparent)]
    Ready(#[from] ReadyError),
}

/// Handles a [`Stop`]. Before the job is read (signal handlers, the out dir, hooks, slowdown,
/// the claim, the job itself) there is no worker and nothing to fill a report's header with,
/// so the reason goes to stderr alone; after, a failed report says why.
fn stop(worker: Option<&Worker>, reason: Stop) -> ExitCode {
    let message = reason.to_string();
    match worker {
        None => {
            eprintln!("worker refused: {message}");
            ExitCode::Failed
        }
        Some(w) => {
            eprintln!("worker: {message}");
            finish(&w.out, &w.slot, Status::Failed, Some(message), || {
                w.hooks.reach(Site::BeforeReportWrite, None, &w.cancel, None)
            })
            .unwrap_or(ExitCode::Failed)
        }
    }
}

/// A worker that holds its claimed out dir and has read its job.
struct Worker {
    out: OutDir,
    cancel: CancelFlag,
    hooks: Hooks,
    slowdown: Slowdown,
    job: WorkerJob,
    /// The report under construction, shared with the watchdog's backstop.
    slot: SharedSlot,
}

/// Runs the whole worker protocol on `out_dir` and returns the exit code: open (claim and
/// job) → prepare (validate, load, `worker-ready`) → the requests → the report.
pub fn run_worker<D: Driver>(out_dir: &Path, driver: &mut D) -> ExitCode {
    let started = Instant::now();
    let worker = match Worker::open(out_dir, driver.adapter()) {
        Ok(worker) => worker,
        Err(reason) => return stop(None, reason),
    };
    match worker.prepare(driver, started) {
        Ok(wake) => worker.run_requests(driver, wake),
        Err(reason) => stop(Some(&worker), reason),
    }
}

impl Worker {
    /// Installs the signal handlers, opens and claims the out dir and reads the job.
    fn open(out_dir: &Path, adapter: Adapter) -> Result<Self, Stop> {
        // Signals first: from here on SIGTERM sets the flag instead of killing the process.
        let cancel = CancelFlag::install().map_err(|error| Stop::CancelHandlers { error })?;
        // A write past RLIMIT_FSIZE (a full quota, a test's small limit) raises SIGXFSZ, whose
        // default action kills the process before the failed report write can be cleaned up and
        // reported. With a no-op handler the write fails with EFBIG and takes the documented
        // path (no temp, no report, exit 1). Python workers get the same from the interpreter,
        // which ignores SIGXFSZ at start-up.
        // SAFETY: the handler does nothing, which is async-signal-safe.
        unsafe { signal_hook::low_level::register(signal_hook::consts::SIGXFSZ, || {}) }
            .map_err(|error| Stop::FileSizeHandler { error })?;
        let out = outdir::open(out_dir)?;
        let hooks = Hooks::from_env(out.path())?;
        let slowdown = Slowdown::from_env(adapter.clone())?;
        let marker = claim(&out)?;
        hooks.reach(Site::AfterClaim, None, &cancel, None);

        // A job that cannot be read leaves no report: there is nothing to fill its header with.
        let bytes = std::fs::read(out.job()).map_err(|error| Stop::ReadJob { path: out.job(), error })?;
        let job: WorkerJob =
            serde_json::from_slice(&bytes).map_err(|error| Stop::ParseJob { path: out.job(), error })?;

        let report = WorkerReport {
            schema_version: REPORT_SCHEMA_VERSION,
            run_id: job.run_id.clone(),
            adapter,
            mode: job.mode,
            case_id: job.case_id.clone(),
            prompt_id: job.prompt_id.clone(),
            status: Status::Failed,
            exit_code: ExitCode::Failed.code(),
            error: None,
            pid: marker.pid,
            claimed_utc: marker.utc.clone(),
            finished_utc: String::new(),
            start_to_ready_ns: None,
            load_ns: None,
            identity: None,
            test_slowdown_us: slowdown.micros(),
            group: None,
            requests: Vec::new(),
        };
        let slot = Arc::new(Mutex::new(Slot { report, taken: false }));
        Ok(Self { out, cancel, hooks, slowdown, job, slot })
    }

    /// Validates the job (the common checks, then the driver's), loads the model and signals
    /// `worker-ready`; returns the gate, for a gated job.
    fn prepare<D: Driver>(&self, driver: &mut D, started: Instant) -> Result<Option<Gate>, Stop> {
        let job = &self.job;
        let identity = common_checks(job, driver.adapter()).and_then(|()| driver.validate(job))?;
        lock(&self.slot).report.identity = Some(identity);
        if let Some(group) = &job.group {
            check_rank_job(group)?;
            let joined = driver.join_group(group)?;
            check_joined(group, &joined)?;
            lock(&self.slot).report.group = Some(joined);
        }
        driver.load(job).map_err(|error| Stop::Load { model_dir: job.model_dir.clone(), error: Box::new(error) })?;
        let load_ns = nanos(started.elapsed());
        // Made before ready, so that the launcher's first grant finds it.
        let wake = job.gate.then(|| Gate::open(&self.out));
        signal_ready(&self.out)?;
        let mut guard = lock(&self.slot);
        guard.report.load_ns = Some(load_ns);
        guard.report.start_to_ready_ns = Some(nanos(started.elapsed()));
        Ok(wake)
    }

    /// The job deadline's watchdog, started at `worker-ready`; its backstop writes the report
    /// itself if the decode loop does not stop within the grace.
    fn start_watchdog(&self) -> Watchdog {
        let policy = &self.job.run_policy;
        let backstop_out = self.out.clone();
        let backstop_slot = Arc::clone(&self.slot);
        let grace = policy.backstop_grace_s;
        Watchdog::start(
            Duration::from_secs(u64::from(policy.job_deadline_s)),
            Duration::from_millis(u64::from(policy.watchdog_poll_ms)),
            Duration::from_secs(u64::from(grace)),
            Box::new(move || {
                let message = format!(
                    "job deadline passed and the decode loop did not stop within {grace} s; \
                     report written by the watchdog"
                );
                eprintln!("worker: {message}");
                if let Some(code) = finish(&backstop_out, &backstop_slot, Status::Timeout, Some(message), || ()) {
                    std::process::exit(code.code());
                }
            }),
        )
    }

    /// Runs the job's requests under the watchdog and writes the report.
    fn run_requests<D: Driver>(&self, driver: &mut D, wake: Option<Gate>) -> ExitCode {
        let watchdog = self.start_watchdog();
        self.hooks.reach(Site::AfterReady, None, &self.cancel, Some(&watchdog));
        let end = self.request_loop(driver, wake.as_ref(), &watchdog);
        drop(wake);
        // The post-loop check: a deadline that fired during the final request is never `ok`.
        let (status, error) = end.unwrap_or_else(|| {
            if watchdog.fired() {
                (Status::Timeout, Some("job deadline passed during the final request".to_owned()))
            } else if self.cancel.is_cancelled() {
                (Status::Cancelled, Some("cancelled after the final request".to_owned()))
            } else {
                (Status::Ok, None)
            }
        });
        let code = finish(&self.out, &self.slot, status, error, || {
            watchdog.stop();
            self.hooks.reach(Site::BeforeReportWrite, None, &self.cancel, None);
        });
        // `None`: the backstop took over and exits the process; wait for it.
        code.unwrap_or_else(|| loop {
            std::thread::park();
        })
    }

    /// Every request of the plan in turn; returns how the loop ended early, if it did.
    fn request_loop<D: Driver>(
        &self,
        driver: &mut D,
        wake: Option<&Gate>,
        watchdog: &Watchdog,
    ) -> Option<(Status, Option<String>)> {
        let (job, out, cancel, hooks) = (&self.job, &self.out, &self.cancel, &self.hooks);
        for spec in request_plan(job) {
            let ctx = RequestContext { index: spec.index, cancel, watchdog, hooks, slowdown: &self.slowdown };
            let gate = || wake.map_or(Ok(None), |gate| gate.wait(out, spec.index, cancel, watchdog));
            let seq = match ctx.check().and_then(|()| gate()) {
                Ok(seq) => seq,
                Err(interrupt) => return Some((interrupt.status(), Some(stop_message(interrupt, spec.index)))),
            };
            if hooks.is_armed() {
                hooks.reach(Site::RequestLoop, Some(spec.index), cancel, Some(watchdog));
                hooks.reach(Site::Stall, Some(spec.index), cancel, Some(watchdog));
            }
            match driver.run_request(job, spec, &ctx) {
                Ok(record) => {
                    lock(&self.slot).report.requests.push(record);
                    if job.gate {
                        if let Err(err) = signal_done(out, spec.index, seq) {
                            let message = format!("request {}: {err}: {}", spec.index, err_source(&err));
                            return Some((Status::Failed, Some(message)));
                        }
                    }
                }
                Err(RequestError::Interrupted(interrupt)) => {
                    return Some((interrupt.status(), Some(stop_message(interrupt, spec.index))));
                }
                Err(RequestError::Failed(err)) => {
                    return Some((
                        Status::Failed,
                        Some(format!("request {} failed: {}", spec.index, crate::chain(err.as_ref()))),
                    ));
                }
            }
            if spec.last {
                hooks.reach(Site::FinalRequest, None, cancel, Some(watchdog));
            }
        }
        None
    }
}

fn stop_message(interrupt: Interrupt, index: u32) -> String {
    match interrupt {
        Interrupt::Timeout => format!("job deadline passed; stopped before completing request {index}"),
        Interrupt::Cancelled => format!("cancelled by signal; stopped before completing request {index}"),
    }
}

/// The checks every worker makes before its own.
fn common_checks(job: &WorkerJob, adapter: Adapter) -> Result<(), Refusal> {
    if job.schema_version != WORKER_JOB_SCHEMA_VERSION {
        return Err(Refusal::mismatch("schema_version", WORKER_JOB_SCHEMA_VERSION, job.schema_version));
    }
    if job.adapter != adapter {
        return Err(Refusal::mismatch("adapter", adapter.as_str(), job.adapter.as_str()));
    }
    job.run_policy.validate().map_err(|err| Refusal::new(format!("run_policy.{}", err.field), err.to_string()))?;
    if job.prefill_step_size == 0 {
        return Err(Refusal::new("prefill_step_size", "must be at least 1 token, found 0"));
    }
    match (job.mode, &job.continuation) {
        (Mode::FixedContinuation, None) => {
            Err(Refusal::new("continuation", "required in fixed_continuation mode, found null"))
        }
        (Mode::Headline | Mode::ReferencePair, Some(_)) => {
            Err(Refusal::new("continuation", format!("must be null in {} mode", job.mode.as_str())))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bounded::within;
    use decode_baseline_wire::{RunPolicy, StepRecord};

    /// [`run_worker`] on `dir` under the bound (a report the main loop and the backstop both
    /// failed to take over would park it for good); gives the driver back.
    fn run_bounded(dir: &Path, mut fake: Fake) -> (ExitCode, Fake) {
        let dir = dir.to_owned();
        within("run_worker", move || (run_worker(&dir, &mut fake), fake))
    }

    /// A driver with no model: validates nothing, polls before each of its fake forwards;
    /// its load fails when `load_fails` is set, and request `fails_at` fails.
    struct Fake {
        polls: u32,
        load_fails: bool,
        fails_at: Option<u32>,
    }

    impl Fake {
        fn new() -> Self {
            Fake { polls: 0, load_fails: false, fails_at: None }
        }
    }

    /// A driver error with a source, as a real driver's is.
    #[derive(Debug, thiserror::Error)]
    #[error("failed to read the weights")]
    struct FakeError {
        #[source]
        source: std::io::Error,
    }

    impl Driver for Fake {
        fn adapter(&self) -> Adapter {
            Adapter::Stock
        }

        fn validate(&mut self, job: &WorkerJob) -> Result<Identity, Refusal> {
            let d = job.manifest_sha256;
            Ok(Identity {
                manifest_sha256: d,
                code_version: "test".into(),
                worker_sources_sha256: d,
                lock_sha256: d,
                mlx_version: "0".into(),
                mlx_lm_version: "0".into(),
                mlx_lm_freeze_sha256: d,
                libmlx_path: "/none".into(),
                libmlx_sha256: d,
                device: decode_baseline_wire::DeviceKind::Cpu,
                backend: Some(decode_baseline_wire::Backend::Cpu),
                device_info: Default::default(),
            })
        }

        type LoadError = FakeError;

        fn load(&mut self, _: &WorkerJob) -> Result<(), FakeError> {
            if self.load_fails {
                Err(FakeError { source: std::io::Error::other("disk on fire") })
            } else {
                Ok(())
            }
        }

        fn run_request(
            &mut self,
            job: &WorkerJob,
            spec: RequestSpec,
            ctx: &RequestContext<'_>,
        ) -> Result<RequestRecord, RequestError> {
            ctx.poll(Site::BeforePrefillChunk)?;
            ctx.poll(Site::BeforeSeedForward)?;
            if self.fails_at == Some(spec.index) {
                let source = std::io::Error::other("out of memory");
                return Err(RequestError::Failed(Box::new(FakeError { source })));
            }
            let l = job.prompt_ids.len() as u32;
            let mut steps = Vec::new();
            for s in 1..job.run_policy.max_new_tokens {
                ctx.poll(Site::BeforeDecodeStep)?;
                self.polls += 1;
                steps.push(StepRecord {
                    position: l + s,
                    argmax: 1,
                    t_ns: u64::from(s) + 1,
                    dur_ns: 1,
                    build_ns: None,
                    eval_ns: None,
                    margin: None,
                    tie: None,
                });
            }
            Ok(RequestRecord {
                index: spec.index,
                phase: spec.phase,
                prompt_len: l,
                prefill_dur_ns: 1,
                first_token_ns: 1,
                first_token: 1,
                steps,
                unused_forwards: 0,
                model_calls: job.run_policy.max_new_tokens + 1,
                peak_memory_bytes: Some(1),
                finish_reason: "length".into(),
            })
        }
    }

    fn small_job() -> serde_json::Value {
        let policy = RunPolicy {
            first_requests: 1,
            warmup_requests: 1,
            measured_requests: 1,
            max_new_tokens: 4,
            ..RunPolicy::frozen()
        };
        serde_json::json!({
            "schema_version": 1, "run_id": "r", "adapter": "stock", "mode": "headline",
            "repo_root": "/r", "manifest_path": "/r/workloads.json",
            "manifest_sha256": "0".repeat(64), "case_id": "c", "model_dir": "/m",
            "prompt_id": "p", "prompt_ids": [1, 2], "prompt_sha256": "0".repeat(64),
            "continuation": null, "stop_ids": [511], "run_policy": policy,
            "environment": {
                "lock_sha256": "0".repeat(64), "mlx_version": "0.32.2", "mlx_lm_version": "0.32.2",
                "mlx_lm_freeze_sha256": "0".repeat(64), "libmlx_sha256": "0".repeat(64)
            }
        })
    }

    #[test]
    fn a_fake_driver_runs_the_whole_protocol_once() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("job.json"), small_job().to_string()).unwrap();
        let (code, fake) = run_bounded(tmp.path(), Fake::new());
        assert_eq!(code, ExitCode::Ok);
        assert_eq!(fake.polls, 3 * 3);
        let report: WorkerReport =
            serde_json::from_slice(&std::fs::read(tmp.path().join("report.json")).unwrap()).unwrap();
        assert_eq!((report.status, report.exit_code, report.requests.len()), (Status::Ok, 0, 3));
        assert_eq!(report.pid, std::process::id());
        let phases: Vec<_> = report.requests.iter().map(|r| r.phase).collect();
        assert_eq!(phases, [Some(Phase::First), Some(Phase::Warmup), Some(Phase::Measured)]);
        assert!(tmp.path().join("worker-ready").exists());

        // The same folder again: the claim refuses before anything is written.
        let before = std::fs::read(tmp.path().join("report.json")).unwrap();
        assert_eq!(run_bounded(tmp.path(), fake).0, ExitCode::Failed);
        assert_eq!(std::fs::read(tmp.path().join("report.json")).unwrap(), before);
    }

    #[test]
    fn a_preseeded_report_survives_and_the_run_fails() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("job.json"), small_job().to_string()).unwrap();
        std::fs::write(tmp.path().join("report.json"), b"seeded").unwrap();
        assert_eq!(run_bounded(tmp.path(), Fake::new()).0, ExitCode::Failed);
        assert_eq!(std::fs::read(tmp.path().join("report.json")).unwrap(), b"seeded");
        let names: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(names.iter().all(|n| !n.to_string_lossy().starts_with("report.json.tmp.")), "{names:?}");
    }

    #[test]
    fn a_preseeded_ready_file_gives_a_failed_report() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("job.json"), small_job().to_string()).unwrap();
        std::fs::write(tmp.path().join("worker-ready"), b"seeded").unwrap();
        assert_eq!(run_bounded(tmp.path(), Fake::new()).0, ExitCode::Failed);
        let report: WorkerReport =
            serde_json::from_slice(&std::fs::read(tmp.path().join("report.json")).unwrap()).unwrap();
        assert_eq!(report.status, Status::Failed);
        assert!(report.error.unwrap().contains("worker-ready"));
        assert!(report.requests.is_empty());
    }

    #[test]
    fn a_failed_load_gives_a_failed_report_with_the_whole_chain() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("job.json"), small_job().to_string()).unwrap();
        let fake = Fake { load_fails: true, ..Fake::new() };
        assert_eq!(run_bounded(tmp.path(), fake).0, ExitCode::Failed);
        let report: WorkerReport =
            serde_json::from_slice(&std::fs::read(tmp.path().join("report.json")).unwrap()).unwrap();
        assert_eq!((report.status, report.load_ns), (Status::Failed, None));
        assert_eq!(
            report.error.as_deref(),
            Some("failed to load the model from /m: failed to read the weights: disk on fire")
        );
        assert!(!tmp.path().join("worker-ready").exists());
    }

    #[test]
    fn a_failed_request_ends_the_run_failed_with_the_whole_chain_and_keeps_the_requests_before_it() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("job.json"), small_job().to_string()).unwrap();
        let fake = Fake { fails_at: Some(1), ..Fake::new() };
        assert_eq!(run_bounded(tmp.path(), fake).0, ExitCode::Failed);
        let report: WorkerReport =
            serde_json::from_slice(&std::fs::read(tmp.path().join("report.json")).unwrap()).unwrap();
        assert_eq!(report.status, Status::Failed);
        assert_eq!(report.error.as_deref(), Some("request 1 failed: failed to read the weights: out of memory"));
        assert_eq!(report.requests.iter().map(|r| r.index).collect::<Vec<_>>(), [0]);
    }

    #[test]
    fn the_stop_lines_are_unchanged() {
        // Each cause the line spells out is not offered again as a source.
        let stop = Stop::ReadJob { path: "/o/job.json".into(), error: std::io::Error::other("gone") };
        assert_eq!(stop.to_string(), "failed to read /o/job.json: gone");
        assert!(std::error::Error::source(&stop).is_none());
        let error = serde_json::from_slice::<WorkerJob>(b"{").unwrap_err();
        let stop = Stop::ParseJob { path: "/o/job.json".into(), error };
        assert_eq!(stop.to_string(), "failed to parse /o/job.json: EOF while parsing an object at line 1 column 1");
        let stop = Stop::CancelHandlers { error: std::io::Error::other("no") };
        assert_eq!(stop.to_string(), "failed to install the SIGTERM/SIGINT handlers: no");
        let stop = Stop::FileSizeHandler { error: std::io::Error::other("no") };
        assert_eq!(stop.to_string(), "failed to install the SIGXFSZ handler: no");
        // A wrapped error keeps its own line.
        let refusal = Refusal::new("adapter", "expected stock, found controlled");
        assert_eq!(Stop::from(refusal.clone()).to_string(), refusal.to_string());
        let hook = || HookError::BadRequest("x".into());
        assert_eq!(Stop::from(hook()).to_string(), hook().to_string());
    }

    #[test]
    fn plan_follows_the_run_policy() {
        let policy = RunPolicy { first_requests: 1, warmup_requests: 2, measured_requests: 3, ..RunPolicy::frozen() };
        let job_json = serde_json::json!({
            "schema_version": 1, "run_id": "r", "adapter": "stock", "mode": "headline",
            "repo_root": "/r", "manifest_path": "/r/workloads.json",
            "manifest_sha256": "0".repeat(64), "case_id": "c", "model_dir": "/m",
            "prompt_id": "p", "prompt_ids": [1], "prompt_sha256": "0".repeat(64),
            "continuation": null, "stop_ids": [511], "run_policy": policy,
            "environment": {
                "lock_sha256": "0".repeat(64), "mlx_version": "0.32.2", "mlx_lm_version": "0.32.2",
                "mlx_lm_freeze_sha256": "0".repeat(64), "libmlx_sha256": "0".repeat(64)
            }
        });
        let mut job: WorkerJob = serde_json::from_value(job_json).unwrap();
        let plan = request_plan(&job);
        let phases: Vec<_> = plan.iter().map(|s| s.phase).collect();
        use Phase::*;
        assert_eq!(phases, [Some(First), Some(Warmup), Some(Warmup), Some(Measured), Some(Measured), Some(Measured)]);
        assert!(plan.iter().take(5).all(|s| !s.last) && plan[5].last);
        assert_eq!(common_checks(&job, Adapter::Stock), Ok(()));
        assert_eq!(common_checks(&job, Adapter::Controlled).unwrap_err().field, "adapter");

        job.mode = Mode::ReferencePair;
        let plan = request_plan(&job);
        assert_eq!(plan, [RequestSpec { index: 0, phase: None, last: true }]);
        job.mode = Mode::FixedContinuation;
        assert_eq!(common_checks(&job, Adapter::Stock).unwrap_err().field, "continuation");
        job.run_policy.warmup_requests = 0;
        job.continuation = Some(vec![1]);
        assert_eq!(common_checks(&job, Adapter::Stock).unwrap_err().field, "run_policy.warmup_requests");
    }
}
