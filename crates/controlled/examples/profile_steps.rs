//! Runs requests on a fixture with no timing around them, for profilers
//! (`valgrind --tool=callgrind`, `perf`): `profile_steps [FIXTURE] [REQUESTS] [TOKENS] [MODE]`
//! (defaults `fixtures/tiny-qwen3`, 3, 101, `headline`; MODE `fixed` feeds a fixed continuation
//! of TOKENS - 1 ids instead of the argmax, as fixed-continuation does, and `reference` is greedy
//! with every step's logits kept for the margins, as reference-pair does). Prints the mean
//! graph-build and evaluation time per step and the build's share of the two. Under callgrind,
//! `--toggle-collect='*Model*forward*'` counts the graph build alone.
use std::path::PathBuf;

use decode_baseline_controlled::decode::{run_fixed, run_headline, run_reference, Options};
use decode_baseline_controlled::model::Model;

fn main() {
    let mut args = std::env::args().skip(1);
    let fixture = PathBuf::from(args.next().unwrap_or_else(|| "fixtures/tiny-qwen3".into()));
    let requests: usize = args.next().map_or(3, |s| s.parse().expect("REQUESTS"));
    let tokens: usize = args.next().map_or(101, |s| s.parse().expect("TOKENS"));
    let mode = args.next().unwrap_or_else(|| "headline".into());
    assert!(
        ["headline", "fixed", "reference"].contains(&mode.as_str()),
        "MODE must be headline, fixed or reference, found {mode:?}"
    );
    assert!(requests >= 1 && tokens >= 2, "REQUESTS must be at least 1 and TOKENS at least 2");
    let model = Model::load(&fixture).expect("load");
    let prompt = [5u32, 17, 42, 100, 7, 300, 12, 9, 250, 61, 480, 3];
    let (mut build, mut eval) = (0u64, 0u64);
    let continuation: Vec<u32> = (0..tokens as u32 - 1).map(|i| (i * 53 + 7) % 500).collect();
    let options = Options { check_contract: false, ..Options::default() };
    for _ in 0..requests {
        let run = match mode.as_str() {
            "fixed" => run_fixed::<()>(&model, &prompt, &continuation, options, &mut |_| Ok(())),
            "reference" => run_reference::<()>(&model, &prompt, tokens, &[], options, &mut |_| Ok(())),
            _ => run_headline::<()>(&model, &prompt, tokens, &[], options, &mut |_| Ok(())),
        }
        .expect("decode");
        for s in &run.record.steps {
            build += s.build_ns.unwrap_or(0);
            eval += s.eval_ns.unwrap_or(0);
        }
    }
    let n = (requests * (tokens - 1)) as f64;
    println!(
        "steps {n}  build {:.1} us  eval {:.1} us  build share {:.2} %",
        build as f64 / n / 1e3,
        eval as f64 / n / 1e3,
        100.0 * build as f64 / (build + eval) as f64
    );
}
