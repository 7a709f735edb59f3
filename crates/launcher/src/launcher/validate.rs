//! Validation of a worker's report against its job, its process and the manifest. A report that
//! fails any check is not used for statistics; each problem is a sentence naming the field.
//!
//! The identity block is checked here, by the launcher, against the pins: a worker's own checks
//! cannot be relied on (a worker that skips them would otherwise be measured as the pinned one).

use std::path::Path;

use decode_baseline_wire::{
    group::RankIdentity,
    manifest::Manifest,
    report::{RequestRecord, Status, WorkerReport},
    Adapter, Mode, Sha256Digest, WorkerJob, REPORT_SCHEMA_VERSION,
};

/// What the launcher expects in an adapter's identity block beyond the job's own pins (the
/// manifest digest and `environment`, which the job carries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedIdentity {
    pub adapter: Adapter,
    /// The freeze digest of the manifest's `worker_sources.<adapter>` map.
    pub worker_sources_sha256: Sha256Digest,
    /// The code version of the repository the session runs from, taken as its workers start.
    pub code_version: String,
}

impl ExpectedIdentity {
    /// The expectation for `adapter` under `manifest`, with the session's `code_version`.
    pub fn new(manifest: &Manifest, adapter: &Adapter, code_version: String) -> Self {
        Self { adapter: adapter.clone(), worker_sources_sha256: manifest.worker_sources_sha256(adapter), code_version }
    }
}

