//! Tests against MLX and mlx_lm themselves, on every fixture variant: the Rust model's logits
//! compared bit for bit with mlx_lm's model and KVCache on the same inputs
//! (`tools/fixture/reference_logits.py`), the greedy streams with mlx_lm's and stock's, the
//! fixed-continuation argmaxes, the issue-2 weight slice (`tools/fixture/reference_slice.py`)
//! and the MLX identity both processes report. Python runs as the repository's
//! `.venv/bin/python`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use mlx_rs::ops::indexing::{argmax_axis, take_axis};
use mlx_rs::ops::{dequantize, matmul, transpose};
use mlx_rs::{Array, Dtype};
use sha2::{Digest, Sha256};

use crate::contract::top2;
use crate::decode::{prefill_prompt, run_fixed, run_headline, run_reference, Checkpoint, Options, PREFILL_STEP_SIZE};
use crate::model::Model;
use crate::reference_server::{self, Outcome};

const VARIANTS: [&str; 4] = ["tiny-qwen3", "tiny-qwen3-tied", "tiny-qwen3-bf16", "tiny-qwen3-q4"];
/// Ordinary ids of every model here (the tiny extra architectures have a vocabulary of 256).
pub(crate) const PROMPT: [u32; 12] = [5, 17, 42, 100, 7, 200, 12, 9, 250, 61, 180, 3];
pub(crate) const NEW_TOKENS: usize = 128;

pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn fixture(name: &str) -> PathBuf {
    repo().join("fixtures").join(name)
}

/// Runs `tools/fixture/reference_logits.py ARGS` in a served process (`reference_server`).
fn reference_logits(args: &[&str]) -> Outcome {
    reference_server::call(&repo(), args)
}

/// The same, asserting that it succeeded.
fn reference_logits_ok(args: &[&str]) {
    let out = reference_logits(args);
    assert!(out.success(), "reference_logits.py {args:?} failed:\n{}", out.output);
}

