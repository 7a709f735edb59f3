//! The architectures, one file each: how that mlx_lm `model_type`'s `ModelArgs` reads
//! `config.json` (fields, defaults, `__post_init__`, `sanitize`, `make_cache`), resolved into
//! the one decoder's [`ModelConfig`]. Adding an architecture is a file here and a line in
//! `ARCHITECTURES`.
//!
//! Reading a config ([`ModelConfig::load`], [`ModelConfig::parse`]) starts here too: its
//! `model_type` picks the reader from the table, so the dispatch lives with the table, and
//! [`crate::config`], which every reader uses, does not depend back on the architectures.

use std::path::Path;

use serde_json::Value;

use crate::config::{field_error, ConfigError, Fields, ModelConfig};

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

impl ModelConfig {
    /// Reads `<dir>/config.json`.
    pub fn load(dir: &Path) -> Result<Self, ConfigError> {
        let path = dir.join("config.json");
        let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read { path: path.clone(), source })?;
        Self::parse(&text, &path)
    }

    /// Parses a config's text; `path` is only used in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let value: Value =
            serde_json::from_str(text).map_err(|source| ConfigError::Parse { path: path.to_owned(), source })?;
        let Value::Object(map) = value else {
            return Err(field_error(path, "<root>", "expected a JSON object"));
        };
        let f = Fields::root(&map, path);
        let model_type = f.req_str("model_type")?;
        let resolve = lookup(model_type).ok_or_else(|| ConfigError::UnsupportedModelType {
            path: path.to_owned(),
            found: model_type.to_owned(),
            expected: names().join(", "),
        })?;
        // Quantization first: a refusal should name the real obstacle, not a later field.
        let quantization = f.quantization()?;
        let mut config = resolve(&f)?;
        config.model_type = model_type.to_owned();
        config.quantization = quantization;
        Ok(config)
    }
}
