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
//! - [`gelu_approx`]: mlx.nn's `gelu_approx`, the tanh approximation.
//!
//! Quantized layers take their packing as mlx_lm's `load_model` decides it: the config's
//! per-module entry, else `infer_quant_config` from the tensor shapes; every mode mlx
//! implements (affine, mxfp4, nvfp4, mxfp8) goes through mlx-c with its name.

use std::sync::Arc;

use mlx_rs::error::Exception;
use mlx_rs::ops::indexing::take_axis;
use mlx_rs::ops::{addmm, matmul, multiply, sigmoid, tanh, transpose};
use mlx_rs::{Array, Dtype, Stream};

use crate::config::{check_packing, QuantMode, QuantParams, Quantization};
use crate::ffi::{finish, some_int};
use crate::group::Group;
use crate::weights::{Weights, WeightsError};

/// Packed weights with their per-group scales (and biases, in affine mode).
pub struct Packed {
    pub weight: Array,
    pub scales: Array,
    pub biases: Option<Array>,
    pub params: QuantParams,
}

/// A linear layer's weights, dense or packed.
pub enum LinearWeight {
    Dense(Array),
    Quantized(Packed),
}

/// `nn.Linear` / `nn.QuantizedLinear`, and a rank's sharded-to-all part of one
/// (`ShardedToAllLinear` / `QuantizedShardedToAllLinear`, see [`super::shard`]).
pub struct Linear {
    weight: LinearWeight,
    /// `W.T` of a dense weight, built once at load: a strided view of `W` once evaluated, so the
    /// matmul reads the same buffer with the same strides as with a per-call `transpose(W)`,
    /// without adding a transpose node to every step's graph.
    weight_t: Option<Array>,
    bias: Option<Array>,
    /// Sharded-to-all: the group the partial products are summed across, before the bias.
    all_sum: Option<Arc<Group>>,
}

/// How mlx_lm's `load_model` decides a module's packing: its entry in the config's
/// `quantization` block first (`false`: dense), else `infer_quant_config` from the tensor shapes
/// when `.scales` exist, else dense.
fn packing(
    w: &Weights,
    prefix: &str,
    in_dims: i32,
    quant: Option<&Quantization>,
) -> Result<Option<QuantParams>, WeightsError> {
    let Some(q) = quant else {
        return Ok(None);
    };
    if let Some(entry) = q.modules.get(prefix) {
        return Ok(*entry);
    }
    let (Some(weight), Some(scales)) = (w.peek(&format!("{prefix}.weight")), w.peek(&format!("{prefix}.scales")))
    else {
        return Ok(None);
    };
    let (ws, ss) = (weight.shape(), scales.shape());
    let error =
        |reason: String| WeightsError::Quantized { name: format!("{prefix}.weight"), dir: w.dir().to_owned(), reason };
    let (Some(&packed), Some(&groups)) = (ws.last(), ss.last()) else {
        return Err(error(format!("unexpected packed shapes weight {ws:?} scales {ss:?}")));
    };
    if groups == 0 {
        return Err(error("scales with no groups".into()));
    }
    let group_size = in_dims / groups;
    let bits = packed * 32 / in_dims;
    let mode = if scales.dtype() != Dtype::Uint8 {
        QuantMode::Affine
    } else {
        match (bits, group_size) {
            (4, 16) => QuantMode::Nvfp4,
            (4, 32) => QuantMode::Mxfp4,
            (8, 32) => QuantMode::Mxfp8,
            _ => {
                return Err(error(format!(
                    "cannot infer the mode of {bits} bits with group size {group_size} and uint8 scales"
                )))
            }
        }
    };
    let params = QuantParams { group_size, bits, mode };
    check_packing(params)
        .map_err(|(key, found)| error(format!("inferred {key} {found} is not a packing mlx implements")))?;
    Ok(Some(params))
}

/// Loads `<prefix>.weight` (and `.scales`/`.biases` when quantized) for an `[out, in]` matrix.
pub fn load_matrix(
    w: &mut Weights,
    prefix: &str,
    out_dims: i32,
    in_dims: i32,
    quant: Option<&Quantization>,
) -> Result<LinearWeight, WeightsError> {
    load_stacked(w, prefix, &[], out_dims, in_dims, quant)
}

