//! The architectures, one file each: how that mlx_lm `model_type`'s `ModelArgs` reads
//! `config.json` (fields, defaults, `__post_init__`, `sanitize`, `make_cache`), resolved into
//! the one decoder's [`ModelConfig`]. Adding an architecture is a file here and a line in
//! [`ARCHITECTURES`].

use crate::config::{ConfigError, Fields, ModelConfig};

pub mod gemma3;
pub mod gpt_oss;
pub mod llama;
pub mod ministral3;
pub mod phi3;
pub mod qwen2;
pub mod qwen3;
pub mod qwen3_moe;
pub mod smollm3;

/// Reads one architecture's config.
pub type Resolve = fn(&Fields) -> Result<ModelConfig, ConfigError>;

/// Every `model_type` the decoder implements. `mistral` is mlx_lm's `MODEL_REMAPPING` to llama.
const ARCHITECTURES: &[(&str, Resolve)] = &[
    ("qwen3", qwen3::resolve),
    ("qwen2", qwen2::resolve),
    ("llama", llama::resolve),
    ("mistral", llama::resolve),
    ("gemma3_text", gemma3::resolve_text),
    ("gemma3", gemma3::resolve),
    ("phi3", phi3::resolve),
    ("ministral3", ministral3::resolve),
    ("smollm3", smollm3::resolve),
    ("qwen3_moe", qwen3_moe::resolve),
    ("gpt_oss", gpt_oss::resolve),
];

/// The reader of a `model_type`, if implemented.
pub fn lookup(model_type: &str) -> Option<Resolve> {
    ARCHITECTURES.iter().find(|(name, _)| *name == model_type).map(|(_, f)| *f)
}

/// The implemented `model_type`s, in table order.
pub fn names() -> Vec<&'static str> {
    ARCHITECTURES.iter().map(|(name, _)| *name).collect()
}
