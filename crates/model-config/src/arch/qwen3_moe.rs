//! mlx_lm `qwen3_moe`: qwen3's attention (per-head q/k norms, no biases) with a sparse MLP on
//! every `decoder_sparse_step`-th layer not in `mlp_only_layers` (the others keep the dense
//! `intermediate_size` MLP): the router `gate`, softmax over `num_experts`, the top
//! `num_experts_per_tok` renormalized when `norm_topk_prob`, `SwitchGLU` over
//! `moe_intermediate_size`. Every `ModelArgs` field but `rope_scaling` is required;
//! `rope_scaling` is read by the dataclass and never used (the attention builds a plain
//! `nn.RoPE(head_dim, base=rope_theta)`), so it is accepted and has no effect here either.

use crate::config::{
    dense, ConfigError, DimDefaults, ExpertActivation, Fields, ModelConfig, Moe, QkNorm, Rope, RopeScaling, Router,
};

pub fn resolve(f: &Fields) -> Result<ModelConfig, ConfigError> {
    let dims = f.dims(&DimDefaults::default())?;
    let head_dim = f.positive("head_dim", None)?;
    let required_bool = |field: &str| f.boolean(field)?.ok_or_else(|| f.error(field, "required and missing"));
    let tie = required_bool("tie_word_embeddings")?;
    let norm_topk_prob = required_bool("norm_topk_prob")?;
    f.positive("max_position_embeddings", None)?;
    let num_experts = match f.int("num_experts")? {
        Some(n) if (0..=i32::MAX as i64).contains(&n) => n as i32,
        Some(n) => return Err(f.error("num_experts", format!("expected 0 or more, found {n}"))),
        None => return Err(f.error("num_experts", "required and missing")),
    };
    let top_k = f.positive("num_experts_per_tok", None)?;
    let moe_intermediate_size = f.positive("moe_intermediate_size", None)?;
    let step = match f.int("decoder_sparse_step")? {
        Some(n) if n > 0 => n as usize,
        Some(n) if num_experts == 0 => n.max(1) as usize,
        Some(n) => {
            return Err(
                f.error("decoder_sparse_step", format!("{n}: mlx_lm divides by it (expected a positive integer)"))
            )
        }
        None => return Err(f.error("decoder_sparse_step", "required and missing")),
    };
    let mlp_only = mlp_only_layers(f)?;
    if num_experts > 0 && top_k > num_experts {
        return Err(f.error("num_experts_per_tok", format!("{top_k} exceeds num_experts {num_experts}")));
    }
    let rope = Rope {
        dims: head_dim,
        base: f.req_float("rope_theta")? as f32,
        traditional: false,
        scaling: RopeScaling::Plain { scale: 1.0 },
    };
    let mut c = dense(dims, head_dim, Some(rope), tie);
    c.qk_norm = QkNorm::BeforeTranspose;
    for (i, layer) in c.layers.iter_mut().enumerate() {
        layer.moe = !mlp_only.contains(&(i as i64)) && num_experts > 0 && (i + 1) % step == 0;
    }
    c.moe = Some(Moe {
        num_experts,
        top_k,
        intermediate_size: moe_intermediate_size,
        router: Router::SoftmaxTopK { norm_topk_prob },
        activation: ExpertActivation::SwiGlu,
        bias: false,
        router_name: "gate",
        experts_name: "switch_mlp",
        per_expert: Some("experts"),
    });
    Ok(c)
}

/// `mlp_only_layers`: a required list of layer indices.
fn mlp_only_layers(f: &Fields) -> Result<Vec<i64>, ConfigError> {
    let list = f.get("mlp_only_layers").ok_or_else(|| f.error("mlp_only_layers", "required and missing"))?;
    list.as_array()
        .ok_or_else(|| f.error("mlp_only_layers", format!("expected a list, found {list}")))?
        .iter()
        .map(|v| v.as_i64().ok_or_else(|| f.error("mlp_only_layers", format!("expected layer indices, found {v}"))))
        .collect()
}
