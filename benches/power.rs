//! The suite's power on this machine: how often `compare B A` calls identical code different
//! (false alarms), and how often it sees a 3 % slowdown of the controlled loop (detections),
//! for the non-interleaved (`alternate`) and the `interleaved` order, as a regression check uses it.
//!
//! ```sh
//! cargo bench --bench power                       # 10 pairs per order, 3 % slowdown
//! cargo bench --bench power -- --cell my-model.my-model-L512.headline --slowdown-pct 5
//! cargo bench --bench power -- --pairs 4 --slowdown-pct 5 --orders interleaved
//! cargo bench --bench power -- --hog              # a CPU hog started half-way instead
//! cargo bench --bench power -- --yardstick --pairs 10 --repetitions 2
//! cargo bench --bench power -- --yardstick --cpus all --until-decided 5m --slowdown-pct 10 --no-aa
//! ```
//!
//! With `--yardstick`, the regression check that holds the machine constant: the controlled loop
//! against itself under a second name (`controlled-b`, declared in `workloads.json`: this
//! build's `worker --as controlled-b`, as an older build would be declared beside the new one),
//! in one interleaved session, `controlled` the reference. Per pair: one session of identical
//! code (`compare` of that one session calling `controlled-b` faster or slower is a false
//! alarm), and one with `controlled-b` slowed by the percentage (a `slower` verdict is a
//! detection). The verdict is `compare`'s paired test within each session (A B / B A blocks,
//! `req/compare.md` §2). `--cpus LIST` places the workers (`run --cpus`, default `first`).
//! With `--until-decided BUDGET` each session is a sequential one (`run --until-decided
//! --budget BUDGET`) and its verdict is the launcher's Pocock decision (`session.json`'s
//! `sequential`), not `compare`'s fixed-sample test, whose level would not hold after the
//! looks; the pairs it took are printed. `--no-aa` runs the slowed sessions only. The
//! yardstick's spin is calibrated so that its realized effect is the stated percentage (see
//! `calibrate_spin`: a busy wait of `s` µs lengthens a step by about 2.5 `s` on one CPU and by
//! less than `s` on two); `--nominal-spin` spins `pct` of the calibration median instead, as
//! the other modes do; `--spin-us US` spins `US` and runs no trial (a spin an earlier series
//! measured: one trial session's estimate is about a point off, §39 of the findings).
//!
//! With `--hog`, per order: one session as it is, then one with a CPU hog (one spinning `sh`
//! per CPU) started half-way through it; prints each session's controlled/stock ratio with its
//! interval (paired for interleaved, of medians for the alternate order) and whether the table warned
//! that the host was busy.
//!
//! Per order: one calibration session measures the controlled loop's per-token median `m`; the
//! slowdown is `pct · m` microseconds per decode step, injected with the test-only slowdown
//! (`DECODE_BASELINE_TEST_SLOWDOWN_US`, recorded in every report it touches). Then, per pair,
//! three sessions of the tiny fixture's L16 headline cell with an A/A pair: `A`, `A'` (the same
//! code again) and `B` (controlled slowed). `compare A' A` is an A/A comparison: a `faster` or
//! `slower` verdict there is a false alarm. `compare B A` should say `slower` on the controlled
//! row against stock. Per adapter the median smallest detectable difference (MDE) `compare`
//! stated for that adapter's rows (controlled: its row against stock; stock: its raw row).
//!
//! **Realized effect.** The slowdown is nominal: `pct` of the calibration median, spun per step.
//! What the sessions saw is printed beside it: the median ratio of the slowed sessions over the
//! median ratio of the A/A ones, minus 1 (the ratios `compare` tested: controlled against stock
//! B over A, or `controlled-b` against `controlled` within one session).
//! Everything runs side by side in this one process, so the figures compare the two orders on
//! the same machine in the same minutes. Prints a table and writes `target/power.json`.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Instant,
};

use serde_json::{json, Value};