/// Runs `.venv/bin/python ARGS` from the repository and returns its standard output.
fn python(args: &[&str]) -> String {
    let out = Command::new(repo().join(".venv/bin/python"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run .venv/bin/python");
    assert!(out.status.success(), "python {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn ids(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// 32 continuation tokens, spread over the ordinary ids.
pub(crate) fn continuation() -> Vec<u32> {
    (0..32u32).map(|i| (i * 97 + 11) % 251).collect()
}

pub(crate) struct Reference {
    pub(crate) summary: serde_json::Value,
    pub(crate) logits: HashMap<String, Array>,
}

/// How mlx_lm's reference is run.
#[derive(Clone, Copy, PartialEq)]
enum Stock {
    /// As installed.
    AsIs,
    /// With `--shim-global-scale`: `QuantizedSwitchLinear`'s `global_scale=None` dropped where
    /// this mlx's `gather_qmm` does not take the keyword.
    GlobalScaleShim,
}

/// `reference_logits.py`'s exit status when mlx_lm cannot run a quantized MoE on this mlx.
const GLOBAL_SCALE_EXIT: i32 = 3;

pub(crate) fn reference(model_dir: &Path, prompt: &[u32], dir: &Path) -> Reference {
    reference_with(model_dir, prompt, dir, Stock::AsIs, PREFILL_STEP_SIZE).unwrap_or_else(|reason| panic!("{reason}"))
}

/// mlx_lm's reference, or the reason it cannot run (exit status 3: the `global_scale`
/// `TypeError` of quantized MoE on mlx 0.32.2); any other failure panics.
/// `step` is the prefill step size of its split prefill (the structure the decode logits follow).
fn reference_with(
    model_dir: &Path,
    prompt: &[u32],
    dir: &Path,
    stock: Stock,
    step: usize,
) -> Result<Reference, String> {
    let (steps, step) = ((NEW_TOKENS - 1).to_string(), step.to_string());
    let (prompt, continuation) = (ids(prompt), ids(&continuation()));
    let mut args = vec![
        "--model-dir",
        model_dir.to_str().unwrap(),
        "--prompt",
        &prompt,
        "--steps",
        &steps,
        "--continuation",
        &continuation,
        "--out",
        dir.to_str().unwrap(),
        "--prefill-step-size",
        &step,
    ];
    if stock == Stock::GlobalScaleShim {
        args.push("--shim-global-scale");
    }
    let out = reference_logits(&args);
    if out.status == GLOBAL_SCALE_EXIT {
        return Err(out.output.trim().to_owned());
    }
    assert!(out.success(), "reference_logits.py {args:?} failed:\n{}", out.output);
    let summary = serde_json::from_str(&std::fs::read_to_string(dir.join("reference.json")).unwrap()).unwrap();
    let logits = Array::load_safetensors(dir.join("logits.safetensors")).unwrap();
    Ok(Reference { summary, logits })
}

pub(crate) fn tokens(v: &serde_json::Value) -> Vec<u32> {
    v.as_array().unwrap().iter().map(|t| t.as_u64().unwrap() as u32).collect()
}

/// A logits row as f32 (exact for bf16).
pub(crate) fn row(a: &Array) -> Vec<f32> {
    let f = a.as_dtype(Dtype::Float32).unwrap().reshape(&[-1]).unwrap();
    f.eval().unwrap();
    f.as_slice::<f32>().to_vec()
}

/// Maximum absolute difference, and whether every value has the same bits.
fn compare(ours: &Array, theirs: &Array) -> (f32, bool) {
    assert_eq!(ours.dtype(), theirs.dtype());
    let (a, b) = (row(ours), row(theirs));
    assert_eq!(a.len(), b.len());
    let identical = a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits());
    let max = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
    (max, identical)
}

fn never(_: Checkpoint) -> Result<(), ()> {
    Ok(())
}

fn checked() -> Options {
    Options { check_contract: true, ..Options::default() }
}

#[test]
fn logits_and_streams_match_mlx_lm_on_every_variant() {
    for variant in VARIANTS {
        check_against_mlx_lm(&fixture(variant), variant, &PROMPT);
    }
}

/// A 200-token prompt: the prompt forward fills most of the first 256-position cache block and
/// decoding crosses into the second (mlx_lm's growth by concatenation), on float32 and bf16.
#[test]
fn long_prompt_crossing_the_cache_step_matches_mlx_lm() {
    let prompt: Vec<u32> = (0..200u32).map(|i| (i * 37 + 5) % 251).collect();
    for variant in ["tiny-qwen3", "tiny-qwen3-bf16"] {
        check_against_mlx_lm(&fixture(variant), variant, &prompt);
    }
}

/// qwen2, llama (biases, tied), llama with Llama 3 RoPE scaling, and qwen3 8-bit: tiny random
/// models written by mlx_lm's own classes, compared the same way.
#[test]
fn other_architectures_match_mlx_lm() {
    for kind in ["qwen2", "llama", "llama3", "qwen3-q8"] {
        let tmp = tempfile::tempdir().unwrap();
        reference_logits_ok(&["--make-tiny", kind, "--out", tmp.path().to_str().unwrap()]);
        check_against_mlx_lm(tmp.path(), kind, &PROMPT);
    }
}

/// A 200-token prompt: past the sliding window (32) of the tiny sliding-window models during
/// the prompt forward, past mlx_lm's 256-position cache step during decoding.
fn long_prompt() -> Vec<u32> {
    (0..200u32).map(|i| (i * 37 + 5) % 251).collect()
}

/// One architecture added after qwen3/qwen2/llama, written by mlx_lm's own classes
/// (`reference_logits.py --make-tiny KIND --variant V`) in float32, bfloat16, 3-bit affine at
/// group size 32 and the mixed_3_6 recipe: the logits equal mlx_lm's bit for bit at the
/// prompt's last position and every step, on the long prompt (and the short one in float32,
/// where decoding crosses the window instead of the prompt).
fn check_architecture(kind: &str) {
    for variant in ["float32", "bfloat16", "q3g32", "mixed_3_6"] {
        let tmp = make_tiny(kind, variant);
        let label = format!("{kind} {variant}");
        check_against_mlx_lm(tmp.path(), &label, &long_prompt());
        if variant == "float32" {
            check_against_mlx_lm(tmp.path(), &format!("{label} short prompt"), &PROMPT);
        }
    }
}

#[test]
fn gemma3_text_matches_mlx_lm() {
    check_architecture("gemma3_text");
}

#[test]
fn gemma3_matches_mlx_lm() {
    check_architecture("gemma3");
}

#[test]
fn phi3_matches_mlx_lm() {
    check_architecture("phi3");
}

#[test]
fn mistral_matches_mlx_lm() {
    check_architecture("mistral");
}

#[test]
fn ministral3_matches_mlx_lm() {
    check_architecture("ministral3");
}

#[test]
fn smollm3_matches_mlx_lm() {
    check_architecture("smollm3");
}

/// Writes `reference_logits.py --make-tiny KIND --variant VARIANT` into a fresh folder.
pub(crate) fn make_tiny(kind: &str, variant: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    reference_logits_ok(&["--make-tiny", kind, "--variant", variant, "--out", tmp.path().to_str().unwrap()]);
    tmp
}

/// The greedy steps' routing (the first sparse layer's experts at each step) takes more than
/// one value, so the decode loop really switches experts.
fn assert_routing_changes(label: &str, summary: &serde_json::Value) {
    let routes = summary["greedy_routes"].as_array().unwrap_or_else(|| panic!("{label}: no greedy_routes"));
    assert_eq!(routes.len(), NEW_TOKENS - 1, "{label}: one route per step");
    let distinct: std::collections::BTreeSet<String> = routes.iter().map(|r| r.to_string()).collect();
    let changes = routes.windows(2).filter(|w| w[0] != w[1]).count();
    eprintln!(
        "{label}: {} distinct expert sets over {} steps, {changes} changes between consecutive steps",
        distinct.len(),
        routes.len()
    );
    assert!(distinct.len() > 1, "{label}: routing never changes");
}

/// A mixture-of-experts architecture in float32 (the dtype MLX's CPU `GatherMM` evaluates), on
/// the long prompt (the prefill's 400 expert indices take `SwitchGLU`'s sorted path, the
/// sliding window is crossed in the prefill and the 256-position cache step in decoding) and
/// the short one (unsorted prefill; the window crossed while decoding).
fn check_moe(kind: &str) {
    let tmp = make_tiny(kind, "float32");
    for (label, prompt) in [("long prompt", long_prompt()), ("short prompt", PROMPT.to_vec())] {
        let label = format!("{kind} float32 {label}");
        let summary = check_against_mlx_lm(tmp.path(), &label, &prompt);
        assert_routing_changes(&label, &summary);
    }
}

#[test]
fn qwen3_moe_matches_mlx_lm() {
    check_moe("qwen3_moe");
}

#[test]
fn gpt_oss_matches_mlx_lm() {
    check_moe("gpt_oss");
}

/// A qwen3_moe folder in the per-expert layout (`mlp.experts.<e>.<proj>.weight`, as
/// transformers writes it): mlx_lm's sanitize stacks them, and so does the controlled model.
#[test]
fn qwen3_moe_per_expert_layout_is_stacked_as_mlx_lm() {
    let stacked = make_tiny("qwen3_moe", "float32");
    let tmp = tempfile::tempdir().unwrap();
    let script = r#"
import shutil, sys, pathlib
import mlx.core as mx
src, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
w = mx.load(str(src / "model.safetensors"))
for k in [k for k in w if ".mlp.switch_mlp." in k]:
    for e in range(w[k].shape[0]):
        w[k.replace(".switch_mlp.", f".experts.{e}.")] = w[k][e]
    del w[k]
mx.save_safetensors(str(out / "model.safetensors"), w)
shutil.copy(src / "config.json", out / "config.json")
"#;
    python(&["-c", script, stacked.path().to_str().unwrap(), tmp.path().to_str().unwrap()]);
    check_against_mlx_lm(tmp.path(), "qwen3_moe per-expert layout", &PROMPT);
}

/// MLX's CPU `GatherMM::eval` error for a dtype other than float32.
const GATHER_MM_FLOAT32: &str = "[GatherMM::eval] Currently only supports float32";

/// bfloat16 experts through `gather_mm`: MLX's CPU backend refuses them, in mlx_lm as in the
/// controlled model (the same `GatherMM::eval` error), so bf16 dense MoE is not checkable here.
#[test]
fn bf16_moe_fails_on_the_cpu_backend_as_in_mlx_lm() {
    for kind in ["qwen3_moe", "gpt_oss"] {
        let tmp = make_tiny(kind, "bfloat16");
        let out = tempfile::tempdir().unwrap();
        let stock = reference_logits(&[
            "--model-dir",
            tmp.path().to_str().unwrap(),
            "--prompt",
            &ids(&PROMPT),
            "--out",
            out.path().to_str().unwrap(),
        ]);
        let said = &stock.output;
        assert!(
            !stock.success() && said.contains(GATHER_MM_FLOAT32),
            "{kind} bf16: mlx_lm did not fail with {GATHER_MM_FLOAT32:?} (test bf16 bit-identity instead):\n{said}"
        );
        let model = Model::load(tmp.path()).unwrap();
        let ids = Array::from_slice(&[5i32, 17], &[1, 2]);
        let err = model
            .forward(&ids, &mut model.new_cache())
            .and_then(|l| l.eval().map(|_| l))
            .err()
            .unwrap_or_else(|| panic!("{kind} bf16: the controlled model ran"));
        assert!(err.to_string().contains(GATHER_MM_FLOAT32), "{kind} bf16: {err}");
        eprintln!("{kind} bf16 on CPU: mlx_lm and the controlled model both fail: {err}");
    }
}

/// Quantized experts through `gather_qmm`: affine 4-bit of float32, the mixed_3_6 recipe of
/// bfloat16 (bf16 activations: `GatherQMM` runs them on CPU), and gpt-oss's MLX checkpoint
/// form (bfloat16, mxfp4 experts, 8-bit router). First against mlx_lm as installed; where it
/// cannot run (mlx_lm 0.32.2 passes `global_scale` to mlx 0.32.2's `gather_qmm`, a
/// `TypeError`) the test says so with the reason and compares against mlx_lm with only
/// `global_scale=None` dropped from that call (`--shim-global-scale`) instead: nothing is
/// skipped, the comparison is made either way.
#[test]
fn quantized_moe_matches_mlx_lm() {
    for (kind, variant) in [("qwen3_moe", "q4g32"), ("qwen3_moe", "mixed_3_6"), ("gpt_oss", "bf16-mxfp4")] {
        let tmp = make_tiny(kind, variant);
        let label = format!("{kind} {variant}");
        let out = tempfile::tempdir().unwrap();
        let r = match reference_with(tmp.path(), &long_prompt(), out.path(), Stock::AsIs, PREFILL_STEP_SIZE) {
            Ok(r) => r,
            Err(reason) => {
                eprintln!(
                    "{label}: mlx_lm as installed cannot run it ({reason}); comparing against mlx_lm \
                     with the global_scale shim instead"
                );
                let r =
                    reference_with(tmp.path(), &long_prompt(), out.path(), Stock::GlobalScaleShim, PREFILL_STEP_SIZE)
                        .unwrap_or_else(|reason| panic!("{label}: the shim did not apply: {reason}"));
                assert_eq!(r.summary["global_scale_shim"], true, "{label}");
                r
            }
        };
        let shim = r.summary["global_scale_shim"] == true;
        let label = format!("{label}{}", if shim { " (global_scale shim)" } else { "" });
        let summary = check_against(r, tmp.path(), &label, &long_prompt());
        assert_routing_changes(&label, &summary);
    }
}

/// The rest of what `mlx_lm convert` writes, on the llama decoder (as mistral): affine at the
/// other bit widths and group sizes, the mixed_2_6 and mixed_4_6 recipes, and the mxfp4, nvfp4
/// and mxfp8 modes (quantized embeddings and head throughout).
#[test]
fn quantization_breadth_matches_mlx_lm() {
    for variant in ["q2g128", "q4g32", "q5g64", "q6g128", "q8g64", "mixed_2_6", "mixed_4_6", "mxfp4", "nvfp4", "mxfp8"]
    {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_str().unwrap();
        reference_logits_ok(&["--make-tiny", "mistral", "--variant", variant, "--out", dir]);
        check_against_mlx_lm(tmp.path(), &format!("mistral {variant}"), &PROMPT);
    }
}

/// The fixture recipe on the `small` layer stack (8 layers, hidden 256, head_dim 32), float32
/// and 4-bit: wider matmuls and more layers than the tiny fixtures, still bit-identical.
#[test]
fn small_shape_matches_mlx_lm() {
    for variant in ["tiny-qwen3", "tiny-qwen3-q4"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_str().unwrap();
        python(&["tools/fixture/make_fixture.py", "--shape", "small", "--variant", variant, "--out", dir]);
        let config = crate::config::ModelConfig::load(tmp.path()).unwrap();
        assert_eq!((config.num_hidden_layers, config.hidden_size, config.head_dim), (8, 256, 32));
        check_against_mlx_lm(tmp.path(), &format!("small {variant}"), &PROMPT);
    }
}

/// Splits `fixture`'s `model.safetensors` into two shards with a `model.safetensors.index.json`,
/// as sharded checkpoints come: the layers in the second shard, the rest in the first.
fn write_sharded(fixture: &Path, out: &Path) {
    let script = r#"
import json, shutil, sys, pathlib
import mlx.core as mx
src, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
w = mx.load(str(src / "model.safetensors"))
names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
shards = [{k: v for k, v in w.items() if (".layers." in k) == bool(i)} for i in range(2)]
for name, shard in zip(names, shards):
    mx.save_safetensors(str(out / name), shard, metadata={"format": "mlx"})
index = {"metadata": {}, "weight_map": {k: names[i] for i, s in enumerate(shards) for k in s}}
(out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2, sort_keys=True))
for f in src.iterdir():
    if f.name != "model.safetensors":
        shutil.copy(f, out / f.name)
"#;
    python(&["-c", script, fixture.to_str().unwrap(), out.to_str().unwrap()]);
}

/// A sharded folder (two `model-*.safetensors` and the index) loads as the single file does and
/// matches mlx_lm, which globs the same shards; an index that names the wrong shard is refused.
#[test]
fn sharded_checkpoint_matches_mlx_lm_and_its_index_is_checked() {
    let tmp = tempfile::tempdir().unwrap();
    write_sharded(&fixture("tiny-qwen3-q4"), tmp.path());
    check_against_mlx_lm(tmp.path(), "sharded tiny-qwen3-q4", &PROMPT);

    let index_path = tmp.path().join("model.safetensors.index.json");
    let mut index: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&index_path).unwrap()).unwrap();
    index["weight_map"]["model.norm.weight"] = "model-00002-of-00002.safetensors".into();
    std::fs::write(&index_path, index.to_string()).unwrap();
    let err = Model::load(tmp.path()).err().expect("a wrong index is refused").to_string();
    assert!(
        err.contains("maps tensor model.norm.weight to model-00002-of-00002.safetensors, but it was model-00001-of-00002.safetensors"),
        "{err}"
    );
}

