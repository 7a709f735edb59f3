//! The sparse MLP, written as mlx_lm's `switch_layers.py` and the architectures' MoE blocks:
//!
//! - [`SwitchLinear`]: `SwitchLinear` (`gather_mm(x, W.swapaxes(-1, -2), rhs_indices)`) and
//!   `QuantizedSwitchLinear` (`gather_qmm(x, w, scales, biases, rhs_indices, transpose=True,
//!   group_size, bits, mode)`), then `+ bias[indices]` where the experts have biases.
//! - [`SwitchGlu`]: `SwitchGLU`, including `_gather_sort`/`_scatter_unsort` when the index
//!   array has 64 or more entries (a prefill of 32 tokens at top-2): tokens are ordered by
//!   expert before the gathered matmuls and put back after, as mlx_lm does.
//! - [`SparseMoe`]: the router and the weighted sum of the chosen experts, qwen3_moe's
//!   (`Qwen3MoeSparseMoeBlock`) or gpt_oss's (`MLPBlock`), see [`Router`].
//!
//! On MLX's CPU backend `GatherMM` evaluates float32 only (bfloat16 fails there, in mlx_lm as
//! here); `GatherQMM` takes float32 and bfloat16.

use mlx_rs::error::Exception;
use mlx_rs::ops::indexing::{take_along_axis, take_axis, Ellipsis, TryIndexOp};
use mlx_rs::ops::{
    argpartition_axis, argsort_axis, clip, expand_dims, expand_dims_axes, flatten, gather_mm, minimum, sigmoid,
    softmax_axis, stack, swap_axes,
};
use mlx_rs::{Array, Dtype, Stream};

use super::layers::{load_stacked, scalar, swiglu, weight_arrays, Linear, LinearWeight, Packed};
use crate::config::{ExpertActivation, Moe, Quantization, Router};
use crate::ffi::{finish, some_int};
use crate::weights::{Weights, WeightsError};

/// `SwitchGLU` sorts tokens by expert when `indices.size >= 64`.
pub const SORT_THRESHOLD: usize = 64;

/// One projection of every expert: `[experts, out, in]`.
pub struct SwitchLinear {
    weight: LinearWeight,
    /// `W.swapaxes(-1, -2)` of a dense weight, built once (see `Linear`).
    weight_t: Option<Array>,
    bias: Option<Array>,
}

impl SwitchLinear {
    fn load(
        w: &mut Weights,
        prefix: &str,
        experts: i32,
        out_dims: i32,
        in_dims: i32,
        bias: bool,
        quant: Option<&Quantization>,
    ) -> Result<Self, WeightsError> {
        let weight = load_stacked(w, prefix, &[experts], out_dims, in_dims, quant)?;
        let weight_t = match &weight {
            LinearWeight::Dense(a) => Some(
                swap_axes(a, -1, -2)
                    .map_err(|source| WeightsError::Transpose { name: format!("{prefix}.weight"), source })?,
            ),
            LinearWeight::Quantized(_) => None,
        };
        let bias = if bias { Some(w.take(&format!("{prefix}.bias"), Some(&[experts, out_dims]))?) } else { None };
        Ok(SwitchLinear { weight, weight_t, bias })
    }

    fn forward(&self, x: &Array, indices: &Array, sorted: bool) -> Result<Array, Exception> {
        let y = match (&self.weight_t, &self.weight) {
            (Some(wt), _) => gather_mm(x, wt, None, indices, sorted)?,
            (None, LinearWeight::Dense(w)) => gather_mm(x, swap_axes(w, -1, -2)?, None, indices, sorted)?,
            (_, LinearWeight::Quantized(p)) => gather_qmm(x, p, indices, sorted)?,
        };
        match &self.bias {
            Some(b) => y.add(expand_dims(take_axis(b, indices, 0)?, -2)?),
            None => Ok(y),
        }
    }

    fn arrays(&self) -> Vec<&Array> {
        let mut v = weight_arrays(&self.weight);
        v.extend(self.weight_t.iter());
        v.extend(self.bias.iter());
        v
    }
}

