//! `session.json` as a real session writes it, held against two statements of its format that do
//! not come from the launcher's code path: the committed JSON Schema (`schemas/session.schema.json`),
//! and an independent declaration of its types written here, field by field (as ripgrep's
//! `tests/json.rs` declares its own message types), so that an added, removed or renamed field
//! fails a test instead of slipping through.
//!
//! One real session runs once for the module: both workers on the tiny fixture, every mode,
//! interleaved, with an A/A group, so that every part of the analysis is filled in.

use std::sync::OnceLock;

use serde_json::{json, Value};

use crate::util;

/// The session every test here reads: `session.json`'s text.
fn real_session() -> &'static Value {
    static SESSION: OnceLock<Value> = OnceLock::new();
    SESSION.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let policy = decode_baseline_wire::RunPolicy {
            first_requests: 1,
            warmup_requests: 1,
            measured_requests: 4,
            max_new_tokens: 16,
            ..decode_baseline_wire::RunPolicy::frozen()
        };
        let fixture = util::fixture_manifest(tmp.path(), &policy, |_| {});
        let cells: Vec<String> = fixture.manifest.cells.iter().map(|c| c.name()).collect();
        let job = json!({
            "schema_version": 1, "manifest": "workloads.json", "cells": cells,
            "adapters": ["controlled", "stock"], "output_root": "out", "repetitions": 1,
            "order": "interleaved", "aa_pair": true
        });
        std::fs::write(tmp.path().join("job.json"), job.to_string()).unwrap();
        let status = util::launcher_in(tmp.path()).status().unwrap();
        let stderr = std::fs::read_to_string(tmp.path().join("launcher.stderr")).unwrap_or_default();
        assert_eq!(status.code(), Some(0), "{stderr}");
        let session = util::only_session(&tmp.path().join("out"));
        serde_json::from_slice(&std::fs::read(session.join("session.json")).unwrap()).unwrap()
    })
}

fn committed_schema() -> jsonschema::Validator {
    let path = util::repo_root().join("schemas/session.schema.json");
    let schema: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn schema_errors(validator: &jsonschema::Validator, value: &Value) -> Vec<String> {
    validator.iter_errors(value).map(|e| format!("{}: {e}", e.instance_path())).collect()
}

#[test]
fn a_real_session_json_validates_against_the_committed_schema() {
    let session = real_session();
    // The session filled in what the schema has to cover: typed host and lease, every part of
    // the analysis, an A/A run, worker reports with step records.
    assert_eq!(session["schema_version"], 8);
    assert!(session["host"]["hostname"].is_string() && session["lease"]["waited_ns"].is_u64(), "{}", session["host"]);
    let cells = session["analysis"]["cells"].as_array().unwrap();
    assert!(cells.iter().any(|c| !c["paired"].as_object().unwrap().is_empty()), "a paired ratio");
    assert!(cells.iter().any(|c| !c["paired_aa"].as_object().unwrap().is_empty()), "an A/A paired ratio");
    assert!(
        cells.iter().any(|c| c["argmax"]["controlled"].is_object())
            && cells.iter().any(|c| c["stream"]["controlled"].is_object())
    );
    assert!(session["workers"].as_array().unwrap().iter().any(|w| w["aa"] == true), "an A/A run");
    let errors = schema_errors(&committed_schema(), session);
    assert!(errors.is_empty(), "{errors:#?}");
}

/// Every non-empty object of `value` by JSON pointer, one per place in the format (array
/// elements of one array are one place: the first with keys stands for the others).
fn objects(value: &Value, pointer: String, place: String, seen: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            if seen.iter().all(|(p, _)| *p != place) {
                seen.push((place.clone(), pointer.clone()));
            }
            for (key, child) in map {
                objects(child, format!("{pointer}/{key}"), format!("{place}/{key}"), seen);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                objects(item, format!("{pointer}/{index}"), format!("{place}/*"), seen);
            }
        }
        _ => {}
    }
}

/// Objects whose keys are data, not fields: maps by case, file, adapter or device fact. A new key
/// there is a new entry, not an unknown field, and both the schema and the types take it.
fn is_map(place: &str) -> bool {
    ["/model_files", "/device/info", "/workers/*/report/identity/device_info"].contains(&place)
        || place.starts_with("/model_files/") && place.matches('/').count() == 2
        || is_adapter_map(place)
}