/// The cell measured unless `--cell` names another of the manifest's (a model added with
/// `manifest add-case` has its own).
const DEFAULT_CELL: &str = "tiny-qwen3.tiny-qwen3-L16.headline";

struct Options {
    cell: String,
    pairs: usize,
    slowdown_pct: f64,
    orders: Vec<String>,
    hog: bool,
    yardstick: bool,
    repetitions: u32,
    cpus: String,
    until_decided: Option<String>,
    aa: bool,
    nominal_spin: bool,
    spin_us: Option<u32>,
}

fn options() -> Options {
    let mut o = Options {
        cell: DEFAULT_CELL.to_owned(),
        pairs: 10,
        slowdown_pct: 3.0,
        orders: vec!["alternate".into(), "interleaved".into()],
        hog: false,
        yardstick: false,
        repetitions: 3,
        cpus: "first".into(),
        until_decided: None,
        aa: true,
        nominal_spin: false,
        spin_us: None,
    };
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--cell" => o.cell = value(),
            "--pairs" => o.pairs = value().parse().expect("--pairs: a whole number"),
            "--slowdown-pct" => o.slowdown_pct = value().parse().expect("--slowdown-pct: a number"),
            "--orders" => o.orders = value().split(',').map(str::to_owned).collect(),
            "--hog" => o.hog = true,
            "--yardstick" => o.yardstick = true,
            "--repetitions" => o.repetitions = value().parse().expect("--repetitions: a whole number"),
            "--cpus" => o.cpus = value(),
            "--until-decided" => o.until_decided = Some(value()),
            "--no-aa" => o.aa = false,
            "--nominal-spin" => o.nominal_spin = true,
            "--spin-us" => o.spin_us = Some(value().parse().expect("--spin-us: a whole number of microseconds")),
            other => panic!(
                "unknown argument {other:?}; expected --cell NAME, --pairs N, --slowdown-pct P, --orders a,b, --hog, --yardstick, \
                 --repetitions R, --cpus LIST, --until-decided BUDGET, --no-aa, --nominal-spin, --spin-us US"
            ),
        }
    }
    o
}

fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_decode-baseline"))
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The adapters of a session, the slowed one, the reference, the worker runs per adapter and
/// the `run` flags beyond `--job`.
struct Lineup {
    cell: String,
    adapters: &'static [&'static str],
    slowed: &'static str,
    reference: &'static str,
    repetitions: u32,
    run_flags: Vec<String>,
}

/// Controlled against stock, controlled slowed: the comparison of two sessions.
fn against_stock(o: &Options) -> Lineup {
    Lineup {
        cell: o.cell.clone(),
        adapters: &["controlled", "stock"],
        slowed: "controlled",
        reference: "stock",
        repetitions: o.repetitions,
        run_flags: vec![],
    }
}

/// Runs one session of the cell in `order`, the controlled loop slowed by `slowdown_us`;
/// returns the session folder and its wall time in seconds.
fn session(o: &Options, root: &Path, order: &str, name: &str, slowdown_us: u32) -> (PathBuf, f64) {
    session_with(root, order, name, slowdown_us, None, &against_stock(o)).0
}