/// `mx.gather_qmm(x, w, scales, biases, rhs_indices=indices, transpose=True, group_size, bits,
/// mode, sorted_indices)` (mlx-rs fixes the mode to affine; mlx-c takes its name).
fn gather_qmm(x: &Array, p: &Packed, indices: &Array, sorted: bool) -> Result<Array, Exception> {
    let stream = Stream::thread_local_or_default();
    // SAFETY: every pointer is valid for the call (null array handles stand for "no biases"
    // and "no lhs indices"); `res` is owned by the returned Array on success, freed on failure.
    unsafe {
        let none = mlx_sys::mlx_array_new();
        let biases = p.biases.as_ref().map_or(none, |b| b.as_ptr());
        let mut res = mlx_sys::mlx_array_new();
        let rc = mlx_sys::mlx_gather_qmm(
            &mut res,
            x.as_ptr(),
            p.weight.as_ptr(),
            p.scales.as_ptr(),
            biases,
            none,
            indices.as_ptr(),
            true,
            some_int(p.params.group_size),
            some_int(p.params.bits),
            p.params.mode.c_name().as_ptr(),
            sorted,
            stream.as_ptr(),
        );
        finish(rc, res, "gather_qmm")
    }
}

/// gpt_oss's `swiglu_oai(gate, x, alpha=1.702, limit=7.0)`.
fn swiglu_oai(gate: &Array, x: &Array) -> Result<Array, Exception> {
    let limit = 7.0;
    let gate = minimum(gate, scalar(limit, gate)?)?;
    let x = clip(x, (scalar(-limit, x)?, scalar(limit, x)?))?;
    let glu = gate.multiply(sigmoid(scalar(1.702, &gate)?.multiply(&gate)?)?)?;
    x.add(scalar(1.0, &x)?)?.multiply(&glu)
}

/// `SwitchGLU`: gate, up and down projections of the chosen experts.
pub struct SwitchGlu {
    gate: SwitchLinear,
    up: SwitchLinear,
    down: SwitchLinear,
    activation: ExpertActivation,
}

impl SwitchGlu {
    /// `x` `[B, L, D]`, `indices` `[B, L, k]` → `[B, L, k, D]`.
    pub fn forward(&self, x: &Array, indices: &Array) -> Result<Array, Exception> {
        let x = expand_dims_axes(x, &[-2, -3])?;
        let do_sort = indices.size() >= SORT_THRESHOLD;
        let (x, idx, inv_order) = if do_sort {
            let (x, idx, inv) = gather_sort(&x, indices)?;
            (x, idx, Some(inv))
        } else {
            (x, indices.clone(), None)
        };
        let x_up = self.up.forward(&x, &idx, do_sort)?;
        let x_gate = self.gate.forward(&x, &idx, do_sort)?;
        let h = match self.activation {
            ExpertActivation::SwiGlu => swiglu(&x_gate, &x_up)?,
            ExpertActivation::SwigluOai => swiglu_oai(&x_gate, &x_up)?,
        };
        let mut x = self.down.forward(&h, &idx, do_sort)?;
        if let Some(inv) = inv_order {
            // _scatter_unsort(x, inv_order, indices.shape)
            let mut shape = indices.shape().to_vec();
            shape.extend_from_slice(&x.shape()[1..]);
            x = take_axis(&x, &inv, 0)?.reshape(&shape)?;
        }
        x.squeeze_axes(&[-2])
    }

    fn arrays(&self) -> Vec<&Array> {
        [&self.gate, &self.up, &self.down].into_iter().flat_map(SwitchLinear::arrays).collect()
    }
}

/// `_gather_sort(x, indices)`: the token rows repeated per chosen expert in expert order, the
/// sorted indices, and the inverse permutation.
fn gather_sort(x: &Array, indices: &Array) -> Result<(Array, Array, Array), Exception> {
    let m = *indices.shape().last().expect("indices have a last axis");
    let flat = indices.flatten(None, None)?;
    let order = argsort_axis(&flat, -1)?;
    let inv_order = argsort_axis(&order, -1)?;
    // `order // M`: a Python int meets uint32 and stays uint32.
    let rows = order.floor_divide(Array::from_slice(&[m as u32], &[]).as_dtype(order.dtype())?)?;
    let x = take_axis(flatten(x, 0, -3)?, &rows, 0)?;
    Ok((x, take_axis(&flat, &order, 0)?, inv_order))
}

