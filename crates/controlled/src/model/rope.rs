//! Rotary position embedding as mlx_lm's `initialize_rope` builds it: `nn.RoPE` (base and
//! scale) for "default"/"linear", and `Llama3RoPE` (precomputed frequencies, computed here with
//! the same MLX ops in the same order so they round the same way).

use mlx_rs::error::Exception;
use mlx_rs::ops::{arange, logical_and, select};
use mlx_rs::Array;

use crate::config::{Rope as RopeConfig, RopeScaling};

/// A configured rotary embedding over the first `dims` features.
pub struct Rope {
    dims: i32,
    traditional: bool,
    base: Option<f32>,
    scale: f32,
    freqs: Option<Array>,
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
            },
            RopeScaling::Llama3 {
                factor,
                low_freq_factor,
                high_freq_factor,
                original_max_position_embeddings: old,
            } => Rope {
                dims,
                traditional: config.traditional,
                base: None,
                scale: 1.0,
                freqs: Some(llama3_freqs(dims, config.base, factor, low_freq_factor, high_freq_factor, old)?),
            },
        })
    }

    /// `mx.fast.rope(x, dims, traditional, base, scale, offset, freqs)`.
    pub fn forward(&self, x: &Array, offset: i32) -> Result<Array, Exception> {
        mlx_rs::fast::rope(x, self.dims, self.traditional, self.base, self.scale, offset, self.freqs.as_ref())
    }

    pub fn arrays(&self) -> impl Iterator<Item = &Array> {
        self.freqs.iter()
    }
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
