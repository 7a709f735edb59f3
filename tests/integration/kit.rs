//! The Python worker kit and its example adapter (`examples/adapters/python-sync/`), run directly
//! on worker jobs for the tiny fixture: the example's tokens agree with stock's in every mode,
//! its records have the loop's shape (no look-ahead), and the kit's adapter-specific checks (the
//! job's `adapter`, the declared sources, the hook sites a loop offers, the `adapters` map)
//! refuse what they must, naming the field.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
};

use decode_baseline_pins as pins;
use decode_baseline_pins::freeze::list_tree;
use decode_baseline_wire::{
    hooks::{HOOK_ENV, HOOK_REQUEST_ENV},
    outdir::REPORT_FILE,
    Adapter, Mode, RunPolicy, Sha256Digest,
};
use serde_json::{json, Value};

use crate::util::{self, Worker};

const EXAMPLE: &str = "python-sync";
const EXAMPLE_WORKER: &str = "examples/adapters/python-sync/worker.py";
const EXAMPLE_SOURCES: &[&str] = &["examples/adapters/python-sync", "tools/kit/python"];

fn policy() -> RunPolicy {
    RunPolicy { first_requests: 1, warmup_requests: 1, measured_requests: 1, ..RunPolicy::frozen() }
}

/// The example's pinned sources by the declared rule: every member of each folder in `sources`.
fn example_sources(repo: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for root in EXAMPLE_SOURCES {
        for rel in list_tree(&repo.join(root)).unwrap() {
            let path = format!("{root}/{rel}");
            let digest = decode_baseline_pins::file_digest::of_file(&repo.join(&path)).unwrap();
            out.insert(path, digest.to_string());
        }
    }
    out
}

/// A fixture manifest in `dir` that declares the example and pins its sources (`edit` may change
/// its JSON before it is written), and the job for `mode`, as JSON (the job's `adapter` set by
/// the caller).
fn setup(dir: &Path, mode: Mode, edit: impl FnOnce(&mut Value)) -> Value {
    let repo = util::repo_root();
    let fixture = util::fixture_manifest(dir, &policy(), |_| {});
    let mut manifest: Value = serde_json::from_slice(&std::fs::read(&fixture.path).unwrap()).unwrap();
    manifest["adapters"] = json!({ EXAMPLE: {
        "command": [EXAMPLE_WORKER], "interpreter": "python", "sources": EXAMPLE_SOURCES } });
    manifest["worker_sources"][EXAMPLE] = serde_json::to_value(example_sources(&repo)).unwrap();
    edit(&mut manifest);
    let mut bytes = serde_json::to_vec_pretty(&manifest).unwrap();
    bytes.push(b'\n');
    std::fs::write(&fixture.path, &bytes).unwrap();
    std::fs::write(pins::pin_path(&fixture.path), pins::pin_text(&fixture.path, &bytes)).unwrap();
    let mut job = serde_json::to_value(util::fixture_job(&fixture, Adapter::Stock, mode, "kit/cell/worker-0")).unwrap();
    job["manifest_sha256"] = json!(Sha256Digest::of_bytes(&bytes).to_string());
    job
}

/// A command for the example worker on `out`, offline, no test hook inherited.
fn example_command(out: &Path) -> Command {
    let mut cmd = Command::new(util::venv_python());
    cmd.arg(util::repo_root().join(EXAMPLE_WORKER))
        .arg("--out-dir")
        .arg(out)
        .current_dir(util::repo_root())
        .env("HF_HUB_OFFLINE", "1")
        .env_remove(HOOK_ENV)
        .env_remove(HOOK_REQUEST_ENV);
    cmd
}

/// The stock worker's command on `out`, no test hook inherited.
fn stock_command(out: &Path) -> Command {
    let mut cmd = Worker::Stock.command(out);
    cmd.env_remove(HOOK_ENV).env_remove(HOOK_REQUEST_ENV);
    cmd
}

/// Writes `job` into a fresh `dir/<name>` and runs `cmd(out)` there; returns the output and the
/// report (Null when there is none).
fn run_job(dir: &Path, name: &str, job: &Value, cmd: impl FnOnce(&Path) -> Command) -> (Output, Value, PathBuf) {
    let out = dir.join(name);
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("job.json"), serde_json::to_vec_pretty(job).unwrap()).unwrap();
    let mut command = cmd(&out);
    command.stdin(Stdio::null());
    let output = util::run(&mut command);
    let report = std::fs::read(out.join(REPORT_FILE)).map_or(Value::Null, |b| serde_json::from_slice(&b).unwrap());
    (output, report, out)
}

fn with_adapter(job: &Value, adapter: &str) -> Value {
    let mut job = job.clone();
    job["adapter"] = json!(adapter);
    job
}