/// Reads `report.json` from `out_dir`; `Err` holds the problem when it is missing or unreadable.
pub fn read_report(out_dir: &Path) -> Result<WorkerReport, String> {
    let path = out_dir.join("report.json");
    let bytes = std::fs::read(&path).map_err(|err| format!("no report at {}: {err}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|err| format!("report {} does not parse: {err}", path.display()))
}

/// The report in `out_dir` of the worker that ran `job` as `pid` and exited with `exit_code`,
/// with every problem found in it; no report, and the reason, when none could be read.
pub fn read_and_validate(
    out_dir: &Path,
    job: &WorkerJob,
    expected: &ExpectedIdentity,
    pid: u32,
    exit_code: Option<i32>,
) -> (Option<WorkerReport>, Vec<String>) {
    match read_report(out_dir) {
        Ok(report) => {
            let errors = validate(&report, job, expected, pid, exit_code, out_dir);
            (Some(report), errors)
        }
        Err(problem) => (None, vec![problem]),
    }
}

/// The pid recorded in a `{utc, pid}` marker file (`worker-claim`, `worker-ready`).
fn marker_pid(out_dir: &Path, name: &str) -> Option<u32> {
    let bytes = std::fs::read(out_dir.join(name)).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    value.get("pid")?.as_u64().map(|pid| pid as u32)
}

/// Every problem with `report` for the worker that ran `job` as `pid` and exited with `exit_code`.
pub fn validate(
    report: &WorkerReport,
    job: &WorkerJob,
    expected: &ExpectedIdentity,
    pid: u32,
    exit_code: Option<i32>,
    out_dir: &Path,
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut check = |ok: bool, problem: String| {
        if !ok {
            problems.push(problem);
        }
    };
    check(
        report.schema_version == REPORT_SCHEMA_VERSION,
        format!("schema_version: expected {REPORT_SCHEMA_VERSION}, found {}", report.schema_version),
    );
    check(report.pid == pid, format!("pid: expected the child's {pid}, found {}", report.pid));
    let claim = marker_pid(out_dir, "worker-claim");
    check(claim == Some(pid), format!("worker-claim pid: expected {pid}, found {claim:?}"));
    check(report.run_id == job.run_id, format!("run_id: expected {}, found {}", job.run_id, report.run_id));
    check(report.adapter == job.adapter, format!("adapter: expected {:?}, found {:?}", job.adapter, report.adapter));
    check(report.mode == job.mode, format!("mode: expected {:?}, found {:?}", job.mode, report.mode));
    check(report.case_id == job.case_id, format!("case_id: expected {}, found {}", job.case_id, report.case_id));
    check(
        report.prompt_id == job.prompt_id,
        format!("prompt_id: expected {}, found {}", job.prompt_id, report.prompt_id),
    );
    let expected_code = report.status.exit_code().code();
    check(
        report.exit_code == expected_code,
        format!("exit_code: status {:?} requires {expected_code}, found {}", report.status, report.exit_code),
    );
    check(
        exit_code == Some(report.exit_code),
        format!("exit_code: the process exited with {exit_code:?}, the report says {}", report.exit_code),
    );
    if report.status == Status::Ok {
        let joined = job.group.as_ref().map(|g| RankIdentity { rank: g.rank, ranks: g.ranks, backend: g.backend });
        check(report.group == joined, format!("group: expected {joined:?} (the job's), found {:?}", report.group));
        check_identity(report, job, expected, &mut problems);
        check_requests(report, job, &mut problems);
    }
    problems
}

fn check_identity(report: &WorkerReport, job: &WorkerJob, expected: &ExpectedIdentity, problems: &mut Vec<String>) {
    let Some(identity) = &report.identity else {
        problems.push("identity: missing in an ok report".to_owned());
        return;
    };
    let pins = &job.environment;
    let mut check = |ok: bool, problem: String| {
        if !ok {
            problems.push(problem);
        }
    };
    check(
        identity.manifest_sha256 == job.manifest_sha256,
        format!("identity.manifest_sha256: expected {}, found {}", job.manifest_sha256, identity.manifest_sha256),
    );
    check(
        identity.worker_sources_sha256 == expected.worker_sources_sha256,
        format!(
            "identity.worker_sources_sha256: expected {} (the manifest's worker_sources.{}), found {}",
            expected.worker_sources_sha256,
            expected.adapter.as_str(),
            identity.worker_sources_sha256
        ),
    );
    check(
        identity.code_version == expected.code_version,
        format!(
            "identity.code_version: expected {} (the repository the session runs from), found {}",
            expected.code_version, identity.code_version
        ),
    );
    check(
        identity.lock_sha256 == pins.lock_sha256,
        format!("identity.lock_sha256: expected {}, found {}", pins.lock_sha256, identity.lock_sha256),
    );
    check(
        identity.mlx_version == pins.mlx_version,
        format!("identity.mlx_version: expected {}, found {}", pins.mlx_version, identity.mlx_version),
    );
    check(
        identity.mlx_lm_version == pins.mlx_lm_version,
        format!("identity.mlx_lm_version: expected {}, found {}", pins.mlx_lm_version, identity.mlx_lm_version),
    );
    check(
        identity.mlx_lm_freeze_sha256 == pins.mlx_lm_freeze_sha256,
        format!(
            "identity.mlx_lm_freeze_sha256: expected {}, found {}",
            pins.mlx_lm_freeze_sha256, identity.mlx_lm_freeze_sha256
        ),
    );
    check(
        identity.libmlx_sha256 == pins.libmlx_sha256,
        format!("identity.libmlx_sha256: expected {}, found {}", pins.libmlx_sha256, identity.libmlx_sha256),
    );
    check(
        identity.device == job.device,
        format!("identity.device: expected {}, found {}", job.device.as_str(), identity.device.as_str()),
    );
    check(
        identity.backend == Some(pins.backend()),
        format!(
            "identity.backend: expected {}, found {}",
            pins.backend().as_str(),
            identity.backend.map_or("null", |b| b.as_str())
        ),
    );
}

fn check_requests(report: &WorkerReport, job: &WorkerJob, problems: &mut Vec<String>) {
    let expected = job.run_policy.request_plan(job.mode);
    if report.requests.len() != expected.len() {
        problems.push(format!(
            "requests: expected {} for {:?}, found {}",
            expected.len(),
            job.mode,
            report.requests.len()
        ));
    }
    let prompt_len = job.prompt_ids.len() as u32;
    for (request, phase) in report.requests.iter().zip(expected) {
        let at = |field: &str| format!("requests[{}].{field}", request.index);
        if request.phase != phase {
            problems.push(format!("{}: expected {phase:?}, found {:?}", at("phase"), request.phase));
        }
        if request.prompt_len != prompt_len {
            problems.push(format!("{}: expected {prompt_len}, found {}", at("prompt_len"), request.prompt_len));
        }
        let steps = expected_steps(job, request);
        if request.steps.len() as u32 != steps {
            problems.push(format!("{}: expected {steps} steps, found {}", at("steps"), request.steps.len()));
        }
        check_steps(request, prompt_len, &at, problems);
    }
}

fn expected_steps(job: &WorkerJob, request: &RequestRecord) -> u32 {
    match job.mode {
        Mode::FixedContinuation => job.run_policy.fixed_continuation_steps,
        // A stop token ends generation early; the fixtures never emit one, real models may.
        Mode::Headline | Mode::ReferencePair if request.finish_reason == "stop" => request.steps.len() as u32,
        Mode::Headline | Mode::ReferencePair => job.run_policy.max_new_tokens - 1,
    }
}

/// Positions L+1, L+2, … in order; stamps strictly increasing and consistent with durations;
/// the first step after the first token.
fn check_steps(request: &RequestRecord, prompt_len: u32, at: &dyn Fn(&str) -> String, problems: &mut Vec<String>) {
    if request.first_token_ns < request.prefill_dur_ns {
        problems.push(format!(
            "{}: first token at {} ns precedes the end of prefill ({} ns)",
            at("first_token_ns"),
            request.first_token_ns,
            request.prefill_dur_ns
        ));
    }
    let mut previous = request.first_token_ns;
    for (i, step) in request.steps.iter().enumerate() {
        let position = prompt_len + 1 + i as u32;
        if step.position != position {
            problems.push(format!(
                "{}: expected position {position}, found {}",
                at(&format!("steps[{i}].position")),
                step.position
            ));
        }
        if step.t_ns <= previous {
            problems.push(format!(
                "{}: time {} ns does not move forward from {previous} ns",
                at(&format!("steps[{i}].t_ns")),
                step.t_ns
            ));
        }
        if step.dur_ns == 0 || step.dur_ns > step.t_ns {
            problems.push(format!(
                "{}: duration {} ns is zero or exceeds its stamp {} ns",
                at(&format!("steps[{i}].dur_ns")),
                step.dur_ns,
                step.t_ns
            ));
        }
        if step.margin.is_some_and(|m| !m.is_finite() || m < 0.0) {
            problems.push(format!(
                "{}: expected a finite, non-negative margin, found {:?}",
                at(&format!("steps[{i}].margin")),
                step.margin
            ));
        }
        previous = step.t_ns;
    }
}
