//! mlx_lm `qwen3`: per-head q/k RMS norms before RoPE, no biases; `head_dim`,
//! `num_key_value_heads` and `tie_word_embeddings` required; `rope_theta` and the scaling read
//! from `rope_parameters` when the top-level fields are absent (transformers >= 5 nests them).

use serde_json::Value;

use crate::config::{dense, ConfigError, DimDefaults, Fields, ModelConfig, QkNorm, Rope, RopeScaling};

pub fn resolve(f: &Fields) -> Result<ModelConfig, ConfigError> {
    let dims = f.dims(&DimDefaults::default())?;
    let head_dim = f.positive("head_dim", None)?;
    let tie =
        f.boolean("tie_word_embeddings")?.ok_or_else(|| f.error("tie_word_embeddings", "required and missing"))?;
    let params = f.get("rope_parameters").filter(|p| p.as_object().is_some_and(|m| !m.is_empty()));
    let theta = match (f.float("rope_theta")?, params) {
        (Some(t), _) => t,
        (None, Some(p)) => p
            .get("rope_theta")
            .and_then(Value::as_f64)
            .ok_or_else(|| f.error("rope_theta", "missing (also from rope_parameters.rope_theta)"))?,
        (None, None) => return Err(f.error("rope_theta", "required and missing")),
    };
    let max_pos = f.float("max_position_embeddings")?;
    let scaling = match (f.get("rope_scaling"), params) {
        (Some(s), _) => f.rope_scaling(s, "rope_scaling", max_pos)?,
        (None, Some(p)) => f.rope_scaling(p, "rope_parameters", max_pos)?,
        (None, None) => RopeScaling::Plain { scale: 1.0 },
    };
    let rope = Rope { dims: head_dim, base: theta as f32, traditional: false, scaling };
    let mut c = dense(dims, head_dim, Some(rope), tie);
    c.qk_norm = QkNorm::BeforeTranspose;
    Ok(c)
}
