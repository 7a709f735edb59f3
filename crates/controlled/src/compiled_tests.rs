//! The compiled step ([`crate::compiled`]) against mlx_lm's model and against the eager step:
//! logits bit for bit at every step of 128-token greedy requests, the first request tracing
//! every position and the later ones replaying, with a different prompt of the same length (so
//! a cache buffer captured as a constant instead of carried as an input would show), and the
//! loop itself (`run_request` on [`Stepper::Compiled`]) with the contract checked.

use std::collections::HashMap;
use std::path::Path;

use mlx_rs::ops::indexing::argmax_axis;
use mlx_rs::Array;

use crate::compiled::CompiledSteps;
use crate::contract::top2;
use crate::decode::{prefill_prompt, run_request, Checkpoint, Options, Request, Stepper, PREFILL_STEP_SIZE};
use crate::model::{LayerCache, Model};
use crate::reference_tests::{continuation, reference, repo, row, tokens, NEW_TOKENS};

const PROMPT: [u32; 12] = [5, 17, 42, 100, 7, 200, 12, 9, 250, 61, 180, 3];
/// Another prompt of the same length: the same traces replay on other cache contents.
const OTHER: [u32; 12] = [9, 33, 71, 2, 150, 44, 8, 230, 19, 66, 120, 240];

/// mlx_lm's greedy logits (`greedy_{k}`, k = 0..127) and stream for `prompt`.
fn mlx_lm(model_dir: &Path, prompt: &[u32]) -> (HashMap<String, Array>, Vec<u32>) {
    let tmp = tempfile::tempdir().unwrap();
    let theirs = reference(model_dir, prompt, tmp.path());
    let greedy = tokens(&theirs.summary["greedy_tokens"]);
    (theirs.logits, greedy)
}

/// The bits of a logits row, as f32 (exact for bfloat16).
fn bits(a: &Array) -> Vec<u32> {
    row(a).iter().map(|x| x.to_bits()).collect()
}

/// The decode-step logits of one greedy request (after the loop's prefill), compiled
/// when `compiled` is given, else eager.
fn step_logits(model: &Model, prompt: &[u32], compiled: Option<&mut CompiledSteps>) -> Vec<Array> {
    let (mut cache, logits) = prefill_prompt(model, prompt, PREFILL_STEP_SIZE).unwrap();
    let mut token = argmax_axis(&logits, -1, false).unwrap();
    token.eval().unwrap();
    let mut state: Vec<Array> = cache.iter().flat_map(LayerCache::state).cloned().collect();
    let mut rows = Vec::new();
    let mut compiled = compiled;
    for k in 0..NEW_TOKENS - 1 {
        let offset = (prompt.len() + k) as i32;
        let logits = match compiled.as_deref_mut() {
            Some(c) => {
                let (logits, next) = c.step(model, &mut cache, prompt.len() as u32, offset, &token, &state).unwrap();
                state = next;
                logits
            }
            None => model.forward(&token, &mut cache).unwrap(),
        };
        token = argmax_axis(&logits, -1, false).unwrap();
        let buffers: Vec<&Array> = if compiled.is_some() {
            state.iter().collect()
        } else {
            cache.iter().flat_map(LayerCache::state).collect()
        };
        mlx_rs::transforms::eval(buffers.into_iter().chain([&token, &logits])).unwrap();
        rows.push(logits);
    }
    rows
}

fn check_fixture(name: &str) {
    check_model(name, &repo().join("fixtures").join(name));
}

fn check_model(name: &str, dir: &Path) {
    let dir = dir.to_owned();
    let model = Model::load(&dir).unwrap();
    let mut compiled = CompiledSteps::new();
    // Cold (traces every position), warm on another prompt, warm on the first again.
    for (request, prompt) in [PROMPT, OTHER, PROMPT].iter().enumerate() {
        let (theirs, _) = mlx_lm(&dir, prompt);
        let eager = step_logits(&model, prompt, None);
        let ours = step_logits(&model, prompt, Some(&mut compiled));
        for (k, (c, e)) in ours.iter().zip(&eager).enumerate() {
            let c = bits(c);
            assert_eq!(c, bits(e), "{name}: request {request}, step {k}: compiled logits differ from the eager step's");
            assert_eq!(
                c,
                bits(&theirs[&format!("greedy_{k}")]),
                "{name}: request {request}, step {k}: compiled logits differ from mlx_lm's"
            );
        }
        assert_eq!(compiled.len(), NEW_TOKENS - 1, "{name}: one compiled step per position");
        assert_eq!(compiled.traces(), (NEW_TOKENS - 1) as u64, "{name}: request {request} traced again");
    }
}

