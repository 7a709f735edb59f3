//! Fault injection: real workers and the launcher under kills, Ctrl-C, a full disk, files that
//! change under a running session, a flood of output and a clock that does not move.
//!
//! Every scenario checks the same three promises on what it leaves behind
//! ([`assert_promises`]): no report overwritten (each report on disk is the one the session
//! recorded, and nothing written before the fault changed), no partial report presented as a
//! result (the analysis only holds adapters with a complete, validated `ok` report, and the
//! session never says `ok`), and no process left behind (nothing alive in any worker's process
//! group, the launcher reaped). For a rank group (groups.rs) they hold for every rank, and a
//! worker run counts as a result only if every rank's report does.
//!
//! Synchronisation is by the workers' test hooks (`DECODE_BASELINE_TEST_HOOK`, inherited through
//! the launcher): the test waits for `hook-<site>-reached`, injects the fault, and releases or
//! lets the fault release the worker. Nothing sleeps to make something happen; the only waits
//! are for a file to appear or a process to exit, each with a bound only a broken build reaches.
//! The scenario list with what the tool promises for each is `req/reliability.md`.

use std::{
    fs::File,
    os::unix::process::{CommandExt, ExitStatusExt},
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    time::{Duration, Instant},
};

use decode_baseline_wire::{
    hooks::{replacement_variable, HOOK_ARRIVAL_ENV, HOOK_ENV, HOOK_REQUEST_ENV},
    manifest::Manifest,
    outdir::{CLAIM_FILE, JOB_FILE, REPORT_FILE, REPORT_TEMP_PREFIX},
    Adapter, Mode, RunPolicy,
};
use nix::sys::signal::Signal;
use serde_json::{json, Value};

use crate::util::{
    self, assert_group_gone, both_workers, claim_pid, find_file, pid_alive, read_json, signal, the_worker,
    wait_bounded, wait_for_path, FixtureManifest, Worker, BOUND,
};

/// A report of the tiny fixture's headline cell under [`policy`] is tens of kB; claim, ready,
/// job and logs are far smaller. A file-size limit of this many bytes lets all of those through
/// and fails the report (or the session report, which embeds it) part-way.
const SMALL_FSIZE: u64 = 16 * 1024;

/// Short runs (3 requests), fast watchdog polls, and a grace period long enough that a
/// Ctrl-C'd worker always finishes its graceful stop (loading included) before SIGKILL.
pub(crate) fn policy() -> RunPolicy {
    RunPolicy {
        first_requests: 1,
        warmup_requests: 1,
        measured_requests: 1,
        watchdog_poll_ms: 20,
        backstop_grace_s: 60,
        ..RunPolicy::frozen()
    }
}

// ---------------------------------------------------------------------------------------------
// A scratch session: manifest with live pins, session job, private lease, the launcher
// ---------------------------------------------------------------------------------------------

pub(crate) struct Scratch {
    tmp: tempfile::TempDir,
    pub(crate) fixture: FixtureManifest,
    /// The job's first cell and adapter.
    cell: String,
    adapter: Adapter,
}

impl Scratch {
    pub(crate) fn new(adapter: Adapter, repetitions: u32) -> Self {
        Self::with(adapter, repetitions, |_, _| {})
    }

    /// `edit` may change the manifest (it gets the scratch root) before it is written and pinned.
    pub(crate) fn with(adapter: Adapter, repetitions: u32, edit: impl FnOnce(&mut Manifest, &Path)) -> Self {
        Self::with_job(edit, |fixture| headline_job(fixture, &adapter, repetitions))
    }

