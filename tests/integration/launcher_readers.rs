//! The launcher's readers never panic, a session job the binary refuses leaves nothing on disk,
//! and report validation catches a clock that does not move forward.
//!
//! Readers, reached through the library: [`session_job::load`] (then
//! [`session_job::select_cells`] and [`session_job::check_adapters`]), [`validate::read_report`]
//! (then [`validate::validate`] of what it read). Inputs:
//! arbitrary bytes, key-aware arbitrary JSON and structured mutations of valid documents
//! (`mutate.rs`): every input ends in a typed error, a list of problems, or a valid value. The
//! wire types' own readers, and the documents reused here, are in `parsers.rs`.
//!
//! Case count: proptest's default (256 per property) or `PROPTEST_CASES`, except
//! `mutated_session_jobs_through_the_binary_exit_2_and_create_nothing`, which starts the binary
//! once per case (64, see there).

use std::{
    path::{Component, Path},
    process::{Command, Output},
};

use decode_baseline_launcher::launcher::{
    session_job::{self, JobError},
    validate,
};
use decode_baseline_wire::{
    job::token_ids_sha256, report::Identity, session::SessionJob, Adapter, Backend, DeviceKind, Mode, Phase,
    RequestRecord, RunPolicy, Status, StepRecord, WorkerJob, WorkerReport,
};
use proptest::prelude::*;

use crate::{
    mutate::{apply, arbitrary_json, check_refusal, mutations, only_unknown_field, only_wrong_version, UNKNOWN_KEY},
    parsers::{digest, environment, manifest, session_job, value_of, Repo},
    util::{binary, run, snapshot_tree, stderr, stdout},
};

const PID: u32 = 4242;

/// Three requests (first, warmup, measured) of three steps each.
fn policy() -> RunPolicy {
    RunPolicy { first_requests: 1, warmup_requests: 1, measured_requests: 1, max_new_tokens: 4, ..RunPolicy::frozen() }
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
        manifest_sha256: digest("manifest"),
        case_id: "tiny".into(),
        model_dir: "/repo/model".into(),
        prompt_id: "p4".into(),
        prompt_sha256: token_ids_sha256(&ids),
        prompt_ids: ids,
        continuation: None,
        stop_ids: vec![511],
        run_policy: policy(),
        prefill_step_size: decode_baseline_wire::policy::PREFILL_STEP_SIZE,
        environment: environment(),
        device: DeviceKind::Cpu,
        gate: false,
        group: None,
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
        identity: Some(Identity {
            manifest_sha256: job().manifest_sha256,
            code_version: "abc".into(),
            worker_sources_sha256: digest("sources"),
            lock_sha256: env.lock_sha256,
            mlx_version: env.mlx_version.clone(),
            mlx_lm_version: env.mlx_lm_version.clone(),
            mlx_lm_freeze_sha256: env.mlx_lm_freeze_sha256,
            libmlx_path: "/x/libmlx.so".into(),
            libmlx_sha256: env.libmlx_sha256,
            device: DeviceKind::Cpu,
            backend: Some(Backend::Cpu),
            device_info: Default::default(),
        }),
        test_slowdown_us: None,
        group: None,
        requests: vec![request(0, Phase::First), request(1, Phase::Warmup), request(2, Phase::Measured)],
    }
}

/// A worker folder with the claim of [`PID`].
fn out_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("worker-claim"), format!("{{\"utc\":\"x\",\"pid\":{PID}}}\n")).unwrap();
    dir
}

/// What the launcher expects of the identity beyond the job's pins: the manifest's source digest
/// for stock and the session's code version, both as [`report`] has them.
fn expected() -> validate::ExpectedIdentity {
    validate::ExpectedIdentity {
        adapter: Adapter::Stock,
        worker_sources_sha256: digest("sources"),
        code_version: "abc".into(),
    }
}

fn problems(report: &WorkerReport) -> Vec<String> {
    validate::validate(report, &job(), &expected(), PID, Some(report.exit_code), out_dir().path())
}

fn assert_problem_at(found: &[String], field: &str) {
    assert!(found.iter().any(|p| p.starts_with(field)), "no problem at {field}: {found:?}");
}

/// The one problem validation finds in `report`.
fn the_only_problem(report: &WorkerReport) -> String {
    let found = problems(report);
    assert_eq!(found.len(), 1, "{found:?}");
    found.into_iter().next().unwrap()
}

#[test]
fn the_reference_report_is_valid() {
    assert_eq!(problems(&report()), Vec::<String>::new());
    // The properties' harness reaches validation with it.
    assert_eq!(read_and_validate_report(&serde_json::to_vec(&report()).unwrap(), Some(0)), Ok(Vec::new()));
}

