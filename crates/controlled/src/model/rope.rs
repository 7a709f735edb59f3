//! Rotary position embedding as mlx_lm's `initialize_rope` builds it: `nn.RoPE` (base and
//! scale) for "default"/"linear", and `Llama3RoPE` (precomputed frequencies, computed here with
//! the same MLX ops in the same order so they round the same way).
//!
//! On the CPU, `mx.fast.rope` has no kernel: it builds a fallback graph (~20 nodes) on every
//! call, recomputing the inverse frequencies, positions, angles and their cos/sin for each layer
//! and for queries and keys alike. [`Rope::angles`] builds that shared part once per forward and
//! [`Rope::apply`] the per-array rotation, node for node as MLX 0.32's fallback does (inverse
//! frequencies `exp(arange(0, -dims/2, -1) * (logf(base) / (dims/2)))` or `1 / freqs` in float32,
//! positions `(arange(L) + offset) * scale` in float32, cos/sin cast to the input dtype,
//! `x1 * cos - x2 * sin`, `x1 * sin + x2 * cos`, the rest of the features appended), so the
//! values are the same bits; checked against `mx.fast.rope` on the CPU for float32, bfloat16
//! and float16, offsets up to 100000, scales 1 / 0.25 / 0.125, with and without `freqs`.
//! Traditional (interleaved) RoPE keeps `mx.fast.rope`.

use mlx_rs::error::Exception;
use mlx_rs::ops::indexing::{Ellipsis, TryIndexOp};
use mlx_rs::ops::{arange, concatenate, expand_dims, logical_and, select};
use mlx_rs::{Array, Dtype};

use crate::config::{Rope as RopeConfig, RopeScaling};

/// A configured rotary embedding over the first `dims` features.
pub struct Rope {
    dims: i32,
    traditional: bool,
    base: Option<f32>,
    scale: f32,
    freqs: Option<Array>,
    /// The fallback's inverse frequencies (float32, `[dims / 2]`), built at load.
    inv_freqs: Array,
}

/// The cos/sin of one forward's rotation angles (`[L, dims / 2]`, the input dtype), shared by
/// every layer's queries and keys.
pub struct Angles {
    cos: Array,
    sin: Array,
}

impl Rope {
    pub fn new(dims: i32, config: &RopeConfig) -> Result<Self, Exception> {
        Ok(match config.scaling {
            RopeScaling::Plain { scale } => Rope {
                dims,
                traditional: config.traditional,
                base: Some(config.base),
                scale,
                freqs: None,
                inv_freqs: default_inv_freqs(dims, config.base)?,
            },
            RopeScaling::Llama3 {
                factor,
                low_freq_factor,
                high_freq_factor,
                original_max_position_embeddings: old,
            } => {
                let freqs = llama3_freqs(dims, config.base, factor, low_freq_factor, high_freq_factor, old)?;
                Rope {
                    dims,
                    traditional: config.traditional,
                    base: None,
                    scale: 1.0,
                    inv_freqs: freqs.reciprocal()?,
                    freqs: Some(freqs),
                }
            }
        })
    }

    /// The angles' cos/sin for `len` positions from `offset`, in `dtype` (the fallback's
    /// `positions`, `theta`, `cos`, `sin`).
    pub fn angles(&self, len: i32, offset: i32, dtype: Dtype) -> Result<Angles, Exception> {
        let positions = arange::<_, f32>(None, len, None)?.add(Array::from_int(offset))?.multiply(Array::from_f32(self.scale))?;
        let theta = expand_dims(&positions, -1)?.multiply(expand_dims(&self.inv_freqs, 0)?)?;
        Ok(Angles {
            cos: theta.cos()?.as_dtype(dtype)?,
            sin: theta.sin()?.as_dtype(dtype)?,
        })
    }

    /// `mx.fast.rope(x, ...)` at the offset `angles` were built for; `x` is `[B, H, L, D]`.
    pub fn apply(&self, x: &Array, angles: &Angles, offset: i32) -> Result<Array, Exception> {
        if self.traditional {
            return self.forward(x, offset);
        }
        let half = self.dims / 2;
        let x1 = x.try_index((Ellipsis, ..half))?;
        let x2 = x.try_index((Ellipsis, half..self.dims))?;
        let o1 = x1.multiply(&angles.cos)?.subtract(x2.multiply(&angles.sin)?)?;
        let o2 = x1.multiply(&angles.sin)?.add(x2.multiply(&angles.cos)?)?;
        if self.dims < x.dim(-1) {
            concatenate(&[o1, o2, x.try_index((Ellipsis, self.dims..))?], 3)
        } else {
            concatenate(&[o1, o2], 3)
        }
    }

    /// `mx.fast.rope(x, dims, traditional, base, scale, offset, freqs)`.
    pub fn forward(&self, x: &Array, offset: i32) -> Result<Array, Exception> {
        mlx_rs::fast::rope(x, self.dims, self.traditional, self.base, self.scale, offset, self.freqs.as_ref())
    }

    pub fn arrays(&self) -> impl Iterator<Item = &Array> {
        self.freqs.iter().chain(std::iter::once(&self.inv_freqs))
    }
}

/// The fallback's default inverse frequencies, `exp(arange(0, -half, -1) * (logf(base) / half))`
/// in float32 (the constant computed in single precision, as MLX's C++ does).
fn default_inv_freqs(dims: i32, base: f32) -> Result<Array, Exception> {
    let half = dims / 2;
    arange::<_, f32>(0, -half, -1)?.multiply(Array::from_f32(base.ln() / half as f32))?.exp()
}

/// mlx_lm `Llama3RoPE.__init__`, op for op. Python scalars meet float32 arrays as float32
/// scalars, so every constant is rounded to f32 exactly where Python would round it.
fn llama3_freqs(dims: i32, base: f32, factor: f64, low: f64, high: f64, old: f64) -> Result<Array, Exception> {
    let f = |v: f64| Array::from_f32(v as f32);
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
    let out = select(&is_medium, &smooth_freqs, &freqs)?;
    out.eval()?;
    Ok(out)
}
