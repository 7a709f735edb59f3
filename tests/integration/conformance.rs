//! The worker conformance suite: the frozen protocol (`req/protocol.md`) seen from outside, run
//! against any worker command.
//!
//! Every test runs for the stock worker (`.venv/bin/python tools/stock/worker.py`) and, in a
//! build with the `controlled` feature (the default), for the controlled worker
//! (`decode-baseline worker`).
//!
//! Synchronisation is by the workers' test hooks (`DECODE_BASELINE_TEST_HOOK`): a worker
//! blocks at a named site until the test creates the release file; the deadline sites force
//! the watchdog to fire. Nothing here sleeps to make something happen; the only waits are for a
//! file to appear or a process to exit, each with a generous bound that only a broken worker
//! reaches.

use std::{
    collections::BTreeSet,
    io::Read,
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use decode_baseline_protocol::{
    manifest::Manifest,
    worker::{
        Marker, CLAIM_FILE, HOOK_ENV, HOOK_REQUEST_ENV, LAUNCHER_MESSAGE, READY_FILE, REPORT_FILE, REPORT_TEMP_PREFIX,
    },
    Adapter, Mode, RunPolicy, Status, WorkerJob, WorkerReport,
};
use serde_json::Value;

use crate::util::{self, FixtureManifest, Worker};

/// How long a worker may take from SIGTERM (sent while it is held at a hook before a forward)
/// to exit. It covers: seeing the flag at the hook, the re-poll, draining work already
/// dispatched (stock: the look-ahead forward in flight), writing the report and process exit.
/// It does not bound a forward that is running when the signal arrives: that residual is one
/// prefill chunk, one seed forward or one decode step, and scales with the model.
const CANCEL_RELEASE_BOUND: Duration = Duration::from_secs(10);

/// Only a broken worker reaches these.
const RUN_BOUND: Duration = Duration::from_secs(300);

/// The command the launcher would spawn, with no test hook inherited.
fn worker_command(worker: Worker, out_dir: &Path) -> Command {
    let mut cmd = worker.command(out_dir);
    cmd.env_remove(HOOK_ENV)
        .env_remove(HOOK_REQUEST_ENV)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// The policy of the protocol tests: the frozen shape, fewer requests, fast watchdog polls.
fn test_policy() -> RunPolicy {
    RunPolicy {
        first_requests: 1,
        warmup_requests: 1,
        measured_requests: 1,
        watchdog_poll_ms: 20,
        backstop_grace_s: 2,
        ..RunPolicy::frozen()
    }
}

/// One worker run's folder, manifest and job.
struct Setup {
    worker: Worker,
    _tmp: tempfile::TempDir,
    out: PathBuf,
    fixture: FixtureManifest,
    job: WorkerJob,
}

impl Setup {
    fn new(worker: Worker, mode: Mode) -> Self {
        Self::with(worker, mode, &test_policy(), |_| {})
    }

    fn with(worker: Worker, mode: Mode, policy: &RunPolicy, edit: impl FnOnce(&mut Manifest)) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_owned();
        let out = root.join("out");
        std::fs::create_dir(&out).unwrap();
        let fixture = util::fixture_manifest(&root, policy, edit);
        let job = util::fixture_job(&fixture, worker.adapter(), mode, "conformance/cell/worker-0");
        let setup = Self { worker, _tmp: tmp, out, fixture, job };
        setup.write_job();
        setup
    }

    fn write_job(&self) {
        std::fs::write(self.out.join("job.json"), serde_json::to_vec_pretty(&self.job).unwrap()).unwrap();
    }

    fn command(&self) -> Command {
        worker_command(self.worker, &self.out)
    }

    fn spawn(&self, hook: Option<(&str, u32)>) -> Child {
        let mut cmd = self.command();
        if let Some((site, request)) = hook {
            cmd.env(HOOK_ENV, site).env(HOOK_REQUEST_ENV, request.to_string());
        }
        cmd.spawn().expect("spawn the worker")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.out.join(name)
    }

    fn release(&self, site: &str) {
        std::fs::write(self.path(&format!("hook-{site}-release")), b"").unwrap();
    }

    fn report(&self) -> (WorkerReport, Value) {
        let bytes = std::fs::read(self.path(REPORT_FILE)).expect("report.json");
        let value: Value = serde_json::from_slice(&bytes).unwrap();
        let report: WorkerReport = serde_json::from_slice(&bytes)
            .unwrap_or_else(|err| panic!("report.json does not parse as a WorkerReport: {err}"));
        (report, value)
    }

    fn total_requests(&self) -> usize {
        match self.job.mode {
            Mode::ReferencePair => 1,
            _ => self.job.run_policy.total_requests() as usize,
        }
    }
}

/// A finished worker.
struct Finished {
    status: ExitStatus,
    stderr: String,
    pid: u32,
}

impl Finished {
    fn code(&self) -> i32 {
        self.status.code().unwrap_or_else(|| panic!("worker died by a signal: {:?}\n{}", self.status, self.stderr))
    }
}

/// Waits for `child` to exit within `bound`, draining its pipes. Kills it on overrun.
fn wait(mut child: Child, bound: Duration) -> Finished {
    let pid = child.id();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let drain_out = std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = stdout.read_to_end(&mut sink);
    });
    let drain_err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let status = child.wait();
        let _ = tx.send(());
        status
    });
    if rx.recv_timeout(bound).is_err() {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL);
        let _ = waiter.join();
        let stderr = drain_err.join().unwrap_or_default();
        panic!("worker {pid} did not exit within {bound:?}; stderr:\n{stderr}");
    }
    let status = waiter.join().unwrap().expect("wait for the worker");
    drain_out.join().unwrap();
    let stderr = drain_err.join().unwrap();
    Finished { status, stderr, pid }
}