fn check_against_mlx_lm(model_dir: &Path, variant: &str, prompt_ids: &[u32]) -> serde_json::Value {
    let tmp = tempfile::tempdir().unwrap();
    let r = reference(model_dir, prompt_ids, tmp.path());
    check_against(r, model_dir, variant, prompt_ids)
}

/// The controlled model and loop against one mlx_lm reference; returns its summary.
fn check_against(r: Reference, model_dir: &Path, variant: &str, prompt_ids: &[u32]) -> serde_json::Value {
    {
        let model = Model::load(model_dir).unwrap();
        let theirs = |k: &str| r.logits.get(k).unwrap_or_else(|| panic!("{variant}: no {k}"));

        // The controlled structure, step by step, logits compared at every position: the
        // prefill's first-token logits against stock's (`generate_step`'s split prefill).
        let (mut cache, logits) = prefill_prompt(&model, prompt_ids, PREFILL_STEP_SIZE).unwrap();
        let (diff, identical) = compare(&logits, theirs("split_last"));
        assert!(identical, "{variant}: first-token logits differ from stock's prefill (max abs diff {diff})");
        let mut token = argmax_axis(&logits, -1, false).unwrap();
        let mut stream = vec![token.item_exact::<u32>()];
        for k in 0..NEW_TOKENS - 1 {
            let logits = model.forward(&token, &mut cache).unwrap();
            token = argmax_axis(&logits, -1, false).unwrap();
            let (diff, identical) = compare(&logits, theirs(&format!("greedy_{k}")));
            assert!(identical, "{variant}: step {k} logits differ from mlx_lm's (max abs diff {diff})");
            stream.push(token.item_exact::<u32>());
        }
        let greedy = tokens(&r.summary["greedy_tokens"]);
        assert_eq!(stream, greedy, "{variant}: greedy stream");

        // The whole-prompt structures, for the findings: one forward with the head at every
        // position, and with the head at the last position only (this loop's prefill until
        // issue 48); each against mlx_lm's, then against the split prefill's logits.
        let prompt: Vec<i32> = prompt_ids.iter().map(|&t| t as i32).collect();
        let prompt = Array::from_slice(&prompt, &[1, prompt_ids.len() as i32]);
        let full = model.forward(&prompt, &mut model.new_cache()).unwrap();
        let l = prompt_ids.len() as i32;
        let full_last = mlx_rs::ops::indexing::TryIndexOp::try_index(&full, (.., l - 1, ..)).unwrap();
        let (full_diff, full_same) = compare(&full_last, theirs("full_last"));
        let head_last = model.forward_last(&prompt, &mut model.new_cache()).unwrap();
        let (head_diff, head_same) = compare(&head_last, theirs("head_last"));
        assert!(head_same, "{variant}: whole-prompt logits differ from mlx_lm's (max abs diff {head_diff})");
        let (split_diff, split_same) = compare(theirs("head_last"), theirs("split_last"));
        eprintln!(
            "{variant}: first-token logits, controlled vs stock split_last: identical; whole prompt, head at all \
             positions, ours vs mlx_lm full_last: identical={full_same} max_abs_diff={full_diff}; whole prompt, head \
             last (identical to mlx_lm's) vs split_last: identical={split_same} max_abs_diff={split_diff}"
        );

        // The loop itself, contract checked at every boundary: the same stream as mlx_lm's
        // model and as stock's generate_step.
        let run = run_reference(&model, prompt_ids, NEW_TOKENS, &[], checked(), &mut never).unwrap();
        let ours: Vec<u32> =
            std::iter::once(run.record.first_token).chain(run.record.steps.iter().map(|s| s.argmax)).collect();
        assert_eq!(ours, greedy, "{variant}: reference-pair stream vs mlx_lm's model");
        // Stock's stream is compared where it equals mlx_lm's own model's: stock splits the
        // prefill and argmaxes log-probabilities, so in bfloat16 a near-tie can tip it away
        // from the model it runs, which no loop bit-identical to that model can follow.
        let stock = tokens(&r.summary["stock_tokens"]);
        match stock.iter().zip(&greedy).position(|(a, b)| a != b) {
            None => assert_eq!(ours, stock, "{variant}: reference-pair stream vs stock"),
            Some(i) => eprintln!("{variant}: stock's generate_step leaves mlx_lm's own greedy stream at token {i}"),
        }
        let prefill = decode_baseline_wire::policy::prefill_forwards(prompt_ids.len() as u32, PREFILL_STEP_SIZE as u32);
        assert_eq!(run.record.model_calls as usize, prefill as usize + NEW_TOKENS - 1, "{variant}: prefill and steps");
        let positions: Vec<u32> = run.record.steps.iter().map(|s| s.position).collect();
        let first = prompt_ids.len() as u32 + 1;
        assert_eq!(positions, (first..first + 127).collect::<Vec<u32>>());
        // Margins: recomputed from mlx_lm's logits.
        for (k, s) in run.record.steps.iter().enumerate() {
            let t = top2(theirs(&format!("greedy_{k}"))).unwrap();
            assert_eq!((s.margin, s.tie), (Some(t.margin()), Some(t.tie())), "{variant}: step {k} margin");
        }
        let ties = run.record.steps.iter().filter(|s| s.tie == Some(true)).count();
        eprintln!("{variant}: reference-pair ties: {ties}");

        // Fixed-continuation: argmax equal to mlx_lm's at every fed step, logits identical.
        let fixed = run_fixed(&model, prompt_ids, &continuation(), checked(), &mut never).unwrap();
        let argmax: Vec<u32> = fixed.record.steps.iter().map(|s| s.argmax).collect();
        assert_eq!(argmax, tokens(&r.summary["fixed_argmax"]), "{variant}: fixed-continuation argmax");
        let (mut cache, _) = prefill_prompt(&model, prompt_ids, PREFILL_STEP_SIZE).unwrap();
        for (k, &t) in continuation().iter().enumerate() {
            let logits = model.forward(&Array::from_slice(&[t], &[1, 1]), &mut cache).unwrap();
            let (diff, identical) = compare(&logits, theirs(&format!("fixed_{k}")));
            assert!(identical, "{variant}: fixed step {k} logits differ (max abs diff {diff})");
        }

        // Headline: 128 tokens, the same stream, no margins.
        let head = run_headline(&model, prompt_ids, NEW_TOKENS, &[], checked(), &mut never).unwrap();
        assert_eq!(head.record.steps.len(), NEW_TOKENS - 1);
        assert!(head.record.steps.iter().all(|s| s.margin.is_none() && s.build_ns.is_some() && s.eval_ns.is_some()));
        assert_eq!(head.record.steps.iter().map(|s| s.argmax).collect::<Vec<_>>(), greedy[1..]);
    }
    r.summary
}

