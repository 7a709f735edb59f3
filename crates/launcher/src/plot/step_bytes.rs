//! What one decode step must read from memory, for one model folder: the roofline's
//! denominator.
//!
//! A step at cache position `p` reads every weight the forward uses once, and every layer's
//! keys and values up to `p`. Which weights and which cache lengths come from the model's
//! `config.json` as the controlled worker's decoder reads it ([`ModelConfig`], the same reader,
//! so the roofline and the loop cannot disagree on a model), and the tensor sizes from the
//! safetensors headers:
//! - the input embedding is a lookup of one row, unless the head is tied to it (then the head
//!   reads all of it); a tied folder's own `lm_head` tensors are dropped, as mlx_lm's sanitize
//!   does;
//! - the routed experts of a mixture-of-experts layer are read `top_k` of `num_experts` (each
//!   token picks `top_k` distinct experts per layer);
//! - what mlx_lm's sanitize drops (a multimodal folder's vision tower) is not read at all;
//! - a layer with a rotating cache (a sliding window) reads at most its window of positions.
//!
//! The cache element is the model's activation dtype (`torch_dtype`/`dtype` in config.json, or
//! a norm weight's dtype where config.json names none), 4 bytes for float32, 2 for (b)float16.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use decode_baseline_model_config::config::{CacheKind, Head, ModelConfig};
use decode_baseline_wire::manifest::Manifest;
use serde::Serialize;

use super::error::PlotError;
use crate::safetensors_header::{self, Tensor};

/// What one token's step must move from memory, for one model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelBytes {
    /// Total size of the `*.safetensors` tensors.
    pub file_bytes: u64,
    /// Weight bytes one step reads.
    pub weight_bytes: u64,
    /// KV-cache bytes per cached position, over the layers with an unbounded cache.
    pub kv_bytes_per_position: u64,
    /// The layers with a rotating cache: (KV bytes per position, window), one entry per window.
    pub windowed: Vec<(u64, u64)>,
    /// Of `weight_bytes`, those of the projections a rank group splits across its ranks (each
    /// layer's q, k, v, o, gate, up and down projections, as mlx_lm's `shard()` splits them).
    pub sharded_weight_bytes: u64,
    /// What a rank group sums across its ranks per token: two all_sums per layer (after the
    /// attention's output projection and the MLP's down projection) of `hidden_size` elements
    /// of the activation dtype.
    pub all_sum_bytes_per_token: u64,
}

/// The projections a rank group splits (`req/distributed.md`).
const SHARDED_PROJECTIONS: [&str; 7] = [
    ".self_attn.q_proj.",
    ".self_attn.k_proj.",
    ".self_attn.v_proj.",
    ".self_attn.o_proj.",
    ".mlp.gate_proj.",
    ".mlp.up_proj.",
    ".mlp.down_proj.",
];

impl ModelBytes {
    /// Bytes read by the step at cache position `position`.
    pub fn at(&self, position: f64) -> f64 {
        let windowed: f64 =
            self.windowed.iter().map(|&(bytes, window)| bytes as f64 * position.min(window as f64)).sum();
        self.weight_bytes as f64 + self.kv_bytes_per_position as f64 * position + windowed
    }

    /// What one rank of a group of `ranks` reads per step: its share of the split projections
    /// and of the KV heads (each rank caches `num_key_value_heads / ranks` of them), and all of
    /// the rest (embedding, norms, head). One rank: the model itself.
    pub fn per_rank(&self, ranks: u32) -> ModelBytes {
        let n = u64::from(ranks.max(1));
        ModelBytes {
            weight_bytes: self.weight_bytes.saturating_sub(self.sharded_weight_bytes) + self.sharded_weight_bytes / n,
            sharded_weight_bytes: self.sharded_weight_bytes / n,
            kv_bytes_per_position: self.kv_bytes_per_position / n,
            windowed: self.windowed.iter().map(|&(bytes, window)| (bytes / n, window)).collect(),
            ..self.clone()
        }
    }

    /// Reads the model folder of `case_id` from the manifest at `manifest_path`.
    pub fn of_case(manifest_path: &Path, case_id: &str) -> Result<Self, PlotError> {
        let model = |detail: String| PlotError::Model { path: manifest_path.to_owned(), detail };
        let bytes = std::fs::read(manifest_path).map_err(|e| model(format!("unreadable: {e}")))?;
        let manifest: Manifest = serde_json::from_slice(&bytes).map_err(|e| model(format!("unparsable: {e}")))?;
        let case = manifest.cases.get(case_id).ok_or_else(|| model(format!("cases: no case `{case_id}`")))?;
        let dir: PathBuf = if case.path.is_absolute() {
            case.path.clone()
        } else {
            manifest_path.parent().unwrap_or(Path::new(".")).join(&case.path)
        };
        Self::of_dir(&dir)
    }

