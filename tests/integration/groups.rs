//! Rank groups through the launcher with the real workers on the tiny fixture: every worker run
//! as two processes on MLX's ring backend over loopback, rank 0 in the worker's folder and
//! rank 1 in `<folder>.rank1`, with the host file `<folder>.hostfile.json` beside them.
//!
//! A group that runs to its end agrees with itself (rank 1's tokens are rank 0's) and with the
//! other adapter; a group that loses a rank (one that never connects, one killed while its peer
//! is joining, in decode, or before its report) is stopped whole and fails the session; Ctrl-C cancels
//! every rank gracefully at each phase; a group the launcher cannot start is refused before
//! anything is written. Every scenario with a fault checks faults.rs's three promises
//! ([`assert_promises`], ranks included), and nothing is left in any rank's process group.
//!
//! Synchronisation is as in faults.rs: the test hook holds every rank (each rank inherits it
//! and holds in its own folder), the test waits for each rank's `hook-<site>-reached`, then
//! injects the fault. No sleep makes anything happen; every wait has a bound.

use std::{
    collections::BTreeSet,
    net::SocketAddr,
    path::{Path, PathBuf},
    process::Child,
    time::{Duration, Instant},
};

use decode_baseline_wire::{
    manifest::Manifest,
    outdir::{CLAIM_FILE, JOB_FILE, READY_FILE, REPORT_FILE},
    Adapter, Mode,
};
use nix::sys::signal::Signal;
use serde_json::{json, Value};

use crate::{
    faults::{
        self, as_report, assert_promises, headline_job, Scratch, BEFORE_READY, IN_DECODE, IN_PREFILL, IN_REPORT_WRITE,
    },
    util::{self, both_workers, claim_pid, pgid_of, read_json, signal, wait_bounded, Worker, BOUND},
};

/// The size of every group here.
const RANKS: u32 = 2;

/// The run policy's `backstop_grace_s` where a rank is stuck where SIGTERM may not reach it
/// (joining the group): stopped with its group, it gets SIGKILL this much after SIGTERM. Every
/// other scenario keeps faults.rs's long grace, which a graceful stop always fits in: a stock
/// rank cancelled at `after_claim` still validates its job and environment (hashing the pinned
/// files) before it writes its report, which took over 3 s with two such tests at once on a
/// 2-CPU machine, and the Ctrl-C test then saw SIGKILL.
const GRACE_S: u32 = 3;

/// faults.rs's policy (3 short requests, fast polls) with [`GRACE_S`].
fn short_grace(manifest: &mut Manifest, _: &Path) {
    manifest.run_policy.backstop_grace_s = GRACE_S;
}

fn with_group(mut job: Value) -> Value {
    job["group"] = json!({ "ranks": RANKS });
    job
}

/// The fixture's headline cell for `worker` alone, once, as a group of [`RANKS`], under
/// faults.rs's policy changed by `edit`.
fn grouped(worker: Worker, edit: impl FnOnce(&mut Manifest, &Path)) -> Scratch {
    Scratch::with_job(edit, |fixture| with_group(headline_job(fixture, &worker.adapter(), 1)))
}

/// Rank `rank`'s folder (rank 0: the worker's own).
fn rank_dir(worker_dir: &Path, rank: u32) -> PathBuf {
    match rank {
        0 => worker_dir.to_owned(),
        r => suffixed(worker_dir, &format!(".rank{r}")),
    }
}

fn hostfile(worker_dir: &Path) -> PathBuf {
    suffixed(worker_dir, ".hostfile.json")
}

fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap().to_owned();
    name.push(suffix);
    path.with_file_name(name)
}

/// The folder of a run id (`<session id>/<cell>/<folder>`) in `session_dir`.
fn dir_of(session_dir: &Path, session: &Value, run_id: &str) -> PathBuf {
    let session_id = session["session_id"].as_str().unwrap();
    session_dir.join(run_id.strip_prefix(&format!("{session_id}/")).unwrap())
}