/// As [`session`], with a CPU hog (one spinning shell per CPU) started `hog_after_s` into it;
/// also returns the summary table the launcher printed.
fn session_with(
    root: &Path,
    order: &str,
    name: &str,
    slowdown_us: u32,
    hog_after_s: Option<f64>,
    lineup: &Lineup,
) -> ((PathBuf, f64), String) {
    let out = root.join(name);
    let job = root.join(format!("{name}.json"));
    let body = json!({
        "schema_version": 1, "manifest": repo().join("workloads.json"), "cells": [lineup.cell],
        "adapters": lineup.adapters, "reference": lineup.reference, "output_root": out,
        "repetitions": lineup.repetitions, "order": order, "aa_pair": true
    });
    std::fs::write(&job, body.to_string()).unwrap();
    let mut cmd = Command::new(binary());
    cmd.args(["run", "--job"]).arg(&job).args(&lineup.run_flags).env("HF_HUB_OFFLINE", "1");
    if slowdown_us > 0 {
        cmd.env("DECODE_BASELINE_TEST_SLOWDOWN_US", slowdown_us.to_string())
            .env("DECODE_BASELINE_TEST_SLOWDOWN_ADAPTER", lineup.slowed);
    }
    let started = Instant::now();
    let child = cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let mut hogs = Vec::new();
    if let Some(after) = hog_after_s {
        std::thread::sleep(std::time::Duration::from_secs_f64(after));
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        for _ in 0..cpus {
            hogs.push(Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap());
        }
    }
    let result = child.wait_with_output().unwrap();
    for mut hog in hogs {
        let _ = hog.kill();
        let _ = hog.wait();
    }
    let wall = started.elapsed().as_secs_f64();
    assert!(result.status.success(), "session {name} failed: {}", String::from_utf8_lossy(&result.stderr));
    // The output root also holds the history of its sessions (`history.sqlite`).
    let dir = std::fs::read_dir(&out)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.join("session.json").is_file())
        .unwrap_or_else(|| panic!("session {name}: no session folder in {}", out.display()));
    ((dir, wall), String::from_utf8_lossy(&result.stdout).into_owned())
}

/// The session's controlled/stock ratio and interval: paired when interleaved.
fn session_ratio(session: &Path) -> (f64, f64, f64) {
    let value: Value = serde_json::from_slice(&std::fs::read(session.join("session.json")).unwrap()).unwrap();
    let cell = &value["analysis"]["cells"][0];
    let r = if cell["paired"]["controlled"].is_object() {
        &cell["paired"]["controlled"]
    } else {
        &cell["ratios"]["controlled"]
    };
    (r["ratio"].as_f64().unwrap(), r["ci"]["lower"].as_f64().unwrap(), r["ci"]["upper"].as_f64().unwrap())
}