/// The analysis' maps by adapter: their keys must name an adapter.
fn is_adapter_map(place: &str) -> bool {
    ["adapters", "ratios", "aa_ratios", "paired", "paired_aa", "argmax", "stream"]
        .iter()
        .any(|m| *place == format!("/analysis/cells/*/{m}"))
}

#[test]
fn the_schema_and_the_types_refuse_an_unknown_field_at_any_depth() {
    let session = real_session();
    let validator = committed_schema();
    let mut places = Vec::new();
    objects(session, String::new(), String::new(), &mut places);
    let (mut fields, mut maps) = (0, 0);
    for (place, pointer) in &places {
        // The new key carries a copy of a sibling's value, so that only its name is wrong.
        let mut mutated = session.clone();
        let object = mutated.pointer_mut(pointer).unwrap().as_object_mut().unwrap();
        let sibling = object.values().next().cloned().unwrap();
        // Not an adapter name either (those are lower-case), so that an adapter map refuses it.
        object.insert("Surprise".to_owned(), sibling);
        let refused_by_schema = !validator.is_valid(&mutated);
        let refused_by_types = serde_json::from_value::<decode_baseline_wire::session::SessionReport>(mutated).is_err();
        if is_map(place) {
            maps += 1;
            // An adapter map's key must still name an adapter; the other maps are open.
            assert_eq!(refused_by_types, is_adapter_map(place), "{pointer}: a new key in a map");
            assert_eq!(refused_by_schema, is_adapter_map(place), "{pointer}: a new key in a map, by the schema");
        } else {
            fields += 1;
            assert!(refused_by_schema, "the schema takes an unknown field at {pointer}");
            assert!(refused_by_types, "the types take an unknown field at {pointer}");
        }
    }
    // The top level, job, host, lease, device, worker, report, identity, request, step, host
    // activity, analysis, cell, adapter stats, summaries, intervals, outliers, drift, agreement…
    let tried: Vec<&String> = places.iter().map(|(place, _)| place).collect();
    assert!(fields >= 25, "only {fields} objects with fields were tried: {tried:#?}");
    assert!(maps >= 6, "only {maps} maps were tried: {tried:#?}");
}

#[test]
fn the_schema_refuses_a_wrong_version_of_the_typed_fields() {
    let validator = committed_schema();
    let mut legacy = real_session().clone();
    legacy["workers"][0]["intervention"] = json!("past_deadline: SIGTERM");
    let errors = schema_errors(&validator, &legacy);
    assert!(errors.iter().any(|e| e.starts_with("/workers/0/intervention")), "{errors:#?}");
    let mut no_aa = real_session().clone();
    no_aa["workers"][0].as_object_mut().unwrap().remove("aa");
    assert!(!validator.is_valid(&no_aa), "workers[].aa is required");
}

/// `session.json`'s types declared again, independently of `decode_baseline_wire`: every
/// field by name, every object closed. When the launcher's types change, this stops parsing
/// until it is updated on purpose (and `req/session.md` with it). The fields are there to be
/// parsed, not read.
#[allow(dead_code)]
mod declared {
    use std::collections::BTreeMap;

    use serde::Deserialize;
    use serde_json::Value;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Session {
        pub schema_version: u32,
        pub session_id: String,
        pub status: String,
        pub job: Job,
        pub manifest_path: String,
        pub manifest_sha256: String,
        pub model_files: Option<BTreeMap<String, BTreeMap<String, String>>>,
        pub host: Option<Host>,
        pub device: Option<Device>,
        pub lease: Option<Lease>,
        pub started_utc: String,
        pub finished_utc: String,
        pub wall_ns: u64,
        pub launcher_overhead_ns: u64,
        pub quiet_wait_ns: Option<u64>,
        pub reference: String,
        pub workers: Vec<Worker>,
        pub analysis: Option<Analysis>,
        pub problems: Vec<String>,
        pub unpinned: bool,
        pub replaced_programs: BTreeMap<String, Vec<String>>,
        pub energy: Option<Energy>,
        pub placement: Option<Placement>,
        pub sequential: Option<Sequential>,
        pub decisions: Option<Decisions>,
    }

