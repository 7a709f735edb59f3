//! The readers of the wire formats never panic: any input ends in a typed error or a valid
//! value (property tests).
//!
//! Readers, each the project's own and each followed by the checks its caller makes of what it
//! accepted: the worker job (`serde_json` into [`WorkerJob`], as `run_worker` reads `job.json`,
//! then the worker runtime's [`validate_job`]), the report (the launcher's
//! [`launcher_validate::read_report`] on a worker folder, then [`launcher_validate::validate`]),
//! the session job (the launcher's [`session_job::load`], then [`session_job::select_cells`]
//! and [`session_job::check_adapters`]), the manifest ([`pins::load_manifest`] and the pin,
//! [`pins::parse_pin`], then [`validate_job`] of a job that points at it, which checks its case,
//! prompt, cell and sources) and the `{utc, pid}` markers (the launcher reads `worker-claim`'s
//! pid inside [`launcher_validate::validate`]); every wire type also through `serde_json`
//! with a round trip. [`Reached`] says how far an input got, and
//! `the_valid_documents_reach_every_check` shows that a valid document gets past each reader
//! into its checks, so a panic there would be caught. Inputs: arbitrary bytes, arbitrary JSON
//! built from the formats' key names, and structured mutations of valid documents
//! (`mutate.rs`).
//!
//! A value that parses must survive a round trip (serialize, parse, equal). A lone unknown field
//! is always refused (`deny_unknown_fields` everywhere), and a manifest of another schema version
//! is refused with the typed [`PinError::SchemaVersion`].
//!
//! Case count: proptest's default (256 per property) or `PROPTEST_CASES`; the reliability note
//! (`req/reliability.md`) records a large run.

use std::{collections::BTreeMap, path::Path};

use crate::mutate::{self, apply, arbitrary_json, check_refusal, mutations, only_unknown_field, Mutation};
use decode_baseline_launcher::launcher::{session_job, validate as launcher_validate};
use decode_baseline_pins::{self as pins, PinError, PinProblem};
use decode_baseline_wire::{
    job::{token_ids_sha256, EnvironmentPins},
    manifest::{Case, Cell, Manifest, Prompt, WorkerSources, MANIFEST_SCHEMA_VERSION},
    marker::Marker,
    report::Identity,
    session::{SessionJob, WorkerOrder, SESSION_JOB_SCHEMA_VERSION},
    Adapter, Backend, DeviceKind, Mode, Phase, RequestRecord, RunPolicy, Sha256Digest, Status, StepRecord, WorkerJob,
    WorkerReport, REPORT_SCHEMA_VERSION, WORKER_JOB_SCHEMA_VERSION,
};
use decode_baseline_worker_runtime::validate_job;
use proptest::{prelude::*, strategy::ValueTree};
use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;

pub(crate) fn digest(tag: &str) -> Sha256Digest {
    Sha256Digest::of_bytes(tag.as_bytes())
}

pub(crate) fn environment() -> EnvironmentPins {
    EnvironmentPins {
        backend: Some(Backend::Cpu),
        lock_sha256: digest("lock"),
        mlx_version: "0.32.2".into(),
        mlx_lm_version: "0.32.2".into(),
        mlx_lm_freeze_sha256: digest("freeze"),
        libmlx_sha256: digest("libmlx"),
    }
}

fn policy() -> RunPolicy {
    RunPolicy { fixed_continuation_steps: 3, ..RunPolicy::frozen() }
}

/// A valid manifest whose case folder is `<repo>/model` (holding `config.json` = `{}`).
pub(crate) fn manifest() -> Manifest {
    let ids = vec![1, 2, 3, 4];
    let continuation = vec![5, 6, 7];
    Manifest {
        schema_version: MANIFEST_SCHEMA_VERSION,
        cases: [(
            "tiny".to_owned(),
            Case {
                path: "model".into(),
                architecture: "qwen3".into(),
                dtype: "float32".into(),
                files: [("config.json".to_owned(), Sha256Digest::of_bytes(b"{}"))].into(),
                stop_ids: vec![511],
            },
        )]
        .into(),
        prompts: [(
            "p4".to_owned(),
            Prompt {
                case: "tiny".into(),
                sha256: token_ids_sha256(&ids),
                ids,
                continuation_sha256: token_ids_sha256(&continuation),
                continuation,
            },
        )]
        .into(),
        cells: vec![
            Cell { case: "tiny".into(), prompt: "p4".into(), mode: Mode::Headline },
            Cell { case: "tiny".into(), prompt: "p4".into(), mode: Mode::FixedContinuation },
        ],
        run_policy: policy(),
        adapters: BTreeMap::new(),
        worker_sources: WorkerSources::from([
            (Adapter::Stock, [("tools/stock/worker.py".to_owned(), digest("worker"))].into()),
            (Adapter::Controlled, BTreeMap::new()),
        ]),
        environment: environment(),
        environments: BTreeMap::new(),
    }
}

