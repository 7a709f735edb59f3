//! mlx_lm `gpt_oss`: every layer sparse (a biased `router`, the top `num_experts_per_tok` of
//! its logits softmaxed, `SwitchGLU` with biases and the clamped `swiglu_oai` over
//! `num_local_experts` experts of `intermediate_size`), biased q/k/v/o projections, a learned
//! attention sink per head, `initialize_rope(head_dim, rope_theta, rope_scaling)` on every
//! layer, and `layer_types` (default: sliding and full alternating) with the sliding layers on
//! a `RotatingKVCache(sliding_window)`. The head is always its own `lm_head`. Defaults are the
//! dataclass's (gpt-oss-20b's shape).

use crate::config::{
    dense, ConfigError, DimDefaults, ExpertActivation, Fields, KvDefault, ModelConfig, Moe, Qkv, Rope, RopeScaling,
    Router,
};

pub fn resolve(f: &Fields) -> Result<ModelConfig, ConfigError> {
    let dims = f.dims(&DimDefaults {
        hidden_size: Some(2880),
        num_hidden_layers: Some(36),
        intermediate_size: Some(2880),
        num_attention_heads: Some(64),
        vocab_size: Some(201_088),
        rms_norm_eps: Some(1e-5),
        num_key_value_heads: KvDefault::Value(8),
    })?;
    let head_dim = f.positive("head_dim", Some(64))?;
    let num_experts = f.positive("num_local_experts", Some(128))?;
    let top_k = f.positive("num_experts_per_tok", Some(4))?;
    if top_k > num_experts {
        return Err(f.error("num_experts_per_tok", format!("{top_k} exceeds num_local_experts {num_experts}")));
    }
    let window = f.positive("sliding_window", Some(128))?;
    let scaling = match f.get("rope_scaling") {
        Some(s) => f.rope_scaling(s, "rope_scaling", None)?,
        None => RopeScaling::Plain { scale: 1.0 },
    };
    let rope =
        Rope { dims: head_dim, base: f.float("rope_theta")?.unwrap_or(150_000.0) as f32, traditional: false, scaling };
    let layers = dims.num_hidden_layers;
    let intermediate_size = dims.intermediate_size;
    let sliding = layer_types(f, layers)?;
    let mut c = dense(dims, head_dim, Some(rope), false);
    c.qkv = Qkv::Separate { bias: true };
    c.o_bias = true;
    c.attention_sinks = true;
    c.attention_scale = (1.0 / (head_dim as f64).sqrt()) as f32;
    for layer in &mut c.layers {
        layer.moe = true;
    }
    c.moe = Some(Moe {
        num_experts,
        top_k,
        intermediate_size,
        router: Router::TopKSoftmax,
        activation: ExpertActivation::SwigluOai,
        bias: true,
        router_name: "router",
        experts_name: "experts",
        per_expert: None,
    });
    c.set_sliding(&sliding, Some(window), true);
    Ok(c)
}

/// `layer_types or ["sliding_attention", "full_attention"] * (num_hidden_layers // 2)`; mlx_lm
/// zips the layers with it (a shorter list would silently drop layers) and takes one mask from
/// the first layer of each kind, so both kinds and one entry per layer are required.
fn layer_types(f: &Fields, layers: usize) -> Result<Vec<bool>, ConfigError> {
    let given = f.get("layer_types").and_then(|t| t.as_array()).is_some_and(|t| !t.is_empty());
    let sliding = if given {
        f.layer_types(layers)?
    } else if layers % 2 == 0 {
        (0..layers).map(|i| i % 2 == 0).collect()
    } else {
        return Err(f.error(
            "num_hidden_layers",
            format!(
                "{layers} is odd and layer_types is absent: mlx_lm's default alternation would skip the last layer"
            ),
        ));
    };
    if !sliding.iter().any(|s| *s) {
        return Err(f.error("layer_types", "no sliding_attention layer (mlx_lm needs one for its mask)"));
    }
    Ok(sliding)
}