/// The token stream of a request: the first token, then every step's argmax.
fn tokens(request: &Value) -> Vec<u64> {
    let steps = request["steps"].as_array().unwrap();
    std::iter::once(&request["first_token"])
        .chain(steps.iter().map(|s| &s["argmax"]))
        .map(|v| v.as_u64().unwrap())
        .collect()
}

fn field<'a>(request: &'a Value, name: &str) -> Vec<&'a Value> {
    request["steps"].as_array().unwrap().iter().map(|s| &s[name]).collect()
}

#[test]
fn python_sync_agrees_with_stock_in_every_mode() {
    for mode in [Mode::Headline, Mode::FixedContinuation, Mode::ReferencePair] {
        let tmp = tempfile::tempdir().unwrap();
        let job = setup(tmp.path(), mode, |_| {});
        let (stock_out, stock, _) = run_job(tmp.path(), "stock", &job, stock_command);
        let (sync_out, sync, _) = run_job(tmp.path(), "sync", &with_adapter(&job, EXAMPLE), example_command);
        assert!(stock_out.status.success(), "stock {mode:?}: {}", util::stderr(&stock_out));
        assert!(sync_out.status.success(), "{EXAMPLE} {mode:?}: {}", util::stderr(&sync_out));
        assert_eq!(sync["status"], "ok");
        assert_eq!(sync["adapter"], EXAMPLE);
        assert_eq!(sync["test_slowdown_us"], Value::Null);
        let (ours, theirs) = (sync["requests"].as_array().unwrap(), stock["requests"].as_array().unwrap());
        assert_eq!(ours.len(), theirs.len(), "{mode:?}: request count");
        assert!(!ours.is_empty());
        for (a, b) in ours.iter().zip(theirs) {
            assert_eq!((&a["index"], &a["phase"]), (&b["index"], &b["phase"]));
            assert_eq!(tokens(a), tokens(b), "{mode:?}: request {} token streams", a["index"]);
            assert_eq!(a["finish_reason"], b["finish_reason"], "{mode:?}");
            assert_eq!(field(a, "tie"), field(b, "tie"), "{mode:?}: ties");
            assert_eq!(field(a, "position"), field(b, "position"), "{mode:?}: positions");
            let steps = a["steps"].as_array().unwrap().len() as u64;
            // No look-ahead, no seed forward: one prefill chunk (L <= 2048), then one per step.
            assert_eq!(a["model_calls"].as_u64(), Some(1 + steps), "{mode:?}: model calls");
            assert_eq!(a["unused_forwards"].as_u64(), Some(0));
            assert_eq!(a["prefill_dur_ns"], a["first_token_ns"]);
            assert!(a["peak_memory_bytes"].as_u64().unwrap() > 0);
            let l = a["prompt_len"].as_u64().unwrap();
            let mut previous = a["first_token_ns"].as_u64().unwrap();
            for (s, step) in a["steps"].as_array().unwrap().iter().enumerate() {
                assert_eq!(step["position"].as_u64(), Some(l + 1 + s as u64));
                assert_eq!((&step["build_ns"], &step["eval_ns"]), (&Value::Null, &Value::Null));
                let t = step["t_ns"].as_u64().unwrap();
                if mode != Mode::FixedContinuation {
                    assert_eq!(step["dur_ns"].as_u64(), Some(t - previous), "stamp to stamp");
                }
                assert!(t > previous, "stamps increase");
                previous = t;
            }
            let (ma, mb) = (field(a, "margin"), field(b, "margin"));
            match mode {
                Mode::Headline => assert!(ma.iter().chain(&mb).all(|m| m.is_null()), "no margins in headline"),
                // The same model call on the same inputs: the same logits.
                Mode::FixedContinuation => assert_eq!(ma, mb, "fixed-continuation margins"),
                // Ours from logits, stock's from log-probabilities: equal up to float rounding.
                Mode::ReferencePair => {
                    for (x, y) in ma.iter().zip(&mb) {
                        let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                        assert!((x - y).abs() <= 1e-4 * x.abs().max(1.0), "margins {x} vs {y}");
                    }
                }
            }
        }
    }
}

#[test]
fn each_worker_refuses_a_job_for_another_adapter() {
    let tmp = tempfile::tempdir().unwrap();
    let job = setup(tmp.path(), Mode::Headline, |_| {});
    let (out, report, _) = run_job(tmp.path(), "sync", &job, example_command);
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr(&out));
    assert_eq!(report["error"], "validation failed: adapter: expected python-sync, found stock");
    assert_eq!(report["adapter"], EXAMPLE);
    let (out, report, _) = run_job(tmp.path(), "stock", &with_adapter(&job, EXAMPLE), stock_command);
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr(&out));
    assert_eq!(report["error"], "validation failed: adapter: expected stock, found python-sync");
}