/// A scratch repository holding the manifest (with its pin) and the case folder.
pub(crate) struct Repo {
    dir: tempfile::TempDir,
    manifest_sha256: Sha256Digest,
}

impl Repo {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("model")).unwrap();
        std::fs::write(dir.path().join("model/config.json"), b"{}").unwrap();
        let path = dir.path().join("workloads.json");
        let bytes = serde_json::to_vec_pretty(&manifest()).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        std::fs::write(pins::pin_path(&path), pins::pin_text(&path, &bytes)).unwrap();
        Self { manifest_sha256: Sha256Digest::of_bytes(&bytes), dir }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Replaces the repository's manifest with `bytes` (and a pin that matches them) and loads
    /// it; on success, also a job pointing at it with its digest, for [`validate_job`].
    fn with_manifest(&self, bytes: &[u8]) -> Result<(Manifest, WorkerJob), PinError> {
        let manifest = load_manifest(self.path(), bytes)?;
        let path = self.path().join("workloads.json");
        std::fs::write(pins::pin_path(&path), pins::pin_text(&path, bytes)).unwrap();
        let job = WorkerJob { manifest_sha256: Sha256Digest::of_bytes(bytes), ..self.job() };
        Ok((manifest, job))
    }

    /// A worker folder `worker` holding `report.json` and `worker-claim` with the given bytes.
    fn worker_folder(&self, report: &[u8], claim: &[u8]) -> std::path::PathBuf {
        let dir = self.path().join("worker");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("report.json"), report).unwrap();
        std::fs::write(dir.join("worker-claim"), claim).unwrap();
        dir
    }

    /// A job consistent with the manifest: validation gets as far as the worker sources.
    fn job(&self) -> WorkerJob {
        let m = manifest();
        let prompt = &m.prompts["p4"];
        WorkerJob {
            schema_version: WORKER_JOB_SCHEMA_VERSION,
            run_id: "s/tiny.p4.headline/stock-0".into(),
            adapter: Adapter::Stock,
            mode: Mode::FixedContinuation,
            repo_root: self.path().to_owned(),
            manifest_path: self.path().join("workloads.json"),
            manifest_sha256: self.manifest_sha256,
            case_id: "tiny".into(),
            model_dir: self.path().join("model"),
            prompt_id: "p4".into(),
            prompt_ids: prompt.ids.clone(),
            prompt_sha256: prompt.sha256,
            continuation: Some(prompt.continuation.clone()),
            stop_ids: vec![511],
            run_policy: policy(),
            prefill_step_size: decode_baseline_wire::policy::PREFILL_STEP_SIZE,
            environment: environment(),
            device: DeviceKind::Cpu,
            gate: false,
            group: None,
        }
    }
}

