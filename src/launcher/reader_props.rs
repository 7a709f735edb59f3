//! The launcher's readers never panic, and report validation catches a clock that does not move
//! forward.
//!
//! Property tests (proptest, default 256 cases or `PROPTEST_CASES`) of [`session_job::load`]
//! (then [`session_job::select_cells`]), [`validate::read_report`] and [`validate::validate`]
//! on arbitrary bytes, key-aware arbitrary JSON and structured mutations of valid documents
//! (`tests/integration/mutate.rs`): every input ends in a typed error, a list of
//! problems, or a valid value. The wire types' own readers are tested in
//! `tests/integration/parsers.rs`.

#[path = "../../tests/integration/mutate.rs"]
mod mutate;

use std::path::Path;

use decode_baseline_protocol::{
    job::{token_ids_sha256, EnvironmentPins},
    manifest::{Cell, Manifest, WorkerSources},
    session::{SessionJob, WorkerOrder},
    Adapter, Mode, Phase, RequestRecord, RunPolicy, Sha256Digest, Status, StepRecord, WorkerJob, WorkerReport,
};
use proptest::prelude::*;
use serde_json::Value;

use super::{
    session_job::{self, JobError},
    validate,
};
use mutate::{apply, arbitrary_json, mutations, only_unknown_field, only_wrong_version};

const PID: u32 = 4242;

fn policy() -> RunPolicy {
    RunPolicy { first_requests: 1, warmup_requests: 1, measured_requests: 1, max_new_tokens: 4, ..RunPolicy::frozen() }
}

fn environment() -> EnvironmentPins {
    let d = |t: &str| Sha256Digest::of_bytes(t.as_bytes());
    EnvironmentPins {
        lock_sha256: d("lock"),
        mlx_version: "0.32.2".into(),
        mlx_lm_version: "0.32.2".into(),
        mlx_lm_freeze_sha256: d("freeze"),
        libmlx_sha256: d("libmlx"),
    }
}

fn job() -> WorkerJob {
    let ids = vec![1, 2, 3, 4];
    WorkerJob {
        schema_version: 1,
        run_id: "s/tiny.p4.headline/stock-0".into(),
        adapter: Adapter::Stock,
        mode: Mode::Headline,
        repo_root: "/repo".into(),
        manifest_path: "/repo/workloads.json".into(),
        manifest_sha256: Sha256Digest::of_bytes(b"manifest"),
        case_id: "tiny".into(),
        model_dir: "/repo/model".into(),
        prompt_id: "p4".into(),
        prompt_sha256: token_ids_sha256(&ids),
        prompt_ids: ids,
        continuation: None,
        stop_ids: vec![511],
        run_policy: policy(),
        environment: environment(),
    }
}

/// A report that passes every check for [`job`]: 3 requests of 3 steps at positions 5..=7.
fn report() -> WorkerReport {
    let env = environment();
    let request = |index: u32, phase: Phase| RequestRecord {
        index,
        phase: Some(phase),
        prompt_len: 4,
        prefill_dur_ns: 900,
        first_token_ns: 1_000,
        first_token: 7,
        steps: (0..3)
            .map(|s| StepRecord {
                position: 5 + s,
                argmax: 7,
                t_ns: 1_500 + 500 * u64::from(s),
                dur_ns: 400,
                build_ns: None,
                eval_ns: None,
                margin: None,
                tie: None,
            })
            .collect(),
        unused_forwards: 1,
        model_calls: 6,
        peak_memory_bytes: Some(1),
        finish_reason: "length".into(),
    };
    WorkerReport {
        schema_version: 1,
        run_id: job().run_id,
        adapter: Adapter::Stock,
        mode: Mode::Headline,
        case_id: "tiny".into(),
        prompt_id: "p4".into(),
        status: Status::Ok,
        exit_code: 0,
        error: None,
        pid: PID,
        claimed_utc: "x".into(),
        finished_utc: "x".into(),
        start_to_ready_ns: Some(1),
        load_ns: Some(1),
        identity: Some(decode_baseline_protocol::Identity {
            manifest_sha256: job().manifest_sha256,
            code_version: "abc".into(),
            worker_sources_sha256: Sha256Digest::of_bytes(b"sources"),
            lock_sha256: env.lock_sha256,
            mlx_version: env.mlx_version.clone(),
            mlx_lm_version: env.mlx_lm_version.clone(),
            mlx_lm_freeze_sha256: env.mlx_lm_freeze_sha256,
            libmlx_path: "/x/libmlx.so".into(),
            libmlx_sha256: env.libmlx_sha256,
            device: "cpu".into(),
        }),
        requests: vec![request(0, Phase::First), request(1, Phase::Warmup), request(2, Phase::Measured)],
    }
}

/// A worker folder with the claim of [`PID`].
fn out_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("worker-claim"), format!("{{\"utc\":\"x\",\"pid\":{PID}}}\n")).unwrap();
    dir
}

fn problems(report: &WorkerReport) -> Vec<String> {
    validate::validate(report, &job(), PID, Some(report.exit_code), out_dir().path())
}

#[test]
fn the_reference_report_is_valid() {
    assert_eq!(problems(&report()), Vec::<String>::new());
}