#[test]
fn compiled_step_logits_equal_the_eager_step_and_mlx_lm_bit_for_bit() {
    check_fixture("tiny-qwen3");
}

#[test]
fn compiled_step_logits_equal_the_eager_step_and_mlx_lm_bit_for_bit_in_bfloat16() {
    check_fixture("tiny-qwen3-bf16");
}

/// Sliding-window layers: the rotating caches wrap within the request, and every write index
/// the trace bakes in must be the one the eager step uses.
#[test]
fn compiled_step_logits_are_bit_identical_through_rotating_caches() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().to_str().unwrap();
    let outcome = crate::reference_server::call(&repo(), &["--make-tiny", "gemma3_text", "--out", out]);
    assert!(outcome.success(), "--make-tiny gemma3_text failed:\n{}", outcome.output);
    check_model("gemma3_text", tmp.path());
}

fn never(_: Checkpoint) -> Result<(), ()> {
    Ok(())
}

/// Fixed-continuation's (argmax, margin) per step.
fn fixed(model: &Model, continuation: &[u32], stepper: Stepper<'_>) -> Vec<(u32, Option<f64>)> {
    let request = Request::Fixed { prompt: &PROMPT, continuation };
    let run = run_request(model, request, Options { check_contract: true, ..Options::default() }, stepper, &mut never)
        .unwrap();
    run.record.steps.iter().map(|s| (s.argmax, s.margin)).collect()
}

/// The loop on the compiled step, the contract checked at every boundary (cache offsets, every
/// buffer evaluated): mlx_lm's stream and, in reference-pair, its margins at every step; the
/// fixed-continuation argmaxes equal the eager loop's.
#[test]
fn the_compiled_loop_gives_mlx_lm_streams_and_margins_under_the_contract() {
    let dir = repo().join("fixtures").join("tiny-qwen3");
    let model = Model::load(&dir).unwrap();
    let checked = Options { check_contract: true, ..Options::default() };
    let mut compiled = CompiledSteps::new();
    let (theirs, greedy) = mlx_lm(&dir, &PROMPT);
    for _ in 0..2 {
        let request = Request::Reference { prompt: &PROMPT, max_new_tokens: NEW_TOKENS, stop: &[] };
        let run = run_request(&model, request, checked, Stepper::Compiled(&mut compiled), &mut never).unwrap();
        let stream: Vec<u32> =
            std::iter::once(run.record.first_token).chain(run.record.steps.iter().map(|s| s.argmax)).collect();
        assert_eq!(stream, greedy);
        for (k, s) in run.record.steps.iter().enumerate() {
            let t = top2(&theirs[&format!("greedy_{k}")]).unwrap();
            assert_eq!((s.margin, s.tie), (Some(t.margin()), Some(t.tie())), "step {k} margin");
        }
        let request = Request::Headline { prompt: &PROMPT, max_new_tokens: NEW_TOKENS, stop: &[] };
        let head = run_request(&model, request, checked, Stepper::Compiled(&mut compiled), &mut never).unwrap();
        assert_eq!(head.record.steps.iter().map(|s| s.argmax).collect::<Vec<_>>(), greedy[1..]);
    }
    assert_eq!(compiled.traces(), (NEW_TOKENS - 1) as u64);
    let continuation = continuation();
    let eager = fixed(&model, &continuation, Stepper::Eager);
    assert_eq!(fixed(&model, &continuation, Stepper::Compiled(&mut compiled)), eager);
    // Fed tokens that are not the argmax: positions past the prompt already traced replay.
    assert_eq!(compiled.traces(), (NEW_TOKENS - 1) as u64);
    assert_eq!(fixed(&model, &continuation, Stepper::Compiled(&mut compiled)), eager);
}
