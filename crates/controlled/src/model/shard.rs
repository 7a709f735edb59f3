//! Tensor parallelism as mlx_lm shards a model: `Model.shard(group)` of qwen3, qwen2, llama (and
//! so mistral, which mlx_lm maps to llama) and ministral3, through mlx.nn's `shard_linear`.
//!
//! - all-to-sharded (`q_proj`, `k_proj`, `v_proj`, `gate_proj`, `up_proj`): the weight, and a
//!   packed layer's `scales` and `biases`, split along the output rows (axis 0) into `ranks`
//!   equal parts, rank r keeping part r; a `bias` split along its last axis. The forward is the
//!   layer's own on its part. (mlx.nn first passes `x` through `sum_gradients(group)`, an
//!   identity with a custom gradient: it changes no value, so it has no counterpart here.)
//! - sharded-to-all (`o_proj`, `down_proj`): the same split along the last axis (the input
//!   columns: packed words and their groups' scales and biases), the `bias` kept whole; the
//!   forward is the product, then `all_sum` across the group, then `+ bias`
//!   ([`Linear::forward`]).
//! - every part is made contiguous, as mlx.nn's `_shard` does (`mx.contiguous`), so the products
//!   read buffers laid out as mlx_lm's are.
//! - the attention's head counts are divided by `ranks`; the embedding, the norms and the head
//!   are whole on every rank.
//!
//! [`check`] decides, from the config alone, whether a model can be sharded so: the worker
//! refuses at validation what it would refuse here, before anything is loaded. A packed
//! sharded-to-all layer is checked again against the packing it is loaded with.

use std::sync::Arc;

use mlx_rs::error::Exception;
use mlx_rs::Array;

use super::layers::{load_matrix, Linear, LinearWeight, Packed};
use crate::config::{Mlp, ModelConfig, Qkv, QuantParams, Quantization};
use crate::group::Group;
use crate::weights::{Weights, WeightsError};

/// The `model_type`s whose mlx_lm `Model.shard` splits q/k/v/o and gate/up/down as above
/// (`mistral` is mlx_lm's `MODEL_REMAPPING` to llama).
const SHARDED: &[&str] = &["qwen3", "qwen2", "llama", "mistral", "ministral3"];

/// The `model_type`s whose mlx_lm `Model.shard` also splits the experts' hidden units in place
/// (`shard_inplace` on the switch layers, the sparse block's output summed across the group;
/// gpt_oss also slices its sinks and divides the experts' `down_proj.bias` by the size): not
/// implemented.
const SHARDED_EXPERTS: &[&str] = &["qwen3_moe", "gpt_oss"];

/// How a projection is split: mlx.nn's `shard_linear` kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    AllToSharded,
    ShardedToAll,
}

/// Why a model cannot be sharded across a group: the job field at fault and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct Unshardable {
    /// `group` (the model is not sharded at all) or `group.ranks` (not across this many).
    pub field: &'static str,
    pub reason: String,
}