fn run(setup: &Setup) -> Finished {
    wait(setup.spawn(None), RUN_BOUND)
}

/// Waits until `path` exists; fails fast if `child` exits first.
fn wait_for_file(path: &Path, child: &mut Child) {
    let start = Instant::now();
    while !path.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
            panic!("worker exited ({status}) before {} appeared; stderr:\n{stderr}", path.display());
        }
        assert!(start.elapsed() < RUN_BOUND, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn sigterm(pid: u32) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
}

fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

fn no_temp(dir: &Path) {
    let temps: Vec<_> = names(dir).into_iter().filter(|n| n.starts_with(REPORT_TEMP_PREFIX)).collect();
    assert!(temps.is_empty(), "temp files left: {temps:?}");
}

fn marker(path: &Path) -> Marker {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

// The report's key sets, declared here independently of the Rust types: a renamed, added or
// removed field fails this suite even if both workers and the types agree among themselves.
const REPORT_KEYS: &[&str] = &[
    "schema_version",
    "run_id",
    "adapter",
    "mode",
    "case_id",
    "prompt_id",
    "status",
    "exit_code",
    "error",
    "pid",
    "claimed_utc",
    "finished_utc",
    "start_to_ready_ns",
    "load_ns",
    "identity",
    "test_slowdown_us",
    "requests",
];
const IDENTITY_KEYS: &[&str] = &[
    "manifest_sha256",
    "code_version",
    "worker_sources_sha256",
    "lock_sha256",
    "mlx_version",
    "mlx_lm_version",
    "mlx_lm_freeze_sha256",
    "libmlx_path",
    "libmlx_sha256",
    "device",
    "backend",
    "device_info",
];
const REQUEST_KEYS: &[&str] = &[
    "index",
    "phase",
    "prompt_len",
    "prefill_dur_ns",
    "first_token_ns",
    "first_token",
    "steps",
    "unused_forwards",
    "model_calls",
    "peak_memory_bytes",
    "finish_reason",
];
const STEP_KEYS: &[&str] = &["position", "argmax", "t_ns", "dur_ns", "build_ns", "eval_ns", "margin", "tie"];

fn keys(value: &Value) -> BTreeSet<&str> {
    value.as_object().expect("an object").keys().map(String::as_str).collect()
}

fn assert_keys(value: &Value, expected: &[&str], what: &str) {
    assert_eq!(keys(value), expected.iter().copied().collect::<BTreeSet<_>>(), "key set of {what}");
}

/// Every check a launcher makes on any report: key sets, header, pid, exit code, and each
/// complete record's positions, counts and times.
fn check_report(setup: &Setup, finished: &Finished) -> WorkerReport {
    let (report, value) = setup.report();
    assert_keys(&value, REPORT_KEYS, "the report");
    if !value["identity"].is_null() {
        assert_keys(&value["identity"], IDENTITY_KEYS, "identity");
    }
    for request in value["requests"].as_array().unwrap() {
        assert_keys(request, REQUEST_KEYS, "a request");
        for step in request["steps"].as_array().unwrap() {
            assert_keys(step, STEP_KEYS, "a step");
        }
    }
    assert_eq!(report.schema_version, 1);
    assert_eq!(report.test_slowdown_us, None, "no test slowdown was set, so none is recorded");
    assert_eq!(report.adapter, setup.worker.adapter());
    assert_eq!((report.mode, report.run_id.as_str()), (setup.job.mode, setup.job.run_id.as_str()));
    assert_eq!(report.exit_code, finished.code(), "report exit_code vs the process's");
    let expected_code = match report.status {
        Status::Ok => 0,
        Status::Failed => 1,
        Status::Timeout => 3,
        Status::Cancelled => 4,
    };
    assert_eq!(report.exit_code, expected_code, "exit code of status {:?}", report.status);
    assert_eq!(report.status == Status::Ok, report.error.is_none(), "error: {:?}", report.error);
    assert_eq!(report.pid, finished.pid, "report pid vs the spawned process");
    assert_eq!(marker(&setup.path(CLAIM_FILE)).pid, report.pid, "claim pid vs report pid");
    if report.status != Status::Failed {
        assert_eq!(marker(&setup.path(READY_FILE)).pid, report.pid, "ready pid vs report pid");
    }
    no_temp(&setup.out);

    let l = setup.job.prompt_ids.len() as u32;
    let expected_steps = match setup.job.mode {
        Mode::FixedContinuation => setup.job.run_policy.fixed_continuation_steps,
        Mode::Headline | Mode::ReferencePair => setup.job.run_policy.max_new_tokens - 1,
    };
    for (i, request) in report.requests.iter().enumerate() {
        assert_eq!(request.index, i as u32, "requests are complete and in order");
        assert_eq!(request.prompt_len, l);
        assert_eq!(request.finish_reason, "length", "the fixture never emits eos");
        let positions: Vec<u32> = request.steps.iter().map(|s| s.position).collect();
        assert_eq!(positions, (l + 1..=l + expected_steps).collect::<Vec<_>>(), "step positions of request {i}");
        let mut previous = request.first_token_ns;
        assert!(request.prefill_dur_ns > 0 && request.first_token_ns >= request.prefill_dur_ns);
        for step in &request.steps {
            assert!(step.t_ns > previous, "step times increase (request {i}, position {})", step.position);
            assert!(step.dur_ns > 0 && step.dur_ns <= step.t_ns - previous, "step duration within its interval");
            previous = step.t_ns;
            let measured = setup.job.mode != Mode::Headline;
            assert_eq!(step.margin.is_some(), measured, "margin present only where the mode measures it");
            assert_eq!(step.tie.is_some(), measured);
            if let (Some(margin), Some(tie)) = (step.margin, step.tie) {
                assert!(margin >= 0.0 && tie == (margin == 0.0), "margin {margin} vs tie {tie}");
            }
        }
        match setup.worker {
            Worker::Stock if setup.job.mode == Mode::FixedContinuation => {
                assert_eq!(request.unused_forwards, 0);
                assert_eq!(request.model_calls, 1 + expected_steps, "one prefill chunk + the steps");
            }
            Worker::Stock => {
                assert_eq!(request.unused_forwards, 1, "stock's one unused look-ahead forward");
                assert_eq!(request.model_calls, 1 + 1 + expected_steps + 1, "chunk + seed + steps + look-ahead");
            }
            Worker::Controlled => assert_eq!(request.unused_forwards, 0, "the controlled loop has no look-ahead"),
        }
        assert!(request.peak_memory_bytes.is_some_and(|b| b > 0), "peak memory recorded");
    }
    let phases: Vec<_> = report.requests.iter().map(|r| r.phase).collect();
    if setup.job.mode == Mode::ReferencePair {
        assert!(phases.iter().all(Option::is_none));
    } else {
        assert!(phases.iter().all(Option::is_some));
    }
    report
}

// ---------------------------------------------------------------------------------------------
// The tests (each a "Must show" of the protocol issue)
// ---------------------------------------------------------------------------------------------

fn missing_out_dir_is_refused(worker: Worker) {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("never-created");
    let finished = wait(worker_command(worker, &missing).spawn().unwrap(), RUN_BOUND);
    assert_eq!(finished.code(), 1, "{}", finished.stderr);
    assert!(finished.stderr.contains(LAUNCHER_MESSAGE), "{}", finished.stderr);
    assert!(!missing.exists());
    assert!(names(tmp.path()).is_empty(), "nothing written beside it");
}

fn file_in_place_of_out_dir_is_refused(worker: Worker) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("out");
    std::fs::write(&file, b"not a folder").unwrap();
    let finished = wait(worker_command(worker, &file).spawn().unwrap(), RUN_BOUND);
    assert_eq!(finished.code(), 1, "{}", finished.stderr);
    assert!(finished.stderr.contains(LAUNCHER_MESSAGE), "{}", finished.stderr);
    assert_eq!(std::fs::read(&file).unwrap(), b"not a folder");
    assert_eq!(names(tmp.path()), BTreeSet::from(["out".to_owned()]));
}