#[test]
fn poll_aborts_before_the_step_it_refuses() {
    let model = Model::load(&fixture("tiny-qwen3")).unwrap();
    let mut seen = Vec::new();
    let mut poll = |at: Checkpoint| {
        seen.push(at);
        if at == (Checkpoint::Step { position: 15 }) {
            Err("cancelled")
        } else {
            Ok(())
        }
    };
    let err = run_headline(&model, &PROMPT, NEW_TOKENS, &[], checked(), &mut poll).unwrap_err();
    assert!(matches!(
        err,
        crate::decode::RunError::Aborted { at: Checkpoint::Step { position: 15 }, reason: "cancelled" }
    ));
    assert_eq!(
        seen,
        vec![
            Checkpoint::PrefillChunk { index: 0 },
            Checkpoint::Seed,
            Checkpoint::Step { position: 13 },
            Checkpoint::Step { position: 14 },
            Checkpoint::Step { position: 15 }
        ]
    );
    let err = run_headline(&model, &PROMPT, NEW_TOKENS, &[], checked(), &mut |_| Err(())).unwrap_err();
    assert!(matches!(err, crate::decode::RunError::Aborted { at: Checkpoint::PrefillChunk { index: 0 }, .. }));
}

/// A prompt over several prefill chunks: at step size 5 the 12-token prompt's first 11 go in
/// chunks of 5, 5 and 1, then the last token alone. The first token's logits and every greedy
/// step's are those of mlx_lm's model prefilled the same way, bit for bit; the loop polls before
/// each chunk and the seed forward, and a cancel before the second chunk ends the request there.
#[test]
fn a_prompt_over_several_prefill_chunks_matches_mlx_lm_and_stops_between_chunks() {
    let dir = fixture("tiny-qwen3");
    let model = Model::load(&dir).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let r = reference_with(&dir, &PROMPT, tmp.path(), Stock::AsIs, 5).unwrap();
    let theirs = |k: &str| r.logits.get(k).unwrap_or_else(|| panic!("no {k}"));
    let (mut cache, logits) = prefill_prompt(&model, &PROMPT, 5).unwrap();
    let (diff, identical) = compare(&logits, theirs("split_last"));
    assert!(identical, "first-token logits after 3 chunks differ from mlx_lm's (max abs diff {diff})");
    let mut token = argmax_axis(&logits, -1, false).unwrap();
    for k in 0..8 {
        let logits = model.forward(&token, &mut cache).unwrap();
        token = argmax_axis(&logits, -1, false).unwrap();
        let (diff, identical) = compare(&logits, theirs(&format!("greedy_{k}")));
        assert!(identical, "step {k} logits differ from mlx_lm's after a chunked prefill (max abs diff {diff})");
    }
    let chunked = Options { prefill_step_size: 5, ..checked() };
    let mut seen = Vec::new();
    let run = run_headline(&model, &PROMPT, 4, &[], chunked, &mut |at| {
        seen.push(at);
        Ok::<(), ()>(())
    })
    .unwrap();
    assert_eq!(run.record.model_calls, 3 + 1 + 3, "three chunks, the seed forward, three steps");
    assert_eq!(run.record.first_token, tokens(&r.summary["greedy_tokens"])[0]);
    let chunk = |index| Checkpoint::PrefillChunk { index };
    assert_eq!(seen[..4], [chunk(0), chunk(1), chunk(2), Checkpoint::Seed]);
    let mut seen = Vec::new();
    let err = run_headline(&model, &PROMPT, 4, &[], chunked, &mut |at| {
        seen.push(at);
        if at == chunk(1) {
            Err("cancelled")
        } else {
            Ok(())
        }
    })
    .unwrap_err();
    assert!(matches!(err, crate::decode::RunError::Aborted { at: Checkpoint::PrefillChunk { index: 1 }, .. }));
    assert_eq!(seen, [chunk(0), chunk(1)]);
}