fn report() -> WorkerReport {
    let step = |s: u32| StepRecord {
        position: 4 + s,
        argmax: 7,
        t_ns: 1_000 + 500 * u64::from(s),
        dur_ns: 400,
        build_ns: Some(100),
        eval_ns: Some(300),
        margin: Some(0.25),
        tie: Some(false),
    };
    let request = |index: u32, phase| RequestRecord {
        index,
        phase,
        prompt_len: 4,
        prefill_dur_ns: 900,
        first_token_ns: 1_000,
        first_token: 7,
        steps: (1..=3).map(step).collect(),
        unused_forwards: 0,
        model_calls: 4,
        peak_memory_bytes: Some(1 << 20),
        finish_reason: "length".into(),
    };
    WorkerReport {
        schema_version: REPORT_SCHEMA_VERSION,
        run_id: "s/tiny.p4.headline/stock-0".into(),
        adapter: Adapter::Controlled,
        mode: Mode::FixedContinuation,
        case_id: "tiny".into(),
        prompt_id: "p4".into(),
        status: Status::Ok,
        exit_code: 0,
        error: None,
        pid: 4242,
        claimed_utc: "2026-01-01T00:00:00.000000Z".into(),
        finished_utc: "2026-01-01T00:00:01.000000Z".into(),
        start_to_ready_ns: Some(10),
        load_ns: Some(5),
        identity: Some(Identity {
            manifest_sha256: digest("manifest"),
            code_version: "abc+dirty".into(),
            worker_sources_sha256: digest("sources"),
            lock_sha256: digest("lock"),
            mlx_version: "0.32.2".into(),
            mlx_lm_version: "0.32.2".into(),
            mlx_lm_freeze_sha256: digest("freeze"),
            libmlx_path: "/x/libmlx.so".into(),
            libmlx_sha256: digest("libmlx"),
            device: DeviceKind::Cpu,
            backend: Some(Backend::Cpu),
            device_info: Default::default(),
        }),
        test_slowdown_us: None,
        group: None,
        requests: vec![request(0, Some(Phase::First)), request(1, Some(Phase::Measured))],
    }
}

/// A valid session job selecting one cell of [`manifest`], output under `out`.
pub(crate) fn session_job() -> SessionJob {
    SessionJob {
        schema_version: SESSION_JOB_SCHEMA_VERSION,
        manifest: Some("workloads.json".into()),
        cells: Some(vec!["tiny.p4.headline".into()]),
        adapters: vec![Adapter::Controlled, Adapter::Stock],
        reference: None,
        output_root: "out".into(),
        repetitions: 2,
        order: WorkerOrder::Alternate,
        aa_pair: true,
        group: None,
        prefill_step_size: None,
    }
}

/// Parses `bytes` as `T`; a value that parses must round-trip exactly.
fn parse<T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(bytes: &[u8]) -> Result<T, serde_json::Error> {
    let parsed = serde_json::from_slice::<T>(bytes);
    if let Ok(value) = &parsed {
        let again: T = serde_json::from_slice(&serde_json::to_vec(value).unwrap()).expect("a parsed value re-parses");
        assert_eq!(&again, value, "round trip");
    }
    parsed
}

/// The manifest reader on `bytes`, through a file as in real use; plus the pin parser.
fn load_manifest(dir: &Path, bytes: &[u8]) -> Result<Manifest, PinError> {
    let path = dir.join("workloads.json");
    std::fs::write(&path, bytes).unwrap();
    let loaded = pins::load_manifest(&path).map(|(m, read)| {
        assert_eq!(read, bytes, "the bytes read are the bytes hashed");
        m
    });
    let _ = pins::parse_pin(&String::from_utf8_lossy(bytes), "workloads.json");
    loaded
}

pub(crate) fn value_of<T: Serialize>(t: &T) -> Value {
    serde_json::to_value(t).unwrap()
}

/// The pid of [`report`], and of the claim written beside it.
const PID: u32 = 4242;

/// A claim marker of [`PID`].
fn claim() -> Vec<u8> {
    serde_json::to_vec(&Marker { utc: "2026-01-01T00:00:00.000000Z".into(), pid: PID }).unwrap()
}

/// What the launcher expects of [`report`]'s identity beyond its job's pins.
fn expected_identity() -> launcher_validate::ExpectedIdentity {
    launcher_validate::ExpectedIdentity {
        adapter: Adapter::Controlled,
        worker_sources_sha256: digest("sources"),
        code_version: "abc+dirty".into(),
    }
}

/// How far one input got: for each reader, whether it accepted the input and its caller's
/// checks then ran on what it read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Reached {
    /// A [`WorkerJob`], then [`validate_job`] on it.
    worker_job: bool,
    /// The launcher's report reader, then its validation against a job.
    report: bool,
    /// The launcher's session-job reader, then the cell and adapter checks against the manifest.
    session_job: bool,
    /// [`pins::load_manifest`], then [`validate_job`] of a job pointing at it.
    manifest: bool,
    /// The bytes as `worker-claim` beside a valid report: the launcher read the claim's pid.
    claim: bool,
}

