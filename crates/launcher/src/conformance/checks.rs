//! The checks every scenario makes on a report: the key sets (declared here independently of
//! the Rust types), the header against the job and the process, and each complete record's
//! positions, counts and times.

use std::collections::BTreeSet;

use decode_baseline_wire::{
    group::RankIdentity,
    outdir::{CLAIM_FILE, READY_FILE},
    policy::prefill_forwards,
    Adapter, Mode, RequestRecord, Status, WorkerJob, WorkerReport,
};
use serde_json::Value;

use super::harness::{marker, no_temp, Failure, Finished, Setup};
use crate::{ensure, ensure_eq};

// The report's key sets, declared here independently of the Rust types: a renamed, added or
// removed field fails a scenario even if the workers and the types agree among themselves.
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
/// A rank's report carries `group` once the rank has joined (`req/distributed.md` §3); a
/// single process's has `null` there, or no key (a worker written before groups existed).
const GROUP_KEYS: &[&str] = &["rank", "ranks", "backend"];
const STEP_KEYS: &[&str] = &["position", "argmax", "t_ns", "dur_ns", "build_ns", "eval_ns", "margin", "tie"];

fn check_keys(value: &Value, expected: &[&str], what: &str) -> Result<(), Failure> {
    let found: BTreeSet<&str> = match value.as_object() {
        Some(object) => object.keys().map(String::as_str).collect(),
        None => return Err(Failure::new(format!("{what} is not an object"))),
    };
    let expected: BTreeSet<&str> = expected.iter().copied().collect();
    let missing: Vec<_> = expected.difference(&found).collect();
    let unknown: Vec<_> = found.difference(&expected).collect();
    ensure!(missing.is_empty() && unknown.is_empty(), "key set of {what}: missing {missing:?}, unknown {unknown:?}");
    Ok(())
}

fn check_key_sets(value: &Value) -> Result<(), Failure> {
    // `group` is the one optional key: an object from a rank that joined its group, else `null`
    // or absent (a worker written before groups existed).
    let group = value.get("group");
    let expected: Vec<&str> = REPORT_KEYS.iter().copied().chain(group.map(|_| "group")).collect();
    check_keys(value, &expected, "the report")?;
    if let Some(group) = group.filter(|g| !g.is_null()) {
        check_keys(group, GROUP_KEYS, "group")?;
    }
    if !value["identity"].is_null() {
        check_keys(&value["identity"], IDENTITY_KEYS, "identity")?;
    }
    for request in value["requests"].as_array().into_iter().flatten() {
        check_keys(request, REQUEST_KEYS, "a request")?;
        for step in request["steps"].as_array().into_iter().flatten() {
            check_keys(step, STEP_KEYS, "a step")?;
        }
    }
    Ok(())
}

/// Every check a launcher makes on any report; returns the report.
pub fn check_report(setup: &Setup, finished: &Finished) -> Result<WorkerReport, Failure> {
    let (report, value) = setup.report()?;
    check_key_sets(&value)?;
    ensure_eq!(report.schema_version, 1, "schema_version");
    ensure_eq!(report.test_slowdown_us, None, "test_slowdown_us (no test slowdown was set)");
    ensure_eq!(report.adapter, setup.job.adapter, "adapter");
    ensure_eq!(report.mode, setup.job.mode, "mode");
    ensure_eq!(report.run_id, setup.job.run_id, "run_id");
    ensure_eq!(report.exit_code, finished.code()?, "report exit_code vs the process's");
    ensure_eq!(report.exit_code, report.status.exit_code().code(), "exit_code of status {:?}", report.status);
    ensure!(report.status == Status::Ok || report.error.is_some(), "status {:?} without an error", report.status);
    ensure!(report.status != Status::Ok || report.error.is_none(), "status ok with error {:?}", report.error);
    ensure_eq!(report.pid, finished.pid, "report pid vs the spawned process");
    // The group as the joined group reports it equals the job's; an ok rank has joined, a
    // rank that ended earlier may not have; a single process never names one.
    let joined = setup.job.group.as_ref().map(|g| RankIdentity { rank: g.rank, ranks: g.ranks, backend: g.backend });
    ensure!(
        report.group == joined || (report.group.is_none() && report.status != Status::Ok),
        "group: expected {joined:?} (the job's), found {:?}",
        report.group
    );
    ensure_eq!(marker(&setup.path(CLAIM_FILE))?.pid, report.pid, "claim pid vs report pid");
    if report.status != Status::Failed {
        ensure_eq!(marker(&setup.path(READY_FILE))?.pid, report.pid, "ready pid vs report pid");
    }
    no_temp(&setup.out)?;
    for (i, request) in report.requests.iter().enumerate() {
        check_request(setup, i, request)?;
    }
    let phased = report.requests.iter().filter(|r| r.phase.is_some()).count();
    let expected_phased = if setup.job.mode == Mode::ReferencePair { 0 } else { report.requests.len() };
    ensure_eq!(phased, expected_phased, "requests with a phase (none in reference-pair, all otherwise)");
    Ok(report)
}