/// [`load_matrix`] for `lead` stacked matrices (`[experts, out, in]` for switch layers).
pub fn load_stacked(
    w: &mut Weights,
    prefix: &str,
    lead: &[i32],
    out_dims: i32,
    in_dims: i32,
    quant: Option<&Quantization>,
) -> Result<LinearWeight, WeightsError> {
    let name = format!("{prefix}.weight");
    let shape = |last: &[i32]| [lead, &[out_dims], last].concat();
    let Some(params) = packing(w, prefix, in_dims, quant)? else {
        return Ok(LinearWeight::Dense(w.take(&name, Some(&shape(&[in_dims])))?));
    };
    let dir = w.dir().to_owned();
    let quant_error = |reason: String| WeightsError::Quantized { name: name.clone(), dir: dir.clone(), reason };
    if in_dims % params.group_size != 0 {
        return Err(quant_error(format!("in_dims {in_dims} is not a multiple of group_size {}", params.group_size)));
    }
    let biases_expected = params.mode == QuantMode::Affine;
    let biases_name = format!("{prefix}.biases");
    if biases_expected && !w.contains(&biases_name) {
        return Err(quant_error(format!("affine quantization needs {biases_name}")));
    }
    let weight = w.take(&name, Some(&shape(&[in_dims * params.bits / 32])))?;
    let groups = shape(&[in_dims / params.group_size]);
    let scales = w.take(&format!("{prefix}.scales"), Some(&groups))?;
    let biases = if biases_expected { Some(w.take(&biases_name, Some(&groups))?) } else { None };
    if biases_expected == (scales.dtype() == Dtype::Uint8) {
        return Err(quant_error(format!("{:?} scales do not fit mode {:?}", scales.dtype(), params.mode)));
    }
    Ok(LinearWeight::Quantized(Packed { weight, scales, biases, params }))
}

/// `mx.quantized_matmul(x, w, scales, biases, transpose=True, group_size, bits, mode)`
/// (mlx-rs fixes the mode to affine; mlx-c takes it).
fn quantized_matmul(x: &Array, p: &Packed) -> Result<Array, Exception> {
    let stream = Stream::thread_local_or_default();
    // SAFETY: every pointer is valid for the call (a null array handle stands for "no
    // biases"); `res` is owned by the returned Array on success and freed on failure.
    unsafe {
        let biases = p.biases.as_ref().map_or_else(|| mlx_sys::mlx_array_new(), |b| b.as_ptr());
        let mut res = mlx_sys::mlx_array_new();
        let rc = mlx_sys::mlx_quantized_matmul(
            &mut res,
            x.as_ptr(),
            p.weight.as_ptr(),
            p.scales.as_ptr(),
            biases,
            true,
            some_int(p.params.group_size),
            some_int(p.params.bits),
            p.params.mode.c_name().as_ptr(),
            stream.as_ptr(),
        );
        finish(rc, res, "quantized_matmul")
    }
}

/// `mx.dequantize(w, scales, biases, group_size, bits, mode)` on gathered rows.
fn dequantize(w: &Array, scales: &Array, biases: Option<&Array>, q: QuantParams) -> Result<Array, Exception> {
    let stream = Stream::thread_local_or_default();
    // SAFETY: as in quantized_matmul; null biases, global scale and dtype take mlx's defaults.
    unsafe {
        let none = mlx_sys::mlx_array_new();
        let biases = biases.map_or(none, |b| b.as_ptr());
        let mut res = mlx_sys::mlx_array_new();
        let rc = mlx_sys::mlx_dequantize(
            &mut res,
            w.as_ptr(),
            scales.as_ptr(),
            biases,
            some_int(q.group_size),
            some_int(q.bits),
            q.mode.c_name().as_ptr(),
            none,
            mlx_sys::mlx_optional_dtype { value: mlx_sys::mlx_dtype__MLX_FLOAT32, has_value: false },
            stream.as_ptr(),
        );
        finish(rc, res, "dequantize")
    }
}

impl Linear {
    pub fn load(
        w: &mut Weights,
        prefix: &str,
        out_dims: i32,
        in_dims: i32,
        bias: bool,
        quant: Option<&Quantization>,
    ) -> Result<Self, WeightsError> {
        let weight = load_matrix(w, prefix, out_dims, in_dims, quant)?;
        let bias = if bias { Some(w.take(&format!("{prefix}.bias"), Some(&[out_dims]))?) } else { None };
        Linear::new(weight, bias, None)
            .map_err(|source| WeightsError::Transpose { name: format!("{prefix}.weight"), source })
    }

    /// A layer of these weights; with `all_sum`, a sharded-to-all one whose partial products
    /// are summed across that group. Fails only where the transpose of a dense weight does.
    pub fn new(weight: LinearWeight, bias: Option<Array>, all_sum: Option<Arc<Group>>) -> Result<Self, Exception> {
        let weight_t = dense_transpose(&weight)?;
        Ok(Linear { weight, weight_t, bias, all_sum })
    }

    pub fn forward(&self, x: &Array) -> Result<Array, Exception> {
        if let Some(group) = &self.all_sum {
            // `x = x @ W.T` (or quantized_matmul); `x = all_sum(x)`; `x + bias`: no addmm.
            let y = group.all_sum(&self.product(x)?)?;
            return match &self.bias {
                Some(b) => y.add(b),
                None => Ok(y),
            };
        }
        match (&self.weight_t, &self.weight, &self.bias) {
            (_, _, None) => self.product(x),
            (Some(wt), _, Some(b)) => addmm(b, x, wt, None, None),
            (None, LinearWeight::Dense(w), Some(b)) => addmm(b, x, transpose(w)?, None, None),
            (_, LinearWeight::Quantized(p), Some(b)) => quantized_matmul(x, p)?.add(b),
        }
    }