/// Every reader on `bytes`, each followed by the checks its caller makes, in a scratch
/// repository of its own; says how far the input got. The properties only ask that everything
/// returns.
fn read_with_every_reader(bytes: &[u8]) -> Reached {
    let repo = Repo::new();
    let mut reached = Reached::default();

    // The wire types' own parsers, with the round trip; the worker job as `run_worker` reads it.
    if let Ok(job) = parse::<WorkerJob>(bytes) {
        let _ = validate_job(&job, repo.path());
        reached.worker_job = true;
    }
    let _ = parse::<WorkerReport>(bytes);
    let _ = parse::<SessionJob>(bytes);
    let _ = parse::<Marker>(bytes);

    // The report and the claim marker, from a worker folder as the launcher reads them.
    let dir = repo.worker_folder(bytes, &claim());
    if let Ok(report) = launcher_validate::read_report(&dir) {
        let _ = launcher_validate::validate(&report, &repo.job(), &expected_identity(), PID, Some(0), &dir);
        reached.report = true;
    }
    let dir = repo.worker_folder(&serde_json::to_vec(&report()).unwrap(), bytes);
    let problems = launcher_validate::validate(&report(), &repo.job(), &expected_identity(), PID, Some(0), &dir);
    reached.claim = !problems.iter().any(|p| p.starts_with("worker-claim"));

    // The session job through the launcher's reader, then its cells and adapters.
    let path = repo.path().join("session-job.json");
    std::fs::write(&path, bytes).unwrap();
    if let Ok(resolved) = session_job::load(&path) {
        let _ = session_job::select_cells(&resolved, &manifest());
        let _ = session_job::check_adapters(&resolved, &manifest());
        reached.session_job = true;
    }

    // The manifest, last: it replaces the scratch repository's own.
    if let Ok((manifest, job)) = repo.with_manifest(bytes) {
        let _ = manifest.worker_sources_sha256(&Adapter::Stock);
        let _ = validate_job(&job, repo.path());
        reached.manifest = true;
    }
    reached
}

/// `doc` changed by `ms`, then [`parse`]d back: a lone unknown field must be refused.
fn parse_mutated<T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(
    doc: &T,
    ms: &[Mutation],
) -> Result<Result<T, serde_json::Error>, TestCaseError> {
    let bytes = apply(&value_of(doc), ms);
    let parsed = parse::<T>(&bytes);
    if only_unknown_field(ms) {
        prop_assert!(parsed.is_err(), "an unknown field was accepted: {}", String::from_utf8_lossy(&bytes));
    }
    Ok(parsed)
}

#[test]
fn the_valid_documents_parse() {
    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(parse::<WorkerReport>(&serde_json::to_vec(&report()).unwrap()).unwrap(), report());
    assert_eq!(parse::<SessionJob>(&serde_json::to_vec(&session_job()).unwrap()).unwrap(), session_job());
    assert_eq!(load_manifest(tmp.path(), &serde_json::to_vec(&manifest()).unwrap()).unwrap(), manifest());
    let repo = Repo::new();
    let job = repo.job();
    assert_eq!(parse::<WorkerJob>(&serde_json::to_vec(&job).unwrap()).unwrap(), job);
    // The scratch repository has no worker sources: validation gets that far and stops there.
    let refusal = validate_job(&job, repo.path()).unwrap_err();
    assert!(refusal.field.starts_with("worker_sources.stock"), "{refusal}");
}

