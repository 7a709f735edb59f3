//! mlx_lm `gemma3_text`, and `gemma3` (the multimodal wrapper: its `text_config` is the
//! language model's, the top-level `vocab_size` overrides it, and sanitize drops the vision
//! tower and projector). Every `sliding_window_pattern`-th layer is global (KVCache, RoPE base
//! `rope_theta` with `rope_scaling`); the others slide over `sliding_window` positions
//! (RotatingKVCache, RoPE base `rope_local_base_freq`). `(1 + w)` RMS norms, q/k norms after
//! the transpose, four norms per block, embeddings times `sqrt(hidden_size)` in bfloat16,
//! attention scale `query_pre_attn_scalar ** -0.5`, gelu-approx MLP; the head is tied exactly
//! when the folder has no `lm_head.weight`.

use serde_json::Value;

use crate::config::{
    dense, Block, CacheKind, ConfigError, DimDefaults, Fields, Head, KvDefault, Masks, Mlp, ModelConfig, Norm, QkNorm,
    Rope, RopeScaling,
};

pub fn resolve_text(f: &Fields) -> Result<ModelConfig, ConfigError> {
    text_model(f)
}

/// `gemma3.ModelArgs.__post_init__`, then the language model from `text_config`.
pub fn resolve(f: &Fields) -> Result<ModelConfig, ConfigError> {
    let text = f.object("text_config")?;
    text.req_str("model_type")?;
    let vocab = f.positive("vocab_size", Some(262_208))?;
    let heads = text.get("num_attention_heads").cloned().unwrap_or(Value::from(8));
    let kv = text.get("num_key_value_heads").cloned().unwrap_or(Value::from(4));
    let map =
        text.with(&[("vocab_size", Value::from(vocab)), ("num_attention_heads", heads), ("num_key_value_heads", kv)]);
    let mut c = text_model(&text.over(&map))?;
    c.prefix = "language_model.model";
    c.head_prefix = "language_model.lm_head";
    c.dropped = &["vision_tower.", "multi_modal_projector."];
    Ok(c)
}

fn text_model(f: &Fields) -> Result<ModelConfig, ConfigError> {
    let dims = f.dims(&DimDefaults {
        hidden_size: Some(1152),
        num_hidden_layers: Some(26),
        intermediate_size: Some(6912),
        num_attention_heads: Some(4),
        vocab_size: Some(262_144),
        rms_norm_eps: Some(1e-6),
        num_key_value_heads: KvDefault::Value(1),
    })?;
    let head_dim = f.positive("head_dim", Some(256))?;
    let rope_theta = f.float("rope_theta")?.unwrap_or(1_000_000.0);
    let local_base = f.float("rope_local_base_freq")?.unwrap_or(10_000.0);
    let query_pre_attn_scalar = f.float("query_pre_attn_scalar")?.unwrap_or(256.0);
    let window = f.positive("sliding_window", Some(512))?;
    let pattern = f.positive("sliding_window_pattern", Some(6))? as usize;
    let max_pos = f.float("max_position_embeddings")?.unwrap_or(32768.0);
    let global_scaling = match f.get("rope_scaling") {
        Some(s) => f.rope_scaling(s, "rope_scaling", Some(max_pos))?,
        None => RopeScaling::Plain { scale: 1.0 },
    };
    let layers = dims.num_hidden_layers;
    if pattern > layers {
        return Err(f.error(
            "sliding_window_pattern",
            format!(
                "{pattern} exceeds num_hidden_layers {layers} (mlx_lm takes the global mask from layer {})",
                pattern - 1
            ),
        ));
    }
    let mut c = dense(dims, head_dim, None, false);
    for (i, layer) in c.layers.iter_mut().enumerate() {
        let global = i % pattern == pattern - 1;
        let (base, scaling) =
            if global { (rope_theta, global_scaling.clone()) } else { (local_base, RopeScaling::Plain { scale: 1.0 }) };
        layer.rope = Some(Rope { dims: head_dim, base: base as f32, traditional: false, scaling });
        layer.sliding = !global;
        layer.cache = if global { CacheKind::Standard } else { CacheKind::Rotating { max_size: window } };
    }
    c.masks = Masks { full: pattern - 1, sliding: (pattern > 1).then_some((0, window)) };
    c.head = Head::TiedUnlessPresent;
    c.qk_norm = QkNorm::AfterTranspose;
    c.attention_scale = query_pre_attn_scalar.powf(-0.5) as f32;
    c.norm = Norm::OnePlus;
    c.block = Block::Sandwich;
    c.mlp = Mlp::GeluApprox;
    c.embed_scale = true;
    Ok(c)
}