#[test]
fn a_repeated_step_stamp_is_caught_naming_the_step() {
    let mut r = report();
    r.requests[2].steps[1].t_ns = r.requests[2].steps[0].t_ns;
    let found = problems(&r);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("requests[2].steps[1].t_ns: time 1500 ns does not move forward from 1500 ns"), "{found:?}");
}

#[test]
fn a_step_stamp_going_back_is_caught_naming_the_step() {
    let mut r = report();
    r.requests[0].steps[2].t_ns = r.requests[0].steps[1].t_ns - 1;
    let found = problems(&r);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("requests[0].steps[2].t_ns"), "{found:?}");
}

#[test]
fn a_first_step_not_after_the_first_token_is_caught() {
    let mut r = report();
    r.requests[1].steps[0].t_ns = r.requests[1].first_token_ns;
    let found = problems(&r);
    assert!(found.iter().any(|p| p.starts_with("requests[1].steps[0].t_ns")), "{found:?}");
}

#[test]
fn a_first_token_before_the_end_of_prefill_is_caught() {
    let mut r = report();
    r.requests[0].first_token_ns = r.requests[0].prefill_dur_ns - 1;
    let found = problems(&r);
    assert!(found.iter().any(|p| p.starts_with("requests[0].first_token_ns")), "{found:?}");
}

#[test]
fn a_duration_longer_than_its_stamp_or_zero_is_caught() {
    let mut r = report();
    r.requests[0].steps[0].dur_ns = 0;
    r.requests[1].steps[0].dur_ns = r.requests[1].steps[0].t_ns + 1;
    let found = problems(&r);
    assert!(found.iter().any(|p| p.starts_with("requests[0].steps[0].dur_ns")), "{found:?}");
    assert!(found.iter().any(|p| p.starts_with("requests[1].steps[0].dur_ns")), "{found:?}");
}

fn session_job_value() -> Value {
    serde_json::to_value(SessionJob {
        schema_version: 1,
        manifest: Some("workloads.json".into()),
        cells: Some(vec!["tiny.p4.headline".into()]),
        adapters: vec![Adapter::Controlled, Adapter::Stock],
        output_root: "out".into(),
        repetitions: 2,
        order: WorkerOrder::Alternate,
        aa_pair: false,
    })
    .unwrap()
}

fn manifest() -> Manifest {
    Manifest {
        schema_version: 1,
        cases: Default::default(),
        prompts: Default::default(),
        cells: vec![Cell { case: "tiny".into(), prompt: "p4".into(), mode: Mode::Headline }],
        run_policy: policy(),
        worker_sources: WorkerSources { stock: Default::default(), controlled: Default::default() },
        environment: environment(),
    }
}

/// The launcher's session-job reader on `bytes`; an accepted job also selects its cells.
fn load_session_job(dir: &Path, bytes: &[u8]) -> Result<(), JobError> {
    let path = dir.join("job.json");
    std::fs::write(&path, bytes).unwrap();
    let resolved = session_job::load(&path)?;
    let _ = session_job::select_cells(&resolved, &manifest());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::default())]

    #[test]
    fn session_job_reader_on_arbitrary_input(bytes in prop::collection::vec(any::<u8>(), 0..1024), json in arbitrary_json()) {
        let tmp = tempfile::tempdir().unwrap();
        let _ = load_session_job(tmp.path(), &bytes);
        let _ = load_session_job(tmp.path(), &serde_json::to_vec(&json).unwrap());
    }

    #[test]
    fn session_job_reader_on_mutated_jobs(ms in mutations()) {
        let tmp = tempfile::tempdir().unwrap();
        let bytes = apply(&session_job_value(), &ms);
        let loaded = load_session_job(tmp.path(), &bytes);
        if only_unknown_field(&ms) {
            prop_assert!(matches!(loaded, Err(JobError::Parse { .. })), "{loaded:?}");
        }
        if let Some(version) = only_wrong_version(&ms) {
            let expected_version = version.as_u64().is_some_and(|v| u32::try_from(v).is_ok());
            prop_assert!(
                if expected_version { matches!(loaded, Err(JobError::Version { .. })) } else { matches!(loaded, Err(JobError::Parse { .. })) },
                "version {version}: {loaded:?}"
            );
        }
    }

    #[test]
    fn report_reader_on_arbitrary_input(bytes in prop::collection::vec(any::<u8>(), 0..2048), json in arbitrary_json()) {
        let dir = out_dir();
        std::fs::write(dir.path().join("report.json"), &bytes).unwrap();
        let _ = validate::read_report(dir.path());
        std::fs::write(dir.path().join("report.json"), serde_json::to_vec(&json).unwrap()).unwrap();
        if let Ok(report) = validate::read_report(dir.path()) {
            let _ = validate::validate(&report, &job(), PID, Some(0), dir.path());
        }
    }

    #[test]
    fn mutated_reports_are_read_and_validated_without_panic(ms in mutations(), exit in proptest::option::of(any::<i32>())) {
        let dir = out_dir();
        let bytes = apply(&serde_json::to_value(report()).unwrap(), &ms);
        std::fs::write(dir.path().join("report.json"), &bytes).unwrap();
        match validate::read_report(dir.path()) {
            Ok(report) => {
                let _ = validate::validate(&report, &job(), PID, exit, dir.path());
            }
            Err(problem) => prop_assert!(problem.contains("report.json"), "{problem}"),
        }
    }
}