fn existing_claim_is_refused_and_nothing_written(worker: Worker) {
    let setup = Setup::new(worker, Mode::Headline);
    std::fs::write(setup.path(CLAIM_FILE), br#"{"utc":"2020-01-01T00:00:00.000000Z","pid":1}"#).unwrap();
    let before = util::snapshot_tree(&setup.out);
    let finished = run(&setup);
    assert_eq!(finished.code(), 1, "{}", finished.stderr);
    assert!(finished.stderr.contains("already claimed"), "{}", finished.stderr);
    assert_eq!(util::snapshot_tree(&setup.out), before, "the folder is byte-identical");
}

fn second_worker_on_a_running_folder_is_refused(worker: Worker) {
    let setup = Setup::new(worker, Mode::Headline);
    let mut first = setup.spawn(Some(("after_ready", 0)));
    wait_for_file(&setup.path("hook-after_ready-reached"), &mut first);
    let claim = std::fs::read(setup.path(CLAIM_FILE)).unwrap();
    let ready = std::fs::read(setup.path(READY_FILE)).unwrap();

    // A second worker with the valid job, then with an invalid one: both refused untouched.
    let valid = run(&setup);
    assert_eq!(valid.code(), 1, "{}", valid.stderr);
    assert!(valid.stderr.contains("already claimed"), "{}", valid.stderr);
    let mut invalid = setup.job.clone();
    invalid.run_policy.warmup_requests = 0;
    std::fs::write(setup.path("job.json"), serde_json::to_vec(&invalid).unwrap()).unwrap();
    let refused = run(&setup);
    assert_eq!(refused.code(), 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("already claimed"), "{}", refused.stderr);
    assert_eq!(std::fs::read(setup.path(CLAIM_FILE)).unwrap(), claim, "claim byte-identical");
    assert_eq!(std::fs::read(setup.path(READY_FILE)).unwrap(), ready, "ready byte-identical");
    assert!(!setup.path(REPORT_FILE).exists());
    no_temp(&setup.out);
    setup.write_job();

    setup.release("after_ready");
    let finished = wait(first, RUN_BOUND);
    assert_eq!(finished.code(), 0, "{}", finished.stderr);
    let report = check_report(&setup, &finished);
    assert_eq!(report.status, Status::Ok);
    assert_eq!(report.requests.len(), setup.total_requests());
    assert_eq!(marker(&setup.path(READY_FILE)).pid, finished.pid);
    assert_eq!(marker(&setup.path(CLAIM_FILE)).pid, finished.pid);
}

fn preseeded_report_survives_and_the_run_fails(worker: Worker) {
    let setup = Setup::new(worker, Mode::ReferencePair);
    std::fs::write(setup.path(REPORT_FILE), b"{\"seeded\": true}\n").unwrap();
    let finished = run(&setup);
    assert_eq!(finished.code(), 1, "{}", finished.stderr);
    assert_eq!(std::fs::read(setup.path(REPORT_FILE)).unwrap(), b"{\"seeded\": true}\n");
    assert!(finished.stderr.contains("downgraded to failed"), "{}", finished.stderr);
    no_temp(&setup.out);
}

fn preseeded_ready_gives_a_failed_report(worker: Worker) {
    let setup = Setup::new(worker, Mode::ReferencePair);
    std::fs::write(setup.path(READY_FILE), b"seeded").unwrap();
    let finished = run(&setup);
    assert_eq!(finished.code(), 1, "{}", finished.stderr);
    let report = check_report(&setup, &finished);
    assert_eq!(report.status, Status::Failed);
    assert!(report.error.as_deref().unwrap().contains(READY_FILE), "{:?}", report.error);
    assert!(report.requests.is_empty());
    assert_eq!(std::fs::read(setup.path(READY_FILE)).unwrap(), b"seeded");
}

fn deadline_inside_the_request_loop_times_out(worker: Worker) {
    let setup = Setup::new(worker, Mode::Headline);
    setup.release("request_loop");
    let finished = wait(setup.spawn(Some(("request_loop", 1))), RUN_BOUND);
    assert_eq!(finished.code(), 3, "{}", finished.stderr);
    let report = check_report(&setup, &finished);
    assert_eq!(report.status, Status::Timeout);
    assert_eq!(report.requests.len(), 1, "request 0 complete and kept, request 1 not recorded");
}

fn deadline_inside_the_final_request_times_out(worker: Worker) {
    let setup = Setup::new(worker, Mode::Headline);
    setup.release("final_request");
    let finished = wait(setup.spawn(Some(("final_request", 0))), RUN_BOUND);
    assert_eq!(finished.code(), 3, "never ok after a fired deadline: {}", finished.stderr);
    let report = check_report(&setup, &finished);
    assert_eq!(report.status, Status::Timeout);
    assert_eq!(report.requests.len(), setup.total_requests(), "every complete record kept");
}

fn stuck_main_loop_is_reported_by_the_backstop(worker: Worker) {
    let setup = Setup::new(worker, Mode::FixedContinuation);
    let finished = wait(setup.spawn(Some(("stall", 1))), RUN_BOUND);
    assert_eq!(finished.code(), 3, "{}", finished.stderr);
    let report = check_report(&setup, &finished);
    assert_eq!(report.status, Status::Timeout);
    assert!(report.error.as_deref().unwrap().contains("watchdog"), "{:?}", report.error);
    assert_eq!(report.requests.len(), 1, "the record completed before the stall is kept");
}

fn sigterm_at(worker: Worker, site: &str) {
    let setup = Setup::new(worker, Mode::Headline);
    let mut child = setup.spawn(Some((site, 1)));
    wait_for_file(&setup.path(&format!("hook-{site}-reached")), &mut child);
    let sent = Instant::now();
    sigterm(child.id());
    let finished = wait(child, CANCEL_RELEASE_BOUND + RUN_BOUND);
    let released = sent.elapsed();
    assert_eq!(finished.code(), 4, "{}", finished.stderr);
    assert!(released <= CANCEL_RELEASE_BOUND, "released {released:?} after SIGTERM, bound {CANCEL_RELEASE_BOUND:?}");
    let report = check_report(&setup, &finished);
    assert_eq!(report.status, Status::Cancelled);
    assert_eq!(report.requests.len(), 1, "zero tokens from the interrupted request 1");
}

fn sigterm_before_a_prefill_chunk_cancels(worker: Worker) {
    sigterm_at(worker, "before_prefill_chunk");
}

fn sigterm_before_the_seed_forward_cancels(worker: Worker) {
    sigterm_at(worker, "before_seed_forward");
}

fn sigterm_before_a_decode_step_cancels(worker: Worker) {
    sigterm_at(worker, "before_decode_step");
}

fn report_write_failure_leaves_no_temp_and_no_report(worker: Worker) {
    let setup = Setup::new(worker, Mode::Headline);
    let mut cmd = setup.command();
    // SAFETY: setrlimit and signal are async-signal-safe; nothing else runs in the child.
    unsafe {
        cmd.pre_exec(|| {
            use nix::sys::{
                resource::{setrlimit, Resource},
                signal::{signal, SigHandler, Signal},
            };
            // Claim and ready fit; the report (tens of kB) does not. SIGXFSZ is ignored so the
            // write fails with EFBIG instead of killing the worker.
            setrlimit(Resource::RLIMIT_FSIZE, 4096, 4096).map_err(std::io::Error::from)?;
            signal(Signal::SIGXFSZ, SigHandler::SigIgn).map_err(std::io::Error::from)?;
            Ok(())
        });
    }
    let finished = wait(cmd.spawn().unwrap(), RUN_BOUND);
    assert_eq!(finished.code(), 1, "{}", finished.stderr);
    assert!(!setup.path(REPORT_FILE).exists(), "no report");
    no_temp(&setup.out);
    assert!(finished.stderr.contains("no report was left"), "{}", finished.stderr);
}

/// An edit of the manifest (given the scratch root).
type ManifestEdit = Box<dyn Fn(&mut Manifest, &Path)>;
/// An edit of the worker job (given the scratch root).
type JobEdit = Box<dyn Fn(&mut WorkerJob, &Path)>;

/// A tamper of the manifest, the job or the artifact, and the field the worker must name.
struct Tamper {
    name: &'static str,
    field: String,
    manifest: ManifestEdit,
    job: JobEdit,
}

/// The pinned source map of `set` (`stock` or `controlled`).
fn source_set<'m>(
    m: &'m mut Manifest,
    set: &str,
) -> &'m mut std::collections::BTreeMap<String, decode_baseline_protocol::Sha256Digest> {
    let adapter = Adapter::parse(set).expect("an adapter name");
    m.worker_sources.get_mut(&adapter).expect("a pinned source set")
}

