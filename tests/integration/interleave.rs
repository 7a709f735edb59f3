//! The interleaved order with both real workers: one request at a time through the request
//! gate, alternating the adapters; the paired ratio; the test-only slowdown; Ctrl-C at the gate.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use decode_baseline_wire::{
    hooks::{HOOK_ENV, HOOK_REQUEST_ENV, SLOWDOWN_ADAPTER_ENV, SLOWDOWN_ENV},
    RunPolicy,
};
use serde_json::{json, Value};

use crate::util::{self, pid_alive};

/// Only a broken build reaches this.
const BOUND: Duration = Duration::from_secs(300);

fn policy() -> RunPolicy {
    RunPolicy { first_requests: 1, warmup_requests: 1, measured_requests: 4, max_new_tokens: 16, ..RunPolicy::frozen() }
}

struct Scratch {
    tmp: tempfile::TempDir,
}

impl Scratch {
    /// Both adapters, the given cells (by mode), interleaved, with an A/A group when `aa`.
    fn new(modes: &[&str], repetitions: u32, aa: bool) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let fixture = util::fixture_manifest(tmp.path(), &policy(), |_| {});
        let cells: Vec<String> =
            fixture.manifest.cells.iter().filter(|c| modes.contains(&c.mode.as_str())).map(|c| c.name()).collect();
        let job = json!({
            "schema_version": 1, "manifest": "workloads.json", "cells": cells,
            "adapters": ["controlled", "stock"], "output_root": "out", "repetitions": repetitions,
            "order": "interleaved", "aa_pair": aa
        });
        std::fs::write(tmp.path().join("job.json"), job.to_string()).unwrap();
        Self { tmp }
    }

    fn root(&self) -> &Path {
        self.tmp.path()
    }

    fn launcher(&self) -> Command {
        util::launcher_in(self.root())
    }

    fn run(&self, cmd: &mut Command) -> Option<i32> {
        let mut child = cmd.spawn().unwrap();
        let started = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status.code();
            }
            if started.elapsed() > BOUND {
                let _ = child.kill();
                panic!("launcher still running after {BOUND:?}: {}", self.stderr());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.root().join("launcher.stderr")).unwrap_or_default()
    }

    fn session_dir(&self) -> PathBuf {
        util::only_session(&self.root().join("out"))
    }

    fn session(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.session_dir().join("session.json")).unwrap()).unwrap()
    }
}

/// One request as the gate recorded it: the `seq` and `after` lines the launcher wrote into its
/// `request-<i>-granted`, and what the worker wrote into its `request-<i>-done`.
struct Grant {
    who: String,
    seq: u64,
    after: Option<u64>,
    done: String,
}

/// A file's text, or the test fails naming it.
fn text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The number after `key ` on `line`, or the test fails saying what it found.
fn number(path: &Path, line: Option<&str>, key: &str) -> u64 {
    line.and_then(|l| l.strip_prefix(key))
        .and_then(|rest| rest.strip_prefix(' '))
        .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|digits| digits.parse().ok())
        .unwrap_or_else(|| panic!("{}: expected a line `{key} <n>`, found {line:?}", path.display()))
}

/// The gate's record of every request of one worker folder, read independently of the launcher:
/// a grant file is `seq <n>` and, from the second grant of a group on, `after <m>`, each a line.
fn grants(dir: &Path, requests: u32) -> Vec<Grant> {
    let worker = dir.file_name().unwrap().to_string_lossy().into_owned();
    (0..requests)
        .map(|i| {
            let granted = dir.join(format!("request-{i}-granted"));
            let content = text(&granted);
            assert!(content.ends_with('\n'), "{}: expected whole lines, found {content:?}", granted.display());
            let lines: Vec<&str> = content.lines().collect();
            assert!(
                (1..=2).contains(&lines.len()),
                "{}: expected `seq <n>` and at most `after <m>`, found {content:?}",
                granted.display()
            );
            Grant {
                who: format!("{worker} request {i}"),
                seq: number(&granted, lines.first().copied(), "seq"),
                after: lines.get(1).map(|&line| number(&granted, Some(line), "after")),
                done: text(&dir.join(format!("request-{i}-done"))),
            }
        })
        .collect()
}