/// The launcher checks every identity field against its pin itself: a worker that skipped its
/// own checks is caught here, naming the field, the pin and what it reported.
#[test]
fn an_identity_other_than_the_pins_is_caught_naming_the_field() {
    let forged = digest("other sources");
    type Edit = Box<dyn Fn(&mut Identity)>;
    let cases: Vec<(&str, Edit, String)> = vec![
        (
            "worker_sources_sha256",
            Box::new(move |i| i.worker_sources_sha256 = forged),
            format!(
                "identity.worker_sources_sha256: expected {} (the manifest's worker_sources.stock), found {forged}",
                digest("sources")
            ),
        ),
        (
            "code_version",
            Box::new(|i| i.code_version = "abc+dirty".into()),
            "identity.code_version: expected abc (the repository the session runs from), found abc+dirty".into(),
        ),
        (
            "lock_sha256",
            Box::new(move |i| i.lock_sha256 = forged),
            format!("identity.lock_sha256: expected {}, found {forged}", environment().lock_sha256),
        ),
        (
            "libmlx_sha256",
            Box::new(move |i| i.libmlx_sha256 = forged),
            format!("identity.libmlx_sha256: expected {}, found {forged}", environment().libmlx_sha256),
        ),
        (
            "mlx_version",
            Box::new(|i| i.mlx_version = "0.0.1".into()),
            format!("identity.mlx_version: expected {}, found 0.0.1", environment().mlx_version),
        ),
    ];
    for (field, edit, expected) in cases {
        let mut r = report();
        edit(r.identity.as_mut().unwrap());
        assert_eq!(the_only_problem(&r), expected, "{field}");
    }
}

#[test]
fn a_repeated_step_stamp_is_caught_naming_the_step() {
    let mut r = report();
    r.requests[2].steps[1].t_ns = r.requests[2].steps[0].t_ns;
    let problem = the_only_problem(&r);
    assert!(
        problem.starts_with("requests[2].steps[1].t_ns: time 1500 ns does not move forward from 1500 ns"),
        "{problem}"
    );
}

#[test]
fn a_step_stamp_going_back_is_caught_naming_the_step() {
    let mut r = report();
    r.requests[0].steps[2].t_ns = r.requests[0].steps[1].t_ns - 1;
    let problem = the_only_problem(&r);
    assert!(problem.starts_with("requests[0].steps[2].t_ns"), "{problem}");
}

#[test]
fn a_first_step_not_after_the_first_token_is_caught() {
    let mut r = report();
    r.requests[1].steps[0].t_ns = r.requests[1].first_token_ns;
    assert_problem_at(&problems(&r), "requests[1].steps[0].t_ns");
}

#[test]
fn a_first_token_before_the_end_of_prefill_is_caught() {
    let mut r = report();
    r.requests[0].first_token_ns = r.requests[0].prefill_dur_ns - 1;
    assert_problem_at(&problems(&r), "requests[0].first_token_ns");
}

#[test]
fn a_duration_longer_than_its_stamp_or_zero_is_caught() {
    let mut r = report();
    r.requests[0].steps[0].dur_ns = 0;
    r.requests[1].steps[0].dur_ns = r.requests[1].steps[0].t_ns + 1;
    let found = problems(&r);
    assert_problem_at(&found, "requests[0].steps[0].dur_ns");
    assert_problem_at(&found, "requests[1].steps[0].dur_ns");
}

/// The launcher's session-job reader on `bytes`; an accepted job also selects its cells and
/// has its adapters checked against the manifest, as `run` does next.
fn load_session_job(dir: &Path, bytes: &[u8]) -> Result<(), JobError> {
    let path = dir.join("job.json");
    std::fs::write(&path, bytes).unwrap();
    let resolved = session_job::load(&path)?;
    let _ = session_job::select_cells(&resolved, &manifest());
    let _ = session_job::check_adapters(&resolved, &manifest());
    Ok(())
}

/// The launcher's report reader on `bytes` in a worker folder; an accepted report is also
/// validated against [`job`], as the launcher does next.
fn read_and_validate_report(bytes: &[u8], exit: Option<i32>) -> Result<Vec<String>, String> {
    let dir = out_dir();
    std::fs::write(dir.path().join("report.json"), bytes).unwrap();
    let report = validate::read_report(dir.path())?;
    Ok(validate::validate(&report, &job(), &expected(), PID, exit, dir.path()))
}