fn tampers(case: &str, prompt: &str, set: &'static str, source: &str, missing: &str) -> Vec<Tamper> {
    let case = case.to_owned();
    let prompt = prompt.to_owned();
    let stock_file = source.to_owned();
    let missing = missing.to_owned();
    let none_m = || -> ManifestEdit { Box::new(|_, _| {}) };
    let none_j = || -> JobEdit { Box::new(|_, _| {}) };
    let flip = |d: &mut decode_baseline_protocol::Sha256Digest| {
        let mut hex = d.to_hex();
        let c = if hex.starts_with('0') { "1" } else { "0" };
        hex.replace_range(0..1, c);
        *d = hex.parse().unwrap();
    };
    // An artifact copy in the test folder, so the real fixture is never touched.
    let copy_fixture = move |m: &mut Manifest, root: &Path, case: &str| -> PathBuf {
        let dir = root.join("artifact");
        std::fs::create_dir_all(&dir).unwrap();
        for entry in std::fs::read_dir(util::repo_root().join(util::FIXTURE_DIR)).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
        }
        m.cases.get_mut(case).unwrap().path = dir.clone();
        dir
    };
    let case_q = format!("cases[{case:?}]");
    vec![
        Tamper {
            name: "job schema version",
            field: "schema_version".into(),
            manifest: none_m(),
            job: Box::new(|j, _| j.schema_version = 2),
        },
        Tamper {
            name: "job for the other adapter",
            field: "adapter".into(),
            manifest: none_m(),
            job: Box::new(|j, _| {
                j.adapter = if j.adapter == Adapter::Stock { Adapter::Controlled } else { Adapter::Stock }
            }),
        },
        Tamper {
            name: "run-policy value differs from the manifest",
            field: "run_policy.measured_requests".into(),
            manifest: none_m(),
            job: Box::new(|j, _| j.run_policy.measured_requests += 1),
        },
        Tamper {
            name: "repo_root names another checkout",
            field: "repo_root".into(),
            manifest: none_m(),
            job: Box::new(|j, root| j.repo_root = root.to_owned()),
        },
        Tamper {
            name: "manifest digest in the job is wrong",
            field: "manifest_sha256".into(),
            manifest: none_m(),
            job: Box::new(move |j, _| flip(&mut j.manifest_sha256)),
        },
        Tamper {
            name: "manifest edited without re-pinning",
            field: "manifest_sha256".into(),
            manifest: none_m(),
            job: Box::new(|j, _| {
                // The job follows the edited bytes; the pin beside the manifest does not.
                let mut text = std::fs::read_to_string(&j.manifest_path).unwrap();
                text.push(' ');
                std::fs::write(&j.manifest_path, &text).unwrap();
                j.manifest_sha256 = decode_baseline_protocol::Sha256Digest::of_bytes(text.as_bytes());
            }),
        },
        Tamper {
            name: "prompt id changed",
            field: "prompt_ids".into(),
            manifest: none_m(),
            job: Box::new(|j, _| j.prompt_ids[0] += 1),
        },
        Tamper {
            name: "prompt digest changed",
            field: "prompt_sha256".into(),
            manifest: none_m(),
            job: Box::new(move |j, _| flip(&mut j.prompt_sha256)),
        },
        Tamper {
            name: "stop set differs from the case's",
            field: "stop_ids".into(),
            manifest: none_m(),
            job: Box::new(|j, _| j.stop_ids = vec![510, 511]),
        },
        Tamper {
            name: "continuation in headline mode",
            field: "continuation".into(),
            manifest: none_m(),
            job: Box::new(|j, _| j.continuation = Some(vec![1; 32])),
        },
        Tamper {
            name: "worker source byte changed",
            field: format!("worker_sources.{set}[{stock_file:?}]"),
            manifest: Box::new({
                let f = stock_file.clone();
                move |m, _| flip(source_set(m, set).get_mut(&f).unwrap())
            }),
            job: none_j(),
        },
        Tamper {
            name: "worker file added (not pinned)",
            field: format!("worker_sources.{set}"),
            manifest: Box::new({
                let f = stock_file.clone();
                move |m, _| {
                    source_set(m, set).remove(&f);
                }
            }),
            job: none_j(),
        },
        Tamper {
            name: "worker file removed (pinned, missing)",
            field: format!("worker_sources.{set}[{missing:?}]"),
            manifest: Box::new(move |m, _| {
                let d = decode_baseline_protocol::Sha256Digest::of_bytes(b"gone");
                source_set(m, set).insert(missing.clone(), d);
            }),
            job: none_j(),
        },
        Tamper {
            name: "stray model-extra.safetensors beside the case",
            field: format!("{case_q}.files"),
            manifest: Box::new({
                let case = case.clone();
                move |m, root| {
                    let dir = copy_fixture(m, root, &case);
                    std::fs::write(dir.join("model-extra.safetensors"), b"stray").unwrap();
                }
            }),
            job: Box::new(|j, root| j.model_dir = root.join("artifact")),
        },
        Tamper {
            name: "artifact byte flipped",
            field: format!("{case_q}.files[\"config.json\"]"),
            manifest: Box::new({
                let case = case.clone();
                move |m, root| {
                    let dir = copy_fixture(m, root, &case);
                    let mut bytes = std::fs::read(dir.join("config.json")).unwrap();
                    bytes[0] ^= 1;
                    std::fs::write(dir.join("config.json"), bytes).unwrap();
                }
            }),
            job: Box::new(|j, root| j.model_dir = root.join("artifact")),
        },
        Tamper {
            name: "case path escapes the repository",
            field: format!("{case_q}.path"),
            manifest: Box::new({
                let case = case.clone();
                move |m, _| m.cases.get_mut(&case).unwrap().path = PathBuf::from("../outside")
            }),
            job: none_j(),
        },
        Tamper {
            name: "cell not in the manifest",
            field: "cells".into(),
            manifest: Box::new(|m, _| m.cells.retain(|c| c.mode != Mode::Headline)),
            job: none_j(),
        },
        Tamper {
            name: "lock file edited (its pin differs)",
            field: "environment.lock_sha256".into(),
            manifest: Box::new(move |m, _| flip(&mut m.environment.lock_sha256)),
            job: Box::new(move |j, _| flip(&mut j.environment.lock_sha256)),
        },
        Tamper {
            name: "installed mlx_lm file edited (the freeze differs)",
            field: "environment.mlx_lm_freeze_sha256".into(),
            manifest: Box::new(move |m, _| flip(&mut m.environment.mlx_lm_freeze_sha256)),
            job: Box::new(move |j, _| flip(&mut j.environment.mlx_lm_freeze_sha256)),
        },
        Tamper {
            name: "libmlx differs from its pin",
            field: "environment.libmlx_sha256".into(),
            manifest: Box::new(move |m, _| flip(&mut m.environment.libmlx_sha256)),
            job: Box::new(move |j, _| flip(&mut j.environment.libmlx_sha256)),
        },
        Tamper {
            name: "mlx version differs from its pin",
            field: "environment.mlx_version".into(),
            manifest: Box::new(|m, _| m.environment.mlx_version = "0.0.1".into()),
            job: Box::new(|j, _| j.environment.mlx_version = "0.0.1".into()),
        },
        Tamper {
            name: "job environment differs from the manifest's",
            field: "environment.mlx_lm_version".into(),
            manifest: none_m(),
            job: Box::new(|j, _| j.environment.mlx_lm_version = "0.0.1".into()),
        },
        Tamper {
            name: "prompt of another name",
            field: "prompt_id".into(),
            manifest: none_m(),
            job: Box::new(move |j, _| j.prompt_id = format!("{prompt}-other")),
        },
    ]
}

