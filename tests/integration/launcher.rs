//! The launcher against misbehaving workers and bad session jobs: exit codes, session reports,
//! and no process left behind.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use decode_baseline_pins as pins;
use serde_json::{json, Value};

use crate::util::{binary, find_file, pid_alive, repo_root, run, stderr, the_worker};

const ZERO: &str = "0000000000000000000000000000000000000000000000000000000000000000";
const ONES: &str = "1111111111111111111111111111111111111111111111111111111111111111";
const TWOS: &str = "2222222222222222222222222222222222222222222222222222222222222222";

/// A scratch folder with a minimal manifest (one headline cell, short limits; a second case no
/// cell uses), a session job and a private lease file.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Self {
        Self::with_grace(1)
    }

    /// `backstop_grace_s`: also the launcher's wait between SIGTERM and SIGKILL.
    fn with_grace(grace_s: u32) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let manifest = json!({
            "schema_version": 1,
            "cases": {"tiny": {"path": repo_root().join("fixtures/tiny-qwen3"), "architecture": "qwen3",
                "dtype": "float32", "files": {"model.safetensors": ONES}, "stop_ids": [511]},
                "unused": {"path": repo_root().join("fixtures/tiny-qwen3"), "architecture": "qwen3",
                "dtype": "float32", "files": {"model.safetensors": TWOS}, "stop_ids": [511]}},
            "prompts": {"p4": {"case": "tiny", "ids": [1, 2, 3, 4], "sha256": ZERO,
                "continuation": [5, 6], "continuation_sha256": ZERO}},
            "cells": [{"case": "tiny", "prompt": "p4", "mode": "headline"}],
            "run_policy": {"first_requests": 1, "warmup_requests": 1, "measured_requests": 2,
                "max_new_tokens": 4, "fixed_continuation_steps": 2, "ready_timeout_s": 2,
                "job_deadline_s": 1, "watchdog_poll_ms": 1000, "backstop_grace_s": grace_s},
            "worker_sources": {"stock": {}, "controlled": {}},
            "environment": {"backend": "cpu", "lock_sha256": ZERO, "mlx_version": "0.32.2", "mlx_lm_version": "0.32.2",
                "mlx_lm_freeze_sha256": ZERO, "libmlx_sha256": ZERO}
        });
        let manifest_path = dir.path().join("manifest.json");
        let bytes = manifest.to_string().into_bytes();
        std::fs::write(&manifest_path, &bytes).unwrap();
        std::fs::write(pins::pin_path(&manifest_path), pins::pin_text(&manifest_path, &bytes)).unwrap();
        let scratch = Scratch { dir };
        scratch.write_job(json!({
            "schema_version": 1, "manifest": "manifest.json", "adapters": ["stock"],
            "output_root": "out", "repetitions": 1, "order": "fixed"
        }));
        scratch
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn write_job(&self, job: Value) {
        std::fs::write(self.path().join("job.json"), job.to_string()).unwrap();
    }

    fn launcher(&self, worker: &str) -> Command {
        let mut cmd = Command::new(binary());
        cmd.args(["run", "--job"])
            .arg(self.path().join("job.json"))
            .env("DECODE_BASELINE_LEASE", self.path().join("lease"))
            .env("DECODE_BASELINE_PROFILE_DIR", self.path().join("profiles"))
            .env("DECODE_BASELINE_WORKER_STOCK", repo_root().join("tests/fixtures/workers").join(worker));
        cmd
    }

    fn session(&self) -> Value {
        let out = self.path().join("out");
        // The session folders (the output root also holds the history, history.sqlite).
        let sessions: Vec<PathBuf> =
            std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
        assert_eq!(sessions.len(), 1, "one session folder in {}", out.display());
        serde_json::from_slice(&std::fs::read(sessions[0].join("session.json")).unwrap()).unwrap()
    }
}

