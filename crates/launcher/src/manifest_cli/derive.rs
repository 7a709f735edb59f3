//! A model folder derived as a case: its files, architecture, dtype, and (through the pinned
//! environment's tokenizer, `tools/manifest/derive_case.py`) its stop set and prompts.

use std::{
    collections::BTreeSet,
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::Context;
use decode_baseline_pins::{case_files, installed::Installed};
use decode_baseline_wire::{
    job::token_ids_sha256,
    manifest::{Case, Prompt},
};
use serde::Deserialize;

use super::{PromptSource, DERIVE_CASE};
use crate::guard::chain;

/// What `derive_case.py` prints.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Derived {
    stop_ids: Vec<u32>,
    prompt_source: String,
    prompts: Vec<DerivedPrompt>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DerivedPrompt {
    length: usize,
    ids: Vec<u32>,
    continuation: Vec<u32>,
}

/// A model folder derived as a case: what `add-case` pins, and what `bench` writes into its
/// session's own manifest.
#[derive(Debug, Clone)]
pub struct DerivedCase {
    pub case: Case,
    /// `(<id>-L<length>, prompt)` for each requested length, in the order asked.
    pub prompts: Vec<(String, Prompt)>,
    /// `text` or `seeded`: where the prompt ids came from.
    pub prompt_source: String,
}

/// The prompt id of a case's prompt of `length` tokens.
pub fn prompt_id(case_id: &str, length: usize) -> String {
    format!("{case_id}-L{length}")
}

/// Derives the case of `model_dir` (every file pinned, architecture, dtype, stop set) and its
/// prompts of `lengths` tokens with continuations of `steps`, through the pinned environment.
/// The path is recorded relative to `repo` when the folder is inside it, else absolute.
pub fn derive_case(
    installed: &Installed,
    repo: &Path,
    model_dir: &Path,
    id: &str,
    lengths: &[usize],
    source: PromptSource,
    steps: usize,
) -> anyhow::Result<DerivedCase> {
    let model_dir = model_dir
        .canonicalize()
        .with_context(|| format!("failed to resolve the model folder {}", model_dir.display()))?;
    crate::ensure_input!(model_dir.is_dir(), "{} is not a folder", model_dir.display());
    let recorded_path =
        match repo.canonicalize().ok().and_then(|root| model_dir.strip_prefix(root).ok().map(Path::to_owned)) {
            Some(rel) => PathBuf::from(rel.to_str().context("the model folder's path is not UTF-8")?),
            None => model_dir.clone(),
        };
    let files = case_files(&model_dir).map_err(|e| crate::exit::bad_input(chain(&e)))?;
    crate::ensure_input!(files.contains_key("config.json"), "{} has no config.json", model_dir.display());
    let weights: Vec<&String> = files.keys().filter(|name| name.ends_with(".safetensors")).collect();
    crate::ensure_input!(!weights.is_empty(), "{} has no *.safetensors file", model_dir.display());

    let config: serde_json::Value = read_json(&model_dir.join("config.json"))?;
    let architecture = config["model_type"]
        .as_str()
        .filter(|s| !s.is_empty())
        .with_context(|| format!("{}: no `model_type`", model_dir.join("config.json").display()))?
        .to_owned();
    let dtype = derive_dtype(&config, &weights.iter().map(|w| model_dir.join(w)).collect::<Vec<_>>())?;

    let derived = derive(installed, repo, &model_dir, source, lengths, steps)?;
    crate::ensure_input!(
        !derived.stop_ids.is_empty(),
        "the tokenizer resolves an empty stop set for {}",
        model_dir.display()
    );
    let mut prompts = Vec::new();
    for &length in lengths {
        let derived_prompt = derived
            .prompts
            .iter()
            .find(|p| p.length == length)
            .with_context(|| format!("derive_case.py gave no prompt of length {length}"))?;
        crate::ensure_input!(
            derived_prompt.ids.len() == length && derived_prompt.continuation.len() == steps,
            "derive_case.py gave {} prompt ids and {} continuation ids for L={length} (expected {length} and {steps})",
            derived_prompt.ids.len(),
            derived_prompt.continuation.len()
        );
        let prompt = Prompt {
            case: id.to_owned(),
            sha256: token_ids_sha256(&derived_prompt.ids),
            ids: derived_prompt.ids.clone(),
            continuation_sha256: token_ids_sha256(&derived_prompt.continuation),
            continuation: derived_prompt.continuation.clone(),
        };
        prompts.push((prompt_id(id, length), prompt));
    }
    Ok(DerivedCase {
        case: Case { path: recorded_path, architecture, dtype, files, stop_ids: derived.stop_ids },
        prompts,
        prompt_source: derived.prompt_source,
    })
}

/// Runs `derive_case.py` with the environment's interpreter.
fn derive(
    installed: &Installed,
    repo: &Path,
    model_dir: &Path,
    source: PromptSource,
    lengths: &[usize],
    steps: usize,
) -> anyhow::Result<Derived> {
    let python = installed.venv.join("bin/python");
    let script = repo.join(DERIVE_CASE);
    let lengths = lengths.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
    let source = match source {
        PromptSource::Text => "text",
        PromptSource::Seeded => "seeded",
    };
    let out = Command::new(&python)
        .arg(&script)
        .arg("--model-dir")
        .arg(model_dir)
        .args(["--lengths", &lengths, "--continuation", &steps.to_string(), "--prompt-source", source])
        .env("HF_HUB_OFFLINE", "1")
        .env("TRANSFORMERS_OFFLINE", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .with_context(|| format!("failed to run {} {}", python.display(), script.display()))?;
    if !out.status.success() {
        crate::bad_input!(
            "{} failed ({}): {}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    serde_json::from_slice(&out.stdout).with_context(|| {
        format!("failed to parse the output of {}: {:?}", script.display(), String::from_utf8_lossy(&out.stdout))
    })
}

fn read_json(path: &Path) -> anyhow::Result<serde_json::Value> {
    let bytes = fs::read(path).with_context(|| format!("failed to read {}", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("failed to parse {}", path.display()))
}

/// The case's dtype: for a quantized model `<mode>-q<bits>-g<group_size>` from config.json's
/// `quantization` (mode `affine` when absent, as mlx_lm assumes); otherwise the floating-point
/// dtypes of the tensors in the safetensors headers (`float32`, `bfloat16`, `float16`; several
/// joined by `+`), which is what is on disk whatever `torch_dtype` claims.
pub fn derive_dtype(config: &serde_json::Value, weights: &[PathBuf]) -> anyhow::Result<String> {
    let quant = &config["quantization"];
    if quant.is_object() {
        let bits = quant["bits"].as_u64().context("config.json: quantization.bits is not a number")?;
        let group = quant["group_size"].as_u64().context("config.json: quantization.group_size is not a number")?;
        let mode = quant["mode"].as_str().unwrap_or("affine");
        return Ok(format!("{mode}-q{bits}-g{group}"));
    }
    let mut dtypes = BTreeSet::new();
    for path in weights {
        for tensor in crate::safetensors_header::read(path)?.into_values() {
            let name = match tensor.dtype.as_str() {
                "F32" => "float32",
                "BF16" => "bfloat16",
                "F16" => "float16",
                "F64" => "float64",
                _ => continue,
            };
            dtypes.insert(name);
        }
    }
    crate::ensure_input!(!dtypes.is_empty(), "no floating-point tensor in the safetensors files");
    Ok(dtypes.into_iter().collect::<Vec<_>>().join("+"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safetensors_header_dtypes_and_quantization_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.safetensors");
        let header = br#"{"__metadata__":{"format":"mlx"},"a":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]},"b":{"dtype":"U32","shape":[1],"data_offsets":[2,6]}}"#;
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header);
        bytes.extend_from_slice(&[0; 6]);
        fs::write(&path, bytes).unwrap();
        let config = serde_json::json!({"model_type": "qwen3"});
        assert_eq!(derive_dtype(&config, std::slice::from_ref(&path)).unwrap(), "bfloat16");
        let quantized = serde_json::json!({"quantization": {"bits": 4, "group_size": 64}});
        assert_eq!(derive_dtype(&quantized, &[path]).unwrap(), "affine-q4-g64");
    }
}