    /// `x @ W.T`, or `quantized_matmul(x, w, scales, biases, transpose=True)`.
    fn product(&self, x: &Array) -> Result<Array, Exception> {
        match (&self.weight_t, &self.weight) {
            (Some(wt), _) => matmul(x, wt),
            (None, LinearWeight::Dense(w)) => matmul(x, transpose(w)?),
            (None, LinearWeight::Quantized(p)) => quantized_matmul(x, p),
        }
    }

    /// The arrays this layer holds (for evaluating them at load).
    pub fn arrays(&self) -> Vec<&Array> {
        let mut v = weight_arrays(&self.weight);
        v.extend(self.weight_t.iter());
        v.extend(self.bias.iter());
        v
    }

    /// The parameters under mlx's names (`weight`, `scales`, `biases`, `bias`), for the tests
    /// that hold a rank's shard against mlx_lm's.
    #[cfg(test)]
    pub(crate) fn parameters(&self) -> Vec<(&'static str, &Array)> {
        let mut v = match &self.weight {
            LinearWeight::Dense(w) => vec![("weight", w)],
            LinearWeight::Quantized(p) => [("weight", &p.weight), ("scales", &p.scales)]
                .into_iter()
                .chain(p.biases.iter().map(|b| ("biases", b)))
                .collect(),
        };
        v.extend(self.bias.iter().map(|b| ("bias", b)));
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

pub(crate) fn weight_arrays(w: &LinearWeight) -> Vec<&Array> {
    match w {
        LinearWeight::Dense(w) => vec![w],
        LinearWeight::Quantized(p) => [&p.weight, &p.scales].into_iter().chain(p.biases.as_ref()).collect(),
    }
}

/// `nn.Embedding` / `nn.QuantizedEmbedding`, including `as_linear` for tied heads.
pub struct Embedding {
    weight: LinearWeight,
    /// `W.T` of a dense matrix for `as_linear` (see [`Linear`]).
    weight_t: Option<Array>,
}

impl Embedding {
    pub fn load(
        w: &mut Weights,
        prefix: &str,
        vocab: i32,
        dims: i32,
        quant: Option<&Quantization>,
    ) -> Result<Self, WeightsError> {
        let weight = load_matrix(w, prefix, vocab, dims, quant)?;
        let weight_t = dense_transpose(&weight)
            .map_err(|source| WeightsError::Transpose { name: format!("{prefix}.weight"), source })?;
        Ok(Embedding { weight, weight_t })
    }

    /// The rows of `ids` (any integer dtype, any shape): `W[ids]`.
    pub fn forward(&self, ids: &Array) -> Result<Array, Exception> {
        match &self.weight {
            LinearWeight::Dense(w) => take_axis(w, ids, 0),
            LinearWeight::Quantized(p) => {
                let biases = p.biases.as_ref().map(|b| take_axis(b, ids, 0)).transpose()?;
                dequantize(&take_axis(&p.weight, ids, 0)?, &take_axis(&p.scales, ids, 0)?, biases.as_ref(), p.params)
            }
        }
    }

    /// The embedding matrix used as the output head: `x @ W.T`.
    pub fn as_linear(&self, x: &Array) -> Result<Array, Exception> {
        match (&self.weight_t, &self.weight) {
            (Some(wt), _) => matmul(x, wt),
            (None, LinearWeight::Dense(w)) => matmul(x, transpose(w)?),
            (_, LinearWeight::Quantized(p)) => quantized_matmul(x, p),
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

thread_local! {
    /// The constants of [`scalar`] in a dtype other than float32, by value and dtype: each made
    /// and evaluated once per thread.
    static SCALARS: std::cell::RefCell<std::collections::HashMap<(u64, Dtype), Array>> = Default::default();
}

/// A Python scalar meeting an array: rounded to the array's dtype. mlx_lm's step gets a leaf of
/// that dtype (MLX makes the weakly typed scalar in it on the host), so the constant is a leaf
/// here too: made in float32 and cast once, evaluated, and kept (no AsType in the step).
pub fn scalar(v: f64, like: &Array) -> Result<Array, Exception> {
    let dtype = like.dtype();
    if dtype == Dtype::Float32 {
        return Ok(Array::from_f32(v as f32));
    }
    SCALARS.with(|cache| {
        if let Some(constant) = cache.borrow().get(&(v.to_bits(), dtype)) {
            return Ok(constant.clone());
        }
        let constant = Array::from_f32(v as f32).as_dtype(dtype)?;
        constant.eval()?;
        cache.borrow_mut().insert((v.to_bits(), dtype), constant.clone());
        Ok(constant)
    })
}

/// `nn.gelu_approx`: `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x ** 3)))`.
pub fn gelu_approx(x: &Array) -> Result<Array, Exception> {
    let cube = x.power(scalar(3.0, x)?)?;
    let inner = x.add(scalar(0.044715, x)?.multiply(&cube)?)?;
    let t = tanh(scalar((2.0 / std::f64::consts::PI).sqrt(), x)?.multiply(&inner)?)?;
    scalar(0.5, x)?.multiply(x)?.multiply(scalar(1.0, x)?.add(&t)?)
}
