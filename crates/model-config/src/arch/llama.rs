//! mlx_lm `llama` (and `mistral`, which `MODEL_REMAPPING` sends here): optional attention and
//! MLP biases, `head_dim` from the config or the hidden size, the RoPE kinds of
//! `initialize_rope`, and `layer_types` with sliding-window layers on a `RotatingKVCache`.

use crate::config::{dense, ConfigError, DimDefaults, Fields, KvDefault, Mlp, ModelConfig, Qkv, Rope, RopeScaling};

pub fn resolve(f: &Fields) -> Result<ModelConfig, ConfigError> {
    let dims = f.dims(&DimDefaults { num_key_value_heads: KvDefault::Heads, ..Default::default() })?;
    let head_dim = match f.int("head_dim")? {
        Some(_) => f.positive("head_dim", None)?,
        None => dims.hidden_size / dims.num_attention_heads,
    };
    let tie = f.boolean("tie_word_embeddings")?.unwrap_or(true);
    let attention_bias = f.boolean("attention_bias")?.unwrap_or(false);
    let mlp_bias = f.boolean("mlp_bias")?.unwrap_or(false);
    let rope = top_level_rope(f, head_dim, 10_000.0)?;
    let layers = dims.num_hidden_layers;
    let mut c = dense(dims, head_dim, Some(rope), tie);
    c.qkv = Qkv::Separate { bias: attention_bias };
    c.o_bias = attention_bias;
    c.mlp = Mlp::SwiGlu { bias: mlp_bias };
    c.dropped = &["self_attn.rotary_emb.inv_freq"];
    let sliding = f.layer_types(layers)?;
    let window = if sliding.iter().any(|s| *s) { Some(f.sliding_window()?) } else { None };
    c.set_sliding(&sliding, window, true);
    Ok(c)
}

/// `rope_theta` (default `theta`), `rope_traditional` and `rope_scaling` from the top level,
/// as llama and qwen2 read them; a nested-only `rope_parameters` is refused (they do not read it).
pub fn top_level_rope(f: &Fields, dims: i32, theta: f64) -> Result<Rope, ConfigError> {
    let base = match f.float("rope_theta")? {
        Some(t) => t,
        None if f.get("rope_parameters").is_some_and(|p| p.as_object().is_some_and(|m| !m.is_empty())) => {
            return Err(f.error(
                "rope_parameters",
                "nested rope settings without a top-level rope_theta are not read by mlx_lm for this model type",
            ))
        }
        None => theta,
    };
    let scaling = match f.get("rope_scaling") {
        Some(s) => f.rope_scaling(s, "rope_scaling", f.float("max_position_embeddings")?)?,
        None => RopeScaling::Plain { scale: 1.0 },
    };
    Ok(Rope { dims, base: base as f32, traditional: f.boolean("rope_traditional")?.unwrap_or(false), scaling })
}