    /// A scratch whose session job `job` makes from the fixture manifest (`edit` as for
    /// [`Scratch::with`]).
    pub(crate) fn with_job(
        edit: impl FnOnce(&mut Manifest, &Path),
        job: impl FnOnce(&FixtureManifest) -> Value,
    ) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_owned();
        let fixture = util::fixture_manifest(&root, &policy(), |m| edit(m, &root));
        let job = job(&fixture);
        std::fs::write(root.join("job.json"), job.to_string()).unwrap();
        let cell = job["cells"][0].as_str().expect("a job names its cells").to_owned();
        let adapter = Adapter::parse(job["adapters"][0].as_str().expect("a job names its adapters")).unwrap();
        Self { tmp, fixture, cell, adapter }
    }

    pub(crate) fn root(&self) -> &Path {
        self.tmp.path()
    }

    /// The launcher on this scratch; its output goes to files (nothing to drain, nothing to
    /// block on). `worker` replaces the adapter's program with a fixture script.
    pub(crate) fn launcher(&self, hook: Option<(&str, u32)>, worker: Option<&str>) -> Command {
        let script = worker.map(|w| util::repo_root().join("tests/fixtures/workers").join(w).display().to_string());
        self.launcher_replacing(hook, script.as_deref())
    }

    /// The launcher with the adapter's program replaced by `command` (whitespace-separated words).
    pub(crate) fn launcher_replacing(&self, hook: Option<(&str, u32)>, command: Option<&str>) -> Command {
        let mut cmd = util::launcher_in(self.root());
        if let Some((site, request)) = hook {
            cmd.env(HOOK_ENV, site).env(HOOK_REQUEST_ENV, request.to_string());
        }
        if let Some(command) = command {
            cmd.env(replacement_variable(&self.adapter), command);
        }
        cmd
    }

    pub(crate) fn launcher_stderr(&self) -> String {
        std::fs::read_to_string(self.root().join("launcher.stderr")).unwrap_or_default()
    }

    /// Runs the launcher to its end; returns its exit status.
    pub(crate) fn run(&self, hook: Option<(&str, u32)>, worker: Option<&str>) -> ExitStatus {
        let child = self.launcher(hook, worker).spawn().unwrap();
        wait_bounded(child, BOUND)
    }

    pub(crate) fn out(&self) -> PathBuf {
        self.root().join("out")
    }

    /// The session folders below the output root, oldest first (ids start with a UTC stamp).
    pub(crate) fn session_dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(self.out())
            .map(|entries| entries.map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect())
            .unwrap_or_default();
        dirs.sort();
        dirs
    }

    pub(crate) fn the_session_dir(&self) -> PathBuf {
        let dirs = self.session_dirs();
        assert_eq!(dirs.len(), 1, "one session folder in {}", self.out().display());
        dirs[0].clone()
    }

    /// The folder of worker run `repetition` of this scratch's adapter.
    pub(crate) fn worker_dir(&self, session_dir: &Path, repetition: u32) -> PathBuf {
        session_dir.join(&self.cell).join(format!("{}-{repetition}", self.adapter.as_str()))
    }

    /// Waits until some file named `name` exists below the output root, failing fast if the
    /// launcher exits first. Returns its path.
    pub(crate) fn wait_for(&self, name: &str, launcher: &mut Child) -> PathBuf {
        self.wait_until(name, launcher, || find_file(&self.out(), name))
    }

    /// Waits until `path` exists, failing fast if the launcher exits first.
    pub(crate) fn wait_for_path(&self, path: &Path, launcher: &mut Child) {
        let what = path.display().to_string();
        self.wait_until(&what, launcher, || path.exists().then_some(()));
    }

    fn wait_until<T>(&self, what: &str, launcher: &mut Child, mut found: impl FnMut() -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            if let Some(found) = found() {
                return found;
            }
            if let Some(status) = launcher.try_wait().unwrap() {
                panic!("the launcher exited ({status}) before {what} appeared; stderr:\n{}", self.launcher_stderr());
            }
            assert!(start.elapsed() < BOUND, "{what} never appeared; stderr:\n{}", self.launcher_stderr());
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// A session job of the fixture's headline cell for `adapter` alone, in the fixed order.
pub(crate) fn headline_job(fixture: &FixtureManifest, adapter: &Adapter, repetitions: u32) -> Value {
    let cell = fixture.manifest.cells.iter().find(|c| c.mode == Mode::Headline).unwrap().name();
    json!({
        "schema_version": 1, "manifest": "workloads.json", "cells": [cell],
        "adapters": [adapter.as_str()], "output_root": "out", "repetitions": repetitions,
        "order": "fixed"
    })
}

/// Caps the size of any file `pid` writes from now on (the disk "fills up" for it alone).
fn cap_file_size(pid: i32, bytes: u64) {
    let limit = nix::libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
    // SAFETY: plain system call on a pid this test started; the old-limit pointer may be null.
    let rc = unsafe { nix::libc::prlimit(pid, nix::libc::RLIMIT_FSIZE, &limit, std::ptr::null_mut()) };
    assert_eq!(rc, 0, "prlimit({pid}, RLIMIT_FSIZE): {}", std::io::Error::last_os_error());
}

// ---------------------------------------------------------------------------------------------
// The promises
// ---------------------------------------------------------------------------------------------

pub(crate) fn temps_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(REPORT_TEMP_PREFIX) || n.starts_with(".session.json."))
        .collect()
}

/// A report as the launcher's readers see it. Reports are compared this way, not as JSON text:
/// session.json leaves out the step records' null fields (req/session.md).
pub(crate) fn as_report(value: &Value) -> decode_baseline_wire::WorkerReport {
    serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("not a worker report: {e}"))
}