/// Whether any process still carries `needle` in its command line.
fn process_alive_with(needle: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()).any(|entry| {
        std::fs::read(entry.path().join("cmdline"))
            .map(|cmd| String::from_utf8_lossy(&cmd).contains(needle))
            .unwrap_or(false)
    })
}

fn assert_worker_gone(session: &Value) {
    let pid = the_worker(session)["pid"].as_i64().unwrap() as i32;
    assert!(!pid_alive(pid), "worker pid {pid} is still alive");
}

fn code(out: &Output) -> Option<i32> {
    out.status.code()
}

#[test]
fn a_worker_that_never_signals_ready_is_stopped_and_fails_the_session() {
    let s = Scratch::new();
    let out = run(&mut s.launcher("never_ready.sh"));
    assert_eq!(code(&out), Some(5), "{}", stderr(&out));
    let session = s.session();
    assert_eq!(session["status"], "worker_failed");
    assert_eq!(the_worker(&session)["intervention"], json!({ "reason": "never_ready", "signal": "SIGTERM" }));
    assert_worker_gone(&session);
}

#[test]
fn a_worker_past_its_deadline_is_stopped_and_the_session_times_out() {
    let s = Scratch::new();
    let out = run(&mut s.launcher("past_deadline.sh"));
    assert_eq!(code(&out), Some(3), "{}", stderr(&out));
    let session = s.session();
    assert_eq!(session["status"], "timeout");
    assert_eq!(the_worker(&session)["intervention"], json!({ "reason": "past_deadline", "signal": "SIGTERM" }));
    assert_worker_gone(&session);
}

#[test]
fn a_worker_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let s = Scratch::new();
    let out = run(&mut s.launcher("ignores_sigterm.sh"));
    assert_eq!(code(&out), Some(3), "{}", stderr(&out));
    let session = s.session();
    let worker = the_worker(&session);
    assert_eq!(worker["intervention"], json!({ "reason": "past_deadline", "signal": "SIGKILL" }));
    assert_eq!(worker["signal"], 9);
    assert_worker_gone(&session);
}

#[test]
fn a_grandchild_holding_stdout_is_killed_with_its_group() {
    let s = Scratch::new();
    let out = run(&mut s.launcher("grandchild.sh"));
    assert_eq!(code(&out), Some(5), "{}", stderr(&out));
    let session = s.session();
    let folder = Path::new(the_worker(&session)["run_id"].as_str().unwrap()).file_name().unwrap().to_owned();
    let marker = format!("decode-baseline-grandchild-{}", folder.to_string_lossy());
    assert!(!process_alive_with(&marker), "the grandchild {marker} outlived the launcher");
}

#[test]
fn a_worker_that_exits_zero_without_a_report_has_failed() {
    let s = Scratch::new();
    let out = run(&mut s.launcher("no_report.sh"));
    assert_eq!(code(&out), Some(5), "{}", stderr(&out));
    let session = s.session();
    assert_eq!(session["status"], "worker_failed");
    let errors = the_worker(&session)["validation_errors"].to_string();
    assert!(errors.contains("no report at"), "{errors}");
}

#[test]
fn the_session_records_the_model_files_of_the_cases_it_ran() {
    let s = Scratch::new();
    let out = run(&mut s.launcher("no_report.sh"));
    assert_eq!(code(&out), Some(5), "{}", stderr(&out));
    let session = s.session();
    assert_eq!(session["schema_version"], 8);
    // Only the case of the cell that ran, not the manifest's other one.
    assert_eq!(session["model_files"], json!({"tiny": {"model.safetensors": ONES}}));
}

#[test]
fn a_report_with_the_wrong_pid_fails_validation() {
    let s = Scratch::new();
    let out = run(&mut s.launcher("wrong_pid.sh"));
    assert_ne!(code(&out), Some(0), "{}", stderr(&out));
    let session = s.session();
    let errors = the_worker(&session)["validation_errors"].to_string();
    assert!(errors.contains("pid: expected the child's"), "{errors}");
    assert_ne!(session["status"], "ok");
}