/// The steps a complete request of the job's mode has.
pub fn expected_steps(setup: &Setup) -> u32 {
    match setup.job.mode {
        Mode::FixedContinuation => setup.job.run_policy.fixed_continuation_steps,
        Mode::Headline | Mode::ReferencePair => setup.job.run_policy.max_new_tokens - 1,
    }
}

fn check_request(setup: &Setup, i: usize, request: &RequestRecord) -> Result<(), Failure> {
    let l = setup.job.prompt_ids.len() as u32;
    let steps = expected_steps(setup);
    ensure_eq!(request.index, i as u32, "request index (requests are complete and in order)");
    ensure_eq!(request.prompt_len, l, "prompt_len of request {i}");
    ensure_eq!(request.finish_reason, "length", "finish_reason of request {i} (the fixture never emits eos)");
    let positions: Vec<u32> = request.steps.iter().map(|s| s.position).collect();
    ensure!(
        positions == (l + 1..=l + steps).collect::<Vec<_>>(),
        "step positions of request {i}: expected {}..={}, found {} steps from {:?} to {:?}",
        l + 1,
        l + steps,
        positions.len(),
        positions.first(),
        positions.last()
    );
    ensure!(
        request.prefill_dur_ns > 0 && request.first_token_ns >= request.prefill_dur_ns,
        "request {i}: prefill_dur_ns {} must be > 0 and <= first_token_ns {}",
        request.prefill_dur_ns,
        request.first_token_ns
    );
    let measured = setup.job.mode != Mode::Headline;
    let mut previous = request.first_token_ns;
    for step in &request.steps {
        let at = format!("request {i}, position {}", step.position);
        ensure!(step.t_ns > previous, "step times increase ({at})");
        ensure!(step.dur_ns > 0 && step.dur_ns <= step.t_ns - previous, "step duration within its interval ({at})");
        previous = step.t_ns;
        ensure!(
            step.margin.is_some() == measured && step.tie.is_some() == measured,
            "margin and tie present only where the mode measures them ({at})"
        );
        if let (Some(margin), Some(tie)) = (step.margin, step.tie) {
            ensure!(margin >= 0.0 && tie == (margin == 0.0), "margin {margin} vs tie {tie} ({at})");
        }
        // req/protocol.md §8, "Where build_ns ends and eval_ns begins".
        match (step.build_ns, step.eval_ns) {
            (None, None) => {}
            (Some(build), Some(eval)) => ensure!(
                build + eval <= step.dur_ns,
                "build_ns {build} + eval_ns {eval} must lie within dur_ns {} ({at})",
                step.dur_ns
            ),
            (build, eval) => {
                return Err(Failure::new(format!("build_ns {build:?} and eval_ns {eval:?}: both or neither ({at})")))
            }
        }
    }
    check_forward_counts(&setup.job, i, request, steps)?;
    ensure!(request.peak_memory_bytes.is_some_and(|b| b > 0), "request {i}: peak memory not recorded");
    Ok(())
}

/// The model-call counts the protocol fixes for the built-in loops (`req/protocol.md` section
/// 5); any loop has at least one forward per step and a fixed-continuation request never has an
/// unused one.
fn check_forward_counts(job: &WorkerJob, i: usize, request: &RequestRecord, steps: u32) -> Result<(), Failure> {
    let (adapter, mode) = (&job.adapter, job.mode);
    let (unused, calls) = (request.unused_forwards, request.model_calls);
    if mode == Mode::FixedContinuation {
        ensure_eq!(unused, 0, "unused_forwards of request {i} (fixed-continuation)");
    }
    ensure!(calls > steps, "request {i}: model_calls {calls} below the {steps} steps plus a prefill");
    // Both built-in loops prefill as `generate_step` does: the chunks of `prompt[:-1]`, then
    // the last prompt token alone.
    let prefill = prefill_forwards(request.prompt_len, job.prefill_step_size);
    if *adapter == Adapter::Stock && mode != Mode::FixedContinuation {
        ensure_eq!(unused, 1, "unused_forwards of request {i} (stock's one unused look-ahead)");
        ensure_eq!(
            calls,
            prefill + steps + 1,
            "model_calls of request {i} (prefill chunks + seed + steps + look-ahead)"
        );
    } else if *adapter == Adapter::Stock || *adapter == Adapter::Controlled {
        ensure_eq!(unused, 0, "unused_forwards of request {i} (no look-ahead)");
        ensure_eq!(
            calls,
            prefill + steps,
            "model_calls of request {i} (prefill chunks + the last prompt token + steps)"
        );
    }
    Ok(())
}
