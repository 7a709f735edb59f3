//! Controlled vs stock, side by side in one run, on one fixture (a benchmark, not a test):
//!
//! - per-token time: the median decode-step interval (token k to token k+1, k ≥ 1) of the
//!   controlled loop (`run_headline`) against stock's (`mlx_lm.stream_generate`, in a persistent
//!   Python subprocess on the same libmlx, timed at each yielded response, `mx.synchronize()`
//!   after each request), in alternating blocks so drift hits both;
//! - the controlled host overhead: step time minus MLX evaluation time, as % of the step
//!   (aggregate over all measured steps, and the median of the per-step ratios);
//! - graph build per step against Python's: mlx_lm's own model called step by step in the same
//!   subprocess (`model(y, cache)` and the argmax built, then `mx.eval`, no look-ahead), the
//!   build and evaluation timed separately like the controlled loop's, so the two build times
//!   are for the same graph;
//! - start to ready: spawn → model loaded and "ready" printed, for this executable (`--ready`)
//!   and for Python importing mlx_lm and loading the model.
//!
//! Run: `cargo bench -p decode-baseline-controlled --bench decode [-- FIXTURE [BLOCKS]]`
//! (default `fixtures/tiny-qwen3`, 4 blocks of 10 requests per adapter after 5 warm-ups each).
//! Larger layer stacks for the same measurements: `tools/fixture/make_fixture.py --shape small
//! --variant tiny-qwen3 --out DIR`, then pass `DIR` as `FIXTURE`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use decode_baseline_controlled::model::Model;

#[path = "support/harness.rs"]
mod harness;
use harness::{median, repo, run_controlled, Controlled, Stock, NEW_TOKENS};

const WARMUP: usize = 5;
const PER_BLOCK: usize = 10;

/// Spawns this executable in `--ready` mode: load the model, print "ready".
fn controlled_ready_ms(fixture: &Path) -> f64 {
    let t = Instant::now();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ready", fixture.to_str().unwrap()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let ms = t.elapsed().as_secs_f64() * 1e3;
    assert_eq!(line.trim(), "ready");
    child.wait().unwrap();
    ms
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    if args.first().map(String::as_str) == Some("--ready") {
        Model::load(Path::new(&args[1])).unwrap();
        println!("ready");
        return;
    }
    let fixture = args.first().map(PathBuf::from).unwrap_or_else(|| repo().join("fixtures/tiny-qwen3"));
    let blocks: usize = args.get(1).map(|b| b.parse().unwrap()).unwrap_or(4);

    let ready_controlled: Vec<f64> = (0..3).map(|_| controlled_ready_ms(&fixture)).collect();
    let (mut stock, first_stock_ready) = Stock::spawn(&fixture);
    let model = Model::load(&fixture).unwrap();

    stock.run(WARMUP);
    run_controlled(&model, WARMUP, None);
    let mut ours = Controlled::default();
    let mut theirs: Vec<f64> = Vec::new();
    let (mut py_build, mut py_eval) = (Vec::new(), Vec::new());
    for _ in 0..blocks {
        theirs.extend(stock.run(PER_BLOCK).into_iter().flatten());
        run_controlled(&model, PER_BLOCK, Some(&mut ours));
        let (b, e) = stock.split(PER_BLOCK / 2);
        py_build.extend(b);
        py_eval.extend(e);
    }
    drop(stock.stdin);
    stock.child.wait().unwrap();
    let mut stock_ready = vec![first_stock_ready];
    for _ in 0..2 {
        let (s, ms) = Stock::spawn(&fixture);
        drop(s.stdin);
        let mut c = s.child;
        c.wait().unwrap();
        stock_ready.push(ms);
    }

    let c_med = median(&mut ours.dur.clone());
    let s_med = median(&mut theirs.clone());
    let overhead_total: f64 = ours.dur.iter().sum::<f64>() - ours.eval.iter().sum::<f64>();
    let overhead_pct = 100.0 * overhead_total / ours.dur.iter().sum::<f64>();
    let mut per_step: Vec<f64> = ours.dur.iter().zip(&ours.eval).map(|(d, e)| 100.0 * (d - e) / d).collect();
    let build_med = median(&mut ours.build.clone());
    let eval_med = median(&mut ours.eval.clone());

    println!("fixture {}", fixture.display());
    println!(
        "requests per adapter: {} measured ({} blocks of {}), {} warm-up; {} tokens each",
        blocks * PER_BLOCK,
        blocks,
        PER_BLOCK,
        WARMUP,
        NEW_TOKENS
    );
    println!(
        "controlled per-token median  {:8.1} us  (build {:.1} us, eval {:.1} us)",
        c_med / 1e3,
        build_med / 1e3,
        eval_med / 1e3
    );
    println!("stock      per-token median  {:8.1} us", s_med / 1e3);
    println!("ratio controlled/stock       {:8.3}  (target <= 1.00, aim <= 0.90)", c_med / s_med);
    println!(
        "controlled host overhead     {:8.2} % of step time (aggregate), {:.2} % (median per step)  (target <= 10 %)",
        overhead_pct,
        median(&mut per_step)
    );
    let (py_build_med, py_eval_med) = (median(&mut py_build), median(&mut py_eval));
    println!(
        "graph build per step, median  controlled {:.1} us, mlx_lm model in Python {:.1} us, ratio {:.3}  (Python eval {:.1} us, its build {:.2} % of its step)",
        build_med / 1e3,
        py_build_med / 1e3,
        build_med / py_build_med,
        py_eval_med / 1e3,
        100.0 * py_build_med / (py_build_med + py_eval_med)
    );
    println!(
        "start to ready, median of 3  controlled {:.0} ms, stock {:.0} ms, ratio {:.3}",
        median(&mut ready_controlled.clone()),
        median(&mut stock_ready),
        median(&mut ready_controlled.clone()) / median(&mut stock_ready.clone())
    );
}