/// A sparse MLP block: the router, then the chosen experts weighted.
pub struct SparseMoe {
    router: Linear,
    experts: SwitchGlu,
    spec: Moe,
}

impl SparseMoe {
    /// Loads `<prefix>.<router_name>` and `<prefix>.<experts_name>.{gate,up,down}_proj`, after
    /// qwen3_moe's sanitize stacks per-expert weights (`<prefix>.experts.<e>.<proj>.weight`).
    pub fn load(
        w: &mut Weights,
        prefix: &str,
        spec: Moe,
        dims: i32,
        quant: Option<&Quantization>,
    ) -> Result<Self, WeightsError> {
        let (e, ff) = (spec.num_experts, spec.intermediate_size);
        let experts = format!("{prefix}.{}", spec.experts_name);
        if let Some(per_expert) = spec.per_expert {
            stack_experts(w, &format!("{prefix}.{per_expert}"), &experts, e)?;
        }
        let linear = |w: &mut Weights, name: &str, out_dims: i32, in_dims: i32| {
            SwitchLinear::load(w, &format!("{experts}.{name}"), e, out_dims, in_dims, spec.bias, quant)
        };
        let switch = SwitchGlu {
            gate: linear(w, "gate_proj", ff, dims)?,
            up: linear(w, "up_proj", ff, dims)?,
            down: linear(w, "down_proj", dims, ff)?,
            activation: spec.activation,
        };
        let router = Linear::load(w, &format!("{prefix}.{}", spec.router_name), e, dims, spec.bias, quant)?;
        Ok(SparseMoe { router, experts: switch, spec })
    }

    pub fn forward(&self, x: &Array) -> Result<Array, Exception> {
        let (k, e) = (self.spec.top_k, self.spec.num_experts);
        let top_k =
            |a: &Array| -> Result<Array, Exception> { argpartition_axis(a, -k, -1)?.try_index((Ellipsis, e - k..)) };
        match self.spec.router {
            Router::SoftmaxTopK { norm_topk_prob } => {
                let gates = softmax_axis(self.router.forward(x)?, -1, true)?;
                let inds = top_k(&gates)?;
                let mut scores = take_along_axis(&gates, &inds, -1)?;
                if norm_topk_prob {
                    scores = scores.divide(scores.sum_axis(-1, true)?)?;
                }
                let y = self.experts.forward(x, &inds)?;
                let dtype: Dtype = y.dtype();
                y.multiply(expand_dims(&scores, -1)?)?.sum_axis(-2, false)?.as_dtype(dtype)
            }
            Router::TopKSoftmax => {
                let g = self.router.forward(x)?;
                let inds = top_k(&g)?;
                let weights = softmax_axis(take_along_axis(&g, &inds, -1)?, -1, true)?;
                let y = self.experts.forward(x, &inds)?;
                y.multiply(expand_dims(&weights, -1)?)?.sum_axis(-2, false)
            }
        }
    }

    pub fn arrays(&self) -> Vec<&Array> {
        let mut v = self.router.arrays();
        v.extend(self.experts.arrays());
        v
    }
}

