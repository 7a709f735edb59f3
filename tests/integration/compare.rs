//! `decode-baseline compare` and `plot`: every verdict, every refusal, bad input, snapshots of
//! the table and Markdown, and the figures, on synthetic session reports built here (the
//! launcher's output types, filled with deterministic step times) and on session reports
//! recorded by the real launcher on the fixture (`tests/data/sessions/`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use decode_baseline_launcher::stats::{BootstrapConfig, Interval, RatioEstimate, Resampling};
use decode_baseline_wire::{
    analysis::{Analysis, CellAnalysis},
    backend::DeviceIdentity,
    report::{Identity, Phase, RequestRecord, Status, StepRecord, WorkerReport},
    session::{
        CaseFiles, HostFacts, LeaseFacts, SessionJob, SessionReport, SessionStatus, WorkerOrder, WorkerRun,
        SESSION_REPORT_SCHEMA_VERSION,
    },
    Adapter, Backend, DeviceKind, Mode, Sha256Digest,
};
use serde_json::json;

use crate::util;

pub(crate) const HEADLINE: &str = "tiny-qwen3.tiny-qwen3-L16.headline";
pub(crate) const FIXED: &str = "tiny-qwen3.tiny-qwen3-L16.fixed_continuation";
const REFERENCE: &str = "tiny-qwen3.tiny-qwen3-L16.reference_pair";

fn digest(s: &str) -> Sha256Digest {
    Sha256Digest::of_bytes(s.as_bytes())
}

/// What differs between synthetic workers.
#[derive(Clone)]
struct Ids {
    libmlx: &'static str,
    controlled_sources: &'static str,
    stock_sources: &'static str,
    mlx: &'static str,
    lock: &'static str,
}

const IDS: Ids = Ids {
    libmlx: "libmlx-a",
    controlled_sources: "controlled-src-a",
    stock_sources: "stock-src-a",
    mlx: "0.32.2",
    lock: "lock",
};

fn identity(adapter: &Adapter, ids: &Ids, manifest: Sha256Digest) -> Identity {
    Identity {
        manifest_sha256: manifest,
        code_version: "0000000".to_owned(),
        worker_sources_sha256: digest(match adapter {
            Adapter::Controlled => ids.controlled_sources,
            Adapter::Stock => ids.stock_sources,
            Adapter::Declared(name) => name.as_str(),
        }),
        lock_sha256: digest(ids.lock),
        mlx_version: ids.mlx.to_owned(),
        mlx_lm_version: "0.32.2".to_owned(),
        mlx_lm_freeze_sha256: digest("freeze"),
        libmlx_path: "/venv/lib/libmlx.so".to_owned(),
        libmlx_sha256: digest(ids.libmlx),
        device: DeviceKind::Cpu,
        backend: Some(Backend::Cpu),
        device_info: Default::default(),
    }
}

/// Step time of request `r`, step `s` at `level` ns: a per-request offset of up to ±0.4 % and a
/// per-step wiggle of up to ±0.5 %, both deterministic.
fn step_ns(level: f64, r: usize, s: usize) -> u64 {
    let request = 1.0 + 0.004 * ((r * 7 % 9) as f64 - 4.0) / 4.0;
    let step = 1.0 + 0.005 * ((s * 13 + r * 5) % 11) as f64 / 5.0 - 0.005;
    (level * request * step).round() as u64
}

fn mode_of(cell: &str) -> Mode {
    match cell.rsplit('.').next().unwrap() {
        "headline" => Mode::Headline,
        "fixed_continuation" => Mode::FixedContinuation,
        _ => Mode::ReferencePair,
    }
}

/// The per-run factor on the step times of `adapter`'s run `repetition`: 1, then +0.15 % and
/// −0.15 % (controlled) or −0.15 % and +0.15 % (stock), repeating. Three runs of an adapter
/// average to its level and their means differ, so a run-means error is small but not zero (a
/// within-session interval of about ±0.34 %, near what one run's request error was); run 0 is
/// the level itself, so a one-run session has the same step times as before runs had offsets.
fn run_factor(adapter: &Adapter, repetition: u32) -> f64 {
    let sign = if *adapter == Adapter::Stock { -1.0 } else { 1.0 };
    1.0 + 0.0015 * sign * [0.0, 1.0, -1.0][repetition as usize % 3]
}

/// Where a worker run sits in its session.
#[derive(Clone, Copy)]
struct Slot {
    /// 0-based repetition; the A/A run's is the job's `repetitions`, as the launcher numbers it.
    repetition: u32,
    /// The extra run of an A/A pair.
    aa: bool,
    /// Its place in the order the session ran its workers.
    sequence: u32,
}

/// One worker run of `cell` at `level` ns per step (times the run's [`run_factor`]).
fn worker(cell: &str, adapter: Adapter, level: f64, slot: Slot, ids: &Ids, manifest: Sha256Digest) -> WorkerRun {
    let level = level * run_factor(&adapter, slot.repetition);
    let mode = mode_of(cell);
    let (phases, steps): (Vec<Option<Phase>>, usize) = match mode {
        Mode::ReferencePair => (vec![None], 127),
        Mode::FixedContinuation => {
            ([vec![Some(Phase::First)], vec![Some(Phase::Warmup); 2], vec![Some(Phase::Measured); 12]].concat(), 32)
        }
        Mode::Headline => {
            ([vec![Some(Phase::First)], vec![Some(Phase::Warmup); 2], vec![Some(Phase::Measured); 12]].concat(), 40)
        }
    };
    let requests = phases
        .iter()
        .enumerate()
        .map(|(r, phase)| {
            let mut t = 0;
            RequestRecord {
                index: r as u32,
                phase: *phase,
                prompt_len: 16,
                // No first-token time recorded (0): these sessions test the per-token rows, and
                // `compare` makes no time-to-first-token row of them (the launcher's unit tests
                // and the real sessions below test those).
                prefill_dur_ns: 0,
                first_token_ns: 0,
                first_token: 7,
                steps: (0..steps)
                    .map(|s| {
                        let dur_ns = step_ns(level, r, s);
                        t += dur_ns;
                        StepRecord {
                            position: 17 + s as u32,
                            argmax: 7,
                            t_ns: 1_000_000 + t,
                            dur_ns,
                            build_ns: None,
                            eval_ns: None,
                            margin: None,
                            tie: None,
                        }
                    })
                    .collect(),
                unused_forwards: 0,
                model_calls: steps as u32 + 1,
                peak_memory_bytes: None,
                finish_reason: "length".to_owned(),
            }
        })
        .collect();
    let suffix = if slot.aa { "-aa" } else { "" };
    let run_id = format!("s/{cell}/{}-{}{suffix}", adapter.as_str(), slot.repetition);
    let report = WorkerReport {
        schema_version: 1,
        run_id: run_id.clone(),
        adapter: adapter.clone(),
        mode,
        case_id: "tiny-qwen3".to_owned(),
        prompt_id: "tiny-qwen3-L16".to_owned(),
        status: Status::Ok,
        exit_code: 0,
        error: None,
        pid: 1,
        claimed_utc: "2026-01-01T00:00:00Z".to_owned(),
        finished_utc: "2026-01-01T00:00:01Z".to_owned(),
        start_to_ready_ns: Some(1),
        load_ns: Some(1),
        identity: Some(identity(&adapter, ids, manifest)),
        test_slowdown_us: None,
        group: None,
        requests,
    };
    WorkerRun {
        run_id,
        cell: cell.to_owned(),
        adapter,
        repetition: slot.repetition,
        aa: slot.aa,
        sequence: slot.sequence,
        command: vec!["worker".to_owned()],
        pid: Some(1),
        exit_code: Some(0),
        signal: None,
        intervention: None,
        wall_ns: 1,
        validation_errors: vec![],
        host_activity: None,
        energy: None,
        report: Some(report),
        ranks: Vec::new(),
    }
}

fn aa(lower: f64, upper: f64) -> RatioEstimate {
    RatioEstimate {
        ratio: (lower + upper) / 2.0,
        ci: Interval { lower, upper, bootstrap: BootstrapConfig::default(), resampling: Resampling::ByRequest },
    }
}

