//! What both benches share: mlx_lm's side (a persistent Python subprocess on the same libmlx,
//! answering per-token intervals of `stream_generate` or build/evaluation times of mlx_lm's model
//! stepped synchronously), the controlled side (`run_headline`, step records kept), the prompt.

#![allow(dead_code)] // each bench uses its part

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use decode_baseline_controlled::decode::{run_headline, Checkpoint, Options};
use decode_baseline_controlled::model::Model;

pub const PROMPT: [u32; 12] = [5, 17, 42, 100, 7, 300, 12, 9, 250, 61, 480, 3];
pub const NEW_TOKENS: usize = 128;

const STOCK: &str = r#"
import json, sys, time
import mlx.core as mx
mx.set_default_device(mx.cpu)
from mlx_lm import load, stream_generate
from mlx_lm.models.cache import make_prompt_cache
model, tok = load(sys.argv[1])
prompt = [int(t) for t in sys.argv[2].split(",")]
n = int(sys.argv[3])

def split(requests):
    build, ev = [], []
    for _ in range(requests):
        cache = make_prompt_cache(model)
        logits = model(mx.array([prompt]), cache=cache)[:, -1, :]
        y = mx.argmax(logits, axis=-1)
        mx.eval(y, logits, [c.state for c in cache])
        for _ in range(n - 1):
            t0 = time.perf_counter_ns()
            logits = model(y[None], cache=cache)[:, -1, :]
            y = mx.argmax(logits, axis=-1)
            t1 = time.perf_counter_ns()
            mx.eval(y, logits, [c.state for c in cache])
            build.append(t1 - t0)
            ev.append(time.perf_counter_ns() - t1)
    return [build, ev]

print("ready", flush=True)
for line in sys.stdin:
    if line.startswith("split "):
        print(json.dumps(split(int(line.split()[1]))), flush=True)
        continue
    out = []
    for _ in range(int(line)):
        mx.synchronize()
        events = []
        t0 = time.perf_counter_ns()
        for r in stream_generate(model, tok, prompt, max_tokens=n):
            events.append(time.perf_counter_ns() - t0)
        mx.synchronize()
        out.append([b - a for a, b in zip(events, events[1:])])
    print(json.dumps(out), flush=True)
"#;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn prompt_arg() -> String {
    PROMPT.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

pub struct Stock {
    pub child: std::process::Child,
    pub stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Stock {
    pub fn spawn(fixture: &Path) -> (Self, f64) {
        let t = Instant::now();
        let mut child = Command::new(repo().join(".venv/bin/python"))
            .args(["-c", STOCK, fixture.to_str().unwrap(), &prompt_arg(), &NEW_TOKENS.to_string()])
            .env("HF_HUB_OFFLINE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn .venv/bin/python");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready", "stock subprocess did not get ready");
        let ready_ms = t.elapsed().as_secs_f64() * 1e3;
        (Stock { child, stdin, stdout }, ready_ms)
    }

    /// Per-token intervals (ns) of `n` requests.
    pub fn run(&mut self, n: usize) -> Vec<Vec<f64>> {
        writeln!(self.stdin, "{n}").unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).expect("stock output")
    }

    /// Build and evaluation times (ns) per step of mlx_lm's model stepped synchronously.
    pub fn split(&mut self, n: usize) -> (Vec<f64>, Vec<f64>) {
        writeln!(self.stdin, "split {n}").unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).expect("stock split output")
    }
}

#[derive(Default)]
pub struct Controlled {
    pub dur: Vec<f64>,
    pub eval: Vec<f64>,
    pub build: Vec<f64>,
}

pub fn run_controlled(model: &Model, n: usize, into: Option<&mut Controlled>) {
    let mut sink = Controlled::default();
    let into = into.unwrap_or(&mut sink);
    for _ in 0..n {
        let run = run_headline(
            model,
            &PROMPT,
            NEW_TOKENS,
            &[],
            Options { check_contract: false, ..Options::default() },
            &mut |_: Checkpoint| Ok::<(), ()>(()),
        )
        .unwrap();
        for s in &run.record.steps {
            into.dur.push(s.dur_ns as f64);
            into.eval.push(s.eval_ns.unwrap() as f64);
            into.build.push(s.build_ns.unwrap() as f64);
        }
    }
}