/// The harness of the properties below: each valid document gets past its reader into the
/// checks after it, and beside a valid claim the launcher finds no claim problem with the valid
/// report (so `Reached::claim` speaks of the claim's bytes alone). A report is also a claim to
/// the launcher, which reads only the `pid` of a marker, so that flag is left out for the
/// documents.
#[test]
fn the_valid_documents_reach_every_check() {
    let repo = Repo::new();
    let dir = repo.worker_folder(&serde_json::to_vec(&report()).unwrap(), &claim());
    let problems = launcher_validate::validate(&report(), &repo.job(), &expected_identity(), PID, Some(0), &dir);
    assert!(problems.iter().all(|p| !p.starts_with("worker-claim")), "{problems:?}");

    let only = |reached: Reached| Reached { claim: false, ..reached };
    let bytes = |value: Value| serde_json::to_vec(&value).unwrap();
    assert_eq!(
        only(read_with_every_reader(&bytes(value_of(&repo.job())))),
        Reached { worker_job: true, ..Reached::default() }
    );
    assert_eq!(
        only(read_with_every_reader(&bytes(value_of(&report())))),
        Reached { report: true, ..Reached::default() }
    );
    assert_eq!(
        only(read_with_every_reader(&bytes(value_of(&session_job())))),
        Reached { session_job: true, ..Reached::default() }
    );
    assert_eq!(
        only(read_with_every_reader(&bytes(value_of(&manifest())))),
        Reached { manifest: true, ..Reached::default() }
    );
    assert_eq!(read_with_every_reader(&claim()), Reached { claim: true, ..Reached::default() });
    // Bytes no reader takes: the claim is unreadable, and that is a problem the launcher names.
    assert_eq!(read_with_every_reader(b"\xff not json"), Reached::default());
}

proptest! {
    // proptest's default case count (256) unless PROPTEST_CASES says otherwise.
    #![proptest_config(ProptestConfig::default())]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let _ = read_with_every_reader(&bytes);
    }

    #[test]
    fn arbitrary_json_never_panics(value in arbitrary_json()) {
        let _ = read_with_every_reader(&serde_json::to_vec(&value).unwrap());
    }

    #[test]
    fn mutated_reports_parse_or_fail_typed(ms in mutations()) {
        let _ = parse_mutated(&report(), &ms)?;
    }

    #[test]
    fn mutated_session_jobs_parse_or_fail_typed(ms in mutations()) {
        let _ = parse_mutated(&session_job(), &ms)?;
    }

    #[test]
    fn mutated_manifests_load_or_fail_typed(ms in mutations()) {
        let tmp = tempfile::tempdir().unwrap();
        let loaded = load_manifest(tmp.path(), &apply(&value_of(&manifest()), &ms));
        check_refusal(
            &ms,
            &loaded,
            |e| if let PinError { problem: PinProblem::SchemaVersion { actual, .. }, .. } = e { Some(*actual) } else { None },
            |e| matches!(e, PinError { problem: PinProblem::ManifestParse { .. }, .. }),
        )?;
    }

    #[test]
    fn mutated_worker_jobs_parse_and_validate_or_fail_typed(ms in mutations()) {
        let repo = Repo::new();
        if let Ok(job) = parse_mutated(&repo.job(), &ms)? {
            // Validation of whatever parsed: a refusal naming a field, never a panic.
            if let Err(refusal) = validate_job(&job, repo.path()) {
                prop_assert!(!refusal.field.is_empty());
            }
        }
    }
}

/// A mutation sanity check: the engine really produces each kind of change.
#[test]
fn mutations_change_the_document() {
    use proptest::sample::Index;
    let doc = value_of(&session_job());
    let index = |n: usize| -> Index {
        // Index is opaque; draw one through a runner with a fixed seed until it selects `n` of 8.
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        loop {
            let i = any::<Index>().new_tree(&mut runner).unwrap().current();
            if i.index(8) == n {
                return i;
            }
        }
    };
    let original = serde_json::to_vec(&doc).unwrap();
    for m in [
        Mutation::Drop(index(0)),
        Mutation::Replace(index(1), Value::Null),
        Mutation::AddUnknown(index(0)),
        Mutation::Version(Value::from(2)),
        Mutation::RawNumber(index(2), "1e400"),
    ] {
        let bytes = apply(&doc, std::slice::from_ref(&m));
        assert_ne!(bytes, original, "{m:?} changed nothing");
    }
    let unknown = apply(&doc, &[Mutation::AddUnknown(index(0))]);
    assert!(String::from_utf8(unknown).unwrap().contains(mutate::UNKNOWN_KEY));
    let raw = apply(&doc, &[Mutation::RawNumber(index(2), "1e400")]);
    assert!(String::from_utf8(raw).unwrap().contains("1e400"));
}