/// Waits until every rank of the first worker's group is held at `site`; checks that each rank
/// leads its own process group (so that its pid, recorded in `session.json`, is the group whose
/// leftovers [`assert_promises`] looks for). Returns the ranks' folders and pids, rank 0 first.
fn hold_every_rank(s: &Scratch, launcher: &mut Child, site: &str) -> Vec<(PathBuf, i32)> {
    let reached = format!("hook-{site}-reached");
    s.wait_for(&reached, launcher);
    let worker_dir = s.worker_dir(&s.the_session_dir(), 0);
    (0..RANKS)
        .map(|rank| {
            let dir = rank_dir(&worker_dir, rank);
            s.wait_for_path(&dir.join(&reached), launcher);
            let pid = claim_pid(&dir);
            assert_eq!(pgid_of(pid), Some(pid), "rank {rank} (pid {pid}) leads its own process group");
            (dir, pid)
        })
        .collect()
}

/// The session's one worker run and its one rank past rank 0.
fn the_group(session: &Value) -> (&Value, &Value) {
    let worker = util::the_worker(session);
    let ranks = worker["ranks"].as_array().unwrap_or_else(|| panic!("a group records its ranks: {worker}"));
    assert_eq!(ranks.len(), RANKS as usize - 1, "ranks past rank 0: {ranks:?}");
    assert_eq!(ranks[0]["rank"], 1);
    assert_eq!(ranks[0]["run_id"], format!("{}.rank1", worker["run_id"].as_str().unwrap()));
    (worker, &ranks[0])
}

