//! The building blocks of the decoder, each written as the mlx.nn / mlx_lm layer it mirrors so
//! the MLX graph (and with it every rounding) is the one mlx_lm builds:
//!
//! - [`Linear`]: `nn.Linear` (`x @ W.T`, or `addmm(b, x, W.T)` with a bias) and
//!   `nn.QuantizedLinear` (`quantized_matmul(x, w, scales, biases, transpose=True)`, then `+ b`).
//! - [`Embedding`]: `nn.Embedding` (`W[ids]`, `as_linear` = `x @ W.T`) and
//!   `nn.QuantizedEmbedding` (`dequantize(w[ids], scales[ids], biases[ids])`, `as_linear` =
//!   `quantized_matmul(..., transpose=True)`).
//! - [`rms_norm`]: `nn.RMSNorm` = `mx.fast.rms_norm`.
//! - [`swiglu`]: mlx_lm's `silu(gate) * x` with `silu(g) = g * sigmoid(g)`.
//!
//! Quantized layers get their group size and bits from the tensor shapes, as mlx_lm's
//! `infer_quant_config` does, and only affine packing (scales in a float dtype) is accepted.

use mlx_rs::error::Exception;
use mlx_rs::ops::indexing::take_axis;
use mlx_rs::ops::{addmm, dequantize, matmul, multiply, quantized_matmul, sigmoid, transpose};
use mlx_rs::{Array, Dtype};

use crate::weights::{Weights, WeightsError};

/// Packed affine weights with their per-group scales and biases.
pub struct Packed {
    pub weight: Array,
    pub scales: Array,
    pub biases: Array,
    pub group_size: i32,
    pub bits: i32,
}

/// A linear layer's weights, dense or packed.
pub enum LinearWeight {
    Dense(Array),
    Quantized(Packed),
}

/// `nn.Linear` / `nn.QuantizedLinear`.
pub struct Linear {
    weight: LinearWeight,
    /// `W.T` of a dense weight, built once at load: a strided view of `W` once evaluated, so the
    /// matmul reads the same buffer with the same strides as with a per-call `transpose(W)`,
    /// without adding a transpose node to every step's graph.
    weight_t: Option<Array>,
    bias: Option<Array>,
}

/// Loads `<prefix>.weight` (and `.scales`/`.biases` when quantized) for an `[out, in]` matrix.
pub fn load_matrix(w: &mut Weights, prefix: &str, out_dims: i32, in_dims: i32) -> Result<LinearWeight, WeightsError> {
    let name = format!("{prefix}.weight");
    if !w.contains(&format!("{prefix}.scales")) {
        return Ok(LinearWeight::Dense(w.take(&name, Some(&[out_dims, in_dims]))?));
    }
    let weight = w.take(&name, None)?;
    let scales = w.take(&format!("{prefix}.scales"), None)?;
    let biases_name = format!("{prefix}.biases");
    let dir = w.dir().to_owned();
    let quant_error = |reason: String| WeightsError::Quantized {
        name: name.clone(),
        dir: dir.clone(),
        reason,
    };
    if matches!(scales.dtype(), Dtype::Uint8) {
        return Err(quant_error("uint8 scales mean an mx/nv fp mode; only affine is supported".into()));
    }
    if !w.contains(&biases_name) {
        return Err(quant_error(format!("affine quantization needs {biases_name}")));
    }
    let biases = w.take(&biases_name, None)?;
    let (ws, ss) = (weight.shape().to_vec(), scales.shape().to_vec());
    if ws.len() != 2 || ss.len() != 2 || ws[0] != out_dims || ss[0] != out_dims || ss[1] == 0 {
        return Err(quant_error(format!("unexpected packed shapes weight {ws:?} scales {ss:?} for [{out_dims}, {in_dims}]")));
    }
    if biases.shape() != scales.shape() {
        return Err(quant_error(format!("biases shape {:?} differs from scales {ss:?}", biases.shape())));
    }
    // mlx_lm's infer_quant_config.
    let group_size = in_dims / ss[1];
    let bits = ws[1] * 32 / in_dims;
    if group_size * ss[1] != in_dims || bits * in_dims != ws[1] * 32 || !(bits == 4 || bits == 8) {
        return Err(quant_error(format!("cannot infer affine 4/8-bit packing from weight {ws:?} scales {ss:?} for in_dims {in_dims}")));
    }
    Ok(LinearWeight::Quantized(Packed {
        weight,
        scales,
        biases,
        group_size,
        bits,
    }))
}