/// qwen3_moe's sanitize: when `<from>.0.up_proj.weight` exists, each projection's per-expert
/// weights are stacked into `<to>.<proj>.weight`.
fn stack_experts(w: &mut Weights, from: &str, to: &str, experts: i32) -> Result<(), WeightsError> {
    if !w.contains(&format!("{from}.0.up_proj.weight")) {
        return Ok(());
    }
    for proj in ["up_proj", "down_proj", "gate_proj"] {
        let parts =
            (0..experts).map(|e| w.take(&format!("{from}.{e}.{proj}.weight"), None)).collect::<Result<Vec<_>, _>>()?;
        let name = format!("{to}.{proj}.weight");
        let stacked = stack(&parts, 0).map_err(|source| WeightsError::Stack { name: name.clone(), source })?;
        w.insert(name, stacked);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use mlx_rs::random::{normal, randint};

    use super::*;

    fn dense(experts: i32, out_dims: i32, in_dims: i32, key: u64) -> SwitchLinear {
        let key = mlx_rs::random::key(key).unwrap();
        let w = normal::<f32>(&[experts, out_dims, in_dims], None, None, &key).unwrap();
        SwitchLinear { weight_t: Some(swap_axes(&w, -1, -2).unwrap()), weight: LinearWeight::Dense(w), bias: None }
    }

    fn values<T: mlx_rs::ArrayElement + Copy>(a: &Array) -> Vec<T> {
        a.eval().unwrap();
        a.as_slice::<T>().to_vec()
    }

    fn routes(tokens: i32, k: i32, experts: i32) -> Array {
        let key = mlx_rs::random::key(7).unwrap();
        randint::<_, i32>(0, experts, &[1, tokens, k], &key).unwrap().as_dtype(Dtype::Uint32).unwrap()
    }

    /// `_gather_sort`: indices in expert order, each row the token of its entry, and an inverse
    /// permutation that restores the original order.
    #[test]
    fn gather_sort_orders_by_expert_and_inverts() {
        let (tokens, k, d) = (20, 3, 4);
        let key = mlx_rs::random::key(1).unwrap();
        let x = normal::<f32>(&[1, tokens, 1, 1, d], None, None, &key).unwrap();
        let indices = routes(tokens, k, 8);
        let (sorted_x, sorted_idx, inv) = gather_sort(&x, &indices).unwrap();
        let flat: Vec<u32> = values(&indices.flatten(None, None).unwrap());
        let sorted: Vec<u32> = values(&sorted_idx);
        assert!(sorted.windows(2).all(|w| w[0] <= w[1]), "{sorted:?}");
        let mut expected = flat.clone();
        expected.sort();
        assert_eq!(sorted, expected);
        let restored: Vec<u32> = values(&take_axis(&sorted_idx, &inv, 0).unwrap());
        assert_eq!(restored, flat);
        // Row i of the sorted input is the token that chose entry order[i].
        assert_eq!(sorted_x.shape(), [tokens * k, 1, d]);
        let order = argsort_axis(indices.flatten(None, None).unwrap(), -1).unwrap();
        let rows: Vec<u32> = values(&order);
        let xs: Vec<f32> = values(&x.reshape(&[tokens, d]).unwrap());
        let got: Vec<f32> = values(&sorted_x.reshape(&[-1]).unwrap());
        for (i, &o) in rows.iter().enumerate() {
            let t = (o / k as u32) as usize;
            assert_eq!(&got[i * d as usize..][..d as usize], &xs[t * d as usize..][..d as usize]);
        }
    }

    /// At 64 or more indices `SwitchGlu` takes the sorted path; its output is put back in token
    /// order: equal to the per-token gathered matmuls without sorting.
    #[test]
    fn sorted_switch_glu_equals_the_unsorted_computation() {
        let (e, d, ff) = (8, 16, 8);
        let glu = SwitchGlu {
            gate: dense(e, ff, d, 1),
            up: dense(e, ff, d, 2),
            down: dense(e, d, ff, 3),
            activation: ExpertActivation::SwiGlu,
        };
        for tokens in [20, 40] {
            let indices = routes(tokens, 2, e);
            assert_eq!(indices.size() >= SORT_THRESHOLD, tokens == 40);
            let key = mlx_rs::random::key(4).unwrap();
            let x = normal::<f32>(&[1, tokens, d], None, None, &key).unwrap();
            let ours = glu.forward(&x, &indices).unwrap();
            assert_eq!(ours.shape(), [1, tokens, 2, d]);
            let xe = expand_dims_axes(&x, &[-2, -3]).unwrap();
            let h = swiglu(
                &glu.gate.forward(&xe, &indices, false).unwrap(),
                &glu.up.forward(&xe, &indices, false).unwrap(),
            )
            .unwrap();
            let plain = glu.down.forward(&h, &indices, false).unwrap().squeeze_axes(&[-2]).unwrap();
            assert_eq!(values::<f32>(&ours), values::<f32>(&plain), "{tokens} tokens");
        }
    }
}