/// Checks the three promises on a finished session folder and returns `session.json`.
/// `temp_allowed`: a worker that was killed mid-write may have left its own temp file, which
/// must then be ignored, never used.
pub(crate) fn assert_promises(session_dir: &Path, temp_allowed: bool) -> Value {
    let session = read_json(&session_dir.join("session.json"));
    assert_ne!(session["status"], "ok", "a session with a fault never says ok");
    assert!(temps_in(session_dir).is_empty(), "session temp left: {:?}", temps_in(session_dir));
    let session_id = session["session_id"].as_str().unwrap();
    let mut used = Vec::new();
    for worker in session["workers"].as_array().unwrap() {
        let run_id = worker["run_id"].as_str().unwrap();
        let dir = session_dir.join(run_id.strip_prefix(&format!("{session_id}/")).unwrap());
        // No report overwritten or invented: the report on disk is the one recorded.
        let on_disk = dir.join(REPORT_FILE);
        if on_disk.exists() {
            assert_eq!(
                as_report(&read_json(&on_disk)),
                as_report(&worker["report"]),
                "{run_id}: the recorded report is the one on disk"
            );
        } else {
            assert!(worker["report"].is_null(), "{run_id}: a report recorded that is not on disk");
        }
        if !temp_allowed {
            assert!(temps_in(&dir).is_empty(), "{run_id}: temp left: {:?}", temps_in(&dir));
        }
        // No partial report as a result: a report counts only if ok, valid and complete, and,
        // in a rank group, only if every other rank's counts too.
        let report = &worker["report"];
        let mut counts = report["status"] == "ok" && worker["validation_errors"].as_array().unwrap().is_empty();
        if counts {
            let requests = report["requests"].as_array().unwrap().len() as u32;
            assert_eq!(requests, requests_of(&dir), "{run_id}: an ok report is complete");
        }
        // No process left behind.
        if let Some(pid) = worker["pid"].as_i64() {
            assert_group_gone(pid as i32);
        }
        for rank in worker["ranks"].as_array().into_iter().flatten() {
            counts &= assert_rank_promises(session_dir, session_id, rank, temp_allowed);
        }
        if counts {
            used.push((worker["cell"].as_str().unwrap().to_owned(), worker["adapter"].as_str().unwrap().to_owned()));
        }
    }
    if let Some(cells) = session["analysis"]["cells"].as_array() {
        for cell in cells {
            let name = cell["cell"].as_str().unwrap();
            for adapter in cell["adapters"].as_object().unwrap().keys() {
                assert!(
                    used.contains(&(name.to_owned(), adapter.clone())),
                    "statistics for {name} {adapter} without a complete, valid ok report"
                );
            }
        }
    }
    session
}

/// The requests the job in the worker folder `dir` runs.
fn requests_of(dir: &Path) -> u32 {
    let job: decode_baseline_wire::WorkerJob = serde_json::from_value(read_json(&dir.join(JOB_FILE))).unwrap();
    job.run_policy.requests(job.mode)
}

/// The promises for one rank past rank 0 of a group (`workers[].ranks[]`), whose report stays
/// in its own folder: the status recorded is the report's on disk (none without one), no temp
/// left, nothing left in its process group. Returns whether its report counts (ok, valid, and
/// then complete).
fn assert_rank_promises(session_dir: &Path, session_id: &str, rank: &Value, temp_allowed: bool) -> bool {
    let run_id = rank["run_id"].as_str().unwrap();
    let dir = session_dir.join(run_id.strip_prefix(&format!("{session_id}/")).unwrap());
    let on_disk = dir.join(REPORT_FILE);
    let report = on_disk.exists().then(|| read_json(&on_disk));
    let recorded = (rank["status"].clone(), rank["error"].clone());
    match &report {
        Some(report) => assert_eq!(
            recorded,
            (report["status"].clone(), report.get("error").cloned().unwrap_or(Value::Null)),
            "{run_id}: the recorded status is the report's on disk"
        ),
        None => assert_eq!(recorded, (Value::Null, Value::Null), "{run_id}: a status recorded without a report"),
    }
    if !temp_allowed {
        assert!(temps_in(&dir).is_empty(), "{run_id}: temp left: {:?}", temps_in(&dir));
    }
    if let Some(pid) = rank["pid"].as_i64() {
        assert_group_gone(pid as i32);
    }
    let counts = rank["status"] == "ok" && rank["validation_errors"].as_array().unwrap().is_empty();
    if counts {
        let requests = report.as_ref().unwrap()["requests"].as_array().unwrap().len() as u32;
        assert_eq!(requests, requests_of(&dir), "{run_id}: an ok report is complete");
    }
    counts
}

/// Everything in `before` (a snapshot of `dir`) is still there, byte for byte. A worker that was
/// still running when the snapshot was taken may have appended to its own logs, nothing more.
fn assert_kept(before: &[(PathBuf, Vec<u8>)], dir: &Path) {
    let after = util::snapshot_tree(dir);
    for (path, bytes) in before {
        let kept = after.iter().find(|(p, _)| p == path).map(|(_, b)| b);
        let log = path.extension().is_some_and(|e| e == "log");
        match kept {
            Some(now) if log => assert!(now.starts_with(bytes), "{} was rewritten, not appended to", path.display()),
            Some(now) => assert!(now == bytes, "{} changed", path.display()),
            None => panic!("{} was removed", path.display()),
        }
    }
}

/// The hook sites of the four phases, with the request they are armed for. Prefill and decode
/// are armed in request 1, so a complete request 0 exists that must not be presented.
pub(crate) const BEFORE_READY: (&str, u32) = ("after_claim", 0);
pub(crate) const IN_PREFILL: (&str, u32) = ("before_prefill_chunk", 1);
pub(crate) const IN_DECODE: (&str, u32) = ("before_decode_step", 1);
pub(crate) const IN_REPORT_WRITE: (&str, u32) = ("before_report_write", 0);

// ---------------------------------------------------------------------------------------------
// A worker SIGKILLed, through the launcher
// ---------------------------------------------------------------------------------------------

