//! Graph build per decode step, architecture by architecture (a benchmark, not a test): for each
//! architecture the controlled loop implements, a tiny model written by mlx_lm's own classes
//! (`tools/fixture/reference_logits.py --make-tiny KIND --vocab 512`, float32, the committed
//! fixture's tokenizer beside it), then, in alternating blocks on the same libmlx:
//!
//! - the controlled loop's build per step (`run_headline`: the forward and argmax built, before
//!   `eval`) and its evaluation per step;
//! - mlx_lm's own model stepped the same way in Python (`model(y, cache)` and the argmax built,
//!   then `mx.eval`), so the two builds are of the same graph.
//!
//! The table gives the medians and the ratio controlled/Python per architecture, Qwen3 first.
//! Run: `cargo bench -p decode-baseline-controlled --bench graph_build [-- KIND ...]`
//! (default: every kind below; 3 blocks of 10 requests per side after 3 warm-ups). A wall-clock
//! build on a busy machine moves with the load: compare the rows of one run, not across runs.

use std::path::Path;
use std::process::Command;

use decode_baseline_controlled::model::Model;

#[path = "support/harness.rs"]
mod harness;
use harness::{median, repo, run_controlled, Controlled, Stock};

/// `--make-tiny` kinds, one per architecture reader of the loop (mistral loads as llama).
const KINDS: [&str; 12] = [
    "qwen3",
    "qwen2",
    "llama",
    "llama3",
    "mistral",
    "ministral3",
    "gemma3_text",
    "gemma3",
    "phi3",
    "smollm3",
    "qwen3_moe",
    "gpt_oss",
];
const WARMUP: usize = 3;
const BLOCKS: usize = 3;
const PER_BLOCK: usize = 10;

struct Row {
    kind: String,
    controlled_build: f64,
    controlled_eval: f64,
    python_build: f64,
    python_eval: f64,
}

fn make_tiny(kind: &str, dir: &Path) {
    let repo = repo();
    let status = Command::new(repo.join(".venv/bin/python"))
        .arg(repo.join("tools/fixture/reference_logits.py"))
        .args(["--make-tiny", kind, "--vocab", "512", "--out"])
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("spawn .venv/bin/python");
    assert!(status.success(), "reference_logits.py --make-tiny {kind} failed: {status}");
    for file in ["tokenizer.json", "tokenizer_config.json"] {
        std::fs::copy(repo.join("fixtures/tiny-qwen3").join(file), dir.join(file)).unwrap();
    }
}

fn measure(kind: &str, root: &Path) -> Row {
    let dir = root.join(kind);
    std::fs::create_dir(&dir).unwrap();
    make_tiny(kind, &dir);
    let model = Model::load(&dir).unwrap_or_else(|e| panic!("{kind}: the controlled loop cannot load it: {e}"));
    let (mut stock, _) = Stock::spawn(&dir);
    run_controlled(&model, WARMUP, None);
    stock.split(WARMUP);
    let mut ours = Controlled::default();
    let (mut py_build, mut py_eval) = (Vec::new(), Vec::new());
    for _ in 0..BLOCKS {
        run_controlled(&model, PER_BLOCK, Some(&mut ours));
        let (build, eval) = stock.split(PER_BLOCK);
        py_build.extend(build);
        py_eval.extend(eval);
    }
    drop(stock.stdin);
    stock.child.wait().unwrap();
    Row {
        kind: kind.to_owned(),
        controlled_build: median(&mut ours.build),
        controlled_eval: median(&mut ours.eval),
        python_build: median(&mut py_build),
        python_eval: median(&mut py_eval),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let kinds: Vec<&str> = if args.is_empty() { KINDS.to_vec() } else { args.iter().map(String::as_str).collect() };
    if let Some(unknown) = kinds.iter().find(|k| !KINDS.contains(k)) {
        eprintln!("graph_build: unknown kind {unknown:?}; expected one of {}", KINDS.join(", "));
        std::process::exit(2);
    }
    let root = tempfile::tempdir().unwrap();
    let rows: Vec<Row> = kinds.iter().map(|kind| measure(kind, root.path())).collect();

    println!(
        "graph build per decode step, medians over {} requests of {} tokens per side (tiny float32 models by mlx_lm's classes)",
        BLOCKS * PER_BLOCK,
        harness::NEW_TOKENS
    );
    println!(
        "{:<12} {:>16} {:>16} {:>10} {:>16} {:>16}",
        "kind", "controlled build", "mlx_lm build", "ratio", "controlled eval", "mlx_lm eval"
    );
    for r in &rows {
        println!(
            "{:<12} {:>13.1} us {:>13.1} us {:>10.3} {:>13.1} us {:>13.1} us",
            r.kind,
            r.controlled_build / 1e3,
            r.python_build / 1e3,
            r.controlled_build / r.python_build,
            r.controlled_eval / 1e3,
            r.python_eval / 1e3
        );
    }
}