/// A synthetic session.
pub(crate) struct Synth {
    id: &'static str,
    host: &'static str,
    ids: Ids,
    manifest_path: PathBuf,
    manifest_sha256: Sha256Digest,
    /// The recorded model files; `None` leaves compare to read them from `manifest_path`.
    model_files: Option<CaseFiles>,
    /// (cell, controlled level, stock level)
    cells: Vec<(&'static str, f64, f64)>,
    /// Worker runs per adapter and cell (the job's `repetitions`; 3 unless `one_run`), in
    /// alternate order; a reference-pair cell runs once.
    repetitions: u32,
    /// (cell, adapter, A/A interval)
    aa: Vec<(&'static str, Adapter, (f64, f64))>,
    /// What the session ran on (`session.json`'s `device`).
    device: Option<DeviceIdentity>,
    /// The command that replaced the stock worker's program; `Some` makes the session unpinned.
    replaced_stock: Option<&'static str>,
    /// `session.json`'s `placement`: (requested, effective).
    placement: Option<(&'static str, Option<&'static str>)>,
}

/// A CPU device as the launcher records one.
fn cpu_device() -> DeviceIdentity {
    DeviceIdentity {
        backend: Backend::Cpu,
        device: DeviceKind::Cpu,
        name: "AMD EPYC 9B14 96-Core Processor".into(),
        info: [("architecture", "x86_64"), ("device_name", "AMD EPYC")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .into(),
    }
}

/// An H200 as the launcher records one on CUDA (MLX's device_info plus the driver facts).
fn cuda_device() -> DeviceIdentity {
    DeviceIdentity {
        backend: Backend::Cuda,
        device: DeviceKind::Gpu,
        name: "NVIDIA H200".into(),
        info: [
            ("architecture", "sm_90"),
            ("compute_capability_major", "9"),
            ("compute_capability_minor", "0"),
            ("cuda_runtime_version", "13.0.96"),
            ("device_name", "NVIDIA H200"),
            ("nvidia_driver_version", "580.159.03"),
            ("total_memory", "150754820096"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .into(),
    }
}

impl Synth {
    pub(crate) fn new(id: &'static str, cells: Vec<(&'static str, f64, f64)>) -> Self {
        Synth {
            id,
            host: "bench-1",
            ids: IDS,
            manifest_path: util::repo_root().join("workloads.json"),
            manifest_sha256: digest("manifest"),
            model_files: None,
            cells,
            repetitions: 3,
            aa: vec![],
            device: Some(cpu_device()),
            replaced_stock: None,
            placement: None,
        }
    }

    /// One worker run per adapter and cell, as a session run with `--repetitions 1`.
    fn one_run(mut self) -> Self {
        self.repetitions = 1;
        self
    }

    /// With a tight A/A pair (±0.2 %) for both adapters of every cell, shown beside each row.
    fn measured(mut self) -> Self {
        self.aa = self
            .cells
            .iter()
            .filter(|(cell, ..)| mode_of(cell) != Mode::ReferencePair)
            .flat_map(|&(cell, ..)| {
                [(cell, Adapter::Controlled, (0.998, 1.002)), (cell, Adapter::Stock, (0.998, 1.002))]
            })
            .collect();
        self
    }

    pub(crate) fn report(&self) -> SessionReport {
        let mut workers = Vec::new();
        let mut analysis_cells = Vec::new();
        let mut push = |cell, adapter: Adapter, level, repetition, aa| {
            let slot = Slot { repetition, aa, sequence: workers.len() as u32 };
            workers.push(worker(cell, adapter, level, slot, &self.ids, self.manifest_sha256));
        };
        for &(cell, controlled, stock) in &self.cells {
            // As the launcher plans them: a reference-pair cell runs once whatever the
            // repetitions, and in alternate order controlled comes first in even repetitions.
            let repetitions = if mode_of(cell) == Mode::ReferencePair { 1 } else { self.repetitions };
            for repetition in 0..repetitions {
                let mut runs = [(Adapter::Controlled, controlled), (Adapter::Stock, stock)];
                if repetition % 2 == 1 {
                    runs.reverse();
                }
                for (adapter, level) in runs {
                    push(cell, adapter, level, repetition, false);
                }
            }
            let mut aa_ratios = BTreeMap::new();
            for (c, adapter, (lo, hi)) in &self.aa {
                if *c == cell {
                    aa_ratios.insert(adapter.clone(), aa(*lo, *hi));
                    let level = if *adapter == Adapter::Controlled { controlled } else { stock };
                    push(cell, adapter.clone(), level, self.repetitions, true);
                }
            }
            // The launcher's analysis carries more per cell; compare reads only `aa_ratios`.
            analysis_cells.push(CellAnalysis {
                cell: cell.to_owned(),
                mode: mode_of(cell),
                adapters: BTreeMap::new(),
                ratios: BTreeMap::new(),
                aa_ratios,
                paired: BTreeMap::new(),
                paired_aa: BTreeMap::new(),
                argmax: BTreeMap::new(),
                stream: BTreeMap::new(),
            });
        }
        SessionReport {
            schema_version: SESSION_REPORT_SCHEMA_VERSION,
            session_id: self.id.to_owned(),
            status: SessionStatus::Ok,
            reference: Adapter::Stock,
            job: SessionJob {
                schema_version: 1,
                manifest: None,
                cells: None,
                adapters: vec![Adapter::Controlled, Adapter::Stock],
                reference: None,
                output_root: PathBuf::from("out"),
                repetitions: self.repetitions,
                order: WorkerOrder::Alternate,
                aa_pair: !self.aa.is_empty(),
                group: None,
                prefill_step_size: None,
            },
            manifest_path: self.manifest_path.clone(),
            manifest_sha256: self.manifest_sha256,
            model_files: self.model_files.clone(),
            host: Some(HostFacts {
                hostname: self.host.to_owned(),
                os: "linux".to_owned(),
                arch: "x86_64".to_owned(),
                cpus: 2,
                cpu_model: None,
            }),
            device: self.device.clone(),
            lease: Some(LeaseFacts { path: None, waited_ns: None }),
            started_utc: "2026-01-01T00:00:00Z".to_owned(),
            finished_utc: "2026-01-01T00:01:00Z".to_owned(),
            wall_ns: 1,
            launcher_overhead_ns: 1,
            quiet_wait_ns: Some(0),
            workers,
            analysis: Some(Analysis { bootstrap: BootstrapConfig::default(), cells: analysis_cells }),
            problems: vec![],
            unpinned: self.replaced_stock.is_some(),
            replaced_programs: self
                .replaced_stock
                .map(|command| (Adapter::Stock, command.split(' ').map(str::to_owned).collect()))
                .into_iter()
                .collect(),
            energy: None,
            placement: self.placement.map(|(requested, effective)| decode_baseline_wire::session::Placement {
                requested: requested.to_owned(),
                effective: effective.map(str::to_owned),
            }),
            sequential: None,
            decisions: None,
        }
    }

    /// Writes `<dir>/<id>/session.json` and returns the session folder.
    fn write(&self, dir: &Path) -> PathBuf {
        write_session(dir, &self.report())
    }
}

pub(crate) fn write_session(dir: &Path, report: &SessionReport) -> PathBuf {
    let folder = dir.join(&report.session_id);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("session.json"), serde_json::to_vec_pretty(report).unwrap()).unwrap();
    folder
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn compare(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Run {
    let mut cmd = Command::new(util::binary());
    // No noise profile of the developer's host: the verdicts here use their own error.
    cmd.arg("compare").env("DECODE_BASELINE_PROFILE_DIR", "/nonexistent/decode-baseline-test-profiles");
    for a in args {
        cmd.arg(a);
    }
    let out = util::run(&mut cmd);
    Run { code: out.status.code().expect("exited"), stdout: util::stdout(&out), stderr: util::stderr(&out) }
}

/// The output as JSON; it must also read back as the wire type and write out unchanged, so that a
/// consumer of `decode_baseline_wire::compare` reads what `compare` prints.
fn json_of(run: &Run) -> serde_json::Value {
    let value: serde_json::Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", run.stdout, run.stderr));
    let typed: decode_baseline_wire::compare::CompareReport = serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("not a wire CompareReport ({e}): {}", run.stdout));
    assert_eq!(serde_json::to_value(&typed).unwrap(), value, "the wire type does not write back what compare printed");
    value
}

/// The verdicts of the per-token rows, in order (`not_compared` for a row not compared).
fn verdicts(run: &Run) -> Vec<String> {
    json_of(run)["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["quantity"] == "per_token")
        .map(|r| r["outcome"]["decision"]["verdict"].as_str().unwrap_or("not_compared").to_owned())
        .collect()
}

// Exit codes, as documented in req/compare.md.
const NO_DIFFERENCE: i32 = 0;
const BAD_INPUT: i32 = 2;
const FASTER: i32 = 10;
const SLOWER: i32 = 11;
const REFUSED: i32 = 12;
const INCONCLUSIVE: i32 = 13;

// ---------------------------------------------------------------------------------------------
// One session: controlled against stock
// ---------------------------------------------------------------------------------------------

#[test]
fn within_session_each_verdict_and_its_exit_code() {
    let tmp = tempfile::tempdir().unwrap();
    for (id, controlled, verdict, code) in [
        ("same", 600_000.0, "no_difference", NO_DIFFERENCE),
        ("fast", 540_000.0, "faster", FASTER),
        ("slow", 660_000.0, "slower", SLOWER),
    ] {
        let dir = Synth::new(id, vec![(HEADLINE, controlled, 600_000.0)]).measured().write(tmp.path());
        let run = compare(&[&dir, &"--format", &"json"]);
        assert_eq!(run.code, code, "{id}: {}{}", run.stdout, run.stderr);
        assert_eq!(verdicts(&run), vec![verdict], "{id}");
        let j = json_of(&run);
        assert_eq!(j["kind"], "within_session");
        assert_eq!(j["verdict"], verdict);
        assert_eq!(j["exit_code"], code);
        let decision = &j["rows"][0]["outcome"]["decision"];
        let ratio = decision["ratio"].as_f64().unwrap();
        assert!((ratio - controlled / 600_000.0).abs() < 0.01, "{id}: ratio {ratio}");
        assert_eq!(j["rows"][0]["basis"], "ratio_of_medians");
        // A non-interleaved session has no pairs: Welch t on the run means, one unit per worker run
        // (three a side; the A/A runs are not among them).
        assert_eq!(decision["rule"], "run_means", "{id}");
        assert_eq!(decision["units"], 6, "{id}");
        assert_eq!(decision["run_effects_measured"], true, "{id}");
    }
    // Without an A/A pair the test is the same; the output says whose error it used and that
    // run means hold run-to-run effects. (A session of one run per adapter gets no verdict:
    // `a_one_run_session_gets_no_verdict_but_keeps_its_figures`.)
    let bare = Synth::new("bare-slow", vec![(HEADLINE, 660_000.0, 600_000.0)]).write(tmp.path());
    let run = compare(&[&bare, &"--format", &"json"]);
    assert_eq!(run.code, SLOWER, "{}", run.stderr);
    assert_eq!(verdicts(&run), vec!["slower"]);
    let decision = &json_of(&run)["rows"][0]["outcome"]["decision"];
    assert_eq!((decision["error"].clone(), decision["run_effects_measured"].clone()), (json!("own"), json!(true)));
    let table = compare(&[&bare]);
    assert!(
        table.stdout.contains("error: own, from run means (holds run-to-run effects) for 1 row"),
        "{}",
        table.stdout
    );
    assert!(table.stdout.contains("verdict: slower (exit 11)"), "{}", table.stdout);
}

/// A session of one worker run per adapter (`--repetitions 1`): its error cannot see run-to-run
/// effects (its A/A runs are no second run in a non-interleaved session), so it gets no verdict,
/// within one session or across two, whatever its figures say; the figures are still printed,
/// and the output says how to get a verdict.
#[test]
fn a_one_run_session_gets_no_verdict_but_keeps_its_figures() {
    let tmp = tempfile::tempdir().unwrap();
    // 10 % slower, and identical: `slower` and `no_difference` with three runs
    // (`within_session_each_verdict_and_its_exit_code`).
    for (id, controlled) in [("one-slow", 660_000.0), ("one-same", 600_000.0)] {
        let dir = Synth::new(id, vec![(HEADLINE, controlled, 600_000.0)]).one_run().measured().write(tmp.path());
        let run = compare(&[&dir, &"--format", &"json"]);
        assert_eq!(run.code, INCONCLUSIVE, "{id}: {}{}", run.stdout, run.stderr);
        let j = json_of(&run);
        assert_eq!((j["verdict"].clone(), j["exit_code"].clone()), (json!("inconclusive"), json!(INCONCLUSIVE)));
        let d = &j["rows"][0]["outcome"]["decision"];
        assert_eq!(
            (d["verdict"].clone(), d["rule"].clone(), d["error"].clone(), d["run_effects_measured"].clone()),
            (json!("inconclusive"), json!("request_medians"), json!("own"), json!(false)),
            "{id}: {d}"
        );
        // Left out of Holm's family: never significant, whatever its p-value.
        assert_eq!(d["significant"], false, "{id}: {d}");
        // The figures: the ratio, its interval and the tests' p-values, as with three runs.
        let ratio = d["ratio"].as_f64().unwrap();
        let (lower, upper) = (d["ci"]["lower"].as_f64().unwrap(), d["ci"]["upper"].as_f64().unwrap());
        assert!((ratio - controlled / 600_000.0).abs() < 0.01 && lower < ratio && ratio < upper, "{id}: {d}");
        if id == "one-slow" {
            assert!(lower > 1.05 && d["p_value"].as_f64().unwrap() < 1e-6, "{id}: {d}");
        } else {
            assert!(d["equivalent"] == true && upper < 1.03 && lower > 1.0 / 1.03, "{id}: {d}");
        }
    }
    let one = tmp.path().join("one-slow");
    let rule = "error: own, blind to run-to-run effects (one run per side, no noise profile): no verdict; \
                --repetitions 4 or a noise profile of the design gives one for 1 row";
    let holm = "Holm across 0 of 1 judged row (1 without a run-to-run error take no share)";
    let table = compare(&[&one]);
    assert_eq!(table.code, INCONCLUSIVE, "{}", table.stderr);
    for line in [rule, holm, "1.100", "verdict: inconclusive (exit 13)"] {
        assert!(table.stdout.contains(line), "expected `{line}` in\n{}", table.stdout);
    }
    let markdown = compare(&[&one, &"--format", &"markdown"]);
    for line in [rule, "**verdict: inconclusive (exit 13)**"] {
        assert!(markdown.stdout.contains(line), "expected `{line}` in\n{}", markdown.stdout);
    }
    // A one-run session's report page names the way out beside each tested row. (The recorded
    // session, one run per adapter: the page's rows come from the launcher's analysis, which the
    // synthetic sessions do not carry.)
    let recorded_one = write_value(tmp.path(), "recorded-one-run", &recorded_value("back-to-back-a"));
    let out = util::run(
        Command::new(util::binary())
            .arg("report")
            .arg(&recorded_one)
            .env("DECODE_BASELINE_PROFILE_DIR", "/nonexistent/decode-baseline-test-profiles"),
    );
    assert!(out.status.success(), "{}", util::stderr(&out));
    let page = std::fs::read_to_string(recorded_one.join("index.html")).unwrap();
    let words = "no verdict: one run per side cannot show run-to-run effects; rerun with --repetitions 4 or with a \
                 noise profile of this design (decode-baseline calibrate --job)";
    assert_eq!(page.matches(words).count(), 2, "headline and fixed-continuation rows: expected `{words}` in\n{page}");

    // Across two sessions: a verdict only when both sessions' estimates hold run-to-run effects.
    let three_a = Synth::new("three-a", vec![(HEADLINE, 600_000.0, 600_000.0)]).measured().write(tmp.path());
    let three_b = Synth::new("three-b", vec![(HEADLINE, 540_000.0, 600_000.0)]).measured().write(tmp.path());
    let one_a = Synth::new("one-a", vec![(HEADLINE, 600_000.0, 600_000.0)]).one_run().measured().write(tmp.path());
    let one_b = Synth::new("one-b", vec![(HEADLINE, 540_000.0, 600_000.0)]).one_run().measured().write(tmp.path());
    let both = compare(&[&three_a, &three_b, &"--format", &"json"]);
    assert_eq!((both.code, verdicts(&both)[0].as_str()), (FASTER, "faster"), "{}", both.stderr);
    for (name, a, b) in [("A one run", &one_a, &three_b), ("B one run", &three_a, &one_b), ("both", &one_a, &one_b)] {
        let run = compare(&[a, b, &"--format", &"json"]);
        assert_eq!(run.code, INCONCLUSIVE, "{name}: {}{}", run.stdout, run.stderr);
        assert_eq!(verdicts(&run), ["inconclusive"; 3], "{name}");
        let d = &json_of(&run)["rows"][0]["outcome"]["decision"];
        assert_eq!(
            (d["rule"].clone(), d["run_effects_measured"].clone(), d["significant"].clone()),
            (json!("session_difference"), json!(false), json!(false)),
            "{name}: {d}"
        );
        // Controlled 10 % faster against stock in B: the figure shows it.
        let (ratio, upper) = (d["ratio"].as_f64().unwrap(), d["ci"]["upper"].as_f64().unwrap());
        assert!((ratio - 0.9).abs() < 0.01 && upper < 1.0, "{name}: {d}");
        // The raw rows, judged, of one run on a side: Yuen on the requests, no verdict.
        let raw = compare(&[a, b, &"--raw", &"--format", &"json"]);
        assert_eq!(raw.code, INCONCLUSIVE, "{name} --raw: {}", raw.stderr);
        assert_eq!(verdicts(&raw), ["inconclusive"; 3], "{name} --raw");
        let r = &json_of(&raw)["rows"][1]["outcome"]["decision"];
        assert_eq!(
            (r["rule"].clone(), r["run_effects_measured"].clone()),
            (json!("raw_request_medians"), json!(false))
        );
        let table = compare(&[a, b]);
        assert!(table.stdout.contains("gives one for 3 rows"), "{name}: {}", table.stdout);
    }
}

#[test]
fn a_small_real_difference_is_a_verdict_and_a_floor_sets_it_aside() {
    let tmp = tempfile::tempdir().unwrap();
    // Controlled 1 % slower on quiet synthetic data: significant, so `slower`.
    let dir = Synth::new("edge", vec![(HEADLINE, 606_000.0, 600_000.0)]).measured().write(tmp.path());
    let run = compare(&[&dir, &"--format", &"json"]);
    assert_eq!(run.code, SLOWER, "{}", run.stderr);
    let decision = &json_of(&run)["rows"][0]["outcome"]["decision"];
    assert_eq!((decision["significant"].clone(), decision["equivalent"].clone()), (json!(true), json!(true)));
    // With a 2 % practical floor the 1 % is significant but below it, and within the ±3 %
    // margin by the equivalence test: no difference. The floor never moves the interval.
    let floored = compare(&[&dir, &"--floor", &"0.02", &"--format", &"json"]);
    assert_eq!(floored.code, NO_DIFFERENCE, "{}", floored.stderr);
    let f = &json_of(&floored)["rows"][0]["outcome"]["decision"];
    assert_eq!((f["verdict"].clone(), f["below_floor"].clone()), (json!("no_difference"), json!(true)));
    assert_eq!(f["ci"], decision["ci"]);
    assert!(compare(&[&dir, &"--floor", &"0.02"]).stdout.contains("no difference (below floor)"));
}

#[test]
fn slower_wins_over_faster_and_reference_pair_is_not_compared() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = Synth::new(
        "mixed",
        vec![(HEADLINE, 540_000.0, 600_000.0), (FIXED, 700_000.0, 600_000.0), (REFERENCE, 600_000.0, 600_000.0)],
    )
    .measured()
    .write(tmp.path());
    let run = compare(&[&dir, &"--format", &"json"]);
    assert_eq!(run.code, SLOWER, "{}", run.stderr);
    assert_eq!(verdicts(&run), vec!["faster", "slower", "not_compared"]);
    let reason = json_of(&run)["rows"][2]["outcome"]["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("too few requests: expected at least 2, got 1"), "{reason}");
}

#[test]
fn margin_floor_and_the_aa_results_beside_each_row() {
    let tmp = tempfile::tempdir().unwrap();
    // Controlled 3 % faster in both cells, a real difference on quiet synthetic data.
    let mut s = Synth::new("aa", vec![(HEADLINE, 582_000.0, 600_000.0), (FIXED, 582_000.0, 600_000.0)]);
    s.aa = vec![(HEADLINE, Adapter::Stock, (0.96, 1.05)), (HEADLINE, Adapter::Controlled, (0.99, 1.01))];
    let dir = s.write(tmp.path());

    let run = compare(&[&dir, &"--format", &"json"]);
    assert_eq!(run.code, FASTER, "{}", run.stderr);
    assert_eq!(verdicts(&run), vec!["faster", "faster"]);
    let j = json_of(&run);
    assert_eq!(j["judged_rows"], 2);
    let labels = |row: usize| -> Vec<String> {
        j["rows"][row]["outcome"]["aa"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["label"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(labels(0), ["controlled", "stock"]);
    // The fixed-continuation cell has no A/A pair of its own: the headline cell's stand in.
    assert_eq!(labels(1), [format!("{HEADLINE} controlled"), format!("{HEADLINE} stock")]);
    // Stock's A/A run moved by +0.5 %, more than the headline row's interval admits.
    let table = compare(&[&dir]);
    assert!(
        table.stdout.contains(&format!(
            "warning: {HEADLINE} controlled: A/A stock: one rerun of the same code moved the ratio by +0.5 %"
        )),
        "{}",
        table.stdout
    );
    assert!(
        table
            .stdout
            .contains("test: α 5 % two-sided, Holm across 2 judged rows; no difference only when shown within ±3.0 %"),
        "{}",
        table.stdout
    );

    // A 5 % floor sets the 3 % aside, but the ±3 % margin cannot show it absent: inconclusive.
    let floored = compare(&[&dir, &"--floor", &"0.05", &"--format", &"json"]);
    assert_eq!(floored.code, INCONCLUSIVE, "{}", floored.stderr);
    // With a ±5 % margin (`--threshold`, its old name, says the same) it is no difference.
    for flag in ["--margin", "--threshold"] {
        let wide = compare(&[&dir, &"--floor", &"0.05", &flag, &"0.05", &"--format", &"json"]);
        assert_eq!(wide.code, NO_DIFFERENCE, "{flag}: {}", wide.stderr);
        assert_eq!(json_of(&wide)["settings"]["margin"], 0.05);
    }
}

#[test]
fn within_session_refuses_different_libmlx_between_the_adapters() {
    let tmp = tempfile::tempdir().unwrap();
    let mut report = Synth::new("libmlx", vec![(HEADLINE, 600_000.0, 600_000.0)]).measured().report();
    for stock in report.workers.iter_mut().filter(|w| w.adapter == Adapter::Stock) {
        stock.report.as_mut().unwrap().identity.as_mut().unwrap().libmlx_sha256 = digest("another libmlx");
    }
    let dir = write_session(tmp.path(), &report);

    let run = compare(&[&dir]);
    assert_eq!(run.code, REFUSED, "{}", run.stdout);
    assert!(run.stdout.starts_with("refused: the controlled and stock workers differ"), "{}", run.stdout);
    assert!(
        run.stdout.contains(&format!("  - libmlx_sha256: {} vs {}", digest("libmlx-a"), digest("another libmlx"))),
        "{}",
        run.stdout
    );
    assert!(run.stderr.contains("compare refused"), "{}", run.stderr);

    let allowed = compare(&[&dir, &"--allow-mismatch"]);
    assert_eq!(allowed.code, NO_DIFFERENCE, "{}", allowed.stderr);
    let list = allowed.stdout.find("libmlx_sha256").unwrap();
    let result = allowed.stdout.find("verdict: no difference").unwrap();
    assert!(allowed.stdout.starts_with("mismatch allowed (--allow-mismatch)") && list < result, "{}", allowed.stdout);
}

#[test]
fn within_session_an_adapter_in_its_own_pinned_environment_is_compared() {
    // An adapter that declares its own environment ran on another lock and libmlx, each checked
    // against that environment's pins by the worker: compared, not refused.
    let tmp = tempfile::tempdir().unwrap();
    let mut report = Synth::new("envs", vec![(HEADLINE, 600_000.0, 600_000.0)]).measured().report();
    for stock in report.workers.iter_mut().filter(|w| w.adapter == Adapter::Stock) {
        let identity = stock.report.as_mut().unwrap().identity.as_mut().unwrap();
        identity.libmlx_sha256 = digest("an older release's libmlx");
        identity.lock_sha256 = digest("an older release's lock");
        identity.mlx_version = "0.31.2".to_owned();
    }
    let dir = write_session(tmp.path(), &report);
    let run = compare(&[&dir]);
    assert_eq!(run.code, NO_DIFFERENCE, "{}{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains("refused"), "{}", run.stdout);

    // The same libmlx difference on one lock is still refused: nothing declared it.
    for stock in report.workers.iter_mut().filter(|w| w.adapter == Adapter::Stock) {
        stock.report.as_mut().unwrap().identity.as_mut().unwrap().lock_sha256 = digest("lock");
    }
    let other = tempfile::tempdir().unwrap();
    let dir = write_session(other.path(), &report);
    let refused = compare(&[&dir]);
    assert_eq!(refused.code, REFUSED, "{}", refused.stdout);
}

// ---------------------------------------------------------------------------------------------
// Two sessions: B against A
// ---------------------------------------------------------------------------------------------

#[test]
fn across_sessions_each_verdict_per_adapter() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Synth::new("a", vec![(HEADLINE, 600_000.0, 600_000.0)]).measured().write(tmp.path());
    // Rows: controlled against stock, then the raw rows of controlled and stock (not judged
    // without --raw). A slower stock makes controlled look faster against it: the verdict says
    // what moved against what.
    for (id, controlled, stock, expected, code, raw, raw_code) in [
        ("b-same", 600_000.0, 600_000.0, ["no_difference"; 3], NO_DIFFERENCE, ["no_difference"; 3], NO_DIFFERENCE),
        (
            "b-fast",
            540_000.0,
            600_000.0,
            ["faster", "faster", "no_difference"],
            FASTER,
            ["faster", "faster", "no_difference"],
            FASTER,
        ),
        (
            "b-slow",
            600_000.0,
            690_000.0,
            ["faster", "no_difference", "slower"],
            FASTER,
            ["faster", "no_difference", "slower"],
            SLOWER,
        ),
    ] {
        let b = Synth::new(id, vec![(HEADLINE, controlled, stock)]).measured().write(tmp.path());
        let run = compare(&[&a, &b.join("session.json"), &"--format", &"json"]);
        assert_eq!(run.code, code, "{id}: {}", run.stderr);
        let j = json_of(&run);
        let rows = j["rows"].as_array().unwrap();
        assert_eq!(rows[0]["outcome"]["decision"]["verdict"], expected[0], "{id}");
        assert_eq!((rows[1]["judged"].clone(), rows[2]["judged"].clone()), (json!(false), json!(false)), "{id}");
        assert_eq!(j["kind"], "across_sessions");
        assert_eq!(
            (rows[0]["adapter"].clone(), rows[0]["basis"].clone(), rows[0]["against"].clone()),
            (json!("controlled"), json!("against_reference"), json!("stock"))
        );
        assert_eq!((rows[1]["adapter"].clone(), rows[1]["basis"].clone()), (json!("controlled"), json!("raw")));
        assert_eq!((rows[2]["adapter"].clone(), rows[2]["basis"].clone()), (json!("stock"), json!("raw")));
        assert_eq!(rows[0]["numerator"]["label"], "B");

        let judged = compare(&[&a, &b, &"--raw", &"--format", &"json"]);
        assert_eq!(judged.code, raw_code, "{id} --raw: {}", judged.stderr);
        assert_eq!(verdicts(&judged), raw, "{id} --raw");
        // Three runs a side: the raw rows are tested on the run means, one unit per run.
        let raw_decision = &json_of(&judged)["rows"][1]["outcome"]["decision"];
        assert_eq!(
            (raw_decision["rule"].clone(), raw_decision["units"].clone()),
            (json!("run_means"), json!(6)),
            "{id}"
        );
    }
    let table = compare(&[&a, &tmp.path().join("b-slow")]);
    assert!(table.stdout.contains("not judged (raw; --raw judges it)"), "{}", table.stdout);
}

#[test]
fn across_sessions_uses_both_sessions_aa_pairs_and_lists_unshared_cells() {
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Synth::new("a", vec![(HEADLINE, 600_000.0, 600_000.0), (FIXED, 600_000.0, 600_000.0)]);
    a.aa = vec![(HEADLINE, Adapter::Controlled, (0.98, 1.03))];
    let mut b = Synth::new("b", vec![(HEADLINE, 600_000.0, 600_000.0), (REFERENCE, 600_000.0, 600_000.0)]);
    b.aa = vec![(HEADLINE, Adapter::Controlled, (0.97, 1.02))];
    let run = compare(&[&a.write(tmp.path()), &b.write(tmp.path()), &"--format", &"json"]);
    assert_eq!(run.code, NO_DIFFERENCE, "{}", run.stderr);
    let j = json_of(&run);
    let labels: Vec<&str> =
        j["rows"][0]["outcome"]["aa"].as_array().unwrap().iter().map(|a| a["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["A controlled", "B controlled"]);
    assert_eq!(j["rows"][0]["outcome"]["decision"]["rule"], "session_difference");
    // Rows 1 and 2 are the raw rows of controlled and stock; stock has no A/A pair anywhere.
    assert_eq!(j["rows"][2]["adapter"], "stock");
    assert_eq!(j["rows"][2]["outcome"]["aa"], json!([]));
    assert_eq!(j["only_in_a"], json!([FIXED]));
    assert_eq!(j["only_in_b"], json!([REFERENCE]));
}

/// Writes a copy of workloads.json with `edit` applied; returns its path and digest.
fn manifest_copy(dir: &Path, name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> (PathBuf, Sha256Digest) {
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(util::repo_root().join("workloads.json")).unwrap()).unwrap();
    edit(&mut value);
    let bytes = serde_json::to_vec_pretty(&value).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, &bytes).unwrap();
    (path, Sha256Digest::of_bytes(&bytes))
}

#[test]
fn across_sessions_refuses_every_kind_of_difference() {
    let tmp = tempfile::tempdir().unwrap();
    let base = || Synth::new("a", vec![(HEADLINE, 600_000.0, 600_000.0)]).measured();
    let a = base().write(tmp.path());
    let other_manifest = manifest_copy(tmp.path(), "other.json", |m| m["run_policy"]["measured_requests"] = json!(21));
    let other_model = manifest_copy(tmp.path(), "model.json", |m| {
        m["cases"]["tiny-qwen3"]["files"]["model.safetensors"] = json!(digest("other weights").to_hex())
    });
    let (same_manifest_path, same_manifest_digest) = manifest_copy(tmp.path(), "same.json", |_| {});
    let a_on_disk = {
        let mut s = base();
        s.id = "a-disk";
        (s.manifest_path, s.manifest_sha256) = (same_manifest_path, same_manifest_digest);
        s.write(tmp.path())
    };
    type Edit = Box<dyn Fn(&mut Synth)>;
    let cases: Vec<(&str, &Path, Edit, &str)> = vec![
        (
            "manifest",
            a.as_path(),
            Box::new(|s: &mut Synth| s.manifest_sha256 = digest("manifest 2")),
            "manifest_sha256",
        ),
        ("libmlx", a.as_path(), Box::new(|s: &mut Synth| s.ids.libmlx = "libmlx-b"), "libmlx_sha256"),
        (
            "controlled sources",
            a.as_path(),
            Box::new(|s: &mut Synth| s.ids.controlled_sources = "controlled-src-b"),
            "worker_sources_sha256 (controlled)",
        ),
        (
            "stock sources",
            a.as_path(),
            Box::new(|s: &mut Synth| s.ids.stock_sources = "stock-src-b"),
            "worker_sources_sha256 (stock)",
        ),
        ("host", a.as_path(), Box::new(|s: &mut Synth| s.host = "bench-2"), "host: bench-1 vs bench-2"),
        (
            "unpinned",
            a.as_path(),
            Box::new(|s: &mut Synth| s.replaced_stock = Some("/x/python /x/outside.py")),
            "pinned: pinned vs unpinned (the stock program was replaced by /x/python /x/outside.py)",
        ),
        (
            "model",
            a_on_disk.as_path(),
            Box::new(move |s: &mut Synth| (s.manifest_path, s.manifest_sha256) = other_model.clone()),
            "model tiny-qwen3: model.safetensors",
        ),
        (
            "manifest only",
            a_on_disk.as_path(),
            Box::new(move |s: &mut Synth| (s.manifest_path, s.manifest_sha256) = other_manifest.clone()),
            "manifest_sha256",
        ),
    ];
    for (name, a_dir, edit, field) in cases {
        let mut b = base();
        b.id = "b";
        edit(&mut b);
        let b_dir = tmp.path().join(format!("b-{}", name.replace(' ', "-")));
        std::fs::create_dir_all(&b_dir).unwrap();
        let b_dir = b.write(&b_dir);
        let run = compare(&[&a_dir, &b_dir]);
        assert_eq!(run.code, REFUSED, "{name}: {}{}", run.stdout, run.stderr);
        assert!(run.stdout.starts_with("refused: the sessions differ"), "{name}: {}", run.stdout);
        assert!(run.stdout.contains(field), "{name}: expected `{field}` in\n{}", run.stdout);
        assert!(!run.stdout.contains("verdict: no difference"), "{name}");
        if name == "manifest only" {
            // Same models under a different manifest: no model line.
            assert!(!run.stdout.contains("model tiny-qwen3"), "{}", run.stdout);
        }
        let json = compare(&[&a_dir, &b_dir, &"--format", &"json"]);
        assert_eq!(json.code, REFUSED);
        let j = json_of(&json);
        assert_eq!(
            (j["refused"].clone(), j["rows"].clone(), j["exit_code"].clone()),
            (json!(true), json!([]), json!(REFUSED))
        );

        let allowed = compare(&[&a_dir, &b_dir, &"--allow-mismatch"]);
        assert_eq!(allowed.code, NO_DIFFERENCE, "{name}: {}", allowed.stderr);
        let list = allowed.stdout.find(field).unwrap();
        assert!(list < allowed.stdout.find("verdict: no difference").unwrap(), "{}", allowed.stdout);
        assert!(allowed.stdout.starts_with("mismatch allowed (--allow-mismatch)"), "{}", allowed.stdout);
    }
}

/// An unpinned session beside a pinned one is refused, the unpinned one named on stderr with its
/// replaced program, whichever side it is on; two unpinned sessions (a replaced worker against
/// itself) compare as usual.
#[test]
fn an_unpinned_session_is_compared_only_with_another_unpinned_one() {
    let tmp = tempfile::tempdir().unwrap();
    let session = |id, replaced| {
        let mut s = Synth::new(id, vec![(HEADLINE, 600_000.0, 600_000.0)]).measured();
        s.replaced_stock = replaced;
        let dir = tmp.path().join(id);
        std::fs::create_dir_all(&dir).unwrap();
        s.write(&dir)
    };
    let pinned = session("pinned", None);
    let unpinned = session("unpinned", Some("/x/outside-worker --fast"));
    let why = "unpinned (the stock program was replaced by /x/outside-worker --fast)";
    for (a, b, side) in [(&unpinned, &pinned, "A"), (&pinned, &unpinned, "B")] {
        let run = compare(&[a, b]);
        assert_eq!(run.code, REFUSED, "{}{}", run.stdout, run.stderr);
        let named = format!("session {side} ({}) is {why}", unpinned.display());
        assert!(run.stderr.contains(&named), "expected `{named}` in\n{}", run.stderr);
        assert_eq!(mismatch_fields(&compare(&[a, b, &"--format", &"json"])), ["pinned"], "the one difference");
    }
    let alone = compare(&[&unpinned]);
    assert_ne!(alone.code, REFUSED, "one session is compared with itself: {}", alone.stderr);
    assert!(alone.stderr.contains(&format!("note: session A ({}) is {why}", unpinned.display())), "{}", alone.stderr);
    assert!(!compare(&[&pinned]).stderr.contains("unpinned"));
    let other_unpinned = session("unpinned-2", Some("/x/outside-worker --fast"));
    let run = compare(&[&unpinned, &other_unpinned]);
    assert_eq!(run.code, NO_DIFFERENCE, "{}{}", run.stdout, run.stderr);
    assert!(!run.stderr.contains("unpinned"), "{}", run.stderr);
}

/// Sessions on two pinned MLX environments: refused by default with the version difference and
/// the flag named; compared with `--across-versions`, the versions printed above the rows; and
/// any other difference still refuses under the flag.
#[test]
fn across_versions_names_the_version_difference_and_still_refuses_anything_else() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Synth::new("old", vec![(HEADLINE, 600_000.0, 600_000.0)]).measured().write(tmp.path());
    let newer = |id: &'static str| {
        let mut b = Synth::new(id, vec![(HEADLINE, 540_000.0, 600_000.0)]).measured();
        b.ids = Ids { libmlx: "libmlx-b", mlx: "0.32.4", lock: "lock-b", ..IDS };
        b
    };
    let b = newer("new").write(tmp.path());

    let refused = compare(&[&a, &b]);
    assert_eq!(refused.code, REFUSED, "{}", refused.stdout);
    for field in ["  - mlx_version: 0.32.2 vs 0.32.4", "  - lock_sha256: ", "  - libmlx_sha256: "] {
        assert!(refused.stdout.contains(field), "expected `{field}` in\n{}", refused.stdout);
    }
    assert!(refused.stdout.contains("--across-versions compares two MLX environments"), "{}", refused.stdout);
    assert!(
        refused.stdout.contains("MLX versions: A mlx 0.32.2, mlx_lm 0.32.2; B mlx 0.32.4, mlx_lm 0.32.2"),
        "{}",
        refused.stdout
    );

    let across = compare(&[&a, &b, &"--across-versions"]);
    assert_eq!(across.code, FASTER, "{}{}", across.stdout, across.stderr);
    assert!(!across.stdout.contains("refused"), "{}", across.stdout);
    let line = "MLX versions: A mlx 0.32.2, mlx_lm 0.32.2; B mlx 0.32.4, mlx_lm 0.32.2 \
                (--across-versions; differ in mlx_version, lock_sha256, libmlx_sha256)";
    assert!(across.stdout.contains(line), "{}", across.stdout);
    let j = json_of(&compare(&[&a, &b, &"--across-versions", &"--format", &"json"]));
    assert_eq!(j["mismatches"], json!([]));
    assert_eq!(j["versions"]["across_versions"], json!(true));
    let fields: Vec<&str> =
        j["versions"]["differences"].as_array().unwrap().iter().map(|m| m["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["mlx_version", "lock_sha256", "libmlx_sha256"]);
    assert_eq!(
        verdicts(&compare(&[&a, &b, &"--across-versions", &"--format", &"json"])),
        // Controlled against stock, then the two raw rows (not judged without --raw).
        ["faster", "inconclusive", "inconclusive"]
    );

    type Edit = Box<dyn Fn(&mut Synth)>;
    let others: Vec<(&str, Edit, &str)> = vec![
        ("host", Box::new(|s: &mut Synth| s.host = "bench-2"), "  - host: bench-1 vs bench-2"),
        ("manifest", Box::new(|s: &mut Synth| s.manifest_sha256 = digest("manifest 2")), "  - manifest_sha256: "),
        (
            "sources",
            Box::new(|s: &mut Synth| s.ids.stock_sources = "stock-src-b"),
            "  - worker_sources_sha256 (stock): ",
        ),
    ];
    for (name, edit, field) in others {
        let mut b = newer("new-other");
        edit(&mut b);
        let dir = tmp.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let run = compare(&[&a, &b.write(&dir), &"--across-versions"]);
        assert_eq!(run.code, REFUSED, "{name}: {}", run.stdout);
        assert!(run.stdout.contains(field), "{name}: expected `{field}` in\n{}", run.stdout);
        assert!(
            !run.stdout.contains("  - mlx_version"),
            "{name}: the asked-for difference is not a mismatch\n{}",
            run.stdout
        );
    }
}

#[test]
fn a_manifest_that_changed_since_the_session_makes_the_model_check_unknown() {
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Synth::new("a", vec![(HEADLINE, 600_000.0, 600_000.0)]);
    a.manifest_path = tmp.path().join("gone.json");
    let mut b = Synth::new("b", vec![(HEADLINE, 600_000.0, 600_000.0)]);
    b.manifest_sha256 = digest("manifest 2");
    let run = compare(&[&a.write(tmp.path()), &b.write(tmp.path())]);
    assert_eq!(run.code, REFUSED);
    assert!(run.stdout.contains("  - model tiny-qwen3: unknown (manifest "), "{}", run.stdout);
}

/// The files the repository's manifest pins for `case`.
fn pinned_files(case: &str) -> CaseFiles {
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(util::repo_root().join("workloads.json")).unwrap()).unwrap();
    let files = serde_json::from_value(manifest["cases"][case]["files"].clone()).unwrap();
    [(case.to_owned(), files)].into()
}

/// Sessions `a` and `b` of the headline cell, each under its own copy of the manifest (the two
/// differ in the run policy, not in the model files), each recording its model files; the
/// manifest copies are then removed, as on a machine the sessions were copied to.
fn sessions_recording_their_models(dir: &Path) -> (SessionReport, SessionReport) {
    let manifest_a = manifest_copy(dir, "manifest-a.json", |_| {});
    let manifest_b = manifest_copy(dir, "manifest-b.json", |m| m["run_policy"]["measured_requests"] = json!(21));
    let session = |id, (path, sha256): &(PathBuf, Sha256Digest)| {
        let mut s = Synth::new(id, vec![(HEADLINE, 600_000.0, 600_000.0)]).measured();
        (s.manifest_path, s.manifest_sha256) = (path.clone(), *sha256);
        s.model_files = Some(pinned_files("tiny-qwen3"));
        s.report()
    };
    let (a, b) = (session("a", &manifest_a), session("b", &manifest_b));
    std::fs::remove_file(&manifest_a.0).unwrap();
    std::fs::remove_file(&manifest_b.0).unwrap();
    (a, b)
}

fn mismatch_fields(run: &Run) -> Vec<String> {
    json_of(run)["mismatches"].as_array().unwrap().iter().map(|m| m["field"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn recorded_model_files_are_compared_without_the_manifests_on_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = sessions_recording_their_models(tmp.path());
    let (a_dir, b_dir) = (write_session(tmp.path(), &a), write_session(tmp.path(), &b));

    // The models are known from the sessions and equal: what differs is the manifest alone
    // (a difference of its own, req/compare.md §3), and --allow-mismatch goes on to a verdict.
    let run = compare(&[&a_dir, &b_dir, &"--format", &"json"]);
    assert_eq!(run.code, REFUSED, "{}", run.stderr);
    assert_eq!(mismatch_fields(&run), vec!["manifest_sha256"], "{}", run.stdout);
    let allowed = compare(&[&a_dir, &b_dir, &"--allow-mismatch"]);
    assert_eq!(allowed.code, NO_DIFFERENCE, "{}{}", allowed.stdout, allowed.stderr);
    assert!(!allowed.stdout.contains("model tiny-qwen3"), "{}", allowed.stdout);

    // The same sessions as version 1 wrote them (no `model_files`, no `workers[].aa`) still load,
    // and fall back to the manifests, which are gone: the model check is unknown.
    let legacy = |report: &SessionReport| {
        let mut value = serde_json::to_value(report).unwrap();
        value.as_object_mut().unwrap().remove("model_files").unwrap();
        for worker in value["workers"].as_array_mut().unwrap() {
            worker.as_object_mut().unwrap().remove("aa").unwrap();
        }
        value["schema_version"] = json!(1);
        write_value(tmp.path(), &format!("v1-{}", report.session_id), &value)
    };
    let run = compare(&[&legacy(&a), &legacy(&b), &"--format", &"json"]);
    assert_eq!(run.code, REFUSED, "{}", run.stderr);
    assert_eq!(mismatch_fields(&run), vec!["manifest_sha256", "model tiny-qwen3"], "{}", run.stdout);
    let model = &json_of(&run)["mismatches"][1];
    assert!(model["a"].as_str().unwrap().starts_with("unknown (manifest "), "{model}");
}

#[test]
fn a_model_digest_changed_in_session_json_refuses_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = sessions_recording_their_models(tmp.path());
    let weights = a.model_files.as_ref().unwrap()["tiny-qwen3"]["model.safetensors"].to_hex();
    let other = "1".repeat(64);
    let mut b = serde_json::to_value(&b).unwrap();
    b["model_files"]["tiny-qwen3"]["model.safetensors"] = json!(other);
    let (a_dir, b_dir) = (write_session(tmp.path(), &a), write_value(tmp.path(), "b-other-weights", &b));

    let run = compare(&[&a_dir, &b_dir]);
    assert_eq!(run.code, REFUSED, "{}", run.stderr);
    assert!(
        run.stdout.contains(&format!("  - model tiny-qwen3: model.safetensors: {weights} vs {other}")),
        "{}",
        run.stdout
    );
    let json = compare(&[&a_dir, &b_dir, &"--format", &"json"]);
    assert_eq!(
        mismatch_fields(&json),
        vec!["manifest_sha256", "model tiny-qwen3: model.safetensors"],
        "{}",
        json.stdout
    );
    let allowed = compare(&[&a_dir, &b_dir, &"--allow-mismatch"]);
    assert_eq!(allowed.code, NO_DIFFERENCE, "{}", allowed.stderr);
    assert!(allowed.stdout.contains("model tiny-qwen3: model.safetensors"), "{}", allowed.stdout);
}

// ---------------------------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------------------------

#[test]
fn bad_input_is_exit_2_with_the_path_and_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = compare(&[&tmp.path().join("nope")]);
    assert_eq!(missing.code, BAD_INPUT);
    assert!(
        missing.stderr.contains("failed to read session report") && missing.stderr.contains("nope"),
        "{}",
        missing.stderr
    );

    let garbage = tmp.path().join("garbage.json");
    std::fs::write(&garbage, "{not json").unwrap();
    let run = compare(&[&garbage]);
    assert_eq!(run.code, BAD_INPUT);
    assert!(run.stderr.contains("failed to parse session report"), "{}", run.stderr);

    let mut value = serde_json::to_value(Synth::new("v", vec![(HEADLINE, 1.0, 1.0)]).report()).unwrap();
    value["schema_version"] = json!(99);
    let future = tmp.path().join("future.json");
    std::fs::write(&future, value.to_string()).unwrap();
    let run = compare(&[&future]);
    assert_eq!(run.code, BAD_INPUT);
    assert!(
        run.stderr.contains("schema_version: expected 1 or 2 or 3 or 4 or 5 or 6 or 7 or 8, got 99"),
        "{}",
        run.stderr
    );

    let ok = Synth::new("ok", vec![(HEADLINE, 600_000.0, 600_000.0)]).write(tmp.path());
    let run = compare(&[&ok, &"--margin", &"1.5"]);
    assert_eq!(run.code, BAD_INPUT);
    assert!(
        run.stderr.contains("invalid setting `margin`: expected a fraction strictly between 0 and 1, got 1.5"),
        "{}",
        run.stderr
    );

    let mut empty = Synth::new("empty", vec![(HEADLINE, 600_000.0, 600_000.0)]).report();
    for w in &mut empty.workers {
        w.validation_errors.push("bad".to_owned());
    }
    let run = compare(&[&write_session(tmp.path(), &empty)]);
    assert_eq!(run.code, BAD_INPUT);
    assert!(run.stderr.contains("nothing to compare"), "{}", run.stderr);

    // A reference-pair cell runs once: one request a side, nothing to test.
    let only_reference = Synth::new("ref", vec![(REFERENCE, 600_000.0, 600_000.0)]).write(tmp.path());
    let run = compare(&[&only_reference]);
    assert_eq!(run.code, BAD_INPUT);
    assert!(run.stderr.contains("no cell could be compared"), "{}", run.stderr);
}

// ---------------------------------------------------------------------------------------------
// Formats
// ---------------------------------------------------------------------------------------------

fn format_fixture(tmp: &Path) -> (PathBuf, PathBuf) {
    let mut a = Synth::new(
        "session-a",
        vec![(HEADLINE, 590_000.0, 610_000.0), (FIXED, 600_000.0, 600_000.0), (REFERENCE, 600_000.0, 600_000.0)],
    );
    a.aa = vec![(HEADLINE, Adapter::Controlled, (0.985, 1.012)), (HEADLINE, Adapter::Stock, (0.99, 1.004))];
    let b = Synth::new("session-b", vec![(HEADLINE, 560_000.0, 612_000.0), (FIXED, 600_000.0, 640_000.0)]);
    (a.write(tmp), b.write(tmp))
}

#[test]
fn snapshot_table_and_markdown() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = format_fixture(tmp.path());
    let within = compare(&[&a]);
    assert_eq!(within.code, FASTER, "{}", within.stderr);
    insta::assert_snapshot!("within_table", within.stdout);
    insta::assert_snapshot!("within_markdown", compare(&[&a, &"--format", &"markdown"]).stdout);
    let across = compare(&[&a, &b]);
    assert_eq!(across.code, FASTER, "{}", across.stderr);
    insta::assert_snapshot!("across_table", across.stdout);
    insta::assert_snapshot!("across_markdown", compare(&[&a, &b, &"--format", &"markdown"]).stdout);

    let mut host = Synth::new("session-c", vec![(HEADLINE, 590_000.0, 610_000.0)]);
    host.host = "bench-2";
    let c = host.write(tmp.path());
    insta::assert_snapshot!("refused_table", compare(&[&a, &c]).stdout);
    insta::assert_snapshot!(
        "allowed_markdown",
        compare(&[&a, &c, &"--allow-mismatch", &"--format", &"markdown"]).stdout
    );
}

#[test]
fn csv_has_one_line_per_row_and_json_has_a_schema_version() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = format_fixture(tmp.path());
    let csv = compare(&[&a, &b, &"--format", &"csv"]);
    let lines: Vec<&str> = csv.stdout.lines().collect();
    assert_eq!(lines.len(), 1 + 6, "two shared cells, three rows each: {}", csv.stdout);
    assert!(lines[0].starts_with("cell,mode,quantity,adapter,basis,against,numerator,denominator,"));
    let header: Vec<&str> = lines[0].split(',').collect();
    for line in &lines[1..] {
        assert_eq!(line.split(',').count(), header.len(), "{line}");
    }
    assert!(
        lines[1].starts_with(&format!("{HEADLINE},headline,per_token,controlled,against_reference,stock,B,A,")),
        "{}",
        lines[1]
    );
    assert!(lines[4].starts_with(&format!("{FIXED},fixed_continuation,per_token,")), "{}", lines[4]);
    assert!(lines[4].contains(",faster,"), "controlled against a slower stock: {}", lines[4]);
    assert_eq!(csv.code, FASTER);

    let j = json_of(&compare(&[&a, &b, &"--format", &"json"]));
    assert_eq!(j["schema_version"], 4);
    assert_eq!(j["energy"], serde_json::json!([]), "sessions without an energy source have no energy rows");
    assert_eq!(j["a"]["session_id"], "session-a");
    assert_eq!(j["b"]["session_id"], "session-b");
}

/// The CI outputs of a comparison that finds a slowdown: the step summary leads with the verdict
/// and the row that decided it; the JUnit file, read back by an independent parser, has that row
/// as its one failing case and the rest skipped or passed, with the counts the Jenkins schema
/// allows; BMF carries the ratio with its interval.
#[test]
fn ci_formats_carry_a_slowdown() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Synth::new("session-a", vec![(HEADLINE, 600_000.0, 600_000.0), (FIXED, 600_000.0, 600_000.0)])
        .write(tmp.path());
    let b = Synth::new("session-b", vec![(HEADLINE, 660_000.0, 600_000.0), (FIXED, 600_000.0, 600_000.0)])
        .write(tmp.path());
    let slowed = format!("{HEADLINE} controlled vs stock");

    let github = compare(&[&a, &b, &"--format", &"github"]);
    assert_eq!(github.code, SLOWER, "{}", github.stderr);
    let mut lines = github.stdout.lines();
    assert_eq!(lines.next(), Some("## :x: decode-baseline: slower (exit 11)"), "{}", github.stdout);
    assert!(github.stdout.contains("Decided by 1 row(s), each slower:"), "{}", github.stdout);
    assert!(github.stdout.contains(&format!("- `{slowed}`: ratio 1.100 [")), "{}", github.stdout);
    assert!(github.stdout.contains("detectable size: differences of ±"), "{}", github.stdout);
    assert!(github.stdout.contains("<details><summary>all rows</summary>"), "{}", github.stdout);

    let junit = compare(&[&a, &b, &"--format", &"junit"]);
    assert_eq!(junit.code, SLOWER, "{}", junit.stderr);
    let report =
        quick_junit::Report::deserialize_from_str(&junit.stdout).unwrap_or_else(|e| panic!("{e}\n{}", junit.stdout));
    assert_eq!(report.test_suites.len(), 1);
    let suite = &report.test_suites[0];
    assert_eq!((suite.tests, suite.failures, suite.errors), (6, 1, 0), "{}", junit.stdout);
    let failed: Vec<_> = suite
        .test_cases
        .iter()
        .filter(|c| matches!(c.status, quick_junit::TestCaseStatus::NonSuccess { .. }))
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].name.as_str(), slowed);
    let quick_junit::TestCaseStatus::NonSuccess { kind, message, .. } = &failed[0].status else { unreachable!() };
    assert_eq!(*kind, quick_junit::NonSuccessKind::Failure);
    let message = message.as_ref().map(|m| m.as_str().to_owned()).unwrap_or_default();
    assert!(message.starts_with("slower: ratio 1.100 ["), "{message}");
    let skipped =
        suite.test_cases.iter().filter(|c| matches!(c.status, quick_junit::TestCaseStatus::Skipped { .. })).count();
    assert_eq!(skipped, 4, "the raw rows are not judged: {}", junit.stdout);
    // What the Jenkins schema (junit-10.xsd) requires and forbids, checked on the XML itself.
    let doc = roxmltree::Document::parse(&junit.stdout).unwrap();
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(root.attribute("skipped"), None, "junit-10.xsd has no `skipped` on <testsuites>");
    for case in doc.descendants().filter(|n| n.has_tag_name("testcase")) {
        assert!(case.attribute("name").is_some());
        assert!(case.children().all(|c| !c.has_tag_name("properties")), "junit-10.xsd: no properties on a test case");
    }
    let suite = root.children().find(|n| n.has_tag_name("testsuite")).unwrap();
    for required in ["name", "tests", "failures", "errors"] {
        assert!(suite.attribute(required).is_some(), "<testsuite> without {required}");
    }

    let bmf: serde_json::Value = serde_json::from_str(&compare(&[&a, &b, &"--format", &"bmf"]).stdout).unwrap();
    let ratio = &bmf[&slowed]["ratio"];
    let (value, lower, upper) = (
        ratio["value"].as_f64().unwrap(),
        ratio["lower_value"].as_f64().unwrap(),
        ratio["upper_value"].as_f64().unwrap(),
    );
    assert!(lower <= value && value <= upper && lower > 1.0, "{bmf}");
    assert!((value - 1.1).abs() < 0.01, "{bmf}");
    let latency = bmf[&slowed]["latency"]["value"].as_f64().unwrap();
    assert!((latency - 660_000.0).abs() < 100.0, "B's median per-token time, in ns: {bmf}");

    // A refused comparison is one case in error listing what differs.
    let mut other = Synth::new("session-c", vec![(HEADLINE, 600_000.0, 600_000.0)]);
    other.host = "bench-2";
    let c = other.write(tmp.path());
    let refused = compare(&[&a, &c, &"--format", &"junit"]);
    assert_eq!(refused.code, REFUSED);
    let report = quick_junit::Report::deserialize_from_str(&refused.stdout).unwrap();
    let case = &report.test_suites[0].test_cases[0];
    assert_eq!((case.name.as_str(), report.test_suites[0].errors), ("identity", 1));
    assert!(refused.stdout.contains("bench-2"), "{}", refused.stdout);
}

// ---------------------------------------------------------------------------------------------
// Plots
// ---------------------------------------------------------------------------------------------

fn plot(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Run {
    let mut cmd = Command::new(util::binary());
    cmd.arg("plot");
    for a in args {
        cmd.arg(a);
    }
    let out = util::run(&mut cmd);
    Run { code: out.status.code().expect("exited"), stdout: util::stdout(&out), stderr: util::stderr(&out) }
}

#[test]
fn plot_writes_step_and_distribution_figures_next_to_the_session() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, _) = format_fixture(tmp.path());
    let run = plot(&[&a]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for cell in [HEADLINE, FIXED, REFERENCE] {
        for kind in ["steps", "distribution"] {
            let path = a.join(format!("{cell}.{kind}.svg"));
            let svg = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(svg.starts_with("<?xml") && svg.trim_end().ends_with("</svg>"), "{}", path.display());
            assert!(svg.contains(cell) && svg.contains("controlled") && svg.contains("stock"));
            assert!(run.stdout.contains(&path.display().to_string()));
        }
    }
    let headline = std::fs::read_to_string(a.join(format!("{HEADLINE}.steps.svg"))).unwrap();
    // Two bands and two median lines; 12 measured requests in each of 3 runs.
    assert_eq!(headline.matches("<polygon").count(), 2 + 2, "bands plus the legend's band swatches");
    assert!(headline.contains("controlled 36, stock 36"), "{headline}");
    // Nothing else in the folder but session.json and the figures (no temp files left).
    let mut names: Vec<String> =
        std::fs::read_dir(&a).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names.len(), 1 + 6, "{names:?}");
}

#[test]
fn plot_roofline_fraction_and_invalid_cell() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = Synth::new("roof", vec![(HEADLINE, 600_000.0, 620_000.0)]).write(tmp.path());
    let out = tmp.path().join("figures");
    // A step reads every tensor but the untied embedding, of which it reads one row.
    let file = std::fs::read(util::repo_root().join("fixtures/tiny-qwen3/model.safetensors")).unwrap();
    let header_len = u64::from_le_bytes(file[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&file[8..8 + header_len]).unwrap();
    let embed = &header["model.embed_tokens.weight"];
    let (offsets, vocab) = (&embed["data_offsets"], embed["shape"][0].as_f64().unwrap());
    let embed_bytes = offsets[1].as_f64().unwrap() - offsets[0].as_f64().unwrap();
    let weights = (file.len() - 8 - header_len) as f64 - embed_bytes + embed_bytes / vocab;
    // At 10 GB/s the ceiling at position p is 1e10 / (W + 512 p) tokens/s (about 16 000 in the
    // middle of the 40 steps, p = 36.5); 600 µs a step is 1666.7 tokens/s, about 10 %.
    let run = plot(&[&dir, &"--out", &out, &"--peak-bandwidth-gbs", &"10"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bytes_line = format!("roofline {HEADLINE}: {:.3} MB of weights per step", weights / 1e6);
    assert!(run.stdout.contains(&bytes_line), "{bytes_line:?} in {}", run.stdout);
    let svg = std::fs::read_to_string(out.join(format!("{HEADLINE}.roofline.svg"))).unwrap();
    assert!(svg.contains("decode against the memory-bandwidth roofline"), "{svg}");
    let expected = 1e9 / 600_000.0 / (1e10 / (weights + 512.0 * 36.5)) * 100.0;
    let line = run.stdout.lines().find(|l| l.starts_with(&format!("roofline {HEADLINE} controlled"))).unwrap();
    let median: f64 = line.split(": ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!((median - expected).abs() / expected < 0.01, "{line}: expected about {expected:.2} %");
    assert!(!line.contains("INVALID"));
    assert!(!dir.join(format!("{HEADLINE}.steps.svg")).exists(), "--out puts figures elsewhere");

    // 0.001 GB/s: the ceiling is 1.5 tokens/s and the loop does 1666: impossible, so invalid.
    let run = plot(&[&dir, &"--out", &out, &"--peak-bandwidth-gbs", &"0.001"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("INVALID"), "{}", run.stdout);
    let svg = std::fs::read_to_string(out.join(format!("{HEADLINE}.roofline.svg"))).unwrap();
    assert!(svg.contains("INVALID, a step came above the bandwidth ceiling"));

    let bad = plot(&[&dir, &"--peak-bandwidth-gbs", &"-3"]);
    assert_eq!(bad.code, BAD_INPUT, "{}", bad.stderr);
}

// ---------------------------------------------------------------------------------------------
// Recorded sessions: two sessions the real launcher ran back to back on the fixture (cells
// headline with an A/A pair, fixed-continuation, reference-pair; job tests/data/jobs/
// compare-small.json; shrunk by tests/data/sessions/strip.py).
// ---------------------------------------------------------------------------------------------

fn recorded(name: &str) -> PathBuf {
    util::repo_root().join("tests/data/sessions").join(name).join("session.json")
}

fn recorded_value(name: &str) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(recorded(name)).unwrap()).unwrap()
}

/// Writes `value` as `<dir>/<name>/session.json`, returning the folder.
fn write_value(dir: &Path, name: &str, value: &serde_json::Value) -> PathBuf {
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("session.json"), value.to_string()).unwrap();
    folder
}

/// Multiplies every step time of `adapter`'s workers by `factor`.
fn scale_steps(value: &mut serde_json::Value, adapter: &str, factor: f64) {
    for w in value["workers"].as_array_mut().unwrap() {
        if w["adapter"] != adapter {
            continue;
        }
        for q in w["report"]["requests"].as_array_mut().unwrap() {
            for s in q["steps"].as_array_mut().unwrap() {
                s["dur_ns"] = json!((s["dur_ns"].as_f64().unwrap() * factor).round() as u64);
            }
        }
    }
}

#[test]
fn recorded_back_to_back_sessions_show_no_verdict_either_way() {
    // Recorded on a loaded machine: the rows' errors are large (MDE 60–120 %), so neither a
    // difference nor its absence within ±3 % is shown.
    let run = compare(&[&recorded("back-to-back-a"), &recorded("back-to-back-b"), &"--format", &"json"]);
    assert_eq!(run.code, INCONCLUSIVE, "{}\n{}", run.stdout, run.stderr);
    let j = json_of(&run);
    assert_eq!(j["refused"], false);
    let all = j["rows"].as_array().unwrap();
    assert_eq!(all.len(), 12, "3 cells × (controlled against stock, raw controlled, raw stock), + the headline's TTFT");
    // Time to first token: one worker run a side, so no verdict, whatever the figures.
    let ttft: Vec<&serde_json::Value> = all.iter().filter(|r| r["quantity"] == "first_token").collect();
    assert_eq!(ttft.len(), 3, "{ttft:?}");
    for row in ttft {
        assert_eq!(row["cell"], HEADLINE, "{row}");
        assert_eq!(row["outcome"]["decision"]["verdict"], "inconclusive", "{row}");
        assert_eq!(row["outcome"]["decision"]["run_effects_measured"], false, "{row}");
    }
    let rows: Vec<&serde_json::Value> = all.iter().filter(|r| r["quantity"] == "per_token").collect();
    for row in rows {
        let outcome = &row["outcome"];
        match row["mode"].as_str().unwrap() {
            // One request per adapter: nothing to bootstrap.
            "reference_pair" => assert_eq!(outcome["result"], "not_compared", "{row}"),
            _ if row["basis"] == "raw" => assert_eq!(row["judged"], false, "{row}"),
            mode => {
                assert_eq!(outcome["decision"]["verdict"], "inconclusive", "{row}");
                assert_eq!(outcome["decision"]["rule"], "session_difference", "{row}");
                assert!(outcome["decision"]["mde"].as_f64().unwrap() > 0.5, "{row}");
                // The headline cell's own A/A pairs of both adapters in both sessions; the
                // fixed-continuation cell has none, and the headline cell's stand in.
                let labels: Vec<&str> =
                    outcome["aa"].as_array().unwrap().iter().map(|a| a["label"].as_str().unwrap()).collect();
                let prefix = if mode == "headline" { String::new() } else { format!("{HEADLINE} ") };
                let expected: Vec<String> = ["A", "B"]
                    .iter()
                    .flat_map(|s| ["controlled", "stock"].map(|a| format!("{s} {prefix}{a}")))
                    .collect();
                assert_eq!(labels, expected, "{row}");
            }
        }
    }
}

#[test]
fn recorded_session_ratios_match_the_launchers_analysis() {
    let value = recorded_value("back-to-back-a");
    let run = compare(&[&recorded("back-to-back-a"), &"--format", &"json"]);
    let j = json_of(&run);
    let mut checked = 0;
    for row in j["rows"].as_array().unwrap().iter().filter(|r| r["quantity"] == "per_token") {
        let Some(ratio) = row["outcome"]["median_ratio"].as_object() else { continue };
        let cell = value["analysis"]["cells"].as_array().unwrap().iter().find(|c| c["cell"] == row["cell"]).unwrap();
        // Same measured requests, same seeded bootstrap: the same numbers, bit for bit.
        assert_eq!(json!(ratio), cell["ratio"], "{}", row["cell"]);
        assert_eq!(row["numerator"]["median_ns"], cell["adapters"]["controlled"]["per_token_ns"]["median"]);
        assert_eq!(row["denominator"]["median_ns"], cell["adapters"]["stock"]["per_token_ns"]["median"]);
        assert_eq!(row["numerator"]["requests"], 20);
        checked += 1;
    }
    assert_eq!(checked, 2, "headline and fixed-continuation");
    // The test's figures on this loaded session: controlled faster in the headline cell, slower
    // in the fixed-continuation one, each interval clear of 1; but the session ran one worker
    // per adapter, so its error cannot see run-to-run effects and neither row gets a verdict.
    // The A/A runs beside the headline row moved by more than its interval, which the table
    // warns about.
    assert_eq!(run.code, INCONCLUSIVE, "{}", run.stdout);
    assert_eq!(verdicts(&run), ["inconclusive", "inconclusive", "not_compared"]);
    for (row, below_one) in [(&j["rows"][0], true), (&j["rows"][1], false)] {
        let d = &row["outcome"]["decision"];
        let (lower, upper) = (d["ci"]["lower"].as_f64().unwrap(), d["ci"]["upper"].as_f64().unwrap());
        assert!(if below_one { upper < 1.0 } else { lower > 1.0 }, "{d}");
        assert!(d["p_value"].as_f64().unwrap() < 0.01, "{d}");
        assert_eq!((d["rule"].clone(), d["run_effects_measured"].clone()), (json!("request_medians"), json!(false)));
    }
    assert!(compare(&[&recorded("back-to-back-a")]).stdout.contains("warning: tiny-qwen3.tiny-qwen3-L16.headline"));
}

/// A noise profile of the recorded sessions' design (their host, libmlx, order and placement) in
/// the headline and fixed-continuation cells, every row (controlled/stock, and each adapter's
/// own times), as `calibrate` fits one: 20 sessions with no spread within them, whose estimates
/// spread by `sd` (the pairs) or `sd/√2` (each side, so that a row of two sides spreads by `sd`).
fn recorded_profile(dir: &Path, sd: f64) -> PathBuf {
    use decode_baseline_launcher::{noise_profiles, session::load_session};
    use decode_baseline_wire::compare::Quantity;
    use decode_baseline_wire::profile::{NoiseProfileFile, ProfiledDesign, TwoLevelFit, NOISE_PROFILE_SCHEMA_VERSION};
    let session = load_session(&recorded("back-to-back-a")).unwrap().report;
    let fit = TwoLevelFit {
        sessions: 20,
        runs_per_session: 1.0,
        units_per_run: 10.0,
        unit_var: 0.0,
        unit_df: 180.0,
        run_var: 0.0,
        run_df: 0.0,
        estimate_var: sd * sd,
        estimate_df: 19.0,
    };
    let designs = [HEADLINE, FIXED]
        .into_iter()
        .flat_map(|cell| ["controlled/stock", "controlled", "stock"].map(|pair| (cell, pair)))
        .map(|(cell, pair)| ProfiledDesign {
            design: noise_profiles::design_of(&session, cell),
            pair: pair.to_owned(),
            quantity: Quantity::PerToken,
            fit: TwoLevelFit { estimate_var: if pair.contains('/') { sd * sd } else { sd * sd / 2.0 }, ..fit.clone() },
            log_estimates: vec![0.0; 20],
            sessions: (0..20).map(|k| format!("aa-{k}")).collect(),
        })
        .collect();
    let file = NoiseProfileFile {
        schema_version: NOISE_PROFILE_SCHEMA_VERSION,
        written_utc: "2026-01-01T00:00:00Z".to_owned(),
        designs,
    };
    let path = dir.join("profile.json");
    noise_profiles::write(&path, &file).unwrap();
    path
}

#[test]
fn recorded_sessions_give_every_verdict_when_one_adapter_is_made_faster_or_slower() {
    let tmp = tempfile::tempdir().unwrap();
    let a = recorded("back-to-back-a");
    let profile = recorded_profile(tmp.path(), 0.1);
    // The factors are large because the sessions were recorded on a loaded 2-core machine: the
    // rows' smallest detectable differences are 60–120 %.
    for (name, factor, verdict, code) in [("fast", 0.2, "faster", FASTER), ("slow", 6.0, "slower", SLOWER)] {
        let mut b = recorded_value("back-to-back-b");
        scale_steps(&mut b, "controlled", factor);
        let b = write_value(tmp.path(), name, &b);
        let nc = "not_compared";
        let unjudged = "inconclusive";

        // Each session ran one worker per adapter: the intervals move clear of 1 with the
        // factor, but an error that cannot see run-to-run effects gives no verdict.
        let blind = compare(&[&a, &b, &"--format", &"json"]);
        assert_eq!(blind.code, INCONCLUSIVE, "{name}: {}", blind.stderr);
        assert_eq!(
            verdicts(&blind),
            vec![unjudged, unjudged, unjudged, unjudged, unjudged, unjudged, nc, nc, nc],
            "{name}"
        );
        let j = json_of(&blind);
        for row in [&j["rows"][0], &j["rows"][3]] {
            let d = &row["outcome"]["decision"];
            let (lower, upper) = (d["ci"]["lower"].as_f64().unwrap(), d["ci"]["upper"].as_f64().unwrap());
            assert!(if factor < 1.0 { upper < 1.0 } else { lower > 1.0 }, "{name}: {d}");
            assert_eq!(d["run_effects_measured"], false, "{name}: {d}");
        }
        let raw = compare(&[&a, &b, &"--raw", &"--format", &"json"]);
        assert_eq!(raw.code, INCONCLUSIVE, "{name} --raw: {}", raw.stderr);
        assert_eq!(
            verdicts(&raw),
            vec![unjudged, unjudged, unjudged, unjudged, unjudged, unjudged, nc, nc, nc],
            "{name} --raw"
        );

        // A noise profile of their design holds the run-to-run effects: every verdict.
        let run = compare(&[&a, &b, &"--noise-profile", &profile, &"--format", &"json"]);
        assert_eq!(run.code, code, "{name}: {}", run.stderr);
        let v = verdicts(&run);
        assert_eq!(v, vec![verdict, unjudged, unjudged, verdict, unjudged, unjudged, nc, nc, nc], "{name}");
        // The profile's error (sd 0.1 √2 across two sessions) is below these rows' own: they
        // keep their own, which the profile vouches for as holding run-to-run effects.
        let d = &json_of(&run)["rows"][0]["outcome"]["decision"];
        assert_eq!(
            (d["error"].clone(), d["profile"]["sessions"].clone(), d["run_effects_measured"].clone()),
            (json!("own"), json!(20), json!(true)),
            "{name}: {d}"
        );
        let raw = compare(&[&a, &b, &"--raw", &"--noise-profile", &profile, &"--format", &"json"]);
        assert_eq!(raw.code, code, "{name} --raw: {}", raw.stderr);
        // Stock's raw rows, unchanged between the sessions, are too noisy to show it unchanged.
        let unshown = "inconclusive";
        assert_eq!(
            verdicts(&raw),
            vec![verdict, verdict, unshown, verdict, verdict, unshown, nc, nc, nc],
            "{name} --raw"
        );
    }
}

#[test]
fn recorded_sessions_are_refused_for_each_identity_difference() {
    let tmp = tempfile::tempdir().unwrap();
    let a = recorded_value("back-to-back-a");
    let other = "0".repeat(64);
    type Edit<'a> = Box<dyn Fn(&mut serde_json::Value) + 'a>;
    let edits: Vec<(&str, Edit<'_>, &str)> = vec![
        ("manifest", Box::new(|v| v["manifest_sha256"] = json!(other)), "manifest_sha256"),
        ("host", Box::new(|v| v["host"]["hostname"] = json!("elsewhere")), "host"),
        (
            "libmlx",
            Box::new(|v| {
                for w in v["workers"].as_array_mut().unwrap() {
                    w["report"]["identity"]["libmlx_sha256"] = json!(other);
                }
            }),
            "libmlx_sha256",
        ),
        (
            "sources",
            Box::new(|v| {
                for w in v["workers"].as_array_mut().unwrap().iter_mut().filter(|w| w["adapter"] == "stock") {
                    w["report"]["identity"]["worker_sources_sha256"] = json!(other);
                }
            }),
            "worker_sources_sha256 (stock)",
        ),
    ];
    for (name, edit, field) in edits {
        let mut b = recorded_value("back-to-back-b");
        edit(&mut b);
        let b = write_value(tmp.path(), name, &b);
        let run = compare(&[&recorded("back-to-back-a"), &b]);
        assert_eq!(run.code, REFUSED, "{name}: {}", run.stdout);
        assert!(run.stdout.contains(&format!("  - {field}: ")), "{name}: {}", run.stdout);
        let allowed = compare(&[&recorded("back-to-back-a"), &b, &"--allow-mismatch"]);
        // Compared: the loaded recording shows neither a difference nor its absence.
        assert_eq!(allowed.code, INCONCLUSIVE, "{name}: {}", allowed.stdout);
    }

    // Models: point both sessions at manifests on disk that differ in one weight digest.
    let same = manifest_copy(tmp.path(), "same.json", |_| {});
    let other_model = manifest_copy(tmp.path(), "other-model.json", |m| {
        m["cases"]["tiny-qwen3"]["files"]["model.safetensors"] = json!("1".repeat(64))
    });
    let mut a2 = a.clone();
    (a2["manifest_path"], a2["manifest_sha256"]) = (json!(same.0), json!(same.1.to_hex()));
    let mut b2 = recorded_value("back-to-back-b");
    (b2["manifest_path"], b2["manifest_sha256"]) = (json!(other_model.0), json!(other_model.1.to_hex()));
    let run = compare(&[&write_value(tmp.path(), "a-model", &a2), &write_value(tmp.path(), "b-model", &b2)]);
    assert_eq!(run.code, REFUSED, "{}", run.stdout);
    assert!(run.stdout.contains("  - model tiny-qwen3: model.safetensors: "), "{}", run.stdout);

    // Within one session: stock on another libmlx than controlled.
    let mut within = a;
    for w in within["workers"].as_array_mut().unwrap().iter_mut().filter(|w| w["adapter"] == "stock") {
        w["report"]["identity"]["libmlx_sha256"] = json!(other);
    }
    let run = compare(&[&write_value(tmp.path(), "within", &within)]);
    assert_eq!(run.code, REFUSED, "{}", run.stdout);
    assert!(run.stdout.contains("  - libmlx_sha256: "), "{}", run.stdout);
}

#[test]
fn recorded_session_plots() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_value(tmp.path(), "a", &recorded_value("back-to-back-a"));
    let run = plot(&[&dir, &"--peak-bandwidth-gbs", &"20"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let steps = std::fs::read_to_string(dir.join(format!("{HEADLINE}.steps.svg"))).unwrap();
    assert!(steps.contains("controlled 20, stock 20"), "the A/A runs stay out of the figure");
    // 127 steps: the median polyline of each adapter has 127 points.
    let medians: Vec<usize> = steps
        .lines()
        .filter(|l| l.starts_with("<polyline") && l.contains("stroke-width=\"1.6\""))
        .map(|l| l.split("points=\"").nth(1).unwrap().split_whitespace().count())
        .collect();
    assert_eq!(medians, vec![127, 127]);
    let rooflines: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("roofline ")).collect();
    assert_eq!(rooflines.iter().filter(|l| l.contains("of the ceiling")).count(), 6, "{rooflines:?}");
    assert_eq!(rooflines.iter().filter(|l| l.contains("of weights per step")).count(), 3, "{rooflines:?}");
    assert!(!run.stdout.contains("INVALID"), "{}", run.stdout);
}

#[test]
fn a_cpu_session_against_a_cuda_one_is_refused_unless_across_devices() {
    let tmp = tempfile::tempdir().unwrap();
    let cells = vec![(HEADLINE, 600_000.0, 620_000.0)];
    let a = Synth::new("session-cpu", cells.clone()).measured().write(tmp.path());
    let mut cuda = Synth::new("session-cuda", cells).measured();
    cuda.device = Some(cuda_device());
    // The session JSON as a CUDA launcher writes it: backend and device in `device`, and each
    // worker's identity saying cuda and gpu.
    let mut report = cuda.report();
    for worker in &mut report.workers {
        let identity = worker.report.as_mut().unwrap().identity.as_mut().unwrap();
        identity.backend = Some(Backend::Cuda);
        identity.device = DeviceKind::Gpu;
    }
    let b = write_session(tmp.path(), &report);
    let written: serde_json::Value = serde_json::from_slice(&std::fs::read(b.join("session.json")).unwrap()).unwrap();
    assert_eq!(written["device"]["backend"], "cuda");
    assert_eq!(written["workers"][0]["report"]["identity"]["device"], "gpu");

    let refused = compare(&[&a, &b]);
    assert_eq!(refused.code, REFUSED, "{}", refused.stderr);
    assert!(refused.stdout.contains("backend: cpu vs cuda"), "{}", refused.stdout);
    assert!(
        refused.stdout.contains(
            "device: AMD EPYC 9B14 96-Core Processor vs NVIDIA H200, 150754820096 bytes, compute capability 9.0"
        ),
        "{}",
        refused.stdout
    );
    assert!(refused.stderr.contains("pass --across-devices"), "{}", refused.stderr);
    assert_eq!(mismatch_fields(&compare(&[&a, &b, &"--format", &"json"])), ["backend", "device"]);
    // --across-versions does not cover a device difference.
    assert_eq!(compare(&[&a, &b, &"--across-versions"]).code, REFUSED);

    let asked = compare(&[&a, &b, &"--across-devices"]);
    assert_ne!(asked.code, REFUSED, "{}", asked.stderr);
    assert!(
        asked.stdout.contains("devices (--across-devices): backend cpu vs cuda; device AMD EPYC"),
        "{}",
        asked.stdout
    );
    let json = compare(&[&a, &b, &"--across-devices", &"--format", &"json"]);
    assert!(mismatch_fields(&json).is_empty(), "{}", json.stdout);
    assert_eq!(json_of(&json)["device_differences"][0]["b"], "cuda");
}

#[test]
fn two_sessions_on_the_same_device_or_one_without_a_record_are_not_refused_for_it() {
    let tmp = tempfile::tempdir().unwrap();
    let cells = vec![(HEADLINE, 600_000.0, 620_000.0)];
    let a = Synth::new("session-a", cells.clone()).measured().write(tmp.path());
    let b = Synth::new("session-b", cells.clone()).measured().write(tmp.path());
    let mut old = Synth::new("session-old", cells).measured();
    old.device = None;
    let c = old.write(tmp.path());
    for other in [&b, &c] {
        let run = compare(&[&a, other, &"--format", &"json"]);
        assert_ne!(run.code, REFUSED, "{}", run.stderr);
        assert!(mismatch_fields(&run).is_empty(), "{}", run.stdout);
    }
}

#[test]
fn json_output_validates_against_the_committed_compare_schema() {
    let path = util::repo_root().join("schemas/compare.schema.json");
    let schema: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let (a, b) = (recorded("back-to-back-a"), recorded("back-to-back-b"));
    for args in [vec![&a as &dyn AsRef<std::ffi::OsStr>], vec![&a, &b]] {
        let run = compare(&[args.as_slice(), &[&"--format", &"json"]].concat());
        let output = json_of(&run);
        let errors: Vec<String> =
            validator.iter_errors(&output).map(|e| format!("{}: {e}", e.instance_path())).collect();
        assert!(errors.is_empty(), "{errors:#?}");
        // Closed at every level: a key the types do not write is refused.
        for pointer in ["", "/a", "/rows/0", "/rows/0/numerator", "/rows/0/outcome", "/rows/0/outcome/decision"] {
            let mut extra = output.clone();
            extra.pointer_mut(pointer).unwrap().as_object_mut().unwrap().insert("surprise".into(), json!(1));
            assert!(!validator.is_valid(&extra), "a new key at {pointer:?} is taken");
        }
    }
}

#[test]
fn sessions_of_different_placement_are_refused_unless_across_placements() {
    let tmp = tempfile::tempdir().unwrap();
    let cells = vec![(HEADLINE, 600_000.0, 620_000.0)];
    let with = |id, placement| {
        let mut synth = Synth::new(id, cells.clone()).measured();
        synth.placement = placement;
        synth.write(tmp.path())
    };
    let pinned = with("session-pinned", Some(("first", Some("0"))));
    let listed = with("session-listed", Some(("0", Some("0"))));
    let free = with("session-free", Some(("all", Some("0-1"))));
    let unrecorded = with("session-unrecorded", None);

    let refused = compare(&[&pinned, &free]);
    assert_eq!(refused.code, REFUSED, "{}", refused.stderr);
    assert!(refused.stdout.contains("placement: CPUs 0 vs CPUs 0-1"), "{}", refused.stdout);
    assert!(refused.stderr.contains("pass --across-placements"), "{}", refused.stderr);
    assert_eq!(mismatch_fields(&compare(&[&pinned, &free, &"--format", &"json"])), ["placement"]);
    // --across-devices does not cover a placement difference.
    assert_eq!(compare(&[&pinned, &free, &"--across-devices"]).code, REFUSED);

    let asked = compare(&[&pinned, &free, &"--across-placements", &"--format", &"json"]);
    assert_ne!(asked.code, REFUSED, "{}", asked.stderr);
    assert!(mismatch_fields(&asked).is_empty(), "{}", asked.stdout);
    assert!(asked.stderr.contains("placement differs (--across-placements)"), "{}", asked.stderr);

    // The same CPUs asked for in two ways are one placement.
    assert!(mismatch_fields(&compare(&[&pinned, &listed, &"--format", &"json"])).is_empty());
    // A session that recorded no placement is not a difference.
    assert!(mismatch_fields(&compare(&[&pinned, &unrecorded, &"--format", &"json"])).is_empty());
}

/// `calibrate --from` on two recorded sessions fits the headline cell's time-to-first-token
/// rows as well as the per-token ones, each entry on its own units, and `compare` judges the
/// TTFT rows with the TTFT entries, whose error holds run-to-run and session-to-session effects
/// that a one-run row's own error cannot see (`recorded_back_to_back_sessions_show_no_verdict_
/// either_way`: without a profile, these rows get no verdict).
#[test]
fn calibrate_fits_the_first_token_rows_and_compare_judges_ttft_with_them() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (recorded("back-to-back-a"), recorded("back-to-back-b"));
    let profile = tmp.path().join("profile.json");
    let out = Command::new(util::binary())
        .args(["calibrate", "--out"])
        .arg(&profile)
        .arg("--from")
        .args([&a, &b])
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{printed}{}", String::from_utf8_lossy(&out.stderr));
    let row = |name: &str| {
        printed.lines().any(|l| l.starts_with(HEADLINE) && l[HEADLINE.len()..].trim_start().starts_with(name))
    };
    assert!(row("controlled TTFT ") && row("stock TTFT "), "{printed}");
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&profile).unwrap()).unwrap();
    let entries = |quantity: &str| -> Vec<(String, String, f64)> {
        let designs = file["designs"].as_array().unwrap().iter().filter(|d| d["quantity"] == quantity);
        designs
            .map(|d| {
                let estimates = d["log_estimates"].as_array().unwrap();
                let mean = estimates.iter().map(|v| v.as_f64().unwrap()).sum::<f64>() / estimates.len() as f64;
                (d["design"]["cell"].as_str().unwrap().to_owned(), d["pair"].as_str().unwrap().to_owned(), mean)
            })
            .collect()
    };
    // The sessions ran one adapter after the other: one entry per adapter's own times, per token
    // in both timed cells, and the first tokens of the headline cell alone.
    let ttft = entries("first_token");
    let named: Vec<(&str, &str)> = ttft.iter().map(|(c, p, _)| (c.as_str(), p.as_str())).collect();
    assert_eq!(named, [(HEADLINE, "controlled"), (HEADLINE, "stock")], "{file}");
    let per_token = entries("per_token");
    assert_eq!(per_token.len(), 4, "{file}");
    // Each entry is of its own units: a first token (the 16-token prompt's prefill and a
    // forward) takes more than twice a decode step of the same adapter.
    for (cell, pair, first_token) in &ttft {
        let step = per_token.iter().find(|(c, p, _)| c == cell && p == pair).unwrap().2;
        assert!(*first_token > step + 2f64.ln(), "{pair}: ln first token {first_token}, ln step {step}");
    }