fn killed_worker_fails_the_session(worker: Worker, hook: (&str, u32)) {
    let s = Scratch::new(worker.adapter(), 1);
    let mut launcher = s.launcher(Some(hook), None).spawn().unwrap();
    let reached = s.wait_for(&format!("hook-{}-reached", hook.0), &mut launcher);
    let dir = reached.parent().unwrap().to_owned();
    let pid = claim_pid(&dir);
    signal(pid, Signal::SIGKILL);
    let status = wait_bounded(launcher, BOUND);
    assert_eq!(status.code(), Some(5), "worker failed; stderr:\n{}", s.launcher_stderr());
    let session = assert_promises(&s.the_session_dir(), false);
    assert_eq!(session["status"], "worker_failed");
    let record = the_worker(&session);
    assert_eq!(record["signal"], 9);
    assert!(record["report"].is_null(), "no report from a killed worker");
    assert!(record["validation_errors"].to_string().contains("no report at"), "{record}");
    assert!(!dir.join(REPORT_FILE).exists());
    assert!(dir.join(CLAIM_FILE).exists(), "the claim is sticky: the folder is never reused");
}

// ---------------------------------------------------------------------------------------------
// A worker SIGKILLed, run directly (no launcher)
// ---------------------------------------------------------------------------------------------

fn worker_command(worker: Worker, out: &Path) -> Command {
    let mut cmd = worker.command(out);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(out.with_extension("stderr")).unwrap())
        // Its own group, so the test can tell whether anything it started outlived it.
        .process_group(0);
    cmd
}

fn killed_worker_leaves_no_report(worker: Worker, hook: (&str, u32)) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let fixture = util::fixture_manifest(tmp.path(), &policy(), |_| {});
    let job = util::fixture_job(&fixture, worker.adapter(), Mode::Headline, "faults/direct/worker-0");
    std::fs::write(out.join("job.json"), serde_json::to_vec_pretty(&job).unwrap()).unwrap();
    let mut child =
        worker_command(worker, &out).env(HOOK_ENV, hook.0).env(HOOK_REQUEST_ENV, hook.1.to_string()).spawn().unwrap();
    let reached = out.join(format!("hook-{}-reached", hook.0));
    let start = Instant::now();
    while !reached.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            let stderr = std::fs::read_to_string(out.with_extension("stderr")).unwrap_or_default();
            panic!("worker exited ({status}) before reaching {}:\n{stderr}", hook.0);
        }
        assert!(start.elapsed() < BOUND, "the worker never reached {}", hook.0);
        std::thread::sleep(Duration::from_millis(2));
    }
    let before = util::snapshot_tree(&out);
    let pid = child.id() as i32;
    signal(pid, Signal::SIGKILL);
    let status = wait_bounded(child, BOUND);
    assert_eq!(status.signal(), Some(9));
    assert!(!out.join(REPORT_FILE).exists(), "no report from a killed worker");
    assert!(temps_in(&out).is_empty(), "no temp: {:?}", temps_in(&out));
    assert_eq!(util::snapshot_tree(&out), before, "the folder is exactly as the worker left it");
    assert_eq!(claim_pid(&out), pid, "the sticky claim names the dead worker");
    assert_group_gone(pid);
}

// ---------------------------------------------------------------------------------------------
// Ctrl-C through the launcher, at each phase
// ---------------------------------------------------------------------------------------------

fn ctrl_c_cancels_the_session(worker: Worker, hook: (&str, u32), complete_requests: u32) {
    let s = Scratch::new(worker.adapter(), 1);
    ctrl_c_cancels(&s, s.launcher(Some(hook), None), hook, complete_requests);
}

/// Runs `launcher` until the worker is held at `hook`, sends the launcher SIGINT, and checks the
/// session ended cancelled with the worker stopped by itself (SIGTERM, not killed), its report
/// holding the first `complete_requests` requests whole; returns the worker's report.
fn ctrl_c_cancels(s: &Scratch, mut launcher: Command, hook: (&str, u32), complete_requests: u32) -> Value {
    let mut launcher = launcher.spawn().unwrap();
    let reached = s.wait_for(&format!("hook-{}-reached", hook.0), &mut launcher);
    let dir = reached.parent().unwrap().to_owned();
    signal(launcher.id() as i32, Signal::SIGINT);
    let status = wait_bounded(launcher, BOUND);
    assert_eq!(status.code(), Some(4), "cancelled; stderr:\n{}", s.launcher_stderr());
    let session = assert_promises(&s.the_session_dir(), false);
    assert_eq!(session["status"], "cancelled");
    let record = the_worker(&session);
    assert_eq!(
        record["intervention"],
        json!({ "reason": "cancelled", "signal": "SIGTERM" }),
        "graceful: the worker was not killed"
    );
    let report = &record["report"];
    assert_eq!(report["requests"].as_array().unwrap().len() as u32, complete_requests, "complete requests kept");
    if complete_requests == policy().total_requests() {
        // The end state (ok) was decided before the signal; the report says what happened.
        assert_eq!((report["status"].as_str(), record["exit_code"].as_i64()), (Some("ok"), Some(0)));
    } else {
        assert_eq!((report["status"].as_str(), record["exit_code"].as_i64()), (Some("cancelled"), Some(4)));
    }
    assert_eq!(as_report(&read_json(&dir.join(REPORT_FILE))), as_report(report));
    report.clone()
}