/// Why a rank's shard cannot be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    #[error("cannot shard the model: {0}")]
    Unshardable(#[from] Unshardable),
    #[error(transparent)]
    Weights(#[from] WeightsError),
    #[error("failed to take rank {rank}'s part of {name}")]
    Split {
        name: String,
        rank: u32,
        #[source]
        source: Exception,
    },
}

/// Checks that mlx_lm shards this model with the q/k/v/o + gate/up/down pattern and that every
/// split is whole across `ranks`; a packed sharded-to-all layer is checked with its config
/// entry, else the config's default packing.
pub fn check(c: &ModelConfig, ranks: u32) -> Result<(), Unshardable> {
    let t = c.model_type.as_str();
    let refuse = |field, reason: String| Err(Unshardable { field, reason });
    if SHARDED_EXPERTS.contains(&t) {
        return refuse("group", format!("mlx_lm shards {t}'s experts in place, which the controlled loop does not"));
    }
    if !SHARDED.contains(&t) {
        return refuse("group", format!("{t} is not sharded by mlx_lm"));
    }
    // What the decoder runs for these types; a reader that changed them would be refused here
    // rather than sharded another way than mlx_lm's.
    let pattern = matches!(c.qkv, Qkv::Separate { .. })
        && matches!(c.mlp, Mlp::SwiGlu { .. })
        && c.moe.is_none()
        && !c.attention_sinks;
    if !pattern {
        return refuse("group", format!("{t}'s layers are not the q/k/v/o + gate/up/down pattern mlx_lm shards"));
    }
    for (name, dims) in [
        ("num_attention_heads", c.num_attention_heads),
        ("num_key_value_heads", c.num_key_value_heads),
        ("intermediate_size", c.intermediate_size),
    ] {
        // Validation runs before the runtime's own check of `ranks`, so 0 is possible here.
        if dims.checked_rem(ranks as i32) != Some(0) {
            return refuse("group.ranks", format!("{name} {dims} does not divide by {ranks}"));
        }
    }
    if let Some(q) = &c.quantization {
        for i in 0..c.num_hidden_layers {
            let p = format!("{}.layers.{i}", c.prefix);
            for (name, in_dims) in
                [("self_attn.o_proj", c.num_attention_heads * c.head_dim), ("mlp.down_proj", c.intermediate_size)]
            {
                let prefix = format!("{p}.{name}");
                if let Some(params) = configured_packing(q, &prefix) {
                    columns_fit(&prefix, in_dims, ranks, params)?;
                }
            }
        }
    }
    Ok(())
}

/// A module's packing as the config states it: its own entry, else the default.
fn configured_packing(q: &Quantization, prefix: &str) -> Option<QuantParams> {
    q.modules.get(prefix).copied().unwrap_or(Some(q.default))
}

/// A packed sharded-to-all layer's input columns split into whole quantization groups (mlx.nn
/// splits the scales along the same axis, one per group).
fn columns_fit(prefix: &str, in_dims: i32, ranks: u32, params: QuantParams) -> Result<(), Unshardable> {
    let part = in_dims.checked_div(ranks as i32).unwrap_or(0);
    if in_dims.checked_rem(ranks as i32) != Some(0) || part % params.group_size != 0 {
        return Err(Unshardable {
            field: "group.ranks",
            reason: format!(
                "{prefix}'s {in_dims} input columns / {ranks} = {part} are not a multiple of its quantization \
                 group_size {}",
                params.group_size
            ),
        });
    }
    Ok(())
}

/// One rank's part of a model: which part it keeps, and the group its sharded-to-all layers sum
/// across.
pub struct Shard {
    group: Arc<Group>,
    rank: u32,
    ranks: u32,
}

impl Shard {
    pub fn new(group: Arc<Group>) -> Self {
        let (rank, ranks) = (group.rank(), group.size());
        Shard { group, rank, ranks }
    }

    pub fn ranks(&self) -> u32 {
        self.ranks
    }

    pub fn group(&self) -> &Arc<Group> {
        &self.group
    }

    /// Loads `<prefix>` (an `[out, in]` projection, as [`Linear::load`]) and keeps this rank's
    /// part of it, split as `split`.
    pub fn linear(
        &self,
        w: &mut Weights,
        prefix: &str,
        (out_dims, in_dims): (i32, i32),
        bias: bool,
        quant: Option<&Quantization>,
        split: Split,
    ) -> Result<Linear, ShardError> {
        let weight = load_matrix(w, prefix, out_dims, in_dims, quant)?;
        let bias = if bias { Some(w.take(&format!("{prefix}.bias"), Some(&[out_dims]))?) } else { None };
        let part = |suffix: &str, a: &Array, axis: i32| {
            self.part(a, axis).map_err(|source| ShardError::Split {
                name: format!("{prefix}.{suffix}"),
                rank: self.rank,
                source,
            })
        };
        let axis = match split {
            Split::AllToSharded => 0,
            Split::ShardedToAll => -1,
        };
        let weight = match weight {
            LinearWeight::Dense(a) => LinearWeight::Dense(part("weight", &a, axis)?),
            LinearWeight::Quantized(p) => {
                if split == Split::ShardedToAll {
                    columns_fit(prefix, in_dims, self.ranks, p.params)?;
                }
                LinearWeight::Quantized(Packed {
                    weight: part("weight", &p.weight, axis)?,
                    scales: part("scales", &p.scales, axis)?,
                    biases: p.biases.map(|b| part("biases", &b, axis)).transpose()?,
                    params: p.params,
                })
            }
        };
        let (bias, all_sum) = match split {
            Split::AllToSharded => (bias.map(|b| part("bias", &b, -1)).transpose()?, None),
            Split::ShardedToAll => (bias, Some(Arc::clone(&self.group))),
        };
        Linear::new(weight, bias, all_sum)
            .map_err(|source| ShardError::Weights(WeightsError::Transpose { name: format!("{prefix}.weight"), source }))
    }

    /// `mx.contiguous(mx.split(a, ranks, axis)[rank])`.
    fn part(&self, a: &Array, axis: i32) -> Result<Array, Exception> {
        let parts = a.split_equal(self.ranks as i32, axis)?;
        parts[self.rank as usize].contiguous()
    }
}