    let used = compare(&[&b, &a, &"--noise-profile", &profile, &"--format", &"json"]);
    assert!(used.stderr.contains("controlled TTFT fitted on 2 sessions of 1 runs"), "{}", used.stderr);
    let rows = json_of(&used)["rows"].as_array().unwrap().clone();
    let ttft_rows: Vec<&serde_json::Value> = rows.iter().filter(|r| r["quantity"] == "first_token").collect();
    assert_eq!(ttft_rows.len(), 3, "controlled against stock, and each adapter's own: {rows:?}");
    for row in ttft_rows {
        let decision = &row["outcome"]["decision"];
        // Tested with the TTFT entries (the larger of their error and the row's own), which
        // hold what one run a side cannot see.
        assert!(decision["profile"]["label"].as_str().unwrap().contains("TTFT fitted on"), "{row}");
        assert_eq!(decision["run_effects_measured"], true, "{row}");
    }
}

/// `calibrate --from` on three A/A sessions writes a profile of their spread, and `compare`
/// of a session of that design then names the profile and tests with it.
#[test]
fn calibrate_from_sessions_writes_a_profile_that_compare_uses() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions: Vec<PathBuf> = [("aa-0", 600_000.0), ("aa-1", 606_000.0), ("aa-2", 594_000.0)]
        .into_iter()
        .map(|(id, stock)| {
            let mut synth = Synth::new(id, vec![(HEADLINE, 600_000.0, stock)]).one_run();
            synth.placement = Some(("first", Some("0")));
            synth.write(tmp.path())
        })
        .collect();
    let profile = tmp.path().join("profiles/bench-1.json");
    let mut cmd = Command::new(util::binary());
    cmd.args(["calibrate", "--out"]).arg(&profile).arg("--from").args(&sessions);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&profile).unwrap()).unwrap();
    assert_eq!(file["schema_version"], 4);
    // One entry per row of the cell: each adapter's own times, and their pairs.
    let designs = file["designs"].as_array().unwrap();
    // The sessions ran one adapter after the other (no pairs): one entry per adapter's own times.
    let rows: Vec<&str> = designs.iter().map(|d| d["pair"].as_str().unwrap()).collect();
    assert_eq!(rows, ["controlled", "stock"], "{file}");
    let pairs = &designs[1];
    assert_eq!((pairs["design"]["placement"].clone(), pairs["design"]["cell"].clone()), (json!("0"), json!(HEADLINE)));
    assert_eq!(pairs["fit"]["runs_per_session"], 1.0, "the sessions' size: one run per adapter");
    assert_eq!(pairs["fit"]["run_df"], 0.0, "one run a session: the run part counts as session-level");
    let estimates: Vec<f64> = pairs["log_estimates"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(estimates.len(), 3);
    // Each session's estimate of stock's own times: ln 600 µs, ln 606 µs, ln 594 µs; controlled's
    // did not move.
    for (got, want) in estimates.iter().zip([600_000.0f64.ln(), 606_000.0f64.ln(), 594_000.0f64.ln()]) {
        assert!((got - want).abs() < 2e-3, "{estimates:?}");
    }
    assert!(pairs["fit"]["estimate_var"].as_f64().unwrap() > 0.005f64.powi(2), "{file}");
    assert_eq!(designs[0]["fit"]["estimate_var"], 0.0, "{file}");

    let used = compare(&[&sessions[0], &"--noise-profile", &profile, &"--format", &"json"]);
    assert!(
        used.stderr.contains("noise profile: ")
            && used.stderr.contains("controlled fitted on 3 sessions of 1 runs")
            && used.stderr.contains("stock fitted on 3 sessions of 1 runs"),
        "{}",
        used.stderr
    );
    let decision = &json_of(&used)["rows"][0]["outcome"]["decision"];
    assert_eq!(decision["error"], "profile", "{decision}");
    let df = decision["df"].as_f64().unwrap();
    // Sessions like those calibrated: nearly all of the variance is stock's spread, on K − 1.
    assert!((2.0..2.2).contains(&df), "t on about K − 1 degrees of freedom: {decision}");
    // One run per side, and still a verdict: the profile's error holds the run-to-run effects.
    assert_eq!(
        (decision["rule"].clone(), decision["run_effects_measured"].clone(), decision["verdict"].clone()),
        (json!("request_medians"), json!(true), json!("no_difference")),
        "{decision}"
    );
    assert_eq!(used.code, NO_DIFFERENCE, "{}", used.stderr);

    // Another placement is another design: the profile is not used, and the output says why.
    let mut other = Synth::new("other", vec![(HEADLINE, 600_000.0, 600_000.0)]).one_run();
    other.placement = Some(("all", Some("0-1")));
    let other = other.write(tmp.path());
    let unused = compare(&[&other, &"--noise-profile", &profile, &"--format", &"json"]);
    assert!(unused.stderr.contains("no entry for its design (placement 0-1, the profile's "), "{}", unused.stderr);
    let decision = &json_of(&unused)["rows"][0]["outcome"]["decision"];
    assert_eq!(decision["error"], "own");
    // Without it, the one-run row is shown equivalent by its own error and gets no verdict.
    assert_eq!(
        (decision["run_effects_measured"].clone(), decision["equivalent"].clone(), decision["verdict"].clone()),
        (json!(false), json!(true), json!("inconclusive")),
        "{decision}"
    );
    assert_eq!(unused.code, INCONCLUSIVE, "{}", unused.stderr);
}