    /// The rows as tested once when the session finished; each row's outcome is
    /// `compare --format json`'s (declared in `compare.rs`' tests), read here as a value.
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Decisions {
        pub settings: Value,
        pub noise_profile: Option<String>,
        pub rows: Vec<DecidedRow>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct DecidedRow {
        pub cell: String,
        pub mode: String,
        pub quantity: String,
        pub adapter: Option<String>,
        pub basis: String,
        pub against: Option<String>,
        pub judged: bool,
        pub numerator: Value,
        pub denominator: Value,
        pub outcome: Value,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Sequential {
        pub budget: String,
        pub alpha: f64,
        pub rows: u32,
        pub cells: Vec<SequentialCell>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct SequentialCell {
        pub cell: String,
        pub looks_planned: u32,
        pub looks_done: u32,
        pub pairs: u32,
        pub nominal_level: Option<f64>,
        pub profile_sd: Option<f64>,
        pub end: String,
        pub rows: Vec<SequentialRow>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct SequentialRow {
        pub adapter: String,
        pub verdict: String,
        pub ratio: Option<f64>,
        pub p_value: Option<f64>,
        pub equivalence_p_value: Option<f64>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Placement {
        pub requested: String,
        pub effective: Option<String>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Energy {
        pub fake: Option<String>,
        pub sources: Vec<EnergySource>,
        pub idle: Vec<IdleReading>,
        /// The analysis, checked by the committed schema rather than re-declared here.
        pub cells: Vec<serde_json::Value>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct EnergySource {
        pub source: String,
        pub missing: Option<String>,
        pub domains: Vec<String>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct IdleReading {
        pub cell: String,
        pub repetition: u32,
        pub aa: bool,
        pub wall_ns: u64,
        pub domains: Vec<DomainEnergy>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct DomainEnergy {
        pub domain: String,
        pub energy_uj: Option<u64>,
        pub dropped: Option<String>,
        pub clocks_start: Option<Clocks>,
        pub clocks_end: Option<Clocks>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Clocks {
        pub sm_mhz: u32,
        pub mem_mhz: u32,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct RequestEnergy {
        pub index: u32,
        pub wall_ns: u64,
        pub samples: u32,
        pub domains: Vec<DomainEnergy>,
        pub reasons: Option<u64>,
        pub thermal: Option<String>,
        pub throttled: bool,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Job {
        pub schema_version: u32,
        pub manifest: Option<String>,
        pub cells: Option<Vec<String>>,
        pub adapters: Vec<String>,
        #[serde(default)]
        pub reference: Option<String>,
        pub output_root: String,
        pub repetitions: u32,
        pub order: String,
        pub aa_pair: bool,
        pub group: Option<Group>,
        /// Absent in sessions written before it existed.
        #[serde(default)]
        pub prefill_step_size: Option<u32>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Group {
        pub ranks: u32,
        pub backend: String,
        pub hosts: Option<Vec<String>>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Host {
        pub hostname: String,
        pub os: String,
        pub arch: String,
        pub cpus: u32,
        pub cpu_model: Option<String>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Device {
        pub backend: String,
        pub device: String,
        pub name: String,
        pub info: BTreeMap<String, String>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Lease {
        pub path: Option<String>,
        pub waited_ns: Option<u64>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Worker {
        pub run_id: String,
        pub cell: String,
        pub adapter: String,
        pub repetition: u32,
        pub aa: bool,
        pub sequence: u32,
        pub command: Vec<String>,
        pub pid: Option<u32>,
        pub exit_code: Option<i32>,
        pub signal: Option<i32>,
        pub intervention: Option<Intervention>,
        pub wall_ns: u64,
        pub validation_errors: Vec<String>,
        pub host_activity: Option<HostActivity>,
        pub energy: Option<Vec<RequestEnergy>>,
        pub report: Option<Report>,
        pub ranks: Vec<RankRun>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct RankRun {
        pub rank: u32,
        pub run_id: String,
        pub command: Vec<String>,
        pub pid: Option<u32>,
        pub exit_code: Option<i32>,
        pub signal: Option<i32>,
        pub intervention: Option<Intervention>,
        pub wall_ns: u64,
        pub status: Option<String>,
        pub error: Option<String>,
        pub validation_errors: Vec<String>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Intervention {
        pub reason: String,
        pub signal: Option<String>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct HostActivity {
        pub wall_ns: u64,
        pub cpus: Option<u32>,
        pub busy_share: Option<f64>,
        pub busy_cpu_ns: Option<u64>,
        pub measured_cpu_ns: Option<u64>,
        pub others_cpu_ns: Option<u64>,
        pub others_cpus: Option<f64>,
        pub load1_start: Option<f64>,
        pub load1_end: Option<f64>,
        pub freq_khz_start: Option<Range>,
        pub freq_khz_end: Option<Range>,
        pub governors: Option<Vec<String>>,
        pub cpu_speed_limit_pct: Option<u32>,
        pub thermal_warnings: Option<Vec<String>>,
        pub power_source: Option<String>,
        pub low_power_mode: Option<bool>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Range {
        pub min: u64,
        pub max: u64,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Report {
        pub schema_version: u32,
        pub run_id: String,
        pub adapter: String,
        pub mode: String,
        pub case_id: String,
        pub prompt_id: String,
        pub status: String,
        pub exit_code: i32,
        pub error: Option<String>,
        pub pid: u32,
        pub claimed_utc: String,
        pub finished_utc: String,
        pub start_to_ready_ns: Option<u64>,
        pub load_ns: Option<u64>,
        pub identity: Option<Identity>,
        pub test_slowdown_us: Option<u32>,
        pub group: Option<RankIdentity>,
        pub requests: Vec<Request>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct RankIdentity {
        pub rank: u32,
        pub ranks: u32,
        pub backend: String,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Identity {
        pub manifest_sha256: String,
        pub code_version: String,
        pub worker_sources_sha256: String,
        pub lock_sha256: String,
        pub mlx_version: String,
        pub mlx_lm_version: String,
        pub mlx_lm_freeze_sha256: String,
        pub libmlx_path: String,
        pub libmlx_sha256: String,
        pub device: String,
        pub backend: Option<String>,
        pub device_info: BTreeMap<String, String>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Request {
        pub index: u32,
        pub phase: Option<String>,
        pub prompt_len: u32,
        pub prefill_dur_ns: u64,
        pub first_token_ns: u64,
        pub first_token: u32,
        pub steps: Vec<Step>,
        pub unused_forwards: u32,
        pub model_calls: u32,
        pub peak_memory_bytes: Option<u64>,
        pub finish_reason: String,
    }

    /// The launcher leaves a step's `null` values out of `session.json`, so they may be absent.
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Step {
        pub position: u32,
        pub argmax: u32,
        pub t_ns: u64,
        pub dur_ns: u64,
        #[serde(default)]
        pub build_ns: Option<u64>,
        #[serde(default)]
        pub eval_ns: Option<u64>,
        #[serde(default)]
        pub margin: Option<f64>,
        #[serde(default)]
        pub tie: Option<bool>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Analysis {
        pub bootstrap: Bootstrap,
        pub cells: Vec<Cell>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Bootstrap {
        pub resamples: usize,
        pub confidence: f64,
        pub seed: u64,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Cell {
        pub cell: String,
        pub mode: String,
        pub adapters: BTreeMap<String, AdapterStats>,
        pub ratios: BTreeMap<String, Ratio>,
        pub aa_ratios: BTreeMap<String, Ratio>,
        pub paired: BTreeMap<String, Ratio>,
        pub paired_aa: BTreeMap<String, Ratio>,
        pub argmax: BTreeMap<String, Argmax>,
        pub stream: BTreeMap<String, Stream>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct AdapterStats {
        pub per_token_ns: Summary,
        pub prefill_ns: Option<Summary>,
        pub first_token_ns: Option<Summary>,
        pub build_median_ns: Option<f64>,
        pub eval_median_ns: Option<f64>,
        pub host_overhead: Option<f64>,
        pub start_to_ready_ns: Option<f64>,
        pub unused_forwards: u32,
        pub model_calls: u32,
        pub drift: Option<Drift>,
        pub test_slowdown_us: Option<u32>,
        pub host_warnings: Vec<String>,
        pub cold: Option<Cold>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Cold {
        pub requests: u32,
        pub prefill_ns: f64,
        pub per_token_ns: f64,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Summary {
        pub n: usize,
        pub requests: Option<usize>,
        pub median: f64,
        pub mean: f64,
        pub std_dev: f64,
        pub mad: f64,
        pub cv: Option<f64>,
        pub request_median_cv: Option<f64>,
        pub p90: f64,
        pub p99: f64,
        pub min: f64,
        pub max: f64,
        pub median_ci: Interval,
        pub outliers: Outliers,
        pub warnings: Vec<Warning>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Interval {
        pub lower: f64,
        pub upper: f64,
        pub bootstrap: Bootstrap,
        pub resampling: String,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Outliers {
        pub q1: f64,
        pub q3: f64,
        pub low_severe: usize,
        pub low_mild: usize,
        pub high_mild: usize,
        pub high_severe: usize,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Warning {
        pub kind: String,
        pub value: f64,
        pub limit: f64,
        pub message: String,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Drift {
        pub half: usize,
        pub early_median: f64,
        pub late_median: f64,
        pub relative_change: f64,
        pub mann_whitney_u: f64,
        pub p_value: f64,
        pub config: DriftConfig,
        pub drifting: bool,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct DriftConfig {
        pub alpha: f64,
        pub threshold: f64,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Ratio {
        pub ratio: f64,
        pub ci: Interval,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Argmax {
        pub steps_compared: usize,
        pub mismatches: Vec<Mismatch>,
        pub tie_positions: Vec<u32>,
        pub unstable_requests: Vec<String>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Mismatch {
        pub position: u32,
        pub adapter_token: u32,
        pub reference_token: u32,
        pub adapter_margin: Option<f64>,
        pub reference_margin: Option<f64>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Stream {
        pub tokens_compared: usize,
        pub identical: bool,
        pub first_divergence: Option<Mismatch>,
        pub diverged_at_tie: bool,
    }
}

#[test]
fn a_real_session_json_parses_with_independently_declared_types() {
    let session: declared::Session = serde_json::from_value(real_session().clone())
        .unwrap_or_else(|err| panic!("session.json no longer matches its declaration here: {err}"));
    assert_eq!(session.schema_version, 8);
    assert_eq!(session.status, "ok");
    let aa: Vec<&declared::Worker> = session.workers.iter().filter(|w| w.aa).collect();
    assert!(!aa.is_empty() && aa.iter().all(|w| w.intervention.is_none()), "the A/A group ran and ended by itself");
    let analysis = session.analysis.expect("an analysis");
    assert!(analysis.cells.iter().any(|c| c.adapters.contains_key("controlled") && c.adapters.contains_key("stock")));
    // The decisions: a row per timed cell, controlled against the reference, no profile (the
    // tests' profile folder is empty), each as `compare` of the session prints it.
    let decisions = session.decisions.expect("decisions");
    assert_eq!(decisions.noise_profile, None);
    let timed = analysis.cells.iter().filter(|c| !c.cell.ends_with(".reference_pair")).count();
    let headline = analysis.cells.iter().filter(|c| c.cell.ends_with(".headline")).count();
    let compared = |quantity: &str| {
        decisions.rows.iter().filter(|r| r.outcome["result"] == "compared" && r.quantity == quantity).count()
    };
    assert_eq!((compared("per_token"), compared("first_token")), (timed, headline));
    assert!(decisions.rows.iter().all(|r| r.adapter.as_deref() == Some("controlled") && r.basis == "paired"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("session.json"), real_session().to_string()).unwrap();
    let out =
        util::run(std::process::Command::new(util::binary()).args(["compare", "--format", "json"]).arg(dir.path()));
    let compared: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(compared["rows"], real_session()["decisions"]["rows"], "compare of the session prints its decisions");

    // And the declaration is strict: a field the launcher might add is refused here too.
    let mut added = real_session().clone();
    added["workers"][0]["report"]["requests"][0]["steps"][0]["new_field"] = json!(1);
    assert!(serde_json::from_value::<declared::Session>(added).is_err());
}