/// `decode-baseline run --dry-run` on `bytes` as the job `repo/job.json`, with a private lease
/// file; also the repository's files before the run (the job included).
fn dry_run(repo: &Repo, bytes: &[u8]) -> (Output, Vec<(std::path::PathBuf, Vec<u8>)>) {
    let path = repo.path().join("job.json");
    std::fs::write(&path, bytes).unwrap();
    let before = snapshot_tree(repo.path());
    let out = run(Command::new(binary())
        .args(["run", "--dry-run", "--job"])
        .arg(&path)
        .env("DECODE_BASELINE_LEASE", repo.path().join("lease")));
    (out, before)
}

/// Whether a job may be given to the binary: a dry run writes every worker's folder, so a job the
/// launcher accepts must keep its output in the scratch folder (as root, `"/"` would be written
/// to) and ask for few runs (up to 1000 repetitions are accepted). The properties on the library
/// reader above take every job.
fn safe_to_dry_run(bytes: &[u8]) -> bool {
    match serde_json::from_slice::<SessionJob>(bytes) {
        Err(_) => true,
        Ok(job) => job.repetitions <= 8 && job.output_root.components().all(|c| matches!(c, Component::Normal(_))),
    }
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
        let loaded = load_session_job(tmp.path(), &apply(&value_of(&session_job()), &ms));
        check_refusal(
            &ms,
            &loaded,
            |e| if let JobError::Version { found, .. } = e { Some(*found) } else { None },
            |e| matches!(e, JobError::Parse { .. }),
        )?;
    }

    #[test]
    fn report_reader_on_arbitrary_input(bytes in prop::collection::vec(any::<u8>(), 0..2048), json in arbitrary_json()) {
        let _ = read_and_validate_report(&bytes, Some(0));
        let _ = read_and_validate_report(&serde_json::to_vec(&json).unwrap(), Some(0));
    }

    #[test]
    fn mutated_reports_are_read_and_validated_without_panic(ms in mutations(), exit in proptest::option::of(any::<i32>())) {
        if let Err(problem) = read_and_validate_report(&apply(&value_of(&report()), &ms), exit) {
            prop_assert!(problem.contains("report.json"), "{problem}");
        }
    }
}

/// The harness itself: the valid job dry-runs, so the property below sees accepted jobs too.
#[test]
fn the_reference_session_job_dry_runs() {
    let repo = Repo::new();
    // The library reader above accepts it too, so its properties reach the cell and adapter checks.
    load_session_job(repo.path(), &serde_json::to_vec(&session_job()).unwrap()).unwrap();
    let (out, _) = dry_run(&repo, &serde_json::to_vec(&session_job()).unwrap());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let jobs =
        snapshot_tree(repo.path()).into_iter().filter(|(p, _)| p.starts_with("out") && p.ends_with("job.json")).count();
    assert_eq!(jobs, 6, "2 repetitions of 2 adapters and the A/A pair");
}

proptest! {
    // A process per case (about 8 ms each on this 2-core machine), so 64 cases, fixed:
    // PROPTEST_CASES does not scale it. The library reader gets the same mutations at the full
    // count above; this checks the binary's edge: a refusal is exit 2 (6 for the manifest's pin),
    // never a panic, and leaves the folder as it was.
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn mutated_session_jobs_through_the_binary_exit_2_and_create_nothing(ms in mutations()) {
        let repo = Repo::new();
        let bytes = apply(&value_of(&session_job()), &ms);
        prop_assume!(safe_to_dry_run(&bytes));
        let (out, before) = dry_run(&repo, &bytes);
        let (code, err) = (out.status.code(), stderr(&out));
        match code {
            Some(0) => {
                let folder = stdout(&out).lines().find_map(|l| l.strip_prefix("session folder: ").map(str::to_owned));
                prop_assert!(folder.as_deref().is_some_and(|f| Path::new(f).starts_with(repo.path()) && Path::new(f).is_dir()), "{}", stdout(&out));
            }
            // A bad job or manifest (2), a manifest that does not match its pin (6).
            Some(2 | 6) => {
                prop_assert!(err.starts_with("decode-baseline:"), "{err}");
                prop_assert!(snapshot_tree(repo.path()) == before, "exit {code:?} left files behind: {err}");
            }
            _ => prop_assert!(false, "exit {code:?}: {err}"),
        }
        if only_unknown_field(&ms) {
            prop_assert!(code == Some(2) && err.contains(UNKNOWN_KEY), "exit {code:?}: {err}");
        }
        if let Some(Ok(version)) = only_wrong_version(&ms) {
            prop_assert!(code == Some(2) && err.contains(&format!("schema_version must be 1, found {version}")), "exit {code:?}: {err}");
        }
    }
}