fn validation_failures_name_the_field(worker: Worker) {
    let probe = Setup::new(worker, Mode::Headline);
    let (set, source, missing) = match worker {
        Worker::Stock => ("stock", "tools/stock/worker.py", "tools/stock/removed.py"),
        Worker::Controlled => ("controlled", "crates/controlled/src/lib.rs", "crates/controlled/src/removed.rs"),
    };
    assert!(source_set(&mut probe.fixture.manifest.clone(), set).contains_key(source), "{source} is pinned");
    let mut failures = Vec::new();
    for tamper in tampers(&probe.fixture.case_id, &probe.fixture.prompt_id, set, source, missing) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let out = root.join("out");
        std::fs::create_dir(&out).unwrap();
        let fixture = util::fixture_manifest(root, &test_policy(), |m| (tamper.manifest)(m, root));
        let mut job = util::fixture_job(&fixture, worker.adapter(), Mode::Headline, "conformance/tamper/worker-0");
        (tamper.job)(&mut job, root);
        std::fs::write(out.join("job.json"), serde_json::to_vec_pretty(&job).unwrap()).unwrap();
        let finished = wait(worker_command(worker, &out).spawn().unwrap(), RUN_BOUND);
        let expected = format!("validation failed: {}", tamper.field);
        let outcome = if finished.code() != 1 {
            Some(format!("exit {} instead of 1", finished.code()))
        } else {
            match std::fs::read(out.join(REPORT_FILE)).map(|b| serde_json::from_slice::<WorkerReport>(&b)) {
                Ok(Ok(report)) => match report.error.as_deref() {
                    Some(error) if error.starts_with(&expected) && report.status == Status::Failed => None,
                    other => Some(format!("report error {other:?}")),
                },
                other => Some(format!("no valid failed report: {other:?}")),
            }
        };
        if let Some(why) = outcome {
            failures.push(format!(
                "{}: expected an error starting {expected:?}: {why}\nstderr: {}",
                tamper.name, finished.stderr
            ));
        }
    }
    assert!(failures.is_empty(), "{} tamper(s) not refused as expected:\n{}", failures.len(), failures.join("\n"));
}