/// A prompt over several prefill chunks (the job's step size of 4 cuts `prompt[:-1]` into chunks
/// of 4 tokens at most), Ctrl-C while the worker is held before the second chunk of request 1:
/// the worker stops by itself within the launcher's grace, request 0 is reported whole and
/// nothing of request 1.
fn cancel_in_the_second_prefill_chunk(worker: Worker) {
    const STEP: u64 = 4;
    let s = Scratch::with_job(
        |_, _| {},
        |fixture| {
            let mut job = headline_job(fixture, &worker.adapter(), 1);
            job["prefill_step_size"] = json!(STEP);
            job
        },
    );
    let mut launcher = s.launcher(Some(IN_PREFILL), None);
    launcher.env(HOOK_ARRIVAL_ENV, "1");
    let report = ctrl_c_cancels(&s, launcher, IN_PREFILL, 1);
    let requests = report["requests"].as_array().unwrap();
    assert_eq!(requests[0]["index"], 0, "only request 0: {report}");
    let prompt_len = requests[0]["prompt_len"].as_u64().unwrap();
    let chunks = (prompt_len - 1).div_ceil(STEP);
    assert!(chunks >= 3, "the prompt spans several chunks: L = {prompt_len}");
    // Every chunk, the last prompt token alone, the cached steps and stock's look-ahead: the
    // chunks were run.
    let steps = requests[0]["steps"].as_array().unwrap().len() as u64;
    let unused = requests[0]["unused_forwards"].as_u64().unwrap();
    assert_eq!(requests[0]["model_calls"].as_u64().unwrap(), chunks + 1 + steps + unused, "{}", requests[0]);
}

// ---------------------------------------------------------------------------------------------
// The disk fills up
// ---------------------------------------------------------------------------------------------

