//! mlx_lm's `KVCache`: keys and values preallocated along the sequence axis in steps of 256
//! positions, written in place through slice assignment, read back as the `[..., :offset, :]`
//! prefix. Same growth rule and the same ops, so attention sees the same arrays as mlx_lm.

use mlx_rs::error::Exception;
use mlx_rs::ops::indexing::{Ellipsis, TryIndexMutOp, TryIndexOp};
use mlx_rs::ops::{concatenate, zeros_dtype};
use mlx_rs::Array;

/// Growth step of the preallocated buffers (mlx_lm `KVCache.step`).
pub const STEP: i32 = 256;

/// One layer's key/value cache.
#[derive(Default)]
pub struct KvCache {
    keys: Option<Array>,
    values: Option<Array>,
    offset: i32,
}

impl KvCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of positions stored (the position of the last token fed).
    pub fn offset(&self) -> i32 {
        self.offset
    }

    /// The backing buffers (what a step evaluates to leave no cache work queued).
    pub fn state(&self) -> impl Iterator<Item = &Array> {
        self.keys.iter().chain(self.values.iter())
    }

    /// Appends `keys`/`values` (`[B, kv_heads, n, head_dim]`) and returns the cached prefix.
    pub fn update_and_fetch(&mut self, keys: &Array, values: &Array) -> Result<(Array, Array), Exception> {
        let prev = self.offset;
        let n = keys.dim(2);
        let capacity = self.keys.as_ref().map(|k| k.dim(2));
        if capacity.is_none_or(|c| prev + n > c) {
            let (b, h, kd) = (keys.dim(0), keys.dim(1), keys.dim(3));
            let vd = values.dim(3);
            let n_steps = (STEP + n - 1) / STEP;
            let new_k = zeros_dtype(&[b, h, n_steps * STEP, kd], keys.dtype())?;
            let new_v = zeros_dtype(&[b, h, n_steps * STEP, vd], values.dtype())?;
            match (self.keys.take(), self.values.take()) {
                (Some(mut k), Some(mut v)) => {
                    if prev % STEP != 0 {
                        k = k.try_index((Ellipsis, ..prev, ..))?;
                        v = v.try_index((Ellipsis, ..prev, ..))?;
                    }
                    self.keys = Some(concatenate(&[k, new_k], 2)?);
                    self.values = Some(concatenate(&[v, new_v], 2)?);
                }
                _ => {
                    self.keys = Some(new_k);
                    self.values = Some(new_v);
                }
            }
        }
        self.offset += n;
        let (k, v) = (self.keys.as_mut().expect("allocated above"), self.values.as_mut().expect("allocated above"));
        k.try_index_mut((Ellipsis, prev..self.offset, ..), keys)?;
        v.try_index_mut((Ellipsis, prev..self.offset, ..), values)?;
        if self.offset < k.dim(2) {
            Ok((k.try_index((Ellipsis, ..self.offset, ..))?, v.try_index((Ellipsis, ..self.offset, ..))?))
        } else {
            Ok((k.clone(), v.clone()))
        }
    }
}
