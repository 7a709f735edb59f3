//! mlx_lm `ministral3` (Ministral 3 and the newer Mistral text models): llama without biases,
//! RoPE from `rope_parameters` (`rope_theta`, yarn or any `initialize_rope` kind), queries
//! scaled by the llama-4 attention scaling (`llama_4_scaling_beta`,
//! `original_max_position_embeddings`), and `layer_types` with sliding-window layers on a
//! `RotatingKVCache`.

use crate::config::{dense, ConfigError, DimDefaults, Fields, KvDefault, Llama4Scaling, ModelConfig, Rope};

pub fn resolve(f: &Fields) -> Result<ModelConfig, ConfigError> {
    let dims = f.dims(&DimDefaults { num_key_value_heads: KvDefault::Heads, ..Default::default() })?;
    let head_dim = match f.int("head_dim")? {
        Some(_) => f.positive("head_dim", None)?,
        None => dims.hidden_size / dims.num_attention_heads,
    };
    let params = f.object("rope_parameters")?;
    let llama4 = Llama4Scaling {
        beta: params.req_float("llama_4_scaling_beta")?,
        original_max_position_embeddings: params.req_float("original_max_position_embeddings")?,
    };
    let theta = params.req_float("rope_theta")?;
    let scaling = f.rope_scaling(
        f.get("rope_parameters").unwrap_or_default(),
        "rope_parameters",
        f.float("max_position_embeddings")?,
    )?;
    let rope = Rope { dims: head_dim, base: theta as f32, traditional: false, scaling };
    let tie = f.boolean("tie_word_embeddings")?.unwrap_or(true);
    let layers = dims.num_hidden_layers;
    let mut c = dense(dims, head_dim, Some(rope), tie);
    c.llama4_scaling = Some(llama4);
    c.dropped = &["self_attn.rotary_emb.inv_freq"];
    let sliding = f.layer_types(layers)?;
    let window = if sliding.iter().any(|s| *s) { Some(f.sliding_window()?) } else { None };
    c.set_sliding(&sliding, window, true);
    Ok(c)
}