#[test]
fn headline_stops_at_a_stop_token() {
    let model = Model::load(&fixture("tiny-qwen3")).unwrap();
    let full = run_headline(&model, &PROMPT, 16, &[], checked(), &mut never).unwrap();
    let stop = full.record.steps[4].argmax;
    let first = std::iter::once(full.record.first_token)
        .chain(full.record.steps.iter().map(|s| s.argmax))
        .position(|t| t == stop)
        .unwrap();
    let stopped = run_headline(&model, &PROMPT, 16, &[stop], checked(), &mut never).unwrap();
    assert_eq!(stopped.record.finish_reason, "stop");
    assert_eq!(stopped.record.model_calls as usize, 2 + first, "one chunk, the seed forward, the steps");
    assert_eq!(full.record.finish_reason, "length");
}

#[test]
fn out_of_vocabulary_ids_are_refused() {
    let model = Model::load(&fixture("tiny-qwen3")).unwrap();
    let err = run_fixed(&model, &PROMPT, &[3, 512], checked(), &mut never).unwrap_err();
    assert!(err.to_string().contains("continuation index 1"), "{err}");
    let err = run_headline(&model, &[], 4, &[], checked(), &mut never).unwrap_err();
    assert!(err.to_string().contains("empty"), "{err}");
}