/// `--hog`: each order quiet, then with a hog started half-way.
fn hog(o: &Options, root: &Path) {
    let mut results = Vec::new();
    for order in &o.orders {
        let ((quiet, wall), _) = session_with(root, order, &format!("{order}-quiet"), 0, None, &against_stock(o));
        let ((busy, _), table) =
            session_with(root, order, &format!("{order}-hog"), 0, Some(wall / 2.0), &against_stock(o));
        let (q, b) = (session_ratio(&quiet), session_ratio(&busy));
        let warned = table.contains("warning: host:");
        println!(
            "{order:<12} quiet {:.3} [{:.3}, {:.3}]   hog half-way {:.3} [{:.3}, {:.3}]   within the quiet interval: {}   table warned the host was busy: {warned}",
            q.0, q.1, q.2, b.0, b.1, b.2, b.0 >= q.1 && b.0 <= q.2
        );
        results.push(json!({"order": order, "quiet": [q.0, q.1, q.2], "hog": [b.0, b.1, b.2], "warned": warned,
            "quiet_session": quiet, "hog_session": busy}));
    }
    let path = repo().join("target/power-hog.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&results).unwrap()).unwrap();
    println!("\nwritten: {}", path.display());
}

/// `--yardstick`: per pair, an A/A session and a slowed one of `controlled` against
/// `controlled-b` interleaved, each judged by `compare` of that one session, or by the
/// launcher's sequential decision with `--until-decided`.
fn yardstick(o: &Options, root: &Path) {
    let mut run_flags = vec!["--cpus".to_owned(), o.cpus.clone()];
    if let Some(budget) = &o.until_decided {
        run_flags.extend(["--until-decided".to_owned(), "--budget".to_owned(), budget.clone()]);
    }
    let lineup = Lineup {
        cell: o.cell.clone(),
        adapters: &["controlled", "controlled-b"],
        slowed: "controlled-b",
        reference: "controlled",
        repetitions: o.repetitions,
        run_flags,
    };
    let run = |name: &str, slowdown_us| session_with(root, "interleaved", name, slowdown_us, None, &lineup);
    let (slowdown_us, spin_trials) = if let Some(us) = o.spin_us {
        (us, vec![])
    } else if o.nominal_spin {
        let ((calibration, _), _) = run("yardstick-calibration", 0);
        (nominal_spin_us(adapter_median_ns(&calibration, "controlled"), o.slowdown_pct), vec![])
    } else {
        calibrate_spin(o, root)
    };
    let judge = |(session, wall): (PathBuf, f64)| {
        let report = compare_within(&session);
        let row = report["rows"].as_array().unwrap().iter().find(|r| r["adapter"] == "controlled-b").unwrap().clone();
        let ratio = row["outcome"]["decision"]["ratio"].as_f64().unwrap_or(f64::NAN);
        let (verdict, pairs) = match &o.until_decided {
            Some(_) => sequential_verdict(&session, &o.cell),
            None => (verdict(&row), None),
        };
        Judged { verdict, mde: mde(&row), ratio, pairs, wall }
    };
    let (mut false_alarms, mut detections, mut aa, mut slowed) = (0, 0, vec![], vec![]);
    for i in 0..o.pairs {
        if o.aa {
            let (a, _) = run(&format!("yardstick-{i}-aa"), 0);
            let a = judge(a);
            false_alarms += usize::from(a.verdict == "faster" || a.verdict == "slower");
            eprintln!("power: yardstick pair {i}: A/A {}", a.describe());
            aa.push(a);
        }
        let (b, _) = run(&format!("yardstick-{i}-slowed"), slowdown_us);
        let b = judge(b);
        detections += usize::from(b.verdict == "slower");
        eprintln!("power: yardstick pair {i}: slowed {}", b.describe());
        slowed.push(b);
    }
    let ratios = |v: &[Judged]| v.iter().map(|j| j.ratio).collect::<Vec<_>>();
    // Against the A/A sessions' ratios: none with `--no-aa`.
    let realized = o.aa.then(|| realized_pct(&ratios(&slowed), &ratios(&aa)));
    let all: Vec<&Judged> = aa.iter().chain(&slowed).collect();
    let rule = match &o.until_decided {
        Some(budget) => format!("the launcher's sequential decision, --until-decided --budget {budget}"),
        None => "compare's paired test within the session".to_owned(),
    };
    println!(
        "\nyardstick (controlled-b against controlled, interleaved, {} repetition(s) per group, --cpus {}; {rule}):\n  \
         false alarms {}, detections of {} % nominal ({slowdown_us} µs per step{}; realized {}) \
         {detections}/{}, MDE {:.1} % (median), wall {:.1} s per session (median, longest {:.1} s){}",
        o.repetitions,
        o.cpus,
        if o.aa { format!("{false_alarms}/{}", o.pairs) } else { "not run (--no-aa)".to_owned() },
        o.slowdown_pct,
        match spin_trials.iter().find(|(us, _)| *us == slowdown_us) {
            Some((_, e)) => format!(", calibrated: {:.2} % in its trial", 100.0 * e),
            None => String::new(),
        },
        realized.map_or("not measured without A/A sessions".to_owned(), |r| format!("{r:.1} %")),
        o.pairs,
        100.0 * median(all.iter().map(|j| j.mde).collect()),
        median(all.iter().map(|j| j.wall).collect()),
        all.iter().map(|j| j.wall).fold(0.0, f64::max),
        match o.until_decided {
            Some(_) => format!(
                ", pairs to a decision {:.0} (median of the slowed sessions)",
                median(slowed.iter().filter_map(|j| j.pairs).map(f64::from).collect())
            ),
            None => String::new(),
        }
    );
    let path = repo().join("target/power-yardstick.json");
    let record = json!({"pairs": o.pairs, "repetitions": o.repetitions, "cpus": o.cpus,
        "until_decided": o.until_decided, "slowdown_pct": o.slowdown_pct, "slowdown_us": slowdown_us,
        "spin_trials": spin_trials.iter().map(|(us, e)| json!({"spin_us": us, "realized_pct": 100.0 * e})).collect::<Vec<_>>(),
        "realized_pct": realized, "false_alarms": o.aa.then_some(false_alarms), "detections": detections,
        "aa": aa.iter().map(Judged::json).collect::<Vec<_>>(),
        "slowed": slowed.iter().map(Judged::json).collect::<Vec<_>>()});
    std::fs::write(&path, serde_json::to_vec_pretty(&record).unwrap()).unwrap();
    println!("written: {}", path.display());
}

/// The spin (µs per step) whose realized effect is the stated percentage, and each spin tried
/// with the effect it realized (a fraction). A busy wait of `s` µs does not lengthen a step by
/// `s`: with both of a worker's threads on one CPU every operation of the step is a switch
/// between the loop's thread and MLX's stream thread, and a spin before the step makes the
/// evaluation after it longer too (300 µs: +463 µs of `eval_ns`; 5 µs: +14–21 µs of `dur_ns`),
/// while on two CPUs the stream thread's work overlaps the spin (`req/findings.md` §21). So
/// each trial runs a plain session (no sequential looks) of at least four repetitions, each a
/// fresh pair of processes, with `controlled-b` spun, and takes the ratio of the two adapters'
/// per-token medians; the first trial spins 1 µs (and measures the loop's median), the second
/// the stated share of that median, the next ones come from the line through the last two
/// trials, up to six trials, the closest kept.
fn calibrate_spin(o: &Options, root: &Path) -> (u32, Vec<(u32, f64)>) {
    // Four were too few once: a first trial 4.5 points off wasted one (findings §21).
    const MAX_SPIN_TRIALS: usize = 6;
    let lineup = Lineup {
        cell: o.cell.clone(),
        adapters: &["controlled", "controlled-b"],
        slowed: "controlled-b",
        reference: "controlled",
        repetitions: o.repetitions.max(4),
        run_flags: vec!["--cpus".to_owned(), o.cpus.clone()],
    };
    let target = o.slowdown_pct / 100.0;
    // One trial: the session's controlled median and the effect `spin` realized.
    let trial = |k: usize, spin: u32| {
        let ((spun, _), _) = session_with(root, "interleaved", &format!("yardstick-spin-{k}"), spin, None, &lineup);
        let controlled = adapter_median_ns(&spun, "controlled");
        let realized = adapter_median_ns(&spun, "controlled-b") / controlled - 1.0;
        eprintln!("power: spin {spin} µs per step realized {:.2} % (target {} %)", 100.0 * realized, o.slowdown_pct);
        (controlled, realized)
    };
    // The first trial measures the loop: 1 µs is the smallest spin there is.
    let (controlled, realized) = trial(0, 1);
    let mut trials: Vec<(u32, f64)> = vec![(1, realized)];
    let mut us = nominal_spin_us(controlled, o.slowdown_pct);
    for k in 1..MAX_SPIN_TRIALS {
        let (_, realized) = trial(k, us);
        trials.push((us, realized));
        if (realized - target).abs() <= 0.0025 {
            break;
        }
        let [.., (s0, r0), (s1, r1)] = trials[..] else { unreachable!("two trials by now") };
        let slope = (r1 - r0) / (f64::from(s1) - f64::from(s0));
        let next = if slope > 0.0 {
            f64::from(s1) + (target - r1) / slope
        } else {
            f64::from(s1) * target / r1.max(target / 10.0)
        };
        us = next.round().max(1.0) as u32;
    }
    let closest = trials.iter().min_by(|a, b| (a.1 - target).abs().total_cmp(&(b.1 - target).abs())).unwrap().0;
    (closest, trials)
}

/// One yardstick session's verdict, the smallest difference its test could see, its ratio, the
/// pairs an `--until-decided` session took and its wall time.
struct Judged {
    verdict: String,
    mde: f64,
    ratio: f64,
    pairs: Option<u32>,
    wall: f64,
}

impl Judged {
    fn describe(&self) -> String {
        let pairs = self.pairs.map_or(String::new(), |p| format!(", {p} pairs"));
        format!("{} (ratio {:.3}{pairs}, {:.1} s)", self.verdict, self.ratio, self.wall)
    }

    fn json(&self) -> Value {
        json!({"verdict": self.verdict, "ratio": self.ratio, "mde": self.mde, "pairs": self.pairs, "wall_s": self.wall})
    }
}

/// The verdict on `controlled-b` and the pairs it took, from an `--until-decided` session's record
/// (`session.json`'s `sequential`; `inconclusive` when it was not decided).
fn sequential_verdict(session: &Path, cell: &str) -> (String, Option<u32>) {
    let value: Value = serde_json::from_slice(&std::fs::read(session.join("session.json")).unwrap()).unwrap();
    let cell = value["sequential"]["cells"]
        .as_array()
        .and_then(|cells| cells.iter().find(|c| c["cell"] == cell))
        .unwrap_or_else(|| panic!("no sequential record of {cell} in {}", session.display()));
    let row = cell["rows"].as_array().and_then(|rows| rows.iter().find(|r| r["adapter"] == "controlled-b"));
    let verdict = match row.and_then(|r| r["verdict"].as_str()) {
        Some("undecided") | None => "inconclusive",
        Some(v) => v,
    };
    (verdict.to_owned(), cell["pairs"].as_u64().map(|p| p as u32))
}

/// `compare` of one session: its adapters against its reference.
fn compare_within(session: &Path) -> Value {
    let out = Command::new(binary()).arg("compare").arg(session).args(["--format", "json"]).output().unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("compare: {e}: {}", String::from_utf8_lossy(&out.stderr)))
}