    /// Reads config.json and the safetensors headers of a model folder.
    pub fn of_dir(dir: &Path) -> Result<Self, PlotError> {
        let err = |detail: String| PlotError::Model { path: dir.to_owned(), detail };
        // One read of config.json: the decoder's reader parses it, the cache dtype is read beside.
        let path = dir.join("config.json");
        let text = std::fs::read_to_string(&path).map_err(|e| err(format!("config.json unreadable: {e}")))?;
        let config = ModelConfig::parse(&text, &path).map_err(|e| err(e.to_string()))?;
        let tensors = safetensors_header::read_dir(dir).map_err(|e| err(e.to_string()))?;
        let element = element_bytes(dir, &text, &tensors)?;
        let per_layer = 2 * config.num_key_value_heads as u64 * config.head_dim as u64 * element;
        let mut kv_bytes_per_position = 0;
        let mut windows: BTreeMap<u64, u64> = BTreeMap::new();
        for layer in &config.layers {
            match layer.cache {
                CacheKind::Standard => kv_bytes_per_position += per_layer,
                CacheKind::Rotating { max_size } => *windows.entry(max_size as u64).or_default() += per_layer,
            }
        }
        let sharded = tensors.iter().filter(|(name, _)| SHARDED_PROJECTIONS.iter().any(|p| name.contains(p)));
        Ok(ModelBytes {
            file_bytes: tensors.values().map(Tensor::bytes).sum(),
            weight_bytes: weight_bytes(&config, &tensors),
            sharded_weight_bytes: sharded.map(|(_, t)| t.bytes()).sum(),
            all_sum_bytes_per_token: 2 * config.num_hidden_layers as u64 * config.hidden_size as u64 * element,
            kv_bytes_per_position,
            windowed: windows.into_iter().map(|(window, bytes)| (bytes, window)).collect(),
        })
    }
}

/// The weight bytes a step reads (see the module's rules).
fn weight_bytes(c: &ModelConfig, tensors: &BTreeMap<String, Tensor>) -> u64 {
    let head_weight = format!("{}.weight", c.head_prefix);
    let tied = match c.head {
        Head::Own => false,
        Head::Tied => true,
        Head::TiedUnlessPresent => !tensors.contains_key(&head_weight),
    };
    let embedding = format!("{}.embed_tokens.", c.prefix);
    let head = format!("{}.", c.head_prefix);
    let experts: Vec<String> = c
        .moe
        .iter()
        .flat_map(|moe| [Some(moe.experts_name), moe.per_expert].into_iter().flatten())
        .map(|name| format!(".mlp.{name}."))
        .collect();
    let mut bytes = 0f64;
    for (name, tensor) in tensors {
        let size = tensor.bytes() as f64;
        bytes += if c.dropped.iter().any(|p| name.contains(p)) || (tied && name.starts_with(&head)) {
            0.0
        } else if name.starts_with(&embedding) && !tied {
            size / tensor.shape.first().copied().unwrap_or(1).max(1) as f64
        } else if let (Some(moe), true) = (c.moe, experts.iter().any(|e| name.contains(e.as_str()))) {
            size * moe.top_k as f64 / moe.num_experts as f64
        } else {
            size
        };
    }
    bytes.round() as u64
}