#[test]
fn bad_session_jobs_name_the_field_and_create_nothing() {
    let base = json!({
        "schema_version": 1, "manifest": "manifest.json", "adapters": ["stock"],
        "output_root": "out", "repetitions": 1, "order": "fixed"
    });
    let with = |key: &str, value: Value| {
        let mut job = base.clone();
        job[key] = value;
        job
    };
    let cases = [
        (with("colour", json!("blue")), "unknown field `colour`"),
        (with("schema_version", json!(2)), "schema_version must be 1, found 2"),
        (with("cells", json!(["nope.p4.headline"])), "cells names unknown cell \"nope.p4.headline\""),
        (with("adapters", json!(["turbo"])), "adapters names \"turbo\", which the manifest"),
        (
            with("adapters", json!(["Turbo!"])),
            "adapter name \"Turbo!\" is not \"controlled\", \"stock\" or a declared name",
        ),
        (with("reference", json!("controlled")), "reference names \"controlled\", which is not in adapters"),
        (with("repetitions", json!(0)), "repetitions must be between 1 and 1000, found 0"),
        (with("repetitions", json!(4294967295u32)), "repetitions must be between 1 and 1000, found 4294967295"),
        (with("cells", json!([])), "cells must name at least one cell"),
        (with("prefill_step_size", json!(0)), "prefill_step_size must be at least 1 token"),
        (
            with("cells", json!(["tiny.p4.headline", "tiny.p4.headline"])),
            "cells names \"tiny.p4.headline\" twice (again at index 1)",
        ),
    ];
    for (job, expected) in cases {
        let s = Scratch::new();
        s.write_job(job);
        let out = run(&mut s.launcher("no_report.sh"));
        assert_eq!(code(&out), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(expected), "expected {expected:?} in: {}", stderr(&out));
        assert!(!s.path().join("out").exists(), "nothing may be created for {expected}");
    }
}

#[test]
fn an_unwritable_output_root_is_refused() {
    let s = Scratch::new();
    let root = s.path().join("readonly");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("out"), b"a file where the output root should be").unwrap();
    s.write_job(json!({
        "schema_version": 1, "manifest": "manifest.json", "adapters": ["stock"],
        "output_root": "readonly/out", "repetitions": 1, "order": "fixed"
    }));
    let out = run(&mut s.launcher("no_report.sh"));
    assert_eq!(code(&out), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("output_root"), "{}", stderr(&out));
    assert_eq!(std::fs::read(root.join("out")).unwrap(), b"a file where the output root should be");
}

#[test]
fn a_manifest_edited_without_re_pinning_is_refused_before_anything_runs() {
    let s = Scratch::new();
    let manifest = s.path().join("manifest.json");
    let edited = std::fs::read_to_string(&manifest).unwrap().replace("\"max_new_tokens\":4", "\"max_new_tokens\":5");
    assert!(edited.contains("\"max_new_tokens\":5"), "the edit took");
    std::fs::write(&manifest, edited).unwrap();
    let out = run(&mut s.launcher("no_report.sh"));
    assert_eq!(code(&out), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains("manifest.json.sha256"), "{}", stderr(&out));
    assert!(!s.path().join("out").exists(), "nothing may be created");
}

#[test]
fn a_held_lease_refuses_with_no_wait() {
    let s = Scratch::new();
    let file = std::fs::File::create(s.path().join("lease")).unwrap();
    let _held = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive).unwrap();
    let out = run(s.launcher("no_report.sh").arg("--no-wait"));
    assert_eq!(code(&out), Some(7), "{}", stderr(&out));
    assert!(stderr(&out).contains("benchmark lease"), "{}", stderr(&out));
    assert!(!s.path().join("out").exists());
}

#[test]
fn an_unsafe_lease_file_is_bad_input() {
    // A link where the lease file should be: the user's setup, so exit 2, and nothing created.
    let s = Scratch::new();
    std::os::unix::fs::symlink(s.path().join("elsewhere"), s.path().join("lease")).unwrap();
    let out = run(&mut s.launcher("no_report.sh"));
    assert_eq!(code(&out), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("lease"), "{}", stderr(&out));
    assert!(!s.path().join("out").exists(), "nothing may be created");
}