/// The worker's report write fails (EFBIG): no report, no temp, the worker says so, the session
/// says the worker failed.
fn full_disk_during_the_report_write(worker: Worker) {
    let s = Scratch::new(worker.adapter(), 1);
    let mut launcher = s.launcher(Some(IN_REPORT_WRITE), None).spawn().unwrap();
    let reached = s.wait_for("hook-before_report_write-reached", &mut launcher);
    let dir = reached.parent().unwrap().to_owned();
    cap_file_size(claim_pid(&dir), SMALL_FSIZE);
    std::fs::write(dir.join("hook-before_report_write-release"), b"").unwrap();
    let status = wait_bounded(launcher, BOUND);
    assert_eq!(status.code(), Some(5), "worker failed; stderr:\n{}", s.launcher_stderr());
    let session = assert_promises(&s.the_session_dir(), false);
    assert_eq!(session["status"], "worker_failed");
    let record = the_worker(&session);
    assert_eq!(record["exit_code"], 1, "the write failed and was handled, not killed by SIGXFSZ: {record}");
    assert!(record["report"].is_null());
    let worker_stderr = std::fs::read_to_string(dir.join("stderr.log")).unwrap();
    assert!(worker_stderr.contains("no report was left"), "{worker_stderr}");
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

both_workers! {
    launcher_worker_sigkilled_before_ready => |w| killed_worker_fails_the_session(w, BEFORE_READY);
    launcher_worker_sigkilled_in_prefill => |w| killed_worker_fails_the_session(w, IN_PREFILL);
    launcher_worker_sigkilled_in_decode => |w| killed_worker_fails_the_session(w, IN_DECODE);
    launcher_worker_sigkilled_before_the_report_write => |w| killed_worker_fails_the_session(w, IN_REPORT_WRITE);
    direct_worker_sigkilled_before_ready => |w| killed_worker_leaves_no_report(w, BEFORE_READY);
    direct_worker_sigkilled_in_prefill => |w| killed_worker_leaves_no_report(w, IN_PREFILL);
    direct_worker_sigkilled_in_decode => |w| killed_worker_leaves_no_report(w, IN_DECODE);
    direct_worker_sigkilled_before_the_report_write => |w| killed_worker_leaves_no_report(w, IN_REPORT_WRITE);
    ctrl_c_before_ready => |w| ctrl_c_cancels_the_session(w, BEFORE_READY, 0);
    ctrl_c_in_prefill => |w| ctrl_c_cancels_the_session(w, IN_PREFILL, 1);
    ctrl_c_in_decode => |w| ctrl_c_cancels_the_session(w, IN_DECODE, 1);
    ctrl_c_before_the_report_write => |w| ctrl_c_cancels_the_session(w, IN_REPORT_WRITE, 3);
    ctrl_c_in_the_second_prefill_chunk => cancel_in_the_second_prefill_chunk;
    disk_full_during_the_report_write => full_disk_during_the_report_write;
}

/// The launcher's own `session.json` write fails (EFBIG): it says so and exits 8 (the session ran,
/// its report could not be written), leaves no partial `session.json` and no temp, overwrites
/// nothing, keeps the worker's report, leaves no process behind; the next launcher marks the
/// session incomplete, saying the launcher ended without writing it, and changes nothing in it.
#[test]
fn disk_full_during_the_session_write() {
    let s = Scratch::new(Adapter::Stock, 1);
    let mut launcher = s.launcher(Some(IN_REPORT_WRITE), None).spawn().unwrap();
    let reached = s.wait_for("hook-before_report_write-reached", &mut launcher);
    let dir = reached.parent().unwrap().to_owned();
    let session_dir = s.the_session_dir();
    let written_before = util::snapshot_tree(&session_dir);
    // The launcher alone: the worker, started before, keeps its own limit and writes its report.
    cap_file_size(launcher.id() as i32, SMALL_FSIZE);
    std::fs::write(dir.join("hook-before_report_write-release"), b"").unwrap();
    let status = wait_bounded(launcher, BOUND);
    let stderr = s.launcher_stderr();
    assert_eq!(status.signal(), None, "not killed by SIGXFSZ: {status}");
    assert_eq!(status.code(), Some(8), "output failed, not bad input: {stderr}");
    assert!(stderr.contains("session.json") && stderr.contains("File too large"), "{stderr}");
    assert!(stderr.contains("nothing was overwritten"), "{stderr}");
    assert!(!session_dir.join("session.json").exists(), "no partial session report");
    assert!(temps_in(&session_dir).is_empty(), "temp left: {:?}", temps_in(&session_dir));
    assert_kept(&written_before, &session_dir);
    let report = read_json(&dir.join(REPORT_FILE));
    assert_eq!(report["status"], "ok", "the worker's report is kept");
    assert_group_gone(claim_pid(&dir));
    let before = util::snapshot_tree(&session_dir);

    // The next launcher (a quick fixture worker) finds it and marks it incomplete.
    let next = s.run(None, Some("no_report.sh"));
    assert_eq!(next.code(), Some(5), "{}", s.launcher_stderr());
    assert!(s.launcher_stderr().contains("ended without writing session.json"), "{}", s.launcher_stderr());
    let marked = read_json(&session_dir.join("session.json"));
    assert_eq!(marked["status"], "incomplete");
    let problem = marked["problems"][0].as_str().unwrap();
    assert!(problem.contains("ended without writing session.json (died, or could not write it)"), "{problem}");
    assert_eq!(as_report(&marked["workers"][0]["report"]), as_report(&report), "the worker's report, found and listed");
    assert_kept(&before, &session_dir);
}

/// Something a worker validates at start changes while the session runs: the first worker
/// (validated before) completes; the second refuses at validation naming the field; the session
/// fails; the first report and everything else written before the change stays as it was.
fn changed_under_a_running_session(
    edit_manifest: impl FnOnce(&mut Manifest, &Path),
    change: impl FnOnce(&Scratch),
    field: impl FnOnce(&Scratch) -> String,
) {
    let s = Scratch::with(Adapter::Stock, 2, edit_manifest);
    let field = field(&s);
    let mut launcher = s.launcher(Some(BEFORE_READY), None).spawn().unwrap();
    s.wait_for("hook-after_claim-reached", &mut launcher);
    let session_dir = s.the_session_dir();
    let (first, second) = (s.worker_dir(&session_dir, 0), s.worker_dir(&session_dir, 1));
    std::fs::write(first.join("hook-after_claim-release"), b"").unwrap();
    // The second worker is held before it reads anything: change the file now.
    wait_for_path(&second.join("hook-after_claim-reached"));
    let first_files = util::snapshot_tree(&first);
    assert_eq!(read_json(&first.join(REPORT_FILE))["status"], "ok", "the first worker ran before the change");
    change(&s);
    std::fs::write(second.join("hook-after_claim-release"), b"").unwrap();
    let status = wait_bounded(launcher, BOUND);
    assert_eq!(status.code(), Some(5), "{}", s.launcher_stderr());
    let session = assert_promises(&session_dir, false);
    assert_eq!(session["status"], "worker_failed");
    let refused = read_json(&second.join(REPORT_FILE));
    assert_eq!(refused["status"], "failed");
    let error = refused["error"].as_str().unwrap();
    assert!(error.starts_with(&format!("validation failed: {field}")), "expected {field}: {error}");
    let problems: Vec<&str> = session["problems"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(problems.iter().any(|p| p.contains(&field)), "the session names {field}: {problems:?}");
    assert_kept(&first_files, &first);
}

#[test]
fn manifest_edited_while_a_session_runs() {
    changed_under_a_running_session(
        |_, _| {},
        |s| {
            let mut text = std::fs::read_to_string(&s.fixture.path).unwrap();
            text.push('\n');
            std::fs::write(&s.fixture.path, text).unwrap();
        },
        |_| "manifest_sha256".to_owned(),
    );
}

#[test]
fn model_file_edited_while_a_session_runs() {
    // The case points at a private copy of the fixture, so the shared one is never touched.
    changed_under_a_running_session(
        |m, root| {
            let artifact = root.join("artifact");
            std::fs::create_dir(&artifact).unwrap();
            for entry in std::fs::read_dir(util::repo_root().join(util::FIXTURE_DIR)).unwrap() {
                let entry = entry.unwrap();
                std::fs::copy(entry.path(), artifact.join(entry.file_name())).unwrap();
            }
            m.cases.values_mut().next().unwrap().path = artifact;
        },
        |s| {
            let path = s.root().join("artifact/config.json");
            let mut bytes = std::fs::read(&path).unwrap();
            bytes.push(b'\n');
            std::fs::write(&path, bytes).unwrap();
        },
        |s| format!("cases[{:?}].files[\"config.json\"]", s.fixture.case_id),
    );
}

/// The launcher is SIGKILLed while a real worker is in decode: the kernel tells the orphan
/// (parent-death signal), it stops at its next poll and reports `cancelled`; the next launcher
/// gets the lease only once the orphan is gone, marks the old session incomplete, lists the
/// orphan's report without using it, and changes nothing that was there.
#[test]
fn launcher_sigkilled_with_a_real_worker_in_decode() {
    let s = Scratch::new(Adapter::Stock, 1);
    let mut launcher = s.launcher(Some(IN_DECODE), None).spawn().unwrap();
    let reached = s.wait_for("hook-before_decode_step-reached", &mut launcher);
    let dir = reached.parent().unwrap().to_owned();
    let old_session = s.the_session_dir();
    let orphan = claim_pid(&dir);
    let before = util::snapshot_tree(&old_session);
    signal(launcher.id() as i32, Signal::SIGKILL);
    assert_eq!(wait_bounded(launcher, BOUND).signal(), Some(9));

    let next = s.run(None, Some("no_report.sh"));
    assert_eq!(next.code(), Some(5), "{}", s.launcher_stderr());
    assert!(!pid_alive(orphan), "the orphaned worker {orphan} is gone");
    assert_group_gone(orphan);
    let report = read_json(&dir.join(REPORT_FILE));
    assert_eq!(report["status"], "cancelled", "the orphan cancelled itself");
    assert_eq!(report["requests"].as_array().unwrap().len(), 1, "request 0 kept, request 1 dropped");
    let marked = read_json(&old_session.join("session.json"));
    assert_eq!(marked["status"], "incomplete");
    assert!(marked["problems"][0].as_str().unwrap().contains("ended without writing session.json"), "{marked}");
    let listed = &marked["workers"][0];
    assert_eq!(as_report(&listed["report"]), as_report(&report), "the orphan's report is listed as found");
    assert!(listed["validation_errors"].to_string().contains("not validated"), "and not used: {listed}");
    assert!(marked["analysis"].is_null(), "no statistics from an incomplete session");
    assert_kept(&before, &old_session);
}

/// A worker that prints 8 MiB on stdout and 8 MiB on stderr: the launcher does not block (no
/// intervention was needed) and keeps every byte in the worker's logs.
#[test]
fn a_worker_printing_megabytes_does_not_block_the_launcher() {
    let s = Scratch::new(Adapter::Stock, 1);
    let status = s.run(None, Some("chatty.sh"));
    assert_eq!(status.code(), Some(5), "no report: worker failed; {}", s.launcher_stderr());
    let session_dir = s.the_session_dir();
    let session = assert_promises(&session_dir, false);
    let record = the_worker(&session);
    assert!(record["intervention"].is_null(), "finished by itself, not stopped: {}", record["intervention"]);
    assert_eq!(record["exit_code"], 0);
    let dir = s.worker_dir(&session_dir, 0);
    for (log, byte) in [("stdout.log", b'o'), ("stderr.log", b'e')] {
        let bytes = std::fs::read(dir.join(log)).unwrap();
        assert_eq!(bytes.len(), 8 << 20, "{log} holds all of it");
        assert!(bytes.iter().all(|&b| b == byte), "{log} holds only the worker's output");
    }
}

/// A report whose step stamps repeat or go back fails validation naming the step; it is not
/// used for statistics, and the session fails validation.
#[test]
fn a_clock_that_does_not_move_forward_fails_validation() {
    let s = Scratch::new(Adapter::Stock, 1);
    let status = s.run(None, Some("clock_stalls.sh"));
    assert_eq!(status.code(), Some(14), "validation failed; {}", s.launcher_stderr());
    let session = assert_promises(&s.the_session_dir(), false);
    assert_eq!(session["status"], "validation_failed");
    let errors: Vec<String> = the_worker(&session)["validation_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_owned())
        .collect();
    let repeated =
        errors.iter().any(|e| e.starts_with("requests[0].steps[1].t_ns") && e.contains("does not move forward"));
    let backwards =
        errors.iter().any(|e| e.starts_with("requests[1].steps[2].t_ns") && e.contains("does not move forward"));
    assert!(repeated && backwards, "both stamps named: {errors:?}");
    assert_eq!(errors.len(), 2, "nothing else is wrong with the report: {errors:?}");
    assert!(session["analysis"]["cells"][0]["adapters"].as_object().unwrap().is_empty(), "no statistics");
}

/// A worker killed in the middle of writing its report: half a report in its temp file, no
/// `report.json`. The launcher uses nothing and leaves the temp as it was.
#[test]
fn a_worker_killed_mid_report_write_leaves_only_its_temp() {
    let s = Scratch::new(Adapter::Stock, 1);
    let status = s.run(None, Some("dies_mid_report.sh"));
    assert_eq!(status.code(), Some(5), "{}", s.launcher_stderr());
    let session_dir = s.the_session_dir();
    let session = assert_promises(&session_dir, true);
    let record = the_worker(&session);
    assert_eq!(record["signal"], 9);
    assert!(record["report"].is_null(), "half a report is never a report");
    let dir = s.worker_dir(&session_dir, 0);
    let temp = dir.join(format!("{REPORT_TEMP_PREFIX}{}", record["pid"]));
    assert_eq!(std::fs::read(&temp).unwrap(), br#"{"schema_version": 1, "run_id": "half a rep"#);
}

// ---------------------------------------------------------------------------------------------
// The launcher's own pin checks, and replaced programs
// ---------------------------------------------------------------------------------------------

/// The real stock worker, whose report claims a source digest other than the manifest's pin
/// (`tests/fixtures/workers/forged_sources.py`): the launcher refuses the report naming the
/// field, uses nothing of it, and the session fails validation.
#[test]
fn a_report_with_a_forged_source_digest_fails_validation_naming_the_field() {
    let s = Scratch::new(Adapter::Stock, 1);
    let forged = util::repo_root().join("tests/fixtures/workers/forged_sources.py");
    let command = format!("{} {}", util::venv_python().display(), forged.display());
    let status = wait_bounded(s.launcher_replacing(None, Some(&command)).spawn().unwrap(), BOUND);
    assert_eq!(status.code(), Some(14), "validation failed; {}", s.launcher_stderr());
    let session = assert_promises(&s.the_session_dir(), false);
    assert_eq!(session["status"], "validation_failed");
    let worker = the_worker(&session);
    assert_eq!(worker["report"]["status"], "ok", "the worker itself ran to the end");
    let pin = s.fixture.manifest.worker_sources_sha256(&Adapter::Stock);
    let errors = worker["validation_errors"].as_array().unwrap();
    assert_eq!(
        errors,
        &[json!(format!(
            "identity.worker_sources_sha256: expected {pin} (the manifest's worker_sources.stock), found {}",
            "f".repeat(64)
        ))],
        "the one thing wrong with the report"
    );
    assert!(s.launcher_stderr().contains("identity.worker_sources_sha256: expected"), "{}", s.launcher_stderr());
    assert!(session["analysis"]["cells"][0]["adapters"].as_object().unwrap().is_empty(), "no statistics");
    assert_eq!(session["unpinned"], true, "a replaced program, forged or not, unpins the session");
}

/// A replaced program (here the real stock worker, started by its command) runs and validates,
/// but the session says it is unpinned: in `session.json`, in the table, and `compare` refuses it
/// beside a pinned session of the same manifest (exit 12, naming the unpinned one).
#[test]
fn a_replaced_program_unpins_the_session_and_compare_refuses_it_beside_a_pinned_one() {
    // Two measured requests: the fewest the statistics take, so that both sessions end `ok`.
    let s = Scratch::with(Adapter::Stock, 1, |m, _| m.run_policy.measured_requests = 2);
    let command =
        format!("{} {}", util::venv_python().display(), util::repo_root().join("tools/stock/worker.py").display());
    let status = wait_bounded(s.launcher_replacing(None, Some(&command)).spawn().unwrap(), BOUND);
    assert_eq!(status.code(), Some(0), "{}", s.launcher_stderr());
    let unpinned_dir = s.the_session_dir();
    let session = read_json(&unpinned_dir.join("session.json"));
    assert_eq!(session["status"], "ok");
    assert_eq!(session["schema_version"], 8);
    assert_eq!(session["unpinned"], true);
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(session["replaced_programs"], json!({ "stock": words }));
    let table = std::fs::read_to_string(s.root().join("launcher.stdout")).unwrap();
    let line = format!(
        "unpinned: the stock worker program was replaced (DECODE_BASELINE_WORKER_STOCK={command}): this session \
         is unpinned, and compare refuses to set it beside a pinned one"
    );
    assert!(table.contains(&line), "the table says so:\n{table}");

    let status = s.run(None, None);
    assert_eq!(status.code(), Some(0), "{}", s.launcher_stderr());
    let pinned_dir = s.session_dirs().into_iter().find(|d| *d != unpinned_dir).unwrap();
    let pinned = read_json(&pinned_dir.join("session.json"));
    assert_eq!((pinned["unpinned"].clone(), pinned["replaced_programs"].clone()), (json!(false), json!({})));
    let table = std::fs::read_to_string(s.root().join("launcher.stdout")).unwrap();
    assert!(!table.contains("unpinned"), "a pinned session says nothing of it:\n{table}");

    for (a, b, unpinned) in [(&unpinned_dir, &pinned_dir, "A"), (&pinned_dir, &unpinned_dir, "B")] {
        let out = util::run(Command::new(util::binary()).args(["compare", "--format", "json"]).arg(a).arg(b));
        let (stdout, stderr) = (util::stdout(&out), util::stderr(&out));
        assert_eq!(out.status.code(), Some(12), "refused: {stdout}{stderr}");
        let why = format!("unpinned (the stock program was replaced by {command})");
        let path = if unpinned == "A" { a } else { b };
        assert!(
            stderr.contains(&format!("session {unpinned} ({}) is {why}", path.display())),
            "names the unpinned session and why: {stderr}"
        );
        let (x, y) = if unpinned == "A" { (why.as_str(), "pinned") } else { ("pinned", why.as_str()) };
        let report: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(report["mismatches"], json!([{ "field": "pinned", "a": x, "b": y }]), "the one difference");
    }
}