fn compare(a: &Path, b: &Path) -> Value {
    let out = Command::new(binary()).arg("compare").arg(a).arg(b).args(["--format", "json"]).output().unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("compare: {e}: {}", String::from_utf8_lossy(&out.stderr)))
}

/// The nominal slowdown: `pct` percent of a per-token median, in whole µs (at least 1).
fn nominal_spin_us(median_ns: f64, pct: f64) -> u32 {
    (median_ns * pct / 100.0 / 1000.0).round().max(1.0) as u32
}

/// An adapter's per-token median over every measured step of the session's cell.
fn adapter_median_ns(session: &Path, adapter: &str) -> f64 {
    let value: Value = serde_json::from_slice(&std::fs::read(session.join("session.json")).unwrap()).unwrap();
    value["analysis"]["cells"][0]["adapters"][adapter]["per_token_ns"]["median"].as_f64().unwrap()
}

/// The judged row of `adapter` against stock, or its raw row (stock).
fn row<'a>(report: &'a Value, adapter: &str) -> &'a Value {
    let basis = if adapter == "stock" { "raw" } else { "against_reference" };
    report["rows"].as_array().unwrap().iter().find(|r| r["adapter"] == adapter && r["basis"] == basis).unwrap()
}

fn verdict(row: &Value) -> String {
    row["outcome"]["decision"]["verdict"].as_str().unwrap_or("not_compared").to_owned()
}

