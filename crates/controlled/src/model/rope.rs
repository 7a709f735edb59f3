//! Rotary position embedding as mlx_lm's `initialize_rope` (and phi3) builds it: `nn.RoPE`
//! (base and scale) for "default"/"linear", and `Llama3RoPE`, `SuScaledRoPE` and `YarnRoPE`
//! with their precomputed frequencies, computed here with the same MLX ops in the same order so
//! they round the same way. Python scalars meet float32 arrays as float32 scalars, so every
//! constant is rounded to f32 exactly where Python would round it.

use mlx_rs::error::Exception;
use mlx_rs::ops::{arange, clip, logical_and, select};
use mlx_rs::{Array, Dtype, Stream};

use crate::config::{Rope as RopeConfig, RopeScaling};
use crate::ffi::finish;

/// A configured rotary embedding over the first `dims` features.
pub struct Rope {
    dims: i32,
    traditional: bool,
    base: Option<f32>,
    scale: f32,
    freqs: Option<Array>,
    /// SuScaled/Yarn: the rotated features are multiplied by this first (`x.at[..., :dims]`).
    input_scale: Option<InputScale>,
}

/// The input scale as mlx_lm's Python float meets `x`: Python makes it an array born in `x`'s
/// dtype (a leaf of the graph), so it is made here once per floating dtype at load and
/// evaluated (a leaf too), not cast in every step (an `AsType` node mlx_lm's step lacks).
struct InputScale {
    value: f32,
    by_dtype: Vec<(Dtype, Array)>,
}

impl InputScale {
    fn new(value: f32) -> Result<Self, Exception> {
        let by_dtype = [Dtype::Float32, Dtype::Bfloat16, Dtype::Float16]
            .into_iter()
            .map(|dtype| {
                let s = Array::from_f32(value).as_dtype(dtype)?;
                s.eval()?;
                Ok((dtype, s))
            })
            .collect::<Result<_, Exception>>()?;
        Ok(InputScale { value, by_dtype })
    }

    /// The scale in `dtype`; a dtype not made at load (no model's activations) is cast here.
    fn like(&self, dtype: Dtype) -> Result<Array, Exception> {
        match self.by_dtype.iter().find(|(d, _)| *d == dtype) {
            Some((_, s)) => Ok(s.clone()),
            None => Array::from_f32(self.value).as_dtype(dtype),
        }
    }
}

fn f(v: f64) -> Array {
    Array::from_f32(v as f32)
}

/// `base ** (mx.arange(0, dims, 2, dtype=mx.float32) / dims)`.
fn base_freqs(dims: i32, base: f32) -> Result<Array, Exception> {
    let exponents = arange::<_, f32>(0.0, dims as f32, 2.0)?.divide(f(dims as f64))?;
    Array::from_f32(base).power(&exponents)
}

impl Rope {
    pub fn new(config: &RopeConfig) -> Result<Self, Exception> {
        let (dims, base) = (config.dims, config.base);
        let precomputed = |freqs: Array, input_scale: Option<f32>| -> Result<Rope, Exception> {
            freqs.eval()?;
            let input_scale = input_scale.map(InputScale::new).transpose()?;
            Ok(Rope { dims, traditional: config.traditional, base: None, scale: 1.0, freqs: Some(freqs), input_scale })
        };
        match &config.scaling {
            RopeScaling::Plain { scale } => Ok(Rope {
                dims,
                traditional: config.traditional,
                base: Some(base),
                scale: *scale,
                freqs: None,
                input_scale: None,
            }),
            &RopeScaling::Llama3 {
                factor,
                low_freq_factor,
                high_freq_factor,
                original_max_position_embeddings: old,
            } => precomputed(llama3_freqs(dims, base, factor, low_freq_factor, high_freq_factor, old)?, None),
            RopeScaling::SuScaled { long_factor, scalar, scale } => {
                let factors: Vec<f32> = long_factor.iter().map(|&v| v as f32).collect();
                let factors = if *scalar {
                    Array::from_f32(factors[0])
                } else {
                    Array::from_slice(&factors, &[factors.len() as i32])
                };
                precomputed(factors.multiply(base_freqs(dims, base)?)?, Some(*scale as f32))
            }
            &RopeScaling::Yarn {
                factor,
                original_max_position_embeddings,
                beta_fast,
                beta_slow,
                mscale,
                mscale_all_dim,
            } => {
                let (freqs, mscale) = yarn(
                    dims,
                    base as f64,
                    factor,
                    original_max_position_embeddings,
                    beta_fast,
                    beta_slow,
                    mscale,
                    mscale_all_dim,
                )?;
                precomputed(freqs, (mscale != 1.0).then_some(mscale as f32))
            }
        }
    }