/// Bytes of one cache element: the model's activation dtype.
fn element_bytes(dir: &Path, config_text: &str, tensors: &BTreeMap<String, Tensor>) -> Result<u64, PlotError> {
    let err = |detail: String| PlotError::Model { path: dir.to_owned(), detail };
    let config: serde_json::Value =
        serde_json::from_str(config_text).map_err(|e| err(format!("config.json unparsable: {e}")))?;
    let named = [&config, &config["text_config"]]
        .into_iter()
        .flat_map(|c| [&c["torch_dtype"], &c["dtype"]])
        .find_map(|v| v.as_str())
        .map(str::to_owned);
    let from_norm = || tensors.iter().find(|(name, _)| name.contains("norm.weight")).map(|(_, t)| t.dtype.clone());
    let dtype = named.or_else(from_norm).unwrap_or_default();
    match dtype.as_str() {
        "float32" | "F32" => Ok(4),
        "float16" | "bfloat16" | "F16" | "BF16" => Ok(2),
        other => Err(err(format!(
            "config.json: `torch_dtype`: expected float32, float16 or bfloat16 (or a norm weight of one of them), got `{other}`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::safetensors_header::tests::write;

    fn fixture(name: &str) -> PathBuf {
        crate::checkout::built_in().join("fixtures").join(name)
    }

    #[test]
    fn a_tied_dense_model_reads_every_weight() {
        let dir = fixture("tiny-qwen3-tied");
        let b = ModelBytes::of_dir(&dir).unwrap();
        // 2 (K, V) · 2 layers · 2 kv heads · 16 head_dim · 4 bytes (float32) = 512 bytes/position.
        assert_eq!(b.kv_bytes_per_position, 512);
        assert!(b.windowed.is_empty());
        assert_eq!(b.weight_bytes, b.file_bytes);
        assert_eq!(b.at(10.0), b.weight_bytes as f64 + 5120.0);
    }

    #[test]
    fn a_rank_reads_its_share_of_the_split_projections_and_kv_heads_and_all_the_rest() {
        let dir = fixture("tiny-qwen3");
        let whole = ModelBytes::of_dir(&dir).unwrap();
        let tensors = safetensors_header::read_dir(&dir).unwrap();
        let projections: u64 = tensors
            .iter()
            .filter(|(n, _)| n.contains("_proj.") && n.contains(".layers."))
            .map(|(_, t)| t.bytes())
            .sum();
        assert_eq!(whole.sharded_weight_bytes, projections);
        let rank = whole.per_rank(2);
        assert_eq!(rank.weight_bytes, whole.weight_bytes - projections / 2);
        assert_eq!(rank.kv_bytes_per_position, whole.kv_bytes_per_position / 2);
        assert_eq!(whole.per_rank(1), whole);
        // 2 all_sums · 2 layers · hidden 64 · 4 bytes (float32).
        let config: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
        let hidden = config["hidden_size"].as_u64().unwrap();
        let layers = config["num_hidden_layers"].as_u64().unwrap();
        assert_eq!(whole.all_sum_bytes_per_token, 2 * layers * hidden * 4);
    }

    #[test]
    fn an_untied_model_reads_one_row_of_its_embedding() {
        let dir = fixture("tiny-qwen3");
        let b = ModelBytes::of_dir(&dir).unwrap();
        let tensors = safetensors_header::read_dir(&dir).unwrap();
        let embed = &tensors["model.embed_tokens.weight"];
        let vocab = embed.shape[0];
        assert_eq!(b.file_bytes - b.weight_bytes, embed.bytes() - embed.bytes() / vocab);
    }

    /// A mixture-of-experts folder with a sliding-window layer, written by hand: the expert
    /// tensors count `top_k / num_experts`, the windowed layer's cache stops at its window.
    #[test]
    fn experts_count_top_k_of_n_and_a_window_caps_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let config = serde_json::json!({
            "model_type": "gpt_oss", "hidden_size": 8, "num_hidden_layers": 2, "intermediate_size": 8,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "vocab_size": 10,
            "rms_norm_eps": 1e-5, "num_local_experts": 4, "num_experts_per_tok": 1, "sliding_window": 3,
            "layer_types": ["sliding_attention", "full_attention"], "rope_theta": 10000.0,
            "tie_word_embeddings": false, "torch_dtype": "bfloat16", "rope_scaling": null,
        });
        std::fs::write(dir.path().join("config.json"), config.to_string()).unwrap();
        write(
            &dir.path().join("model.safetensors"),
            &[
                ("model.embed_tokens.weight", "BF16", &[10, 8], 160),
                ("model.layers.0.mlp.experts.down_proj.weight", "BF16", &[4, 8, 8], 512),
                ("model.layers.0.mlp.router.weight", "BF16", &[4, 8], 64),
                ("model.norm.weight", "BF16", &[8], 16),
                ("lm_head.weight", "BF16", &[10, 8], 160),
            ],
        );
        let b = ModelBytes::of_dir(dir.path()).unwrap();
        assert_eq!(b.file_bytes, 912);
        assert_eq!(b.weight_bytes, 16 + 512 / 4 + 64 + 16 + 160);
        // One full layer and one windowed layer of 2 · 1 · 4 · 2 = 16 bytes per position.
        assert_eq!((b.kv_bytes_per_position, b.windowed.clone()), (16, vec![(16, 3)]));
        assert_eq!(b.at(10.0), b.weight_bytes as f64 + 160.0 + 48.0);
    }
}