fn headline_on_the_fixture(worker: Worker) {
    let setup = Setup::with(worker, Mode::Headline, &RunPolicy { measured_requests: 2, ..test_policy() }, |_| {});
    let finished = run(&setup);
    assert_eq!(finished.code(), 0, "{}", finished.stderr);
    let report = check_report(&setup, &finished);
    assert_eq!(report.status, Status::Ok);
    assert_eq!(report.requests.len(), 4);
    let l = setup.job.prompt_ids.len() as u32;
    for request in &report.requests {
        assert_eq!(request.steps.len() + 1, 128, "128 tokens: the first plus 127 steps");
        assert_eq!(request.steps.first().unwrap().position, l + 1);
        assert_eq!(request.steps.last().unwrap().position, l + 127);
    }
    // Greedy on identical inputs: every request generates the same stream.
    let stream = |r: &decode_baseline_protocol::RequestRecord| {
        std::iter::once(r.first_token).chain(r.steps.iter().map(|s| s.argmax)).collect::<Vec<_>>()
    };
    assert!(report.requests.iter().all(|r| stream(r) == stream(&report.requests[0])));
    let identity = report.identity.expect("identity");
    assert_eq!(identity.manifest_sha256, setup.fixture.sha256);
    assert_eq!(identity.mlx_version, setup.job.environment.mlx_version);
    assert_eq!(identity.libmlx_sha256, setup.job.environment.libmlx_sha256);
    assert!(identity.libmlx_path.ends_with("libmlx.so") || identity.libmlx_path.ends_with("libmlx.dylib"));
    assert!(!identity.code_version.is_empty() && identity.code_version != "unknown");
    assert!(report.start_to_ready_ns.unwrap() >= report.load_ns.unwrap());
}

