//! mlx_lm `phi3` (Phi-3, Phi-3.5, Phi-4-mini): fused `qkv_proj` and `gate_up_proj`, the head
//! dim from the hidden size, RoPE over `partial_rotary_factor` of it, and `rope_scaling` of
//! type `su`/`longrope` (SuScaledRoPE from the top-level `max_position_embeddings` and
//! `original_max_position_embeddings`, the long factors) or `linear`. As mlx_lm's
//! `__post_init__` does, a scaling without `long_factor` or `type` is refused, and any other
//! type is dropped (mlx_lm warns and runs plain RoPE), so both loops compute the same thing.

use crate::config::{dense, ConfigError, DimDefaults, Fields, KvDefault, Mlp, ModelConfig, Qkv, Rope, RopeScaling};

pub fn resolve(f: &Fields) -> Result<ModelConfig, ConfigError> {
    let dims = f.dims(&DimDefaults { num_key_value_heads: KvDefault::Heads, ..Default::default() })?;
    let head_dim = dims.hidden_size / dims.num_attention_heads;
    let partial = f.float("partial_rotary_factor")?.unwrap_or(1.0);
    let rope_dims = (head_dim as f64 * partial) as i32;
    if rope_dims <= 0 || rope_dims > head_dim || rope_dims % 2 != 0 {
        return Err(
            f.error("partial_rotary_factor", format!("{partial} gives {rope_dims} rotated features of {head_dim}"))
        );
    }
    let max_pos = f.float("max_position_embeddings")?.unwrap_or(131_072.0);
    let original = f.float("original_max_position_embeddings")?.unwrap_or(4096.0);
    let scaling = match f.get("rope_scaling").filter(|s| s.as_object().is_some_and(|m| !m.is_empty())) {
        None => RopeScaling::Plain { scale: 1.0 },
        Some(s) => {
            for key in ["long_factor", "type"] {
                if s.get(key).is_none() {
                    return Err(f.error(&format!("rope_scaling.{key}"), "required by mlx_lm's phi3 and missing"));
                }
            }
            match s["type"].as_str() {
                Some("longrope" | "su") => f.su_scaled(s, &f.name("rope_scaling"), max_pos, original)?,
                Some("linear") => match s.get("factor") {
                    Some(v) if v.is_f64() => RopeScaling::Plain { scale: (1.0 / v.as_f64().unwrap_or(1.0)) as f32 },
                    other => {
                        return Err(f.error(
                            "rope_scaling.factor",
                            format!("expected a float (mlx_lm asserts one), found {other:?}"),
                        ))
                    }
                },
                _ => RopeScaling::Plain { scale: 1.0 },
            }
        }
    };
    let rope = Rope {
        dims: rope_dims,
        base: f.float("rope_theta")?.unwrap_or(10_000.0) as f32,
        traditional: f.boolean("rope_traditional")?.unwrap_or(false),
        scaling,
    };
    let tie = f.boolean("tie_word_embeddings")?.unwrap_or(false);
    let mut c = dense(dims, head_dim, Some(rope), tie);
    c.qkv = Qkv::Fused;
    c.mlp = Mlp::FusedSwiGlu;
    Ok(c)
}