#[test]
fn two_launchers_take_turns_and_never_overlap() {
    let s = Scratch::new();
    s.write_job(json!({
        "schema_version": 1, "manifest": "manifest.json", "adapters": ["stock"],
        "output_root": "out", "repetitions": 3, "order": "fixed"
    }));
    let probe = s.path().join("probe.log");
    let spawn = || {
        s.launcher("overlap_probe.sh")
            .env("OVERLAP_PROBE", &probe)
            .stderr(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let waited = [&a, &b].iter().filter(|o| stderr(o).contains("waiting for the benchmark lease")).count();
    assert_eq!(waited, 1, "exactly one launcher waited");
    let log = std::fs::read_to_string(&probe).unwrap();
    let events: Vec<&str> = log.lines().map(|l| l.split_whitespace().next().unwrap()).collect();
    assert_eq!(events.len(), 12, "{log}");
    assert!(events.chunks(2).all(|pair| pair == ["start", "end"]), "worker runs interleaved: {log}");
}

/// Starts the launcher and returns once its (single) worker has signalled ready.
// The launcher is returned: the caller waits for it (or it is killed here on a timeout).
#[allow(clippy::zombie_processes)]
fn start_until_ready(s: &Scratch, worker: &str) -> (std::process::Child, PathBuf) {
    let mut child =
        s.launcher(worker).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        // The fixture workers write the marker with a shell redirection: created first, filled
        // an instant later. Ready means filled, so later snapshots compare like with like.
        if let Some(ready) = find_file(&s.path().join("out"), "worker-ready") {
            if std::fs::metadata(&ready).is_ok_and(|m| m.len() > 0) {
                return (child, ready.parent().unwrap().to_owned());
            }
        }
        if std::time::Instant::now() >= deadline {
            // Leave no launcher behind the failed test.
            let _ = child.kill();
            let _ = child.wait();
            panic!("the worker never became ready");
        }
        std::thread::yield_now();
    }
}

fn wait_for_file(path: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !path.exists() {
        assert!(std::time::Instant::now() < deadline, "{} never appeared", path.display());
        std::thread::yield_now();
    }
}

fn signal(child: &std::process::Child, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
}

#[test]
fn the_first_ctrl_c_cancels_the_worker_gracefully() {
    let s = Scratch::new();
    let (mut child, worker_dir) = start_until_ready(&s, "cancellable.sh");
    signal(&child, nix::sys::signal::Signal::SIGINT);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(4));
    assert!(worker_dir.join("cancelled-by-sigterm").exists(), "the worker got SIGTERM and stopped itself");
    let session = s.session();
    assert_eq!(session["status"], "cancelled");
    assert_eq!(the_worker(&session)["intervention"], json!({ "reason": "cancelled", "signal": "SIGTERM" }));
    assert_eq!(the_worker(&session)["exit_code"], 4);
    assert_worker_gone(&session);
}

#[test]
fn a_second_ctrl_c_kills_at_once() {
    // A grace period far longer than the test, so only the second Ctrl-C can explain a SIGKILL.
    let s = Scratch::with_grace(600);
    let (mut child, worker_dir) = start_until_ready(&s, "ignores_sigterm.sh");
    signal(&child, nix::sys::signal::Signal::SIGINT);
    // Two signals sent back to back may arrive as one; the second waits until the first has
    // been forwarded to the worker.
    wait_for_file(&worker_dir.join("sigterm-seen"));
    signal(&child, nix::sys::signal::Signal::SIGINT);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(4));
    let session = s.session();
    assert_eq!(session["status"], "cancelled");
    assert_eq!(the_worker(&session)["intervention"], json!({ "reason": "killed", "signal": "SIGKILL" }));
    assert_eq!(the_worker(&session)["signal"], 9);
    assert_worker_gone(&session);
}