/// What a report decoded, request by request: the first token and each step's argmax.
fn tokens(report: &Value) -> Vec<(u64, u64, Vec<u64>)> {
    report["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            let steps = q["steps"].as_array().unwrap().iter().map(|s| s["argmax"].as_u64().unwrap()).collect();
            (q["index"].as_u64().unwrap(), q["first_token"].as_u64().unwrap(), steps)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// A group that runs to its end
// ---------------------------------------------------------------------------------------------

/// Both adapters, interleaved, on the fixture's fixed-continuation and reference-pair cells,
/// every worker as 2 ranks: the session is ok; each rank joined the group the job names, on
/// its own loopback port; rank 1 decoded rank 0's tokens; the adapters agree token for token;
/// nothing is left running.
#[test]
fn two_ranks_agree_with_each_other_and_across_adapters() {
    // Two measured requests: the fewest an interleaved session pairs, so that it can end `ok`.
    let policy = |m: &mut Manifest, _: &Path| m.run_policy.measured_requests = 2;
    let s = Scratch::with_job(policy, |fixture| {
        let cells: Vec<String> = fixture
            .manifest
            .cells
            .iter()
            .filter(|c| matches!(c.mode, Mode::FixedContinuation | Mode::ReferencePair))
            .map(|c| c.name())
            .collect();
        with_group(json!({
            "schema_version": 1, "manifest": "workloads.json", "cells": cells,
            "adapters": ["controlled", "stock"], "output_root": "out", "repetitions": 1,
            "order": "interleaved"
        }))
    });
    let started = Instant::now();
    let status = s.run(None, None);
    eprintln!("two ranks, 2 cells x 2 adapters: {:?}", started.elapsed());
    assert_eq!(status.code(), Some(0), "{}", s.launcher_stderr());
    let session_dir = s.the_session_dir();
    let session = read_json(&session_dir.join("session.json"));
    assert_eq!(session["status"], "ok", "problems: {}", session["problems"]);
    let workers = session["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 4, "2 cells x 2 adapters");
    for worker in workers {
        let run_id = worker["run_id"].as_str().unwrap();
        assert_eq!(
            (&worker["exit_code"], &worker["intervention"], &worker["validation_errors"]),
            (&json!(0), &Value::Null, &json!([])),
            "{run_id}"
        );
        let rank1 = worker["ranks"].as_array().filter(|r| r.len() == 1).map(|r| &r[0]);
        let rank1 = rank1.unwrap_or_else(|| panic!("{run_id}: one rank past rank 0: {}", worker["ranks"]));
        let rank1_id = format!("{run_id}.rank1");
        assert_eq!(
            rank1,
            &json!({
                "rank": 1, "run_id": rank1_id, "command": rank1["command"], "pid": rank1["pid"],
                "exit_code": 0, "signal": null, "intervention": null, "wall_ns": rank1["wall_ns"],
                "status": "ok", "error": null, "validation_errors": []
            }),
            "{run_id}: rank 1 ran to its end, valid"
        );
        let worker_dir = dir_of(&session_dir, &session, run_id);
        assert_eq!(dir_of(&session_dir, &session, &rank1_id), rank_dir(&worker_dir, 1));
        assert_eq!(rank1["command"].as_array().unwrap().last().unwrap(), &json!(rank_dir(&worker_dir, 1)));

        // The host file: one loopback address per rank, each on its own port.
        let hostfile = hostfile(&worker_dir);
        let hosts: Vec<Vec<String>> = serde_json::from_value(read_json(&hostfile)).unwrap();
        assert_eq!(hosts.len(), RANKS as usize, "{}: {hosts:?}", hostfile.display());
        let addrs: Vec<SocketAddr> = hosts
            .iter()
            .map(|h| match h.as_slice() {
                [one] => one.parse().unwrap_or_else(|e| panic!("{}: {one:?}: {e}", hostfile.display())),
                _ => panic!("{}: one address per rank, found {h:?}", hostfile.display()),
            })
            .collect();
        assert!(addrs.iter().all(|a| a.ip().is_loopback()), "{}: {addrs:?}", hostfile.display());
        let ports: BTreeSet<u16> = addrs.iter().map(SocketAddr::port).collect();
        assert_eq!(ports.len(), RANKS as usize, "{}: distinct ports: {addrs:?}", hostfile.display());

        let pids = [worker["pid"].as_i64().unwrap() as i32, rank1["pid"].as_i64().unwrap() as i32];
        let mut reports = Vec::new();
        for (rank, pid) in (0..RANKS).zip(pids) {
            let dir = rank_dir(&worker_dir, rank);
            let job = read_json(&dir.join(JOB_FILE));
            assert_eq!(
                job["group"],
                json!({ "rank": rank, "ranks": RANKS, "backend": "ring", "hostfile": hostfile }),
                "{}: the job names the rank and the host file",
                dir.display()
            );
            let report = read_json(&dir.join(REPORT_FILE));
            assert_eq!(report["status"], "ok", "{}", dir.display());
            assert_eq!(
                report["group"],
                json!({ "rank": rank, "ranks": RANKS, "backend": "ring" }),
                "{}: the report says which group it joined",
                dir.display()
            );
            assert_eq!(claim_pid(&dir), pid, "{}: the recorded pid is the claim's", dir.display());
            util::assert_group_gone(pid);
            reports.push(report);
        }
        assert_eq!(
            as_report(&reports[0]),
            as_report(&worker["report"]),
            "{run_id}: rank 0's report is the recorded one"
        );
        assert_eq!(tokens(&reports[1]), tokens(&reports[0]), "{run_id}: rank 1 decoded rank 0's tokens");
    }

    // The adapters agree, each decoding one model split over two processes.
    let cells = session["analysis"]["cells"].as_array().unwrap();
    let modes: BTreeSet<&str> = cells.iter().map(|c| c["mode"].as_str().unwrap()).collect();
    assert_eq!(modes, BTreeSet::from(["fixed_continuation", "reference_pair"]));
    for cell in cells {
        let name = cell["cell"].as_str().unwrap();
        let (key, empty) =
            if cell["mode"] == "fixed_continuation" { ("argmax", "stream") } else { ("stream", "argmax") };
        let agreements = cell[key].as_object().unwrap();
        assert_eq!(agreements.len(), 1, "{name}: one adapter against the reference: {agreements:?}");
        assert!(cell[empty].as_object().unwrap().is_empty(), "{name}: {}", cell[empty]);
        for (adapter, agreement) in agreements {
            if key == "argmax" {
                assert!(agreement["steps_compared"].as_u64().unwrap() > 0, "{name} {adapter}: {agreement}");
                assert_eq!(agreement["mismatches"], json!([]), "{name} {adapter}: argmax agreement");
            } else {
                assert!(agreement["tokens_compared"].as_u64().unwrap() > 0, "{name} {adapter}: {agreement}");
                assert_eq!(agreement["identical"], true, "{name} {adapter}: reference streams: {agreement}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A group that loses a rank
// ---------------------------------------------------------------------------------------------

/// Rank 1 exits 1 before it claims anything (`tests/fixtures/workers/rank1_never_connects.sh`,
/// in front of the real worker), so rank 0 can never join its group. The launcher stops rank 0
/// as soon as rank 1 is gone, wherever it is (usually still starting, before its claim), not at
/// the ready timeout; the session fails.
fn a_rank_that_never_connects_stops_the_group(worker: Worker) {
    let s = grouped(worker, short_grace);
    let script = util::repo_root().join("tests/fixtures/workers/rank1_never_connects.sh");
    let words: Vec<String> = std::iter::once(script).chain(worker.program()).map(|p| p.display().to_string()).collect();
    let started = Instant::now();
    let launcher = s.launcher_replacing(None, Some(&words.join(" "))).spawn().unwrap();
    let status = wait_bounded(launcher, BOUND);
    let wall = started.elapsed();
    eprintln!("{worker:?}: the group without rank 1 ended after {wall:?}");
    assert_eq!(status.code(), Some(5), "worker failed; stderr:\n{}", s.launcher_stderr());
    let ready_timeout = Duration::from_secs(s.fixture.manifest.run_policy.ready_timeout_s.into());
    assert!(wall < ready_timeout, "stopped when rank 1 exited, not at the ready timeout ({ready_timeout:?}): {wall:?}");
    let session_dir = s.the_session_dir();
    let session = assert_promises(&session_dir, false);
    assert_eq!(session["status"], "worker_failed");
    let (rank0, rank1) = the_group(&session);
    assert_eq!(
        (&rank1["exit_code"], &rank1["signal"], &rank1["intervention"], &rank1["status"]),
        (&json!(1), &Value::Null, &Value::Null, &Value::Null),
        "rank 1 exited 1 by itself, without a report: {rank1}"
    );
    assert_eq!(rank0["intervention"]["reason"], "rank_stopped", "{rank0}");
    assert!(
        rank0["intervention"]["signal"] == "SIGTERM" || rank0["intervention"]["signal"] == "SIGKILL",
        "{}",
        rank0["intervention"]
    );
    let worker_dir = s.worker_dir(&session_dir, 0);
    assert!(!worker_dir.join(READY_FILE).exists(), "rank 0 never got ready without its peer");
    assert_ne!(rank0["report"]["status"], "ok", "{}", rank0["report"]);
    assert!(!rank_dir(&worker_dir, 1).join(CLAIM_FILE).exists(), "rank 1 claimed nothing");
}

/// Whether `pid` holds a socket: a rank that holds one is joining (or has joined) the group,
/// the only thing a worker opens a socket for.
fn holds_a_socket(pid: i32) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
    fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .any(|target| target.to_string_lossy().starts_with("socket:"))
}

/// Both ranks hold after their claim; rank 0 is let go and is seen joining the group (it holds a
/// socket), where it waits for rank 1; then rank 1 is SIGKILLed. Rank 0, stuck in MLX's join,
/// is stopped within the grace, long before the ready timeout. (Seen here: the controlled
/// worker's SIGTERM handler restarts the ring's `accept`, so it is SIGKILLed after the grace;
/// stock's interrupts it, and it reports `failed`: "[ring] Accept failed (error: 4)".)
fn a_rank_stuck_joining_is_stopped_within_the_grace(worker: Worker) {
    let s = grouped(worker, short_grace);
    let mut launcher = s.launcher(Some(BEFORE_READY), None).spawn().unwrap();
    let ranks = hold_every_rank(&s, &mut launcher, BEFORE_READY.0);
    std::fs::write(ranks[0].0.join("hook-after_claim-release"), b"").unwrap();
    let start = Instant::now();
    while !holds_a_socket(ranks[0].1) {
        assert!(launcher.try_wait().unwrap().is_none(), "the launcher ended: {}", s.launcher_stderr());
        assert!(start.elapsed() < BOUND, "rank 0 never started to join; stderr:\n{}", s.launcher_stderr());
        std::thread::sleep(Duration::from_millis(2));
    }
    let killed = Instant::now();
    signal(ranks[1].1, Signal::SIGKILL);
    let status = wait_bounded(launcher, BOUND);
    let stopped_after = killed.elapsed();
    assert_eq!(status.code(), Some(5), "worker failed; stderr:\n{}", s.launcher_stderr());
    let session_dir = s.the_session_dir();
    let session = assert_promises(&session_dir, false);
    assert_eq!(session["status"], "worker_failed");
    let (rank0, rank1) = the_group(&session);
    eprintln!("{worker:?}: rank 0 stopped {stopped_after:?} after rank 1 was killed: {}", rank0["intervention"]);
    assert_eq!((&rank1["signal"], &rank1["status"]), (&json!(9), &Value::Null), "{rank1}");
    assert_eq!(rank0["intervention"]["reason"], "rank_stopped", "{rank0}");
    assert!(!ranks[0].0.join(READY_FILE).exists(), "rank 0 never got ready without its peer");
    let grace = Duration::from_secs(GRACE_S.into());
    // The grace, and time for the launcher's polls and the reaping; far from any other timer.
    assert!(stopped_after < grace + Duration::from_secs(10), "stopped within the grace: {stopped_after:?}");
}

/// Both ranks hold at their first decode step of request 1; rank 1 is SIGKILLed. The launcher
/// stops rank 0 gracefully (it cancels, keeping request 0), and the session fails.
fn a_rank_sigkilled_in_decode_stops_the_group(worker: Worker) {
    let s = grouped(worker, |_, _| {});
    let mut launcher = s.launcher(Some(IN_DECODE), None).spawn().unwrap();
    let ranks = hold_every_rank(&s, &mut launcher, IN_DECODE.0);
    signal(ranks[1].1, Signal::SIGKILL);
    let status = wait_bounded(launcher, BOUND);
    assert_eq!(status.code(), Some(5), "worker failed; stderr:\n{}", s.launcher_stderr());
    let session = assert_promises(&s.the_session_dir(), false);
    assert_eq!(session["status"], "worker_failed");
    let (rank0, rank1) = the_group(&session);
    assert_eq!(
        (&rank1["signal"], &rank1["exit_code"], &rank1["intervention"], &rank1["status"]),
        (&json!(9), &Value::Null, &Value::Null, &Value::Null),
        "rank 1 was killed, by the test, and left no report: {rank1}"
    );
    assert!(!ranks[1].0.join(REPORT_FILE).exists());
    assert_eq!(rank0["intervention"], json!({ "reason": "rank_stopped", "signal": "SIGTERM" }), "{rank0}");
    let report = &rank0["report"];
    assert_eq!((report["status"].as_str(), rank0["exit_code"].as_i64()), (Some("cancelled"), Some(4)), "{report}");
    assert_eq!(report["requests"].as_array().unwrap().len(), 1, "request 0 kept, request 1 dropped");
}

/// Both ranks hold before their report write, every request done; rank 1 is SIGKILLed. Rank 0,
/// stopped with the group, still writes the `ok` report it had decided on, but a group that
/// lost a rank is no result: the session fails and no statistics come from it (two measured
/// requests, the fewest that give statistics, so that their absence shows).
fn a_rank_sigkilled_before_its_report_fails_the_group(worker: Worker) {
    let s = grouped(worker, |m, _| m.run_policy.measured_requests = 2);
    let mut launcher = s.launcher(Some(IN_REPORT_WRITE), None).spawn().unwrap();
    let ranks = hold_every_rank(&s, &mut launcher, IN_REPORT_WRITE.0);
    signal(ranks[1].1, Signal::SIGKILL);
    let status = wait_bounded(launcher, BOUND);
    assert_eq!(status.code(), Some(5), "worker failed; stderr:\n{}", s.launcher_stderr());
    let session = assert_promises(&s.the_session_dir(), false);
    assert_eq!(session["status"], "worker_failed");
    let (rank0, rank1) = the_group(&session);
    assert_eq!((&rank1["signal"], &rank1["status"]), (&json!(9), &Value::Null), "{rank1}");
    assert_eq!(rank0["intervention"], json!({ "reason": "rank_stopped", "signal": "SIGTERM" }), "{rank0}");
    let report = &rank0["report"];
    assert_eq!((report["status"].as_str(), rank0["exit_code"].as_i64()), (Some("ok"), Some(0)), "{report}");
}

// ---------------------------------------------------------------------------------------------
// Ctrl-C with the group held at each phase
// ---------------------------------------------------------------------------------------------

/// Every rank held at `hook`; SIGINT to the launcher: every rank is stopped gracefully (SIGTERM,
/// never SIGKILL) and keeps its `complete_requests`, as a lone worker does (faults.rs).
fn ctrl_c_cancels_every_rank(worker: Worker, hook: (&str, u32), complete_requests: u32) {
    let s = grouped(worker, |_, _| {});
    let mut launcher = s.launcher(Some(hook), None).spawn().unwrap();
    let ranks = hold_every_rank(&s, &mut launcher, hook.0);
    signal(launcher.id() as i32, Signal::SIGINT);
    let status = wait_bounded(launcher, BOUND);
    assert_eq!(status.code(), Some(4), "cancelled; stderr:\n{}", s.launcher_stderr());
    let session = assert_promises(&s.the_session_dir(), false);
    assert_eq!(session["status"], "cancelled");
    let (rank0, rank1) = the_group(&session);
    let (status, exit_code) = match complete_requests == faults::policy().total_requests() {
        // The end state (ok) was decided before the signal; the report says what happened.
        true => ("ok", 0),
        false => ("cancelled", 4),
    };
    for (rank, record) in [(0, rank0), (1, rank1)] {
        assert_eq!(
            record["intervention"],
            json!({ "reason": "cancelled", "signal": "SIGTERM" }),
            "graceful: rank {rank} was not killed"
        );
        assert_eq!(record["exit_code"], exit_code, "rank {rank}: {record}");
        let on_disk = read_json(&ranks[rank].0.join(REPORT_FILE));
        assert_eq!(on_disk["status"], status, "rank {rank}");
        let requests = on_disk["requests"].as_array().unwrap().len() as u32;
        assert_eq!(requests, complete_requests, "rank {rank}: complete requests kept");
    }
    assert_eq!(rank1["status"], status);
    assert_eq!(rank0["report"]["status"], status);
}

// ---------------------------------------------------------------------------------------------
// A group the launcher refuses
// ---------------------------------------------------------------------------------------------

/// A session job whose `group` is wrong is refused as bad input (exit 2) naming the field,
/// before anything runs or is written: no output root, no lease file.
fn a_bad_group_is_refused_before_anything_runs(group: Value, field: &str) {
    let s = Scratch::with_job(
        |_, _| {},
        |fixture| {
            let mut job = headline_job(fixture, &Adapter::Stock, 1);
            job["group"] = group;
            job
        },
    );
    let status = s.run(None, None);
    let stderr = s.launcher_stderr();
    assert_eq!(status.code(), Some(2), "bad input: {stderr}");
    assert!(stderr.contains(&format!("{field}: expected")), "names {field}: {stderr}");
    assert!(!s.out().exists(), "nothing under the output root: {:?}", util::snapshot_tree(&s.out()));
    assert!(!s.root().join("lease").exists(), "the lease was never taken");
}

#[test]
fn a_group_of_one_rank_is_refused() {
    a_bad_group_is_refused_before_anything_runs(json!({ "ranks": 1 }), "group.ranks");
}

#[test]
fn hosts_of_the_wrong_length_are_refused() {
    a_bad_group_is_refused_before_anything_runs(
        json!({ "ranks": 2, "hosts": ["127.0.0.1:40001", "127.0.0.1:40002", "127.0.0.1:40003"] }),
        "group.hosts",
    );
}

both_workers! {
    a_rank_that_never_connects => a_rank_that_never_connects_stops_the_group;
    a_rank_stuck_joining => a_rank_stuck_joining_is_stopped_within_the_grace;
    a_rank_sigkilled_in_decode => a_rank_sigkilled_in_decode_stops_the_group;
    a_rank_sigkilled_before_its_report => a_rank_sigkilled_before_its_report_fails_the_group;
    ctrl_c_before_ready => |w| ctrl_c_cancels_every_rank(w, BEFORE_READY, 0);
    ctrl_c_in_prefill => |w| ctrl_c_cancels_every_rank(w, IN_PREFILL, 1);
    ctrl_c_in_decode => |w| ctrl_c_cancels_every_rank(w, IN_DECODE, 1);
    ctrl_c_before_the_report_write => |w| ctrl_c_cancels_every_rank(w, IN_REPORT_WRITE, 3);
}