/// Issue 2, "Must show" 1: the same weight slice in Rust and in Python, bit for bit.
#[test]
fn weight_slice_matches_python_on_every_variant() {
    for variant in VARIANTS {
        let dir = fixture(variant);
        let expected: serde_json::Value = serde_json::from_str(&python(&[
            "tools/fixture/reference_slice.py",
            "--model-dir",
            dir.to_str().unwrap(),
            "--ids",
            "1,2,3",
        ]))
        .unwrap();
        let config = crate::config::ModelConfig::load(&dir).unwrap();
        let w = Array::load_safetensors(dir.join("model.safetensors")).unwrap();
        let dense = |prefix: &str| {
            let weight = &w[&format!("{prefix}.weight")];
            match (w.get(&format!("{prefix}.scales")), config.quantization.as_ref()) {
                (Some(scales), Some(q)) => {
                    dequantize(weight, scales, &w[&format!("{prefix}.biases")], q.default.group_size, q.default.bits)
                        .unwrap()
                }
                _ => weight.clone(),
            }
        };
        let x = take_axis(dense("model.embed_tokens"), Array::from_slice(&[1i32, 2, 3], &[3]), 0).unwrap();
        let y = matmul(&x, transpose(dense("model.layers.0.self_attn.q_proj")).unwrap()).unwrap();
        let a = argmax_axis(&y, -1, false).unwrap();
        mlx_rs::transforms::eval([&x, &y, &a]).unwrap();
        let dtype = match x.dtype() {
            Dtype::Float32 => "float32",
            Dtype::Bfloat16 => "bfloat16",
            other => panic!("{variant}: unexpected dtype {other:?}"),
        };
        assert_eq!(expected["dtype"], dtype, "{variant}");
        assert_eq!(expected["embedding_sha256"], sha256_raw(&x), "{variant}: embedding");
        assert_eq!(expected["projection_sha256"], sha256_raw(&y), "{variant}: projection");
        let argmax: Vec<u64> = a.as_slice::<u32>().iter().map(|&v| v as u64).collect();
        assert_eq!(expected["argmax"], serde_json::json!(argmax), "{variant}: argmax");
    }
}