/// Checks from the grants' and done files' contents alone that the requests of a group ran one
/// at a time in exactly the order `expected` (the names of the requests).
///
/// The launcher numbers the grants of a group 0, 1, …, and writes into grant n the `seq` it read
/// from the done file of grant n-1; a worker writes its done file only after its request is
/// complete, copying its grant's `seq`. So grant n saying `after n-1` proves that request n-1 was
/// complete before request n was granted, without a clock.
fn assert_one_at_a_time_in_order(context: &str, mut recorded: Vec<Grant>, expected: &[String]) {
    recorded.sort_by_key(|g| g.seq);
    let seqs: Vec<u64> = recorded.iter().map(|g| g.seq).collect();
    let all: Vec<u64> = (0..expected.len() as u64).collect();
    assert_eq!(seqs, all, "{context}: expected the grants' seqs 0..{} once each, found {seqs:?}", expected.len());
    let order: Vec<&str> = recorded.iter().map(|g| g.who.as_str()).collect();
    assert_eq!(order, expected, "{context}: expected the grants in the order {expected:?}, found {order:?}");
    for g in &recorded {
        let want = format!("seq {}\n", g.seq);
        assert_eq!(
            g.done, want,
            "{context}: {} was granted as seq {}: expected its done file {want:?}, found {:?}",
            g.who, g.seq, g.done
        );
        let after = g.seq.checked_sub(1);
        assert_eq!(
            g.after, after,
            "{context}: {} (seq {}): expected `after` {after:?} (the done seq of the grant before), found {:?}",
            g.who, g.seq, g.after
        );
    }
}

