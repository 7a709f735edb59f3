//! mlx_lm `qwen2`: q/k/v biases, the head dim from the hidden size (a `head_dim` field is not
//! read), `rope_theta` 1e6 and tied embeddings by default. It does not read a nested
//! `rope_parameters`, so a config with only that is refused rather than silently defaulted.

use crate::config::{dense, ConfigError, DimDefaults, Fields, ModelConfig, Qkv};

pub fn resolve(f: &Fields) -> Result<ModelConfig, ConfigError> {
    let dims = f.dims(&DimDefaults::default())?;
    let head_dim = dims.hidden_size / dims.num_attention_heads;
    let tie = f.boolean("tie_word_embeddings")?.unwrap_or(true);
    let rope = super::llama::top_level_rope(f, head_dim, 1_000_000.0)?;
    let mut c = dense(dims, head_dim, Some(rope), tie);
    c.qkv = Qkv::Separate { bias: true };
    c.dropped = &["self_attn.rotary_emb.inv_freq"];
    Ok(c)
}