    /// `mx.fast.rope(x, dims, traditional, base, scale, offset, freqs)`, after the input scale.
    pub fn forward(&self, x: &Array, offset: i32) -> Result<Array, Exception> {
        let scaled;
        let x = match &self.input_scale {
            Some(s) => {
                scaled = multiply_leading(x, self.dims, &s.like(x.dtype())?)?;
                &scaled
            }
            None => x,
        };
        mlx_rs::fast::rope(x, self.dims, self.traditional, self.base, self.scale, offset, self.freqs.as_ref())
    }

    pub fn arrays(&self) -> impl Iterator<Item = &Array> {
        self.freqs.iter()
    }
}

/// `x.at[..., :dims].multiply(s)` as mlx's Python binding builds it: one `slice_update_prod`
/// of `x` by the scalar `s` (already in `x`'s dtype) over the first `dims` features of the last
/// axis, which mlx broadcasts to the slice (a `Broadcast` and a `SliceUpdate Prod` node, the
/// same products as a multiply of the slice).
fn multiply_leading(x: &Array, dims: i32, s: &Array) -> Result<Array, Exception> {
    let start = vec![0; x.ndim()];
    let mut stop = x.shape().to_vec();
    let last = stop.len() - 1;
    stop[last] = dims.min(stop[last]);
    let strides = vec![1; x.ndim()];
    let stream = Stream::thread_local_or_default();
    // SAFETY: every pointer is valid for the call and the three index vectors have x's rank;
    // `res` is owned by the returned Array on success and freed on failure (`finish`).
    unsafe {
        let mut res = mlx_sys::mlx_array_new();
        let rc = mlx_sys::mlx_slice_update_prod(
            &mut res,
            x.as_ptr(),
            s.as_ptr(),
            start.as_ptr(),
            start.len(),
            stop.as_ptr(),
            stop.len(),
            strides.as_ptr(),
            strides.len(),
            stream.as_ptr(),
        );
        finish(rc, res, "slice_update_prod")
    }
}

/// mlx_lm `Llama3RoPE.__init__`, op for op.
fn llama3_freqs(dims: i32, base: f32, factor: f64, low: f64, high: f64, old: f64) -> Result<Array, Exception> {
    let low_freq_wavelen = old / low;
    let high_freq_wavelen = old / high;
    // base ** (mx.arange(0, dims, 2) / dims)
    let exponents = arange::<_, i32>(0, dims, 2)?.divide(Array::from_int(dims))?;
    let freqs = Array::from_f32(base).power(&exponents)?;
    let wavelens = f(2.0 * std::f64::consts::PI).multiply(&freqs)?;
    let freqs = select(wavelens.gt(f(low_freq_wavelen))?, freqs.multiply(f(factor))?, &freqs)?;
    let is_medium = logical_and(wavelens.gt(f(high_freq_wavelen))?, wavelens.lt(f(low_freq_wavelen))?)?;
    let smooth = f(old).divide(&wavelens)?.subtract(f(low))?.divide(f(high - low))?;
    let denom = f(1.0).subtract(&smooth)?.divide(f(factor))?.add(&smooth)?;
    let smooth_freqs = freqs.divide(&denom)?;
    select(&is_medium, &smooth_freqs, &freqs)
}

/// mlx_lm `YarnRoPE.__init__`, op for op: the frequencies and the input scale (`mscale`).
#[allow(clippy::too_many_arguments)]
fn yarn(
    dims: i32,
    base: f64,
    factor: f64,
    original: f64,
    beta_fast: f64,
    beta_slow: f64,
    mscale: f64,
    mscale_all_dim: f64,
) -> Result<(Array, f64), Exception> {
    use std::f64::consts::PI;
    let correction_dim = |rotations: f64| (dims as f64 * (original / (rotations * 2.0 * PI)).ln()) / (2.0 * base.ln());
    let low = correction_dim(beta_fast).floor().max(0.0);
    let high = correction_dim(beta_slow).ceil().min((dims - 1) as f64);
    let get_mscale = |scale: f64, m: f64| {
        if scale <= 1.0 {
            1.0
        } else {
            0.1 * m * scale.ln() + 1.0
        }
    };
    let input_scale = get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim);
    let freq_extra = base_freqs(dims, base as f32)?;
    let freq_inter = f(factor).multiply(&freq_extra)?;
    let (min_val, max_val) = if low == high { (low, high + 0.001) } else { (low, high) };
    let ramp = arange::<_, f32>(0.0, (dims / 2) as f32, 1.0)?.subtract(f(min_val))?.divide(f(max_val - min_val))?;
    let ramp = clip(&ramp, (f(0.0), f(1.0)))?;
    let freq_mask = f(1.0).subtract(&ramp)?;
    let num = freq_inter.multiply(&freq_extra)?;
    let den = freq_inter.multiply(&freq_mask)?.add(freq_extra.multiply(f(1.0).subtract(&freq_mask)?)?)?;
    let freqs = num.divide(&den)?;
    debug_assert_eq!(freqs.dtype(), Dtype::Float32);
    Ok((freqs, input_scale))
}