/// The median of `values` (the mean of the middle two for an even count).
fn median(mut values: Vec<f64>) -> f64 {
    assert!(!values.is_empty());
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Every measured request of `adapter` in `cell` timed as many decode steps as the same
/// request of `reference`, each a positive whole number of nanoseconds.
fn assert_same_timed_steps(session: &Value, cell: &str, adapter: &str, reference: &str) {
    let steps = |who: &str| -> Vec<(u64, u64, Vec<f64>)> {
        let workers = session["workers"].as_array().unwrap();
        workers
            .iter()
            .filter(|w| w["cell"] == cell && w["adapter"] == who && w["aa"] == false)
            .flat_map(|w| {
                let repetition = w["repetition"].as_u64().unwrap();
                w["report"]["requests"].as_array().unwrap().iter().filter(|q| q["phase"] == "measured").map(move |q| {
                    let durations =
                        q["steps"].as_array().unwrap().iter().map(|s| s["dur_ns"].as_f64().unwrap()).collect();
                    (repetition, q["index"].as_u64().unwrap(), durations)
                })
            })
            .collect()
    };
    let (mine, theirs) = (steps(adapter), steps(reference));
    assert!(
        !mine.is_empty() && mine.len() == theirs.len(),
        "{cell}: {} against {} measured requests",
        mine.len(),
        theirs.len()
    );
    for (repetition, index, durations) in &mine {
        let other = theirs.iter().find(|(r, i, _)| r == repetition && i == index).expect("the same measured requests");
        assert_eq!(durations.len(), other.2.len(), "{cell} run {repetition} request {index}: steps timed");
        for d in durations.iter().chain(&other.2) {
            assert!(*d > 0.0 && d.fract() == 0.0, "{cell} run {repetition} request {index}: a step of {d} ns");
        }
    }
}

/// The paired ratio of `adapter` against `reference` in `cell`, recomputed from the worker
/// reports in `session.json` as `req/session.md` defines it: per repetition, each measured
/// request of `adapter` against the reference's request of the same index, as the ratio of their
/// median step times; the median over every pair.
fn paired_ratio_from_reports(session: &Value, cell: &str, adapter: &str, reference: &str) -> f64 {
    let workers = session["workers"].as_array().unwrap();
    let measured_medians = |who: &str, repetition: u64| -> Vec<(u64, f64)> {
        let worker = workers
            .iter()
            .find(|w| w["cell"] == cell && w["adapter"] == who && w["repetition"] == repetition && w["aa"] == false)
            .unwrap_or_else(|| panic!("no {who} run {repetition} of {cell}"));
        worker["report"]["requests"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|q| q["phase"] == "measured")
            .map(|q| {
                let steps = q["steps"].as_array().unwrap().iter().map(|s| s["dur_ns"].as_f64().unwrap()).collect();
                (q["index"].as_u64().unwrap(), median(steps))
            })
            .collect()
    };
    let repetitions = session["job"]["repetitions"].as_u64().unwrap();
    let mut ratios = Vec::new();
    for repetition in 0..repetitions {
        let denominators = measured_medians(reference, repetition);
        for (index, numerator) in measured_medians(adapter, repetition) {
            let (_, denominator) = denominators.iter().find(|(i, _)| *i == index).expect("the same measured requests");
            ratios.push(numerator / denominator);
        }
    }
    assert_eq!(ratios.len() as u64, repetitions * u64::from(policy().measured_requests), "{cell}: {ratios:?}");
    median(ratios)
}

#[test]
fn requests_alternate_one_at_a_time_and_the_ratio_comes_from_pairs() {
    let s = Scratch::new(&["headline", "fixed_continuation", "reference_pair"], 2, false);
    let code = s.run(&mut s.launcher());
    assert_eq!(code, Some(0), "{}", s.stderr());
    let session = s.session();
    assert_eq!(session["status"], "ok");
    assert_eq!(session["job"]["order"], "interleaved");

    // Every worker job was gated; each request ran alone, in the order A B, B A, ... with the
    // first adapter flipping in repetition 1.
    let total = policy().total_requests();
    let dir = s.session_dir();
    for cell in session["analysis"]["cells"].as_array().unwrap() {
        let name = cell["cell"].as_str().unwrap();
        // A reference-pair cell runs once, one request: one full stream per adapter.
        let (requests, orders): (u32, &[(u32, &str)]) = if cell["mode"] == "reference_pair" {
            (1, &[(0, "controlled")])
        } else {
            (total, &[(0, "controlled"), (1, "stock")])
        };
        let runs = session["workers"].as_array().unwrap().iter().filter(|w| w["cell"] == name).count();
        assert_eq!(runs, 2 * orders.len(), "{name}: one run per adapter and repetition");
        for &(repetition, first) in orders {
            let second = if first == "controlled" { "stock" } else { "controlled" };
            let job: Value = serde_json::from_slice(
                &std::fs::read(dir.join(name).join(format!("{first}-{repetition}/job.json"))).unwrap(),
            )
            .unwrap();
            assert_eq!(job["gate"], true);
            // No wake-up FIFO is left behind in a worker folder.
            for adapter in [first, second] {
                let fifo = dir.join(name).join(format!("{adapter}-{repetition}/gate"));
                assert!(std::fs::symlink_metadata(&fifo).is_err(), "{} was left behind", fifo.display());
            }
            let mut recorded = grants(&dir.join(name).join(format!("{first}-{repetition}")), requests);
            recorded.extend(grants(&dir.join(name).join(format!("{second}-{repetition}")), requests));
            let expected: Vec<String> = (0..requests)
                .flat_map(|k| if k % 2 == 0 { [first, second] } else { [second, first] }.map(|a| (a, k)))
                .map(|(adapter, k)| format!("{adapter}-{repetition} request {k}"))
                .collect();
            assert_one_at_a_time_in_order(&format!("{name} repetition {repetition}"), recorded, &expected);
        }
        if cell["mode"] != "reference_pair" {
            let paired = &cell["paired"]["controlled"];
            let ratio = paired["ratio"].as_f64().unwrap();
            // The ratio comes from the pairs: the median of the pair ratios the reports give.
            let expected = paired_ratio_from_reports(&session, name, "controlled", "stock");
            assert!(
                (ratio - expected).abs() <= 1e-9 * expected,
                "{name}: paired ratio {ratio}, from the pairs {expected}"
            );
            // Both adapters timed the same work: per measured request the same number of
            // decode steps, each a positive duration in nanoseconds (a structural check in place
            // of a bound on the ratio, which moved with the load of the machine: 0.243 under a
            // full build beside the suite, 0.66 on a quiet one).
            assert_same_timed_steps(&session, name, "controlled", "stock");
            let (lower, upper) = (paired["ci"]["lower"].as_f64().unwrap(), paired["ci"]["upper"].as_f64().unwrap());
            assert!(lower <= ratio && ratio <= upper, "{name}: interval {lower}..{upper} misses the ratio {ratio}");
            assert_eq!(paired["ci"]["resampling"], "by_run_then_pair", "two repetitions: runs are resampled");
        }
    }
    // The default view of a real session: the answer with each row's ratio, within 100 columns.
    let table = std::fs::read_to_string(s.root().join("launcher.stdout")).unwrap();
    let answer = &table[table.rfind("answer: ").expect("the answer")..];
    assert!(answer.lines().any(|l| l.contains("controlled/stock") && l.contains(" [")), "{table}");
    assert!(
        table.lines().all(|l| l.chars().count() <= 100),
        "wider than 100 columns:
{table}"
    );

    // Within the session, with two runs per adapter, the error comes from the run means and
    // holds run-to-run effects.
    let out = util::run(Command::new(util::binary()).args(["compare", "--format", "json"]).arg(&dir));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = report["rows"].as_array().unwrap();
    assert!(
        rows.iter().any(|r| r["basis"] == "paired"
            && r["outcome"]["decision"]["rule"] == "paired_run_means"
            && r["outcome"]["decision"]["run_effects_measured"] == true),
        "{report}"
    );
}

/// The session's `prefill_step_size` reaches both real workers: every worker job carries it,
/// each loop prefills the prompt over several chunks (`prompt[:-1]` in chunks of 4, then the
/// last token) and counts those forwards, and the two agree on every argmax and the reference
/// stream (the session is `ok` only then).
#[test]
fn a_prompt_over_several_prefill_chunks_runs_in_both_loops_and_they_agree() {
    let s = Scratch::new(&["fixed_continuation", "reference_pair"], 1, false);
    let path = s.root().join("job.json");
    let mut job = util::read_json(&path);
    job["prefill_step_size"] = json!(4);
    std::fs::write(&path, job.to_string()).unwrap();
    let code = s.run(&mut s.launcher());
    assert_eq!(code, Some(0), "{}", s.stderr());
    let session = s.session();
    assert_eq!(session["status"], "ok", "{}", s.stderr());
    assert_eq!(session["job"]["prefill_step_size"], 4);
    let workers = session["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 4, "two cells, two adapters, one run each");
    for w in workers {
        let folder = s.session_dir().join(w["cell"].as_str().unwrap()).join(format!(
            "{}-{}",
            w["adapter"].as_str().unwrap(),
            w["repetition"]
        ));
        assert_eq!(util::read_json(&folder.join("job.json"))["prefill_step_size"], 4, "{}", folder.display());
        for q in w["report"]["requests"].as_array().unwrap() {
            let prompt_len = q["prompt_len"].as_u64().unwrap() as u32;
            let prefill = decode_baseline_wire::policy::prefill_forwards(prompt_len, 4);
            assert!(prefill >= 3, "a {prompt_len}-token prompt is at least two chunks and the last token");
            let (steps, unused) = (q["steps"].as_array().unwrap().len() as u64, q["unused_forwards"].as_u64().unwrap());
            assert_eq!(
                q["model_calls"].as_u64().unwrap(),
                u64::from(prefill) + steps + unused,
                "{}: the chunks, the last token, the steps and the unused look-ahead",
                folder.display()
            );
        }
    }
}

#[test]
fn a_slowdown_injected_into_one_adapter_shows_in_its_paired_ratio_and_its_reports() {
    let s = Scratch::new(&["headline"], 1, false);
    // 3 ms per step against the fixture's well under 3 ms: a paired ratio far above 1, whatever
    // else the machine does at the time.
    let code = s.run(s.launcher().env(SLOWDOWN_ENV, "3000").env(SLOWDOWN_ADAPTER_ENV, "controlled"));
    assert_eq!(code, Some(0), "{}", s.stderr());
    let session = s.session();
    for worker in session["workers"].as_array().unwrap() {
        let expected = if worker["adapter"] == "controlled" { json!(3000) } else { Value::Null };
        assert_eq!(worker["report"]["test_slowdown_us"], expected, "{}", worker["run_id"]);
    }
    let cell = &session["analysis"]["cells"][0];
    let paired = cell["paired"]["controlled"]["ratio"].as_f64().unwrap();
    let controlled = cell["adapters"]["controlled"]["per_token_ns"]["median"].as_f64().unwrap();
    assert!(controlled > 3.0e6, "every step carries the 3 ms spin: {controlled}");
    assert!(paired > 1.0, "{paired}");
    let table = std::fs::read_to_string(s.root().join("launcher.stdout")).unwrap();
    assert!(table.contains("test slowdown"), "{table}");
}

#[test]
fn ctrl_c_while_both_workers_wait_at_the_gate_cancels_both() {
    let s = Scratch::new(&["headline"], 1, false);
    // The controlled worker holds at its first decode step of request 1; the stock worker then
    // waits at the gate for its request 1.
    let mut cmd = s.launcher();
    cmd.env(HOOK_ENV, "before_decode_step").env(HOOK_REQUEST_ENV, "1");
    let mut child = cmd.spawn().unwrap();
    let started = Instant::now();
    let reached = loop {
        let found = std::fs::read_dir(s.root().join("out"))
            .ok()
            .and_then(|mut d| d.find(|e| e.as_ref().is_ok_and(|e| e.path().is_dir())))
            .and_then(|e| util::find_file(&e.unwrap().path(), "hook-before_decode_step-reached"));
        if let Some(path) = found {
            break path;
        }
        assert!(started.elapsed() < BOUND, "never reached the hook: {}", s.stderr());
        std::thread::sleep(Duration::from_millis(20));
    };
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(4), "{}", s.stderr());
    let session = s.session();
    assert_eq!(session["status"], "cancelled");
    for worker in session["workers"].as_array().unwrap() {
        assert_eq!(worker["report"]["status"], "cancelled", "{}", worker["run_id"]);
        assert!(!pid_alive(worker["pid"].as_i64().unwrap() as i32));
        // Both were stopped inside request 1 (one at its hook, the other at the gate before
        // it): request 0 is reported, nothing of request 1.
        let requests = worker["report"]["requests"].as_array().unwrap();
        assert_eq!(requests.len(), 1, "{}: {requests:?}", worker["run_id"]);
    }
    assert!(reached.ends_with("hook-before_decode_step-reached"));
}

#[test]
fn a_session_and_its_reports_record_the_backend_and_the_device() {
    let s = Scratch::new(&["headline"], 1, false);
    let code = s.run(&mut s.launcher());
    assert_eq!(code, Some(0), "{}", s.stderr());
    let session = s.session();
    assert_eq!(session["schema_version"], 8);
    // Every energy source the launcher tried is recorded, read (with its domains) or missing
    // (with its reason), whatever this host has.
    let sources = session["energy"]["sources"].as_array().expect("energy.sources");
    assert!(!sources.is_empty(), "{sources:?}");
    assert!(
        sources.iter().all(|s| s["missing"].is_string() == s["domains"].as_array().unwrap().is_empty()),
        "{sources:?}"
    );
    let device = &session["device"];
    assert_eq!((device["backend"].as_str(), device["device"].as_str()), (Some("cpu"), Some("cpu")), "{device}");
    // On the CPU the device is named by the CPU model, read here independently of the launcher.
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|rest| rest.trim_start_matches([' ', '\t', ':']).trim());
    if let Some(model) = model {
        assert_eq!(device["name"], model);
        assert_eq!(session["host"]["cpu_model"], model);
    }
    let workers = session["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 2);
    let mut infos = Vec::new();
    for worker in workers {
        let identity = &worker["report"]["identity"];
        assert_eq!(
            (identity["backend"].as_str(), identity["device"].as_str()),
            (Some("cpu"), Some("cpu")),
            "{identity}"
        );
        assert!(!identity["device_info"]["device_name"].as_str().unwrap_or_default().is_empty(), "{identity}");
        infos.push(identity["device_info"].clone());
        let job_path = s
            .session_dir()
            .join(worker["run_id"].as_str().unwrap().split('/').skip(1).collect::<Vec<_>>().join("/"))
            .join("job.json");
        let job: Value = serde_json::from_slice(&std::fs::read(&job_path).unwrap()).unwrap();
        assert_eq!((job["device"].as_str(), job["environment"]["backend"].as_str()), (Some("cpu"), Some("cpu")));
    }
    // Both workers asked the same MLX about the same device.
    assert_eq!(infos[0], infos[1]);
    assert_eq!(device["info"], infos[0]);
}