impl Linear {
    pub fn load(w: &mut Weights, prefix: &str, out_dims: i32, in_dims: i32, bias: bool) -> Result<Self, WeightsError> {
        let weight = load_matrix(w, prefix, out_dims, in_dims)?;
        let bias = if bias { Some(w.take(&format!("{prefix}.bias"), Some(&[out_dims]))?) } else { None };
        let weight_t = dense_transpose(&weight).map_err(|source| WeightsError::Transpose { name: format!("{prefix}.weight"), source })?;
        Ok(Linear { weight, weight_t, bias })
    }

    pub fn forward(&self, x: &Array) -> Result<Array, Exception> {
        match (&self.weight_t, &self.weight, &self.bias) {
            (Some(wt), _, None) => matmul(x, wt),
            (Some(wt), _, Some(b)) => addmm(b, x, wt, None, None),
            (None, LinearWeight::Dense(w), None) => matmul(x, transpose(w)?),
            (None, LinearWeight::Dense(w), Some(b)) => addmm(b, x, transpose(w)?, None, None),
            (_, LinearWeight::Quantized(p), bias) => {
                let y = quantized_matmul(x, &p.weight, &p.scales, &p.biases, true, p.group_size, p.bits)?;
                match bias {
                    Some(b) => y.add(b),
                    None => Ok(y),
                }
            }
        }
    }

    /// The arrays this layer holds (for evaluating them at load).
    pub fn arrays(&self) -> Vec<&Array> {
        let mut v = weight_arrays(&self.weight);
        v.extend(self.weight_t.iter());
        v.extend(self.bias.iter());
        v
    }
}

/// `transpose(W)` of a dense weight (lazy; evaluated with the model's other arrays).
fn dense_transpose(w: &LinearWeight) -> Result<Option<Array>, Exception> {
    match w {
        LinearWeight::Dense(w) => Ok(Some(transpose(w)?)),
        LinearWeight::Quantized(_) => Ok(None),
    }
}

fn weight_arrays(w: &LinearWeight) -> Vec<&Array> {
    match w {
        LinearWeight::Dense(w) => vec![w],
        LinearWeight::Quantized(p) => vec![&p.weight, &p.scales, &p.biases],
    }
}

/// `nn.Embedding` / `nn.QuantizedEmbedding`, including `as_linear` for tied heads.
pub struct Embedding {
    weight: LinearWeight,
    /// `W.T` of a dense matrix for `as_linear` (see [`Linear`]).
    weight_t: Option<Array>,
}

impl Embedding {
    pub fn load(w: &mut Weights, prefix: &str, vocab: i32, dims: i32) -> Result<Self, WeightsError> {
        let weight = load_matrix(w, prefix, vocab, dims)?;
        let weight_t = dense_transpose(&weight).map_err(|source| WeightsError::Transpose { name: format!("{prefix}.weight"), source })?;
        Ok(Embedding { weight, weight_t })
    }

    /// The rows of `ids` (any integer dtype, any shape): `W[ids]`.
    pub fn forward(&self, ids: &Array) -> Result<Array, Exception> {
        match &self.weight {
            LinearWeight::Dense(w) => take_axis(w, ids, 0),
            LinearWeight::Quantized(p) => dequantize(
                take_axis(&p.weight, ids, 0)?,
                take_axis(&p.scales, ids, 0)?,
                &take_axis(&p.biases, ids, 0)?,
                p.group_size,
                p.bits,
            ),
        }
    }

    /// The embedding matrix used as the output head: `x @ W.T`.
    pub fn as_linear(&self, x: &Array) -> Result<Array, Exception> {
        match (&self.weight_t, &self.weight) {
            (Some(wt), _) => matmul(x, wt),
            (None, LinearWeight::Dense(w)) => matmul(x, transpose(w)?),
            (_, LinearWeight::Quantized(p)) => {
                quantized_matmul(x, &p.weight, &p.scales, &p.biases, true, p.group_size, p.bits)
            }
        }
    }

    pub fn arrays(&self) -> Vec<&Array> {
        let mut v = weight_arrays(&self.weight);
        v.extend(self.weight_t.iter());
        v
    }
}

/// `nn.RMSNorm`.
pub fn rms_norm(x: &Array, weight: &Array, eps: f32) -> Result<Array, Exception> {
    mlx_rs::fast::rms_norm(x, Some(weight), eps)
}

/// mlx_lm's `swiglu(gate, x) = silu(gate) * x`, `silu(g) = g * sigmoid(g)`.
pub fn swiglu(gate: &Array, x: &Array) -> Result<Array, Exception> {
    multiply(multiply(gate, sigmoid(gate)?)?, x)
}