fn fixed_continuation_on_the_fixture(worker: Worker) {
    let setup = Setup::new(worker, Mode::FixedContinuation);
    let finished = run(&setup);
    assert_eq!(finished.code(), 0, "{}", finished.stderr);
    let report = check_report(&setup, &finished);
    assert_eq!(report.status, Status::Ok);
    assert_eq!(report.requests.len(), 3);
    for request in &report.requests {
        assert_eq!(request.steps.len(), 32, "32 fed steps at L+1..L+32");
    }
}

fn reference_pair_on_the_fixture(worker: Worker) {
    let setup = Setup::new(worker, Mode::ReferencePair);
    let finished = run(&setup);
    assert_eq!(finished.code(), 0, "{}", finished.stderr);
    let report = check_report(&setup, &finished);
    assert_eq!(report.status, Status::Ok);
    assert_eq!(report.requests.len(), 1);
    assert_eq!(report.requests[0].steps.len(), 127);
}

/// One `#[test]` per suite function and worker; the controlled ones skip unless enabled.
macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod stock {
            $( #[test] fn $name() { super::$name(super::Worker::Stock) } )*
        }
        // The controlled worker is part of this build only with the `controlled` feature.
        #[cfg(feature = "controlled")]
        mod controlled {
            $( #[test] fn $name() { super::$name(super::Worker::Controlled) } )*
        }
    };
}

conformance!(
    missing_out_dir_is_refused,
    file_in_place_of_out_dir_is_refused,
    existing_claim_is_refused_and_nothing_written,
    second_worker_on_a_running_folder_is_refused,
    preseeded_report_survives_and_the_run_fails,
    preseeded_ready_gives_a_failed_report,
    deadline_inside_the_request_loop_times_out,
    deadline_inside_the_final_request_times_out,
    stuck_main_loop_is_reported_by_the_backstop,
    sigterm_before_a_prefill_chunk_cancels,
    sigterm_before_the_seed_forward_cancels,
    sigterm_before_a_decode_step_cancels,
    report_write_failure_leaves_no_temp_and_no_report,
    validation_failures_name_the_field,
    headline_on_the_fixture,
    fixed_continuation_on_the_fixture,
    reference_pair_on_the_fixture,
);