/// An edit of the manifest.
type Edit = Box<dyn Fn(&mut Value)>;

#[test]
fn python_sync_checks_its_declared_sources() {
    let cases: [(&str, Edit, String); 4] = [
        (
            "a changed byte",
            Box::new(|m| m["worker_sources"][EXAMPLE][EXAMPLE_WORKER] = json!("0".repeat(64))),
            format!("validation failed: worker_sources.python-sync[\"{EXAMPLE_WORKER}\"]: expected sha256 000"),
        ),
        (
            "an added file",
            Box::new(|m| {
                m["worker_sources"][EXAMPLE].as_object_mut().unwrap().remove(EXAMPLE_WORKER);
            }),
            "validation failed: worker_sources.python-sync: ".to_owned(),
        ),
        (
            "a removed file",
            Box::new(|m| m["worker_sources"][EXAMPLE]["examples/adapters/python-sync/gone.py"] = json!("0".repeat(64))),
            "validation failed: worker_sources.python-sync[\"examples/adapters/python-sync/gone.py\"]: pinned file"
                .to_owned(),
        ),
        (
            "no declaration",
            Box::new(|m| {
                m.as_object_mut().unwrap().remove("adapters");
            }),
            "validation failed: adapters[\"python-sync\"]: missing from the manifest".to_owned(),
        ),
    ];
    for (name, edit, expected) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let job = setup(tmp.path(), Mode::Headline, edit);
        let (out, report, _) = run_job(tmp.path(), "sync", &with_adapter(&job, EXAMPLE), example_command);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", util::stderr(&out));
        let error = report["error"].as_str().unwrap_or_default();
        assert!(error.starts_with(&expected), "{name}: expected an error starting {expected:?}, found {error:?}");
    }
}

#[test]
fn the_adapters_map_is_checked_by_every_kit_worker() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: [(&str, Value, &str); 4] = [
        ("command", json!([]), "validation failed: adapters[\"python-sync\"].command: expected a non-empty list"),
        ("interpreter", json!("ruby"), "validation failed: adapters[\"python-sync\"].interpreter: expected null or"),
        (
            "sources",
            json!(["../outside"]),
            "validation failed: adapters[\"python-sync\"].sources: path '../outside' escapes",
        ),
        ("sources", json!([]), "validation failed: adapters[\"python-sync\"].sources: expected a non-empty list"),
    ];
    for (i, (key, value, expected)) in cases.into_iter().enumerate() {
        let dir = tmp.path().join(i.to_string());
        std::fs::create_dir(&dir).unwrap();
        let job = setup(&dir, Mode::Headline, |m| m["adapters"][EXAMPLE][key] = value.clone());
        let (out, report, _) = run_job(&dir, "stock", &job, stock_command);
        assert_eq!(out.status.code(), Some(1), "{key}: {}", util::stderr(&out));
        let error = report["error"].as_str().unwrap_or_default();
        assert!(error.starts_with(expected.trim_end()), "{key}: expected {expected:?}, found {error:?}");
    }
}

/// The kit's test slowdown busy-waits, as the Rust runtime's does
/// (`crates/worker-runtime/src/slowdown.rs`): issue 28 found a short sleep costs far more than
/// asked. Over a 20 ms slowdown the thread spends CPU time, where a sleep would spend almost
/// none (a quarter of the wait is a wide margin for preemption on a busy host).
#[test]
fn the_kits_slowdown_spins_on_the_cpu_rather_than_sleeping() {
    let script = "import sys, time\n\
                  sys.path.insert(0, sys.argv[1])\n\
                  from decode_baseline_worker import protocol\n\
                  slowdown = protocol.Slowdown('stock')\n\
                  cpu, wall = time.thread_time_ns(), time.perf_counter_ns()\n\
                  slowdown.apply(\"before_seed_forward\")\n\
                  slowdown.apply(\"before_decode_step\")\n\
                  print(slowdown.micros, time.thread_time_ns() - cpu, time.perf_counter_ns() - wall)\n";
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(util::repo_root().join("tools/kit/python"))
        .env("DECODE_BASELINE_TEST_SLOWDOWN_US", "20000")
        .env("DECODE_BASELINE_TEST_SLOWDOWN_ADAPTER", "stock")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let line = String::from_utf8(out.stdout).unwrap();
    let fields: Vec<u64> = line.split_whitespace().map(|f| f.parse().unwrap()).collect();
    let [micros, cpu_ns, wall_ns] = fields[..] else { panic!("expected three numbers, got {line:?}") };
    assert_eq!(micros, 20_000);
    assert!(wall_ns >= 20_000_000, "{line}");
    assert!(cpu_ns >= 5_000_000, "spent {cpu_ns} ns of CPU in a {wall_ns} ns wait: it did not spin");
}