/// The smallest difference the row's test could detect (80 % power), a fraction.
fn mde(row: &Value) -> f64 {
    row["outcome"]["decision"]["mde"].as_f64().unwrap_or(f64::NAN)
}

/// The effect the slowed sessions realized, in percent: the median ratio of the slowed sessions
/// over the median ratio of the A/A ones, minus 1.
fn realized_pct(slowed: &[f64], aa: &[f64]) -> f64 {
    100.0 * (median(slowed.to_vec()) / median(aa.to_vec()) - 1.0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    let o = options();
    let root = tempfile::tempdir().unwrap();
    if o.hog {
        return hog(&o, root.path());
    }
    if o.yardstick {
        return yardstick(&o, root.path());
    }
    let mut results = Vec::new();
    for order in &o.orders {
        let (calibration, _) = session(&o, root.path(), order, &format!("{order}-calibration"), 0);
        let slowdown_us = nominal_spin_us(adapter_median_ns(&calibration, "controlled"), o.slowdown_pct);
        let (mut false_alarms, mut detections, mut aa_verdicts, mut b_verdicts) = (0, 0, Vec::new(), Vec::new());
        let (mut mdes_c, mut mdes_s, mut walls, mut aa_ratios, mut b_ratios) = (vec![], vec![], vec![], vec![], vec![]);
        for i in 0..o.pairs {
            let (a, wa) = session(&o, root.path(), order, &format!("{order}-{i}-a"), 0);
            let (a2, wa2) = session(&o, root.path(), order, &format!("{order}-{i}-a2"), 0);
            let (b, wb) = session(&o, root.path(), order, &format!("{order}-{i}-b"), slowdown_us);
            walls.extend([wa, wa2, wb]);
            let aa = compare(&a, &a2);
            let overall = aa["verdict"].as_str().unwrap_or("refused").to_owned();
            if overall == "faster" || overall == "slower" {
                false_alarms += 1;
            }
            let slowed = compare(&a, &b);
            let detected = verdict(row(&slowed, "controlled"));
            if detected == "slower" {
                detections += 1;
            }
            mdes_c.push(mde(row(&aa, "controlled")));
            mdes_s.push(mde(row(&aa, "stock")));
            aa_ratios.push(row(&aa, "controlled")["outcome"]["decision"]["ratio"].as_f64().unwrap_or(f64::NAN));
            b_ratios.push(row(&slowed, "controlled")["outcome"]["decision"]["ratio"].as_f64().unwrap_or(f64::NAN));
            eprintln!("power: {order} pair {i}: A/A {overall}, slowed {detected}");
            aa_verdicts.push(overall);
            b_verdicts.push(detected);
        }
        let realized = realized_pct(&b_ratios, &aa_ratios);
        results.push(json!({
            "order": order, "pairs": o.pairs, "slowdown_us": slowdown_us, "slowdown_pct": o.slowdown_pct,
            "realized_pct": realized, "false_alarms": false_alarms, "detections": detections,
            "mde_controlled": median(mdes_c), "mde_stock": median(mdes_s),
            "median_wall_s": median(walls), "aa_verdicts": aa_verdicts, "slowed_verdicts": b_verdicts,
            "aa_ratios": aa_ratios, "slowed_ratios": b_ratios,
        }));
    }
    println!(
        "\n{:<12} {:>6} {:>12} {:>13} {:>15} {:>15} {:>10}",
        "order", "pairs", "false alarms", "detections", "MDE controlled", "MDE stock", "wall"
    );
    for r in &results {
        println!(
            "{:<12} {:>6} {:>9}/{:<2} {:>10}/{:<2} {:>14.1}% {:>14.1}% {:>9.1}s",
            r["order"].as_str().unwrap(),
            r["pairs"],
            r["false_alarms"],
            r["pairs"],
            r["detections"],
            r["pairs"],
            100.0 * r["mde_controlled"].as_f64().unwrap(),
            100.0 * r["mde_stock"].as_f64().unwrap(),
            r["median_wall_s"].as_f64().unwrap(),
        );
        println!(
            "{:<12} slowdown {} µs per step: nominal {} % of the calibration median, realized {:.1} % (slowed over A/A \
             ratios)",
            "",
            r["slowdown_us"],
            r["slowdown_pct"],
            r["realized_pct"].as_f64().unwrap_or(f64::NAN)
        );
    }
    let path = repo().join("target/power.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&results).unwrap()).unwrap();
    println!("\nwritten: {}", path.display());
}