#[test]
fn a_launcher_killed_mid_session_leaves_nothing_running_and_is_marked_incomplete() {
    let s = Scratch::new();
    let (mut child, worker_dir) = start_until_ready(&s, "cancellable.sh");
    let old_session = worker_dir.parent().unwrap().parent().unwrap().to_owned();
    let before = crate::util::snapshot_tree(&old_session);
    signal(&child, nix::sys::signal::Signal::SIGKILL);
    child.wait().unwrap();

    // The orphaned worker is told by the kernel (parent-death signal) and stops by itself; the
    // lease it inherited keeps the next launcher waiting until it has.
    let out = run(&mut s.launcher("no_report.sh"));
    assert_eq!(code(&out), Some(5), "{}", stderr(&out));
    assert!(worker_dir.join("cancelled-by-sigterm").exists(), "the orphan was cancelled");
    let claim: Value = serde_json::from_slice(&std::fs::read(worker_dir.join("worker-claim")).unwrap()).unwrap();
    assert!(!pid_alive(claim["pid"].as_i64().unwrap() as i32), "the orphaned worker is gone");

    let marked: Value = serde_json::from_slice(&std::fs::read(old_session.join("session.json")).unwrap()).unwrap();
    assert_eq!(marked["status"], "incomplete");
    assert!(marked["problems"][0]
        .as_str()
        .unwrap()
        .contains("ended without writing session.json (died, or could not write it)"));
    // Everything the old session had is still there, byte for byte; only session.json and the
    // orphan's own cancellation note were added.
    let after = crate::util::snapshot_tree(&old_session);
    for (path, bytes) in &before {
        let kept = after.iter().find(|(p, _)| p == path).map(|(_, b)| b);
        assert_eq!(kept, Some(bytes), "{} changed", path.display());
    }
}

/// The CPUs the probe worker wrote into its folder (its own `Cpus_allowed_list`).
fn probed_cpus(s: &Scratch) -> String {
    let out = s.path().join("out");
    let file = find_file(&out, "cpus").unwrap_or_else(|| panic!("no cpus file under {}", out.display()));
    std::fs::read_to_string(file).unwrap().trim().to_owned()
}

/// The CPUs this test process may use, as the kernel lists them.
fn own_cpus() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim().to_owned()
}

#[cfg(target_os = "linux")]
#[test]
fn the_placement_reaches_the_worker_and_is_recorded() {
    let first = own_cpus().split([',', '-']).next().unwrap().to_owned();
    for (flag, expected) in [(None, first.clone()), (Some(first.as_str()), first.clone()), (Some("all"), own_cpus())] {
        let s = Scratch::new();
        let mut launcher = s.launcher("cpus_probe.sh");
        if let Some(list) = flag {
            launcher.args(["--cpus", list]);
        }
        let out = run(&mut launcher);
        assert_eq!(code(&out), Some(5), "a worker without a report fails the session: {}", stderr(&out));
        assert_eq!(probed_cpus(&s), expected, "--cpus {flag:?}");
        let placement = &s.session()["placement"];
        assert_eq!(placement["requested"], flag.unwrap_or("first"));
        assert_eq!(placement["effective"], expected.as_str(), "{placement}");
    }
}

#[test]
fn a_bad_cpu_list_is_refused_naming_the_flag_and_the_form() {
    let s = Scratch::new();
    for bad in ["x", "3-1", ""] {
        let out = run(s.launcher("cpus_probe.sh").args(["--cpus", bad]));
        assert_eq!(code(&out), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains("--cpus"), "{}", stderr(&out));
        assert!(stderr(&out).contains("expected `all`, `first`, or CPU ids"), "{}", stderr(&out));
    }
    assert!(!s.path().join("out").exists(), "nothing ran");
    let out = run(s.launcher("cpus_probe.sh").args(["--cpus", "1000"]));
    assert_eq!(code(&out), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("none of these CPUs is available to the launcher"), "{}", stderr(&out));
}