fn sha256_raw(a: &Array) -> String {
    let bytes: Vec<u8> = match a.dtype() {
        Dtype::Float32 => a.as_slice::<f32>().iter().flat_map(|v| v.to_le_bytes()).collect(),
        Dtype::Bfloat16 => {
            let bits = a.view::<u16>().unwrap();
            bits.eval().unwrap();
            bits.as_slice::<u16>().iter().flat_map(|v| v.to_le_bytes()).collect()
        }
        other => panic!("unexpected dtype {other:?}"),
    };
    format!("{:x}", Sha256::digest(bytes))
}

/// This process and Python's mlx map the very same libmlx, of the same version.
#[test]
fn identity_matches_python() {
    let out = python(&[
        "-c",
        "import mlx.core as mx, os\n\
         print(mx.__version__)\n\
         print(next(os.path.realpath(l.split()[5]) for l in open('/proc/self/maps') \
         if len(l.split()) > 5 and l.split()[5].endswith('/libmlx.so')))",
    ]);
    let mut lines = out.lines();
    let (version, path) = (lines.next().unwrap(), lines.next().unwrap());
    assert_eq!(crate::identity::mlx_version().unwrap(), version);
    let ours = crate::identity::libmlx_path().unwrap();
    assert_eq!(ours, PathBuf::from(path));
    assert_eq!(crate::identity::sha256_file(&ours).unwrap(), crate::identity::sha256_file(Path::new(path)).unwrap());
}
