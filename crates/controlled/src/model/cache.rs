//! mlx_lm's `KVCache`: keys and values preallocated along the sequence axis in steps of 256
//! positions, written in place through slice assignment, read back as the `[..., :offset, :]`
//! prefix. Same growth rule and the same ops, so attention sees the same arrays as mlx_lm.
//!
//! The write is one `slice_update` node, called directly: mlx-rs's `index_mut` (like Python's
//! `__setitem__`) wraps the update in two reshapes (leading singletons dropped, then restored),
//! which cost graph-build time every step and cannot change a value, since `slice_update`
//! copies elements.

use mlx_rs::error::Exception;
use mlx_rs::ops::indexing::{Ellipsis, TryIndexOp};
use mlx_rs::ops::{concatenate, zeros_dtype};
use mlx_rs::{Array, Stream};

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
        *k = slice_update_seq(k, keys, prev, self.offset)?;
        *v = slice_update_seq(v, values, prev, self.offset)?;
        if self.offset < k.dim(2) {
            Ok((k.try_index((Ellipsis, ..self.offset, ..))?, v.try_index((Ellipsis, ..self.offset, ..))?))
        } else {
            Ok((k.clone(), v.clone()))
        }
    }
}

/// `buf[..., start..stop, :] = update` for `[B, H, S, D]` buffers: MLX's `slice_update` with
/// the update as given (`[B, H, stop - start, D]`), on the current default stream.
fn slice_update_seq(buf: &Array, update: &Array, start: i32, stop: i32) -> Result<Array, Exception> {
    let shape = buf.shape();
    if shape.len() != 4 || update.shape() != [shape[0], shape[1], stop - start, shape[3]] {
        return Err(Exception::custom(format!(
            "cache update {:?} does not fit buffer {shape:?} at positions {start}..{stop}",
            update.shape()
        )));
    }
    let starts = [0, 0, start, 0];
    let stops = [shape[0], shape[1], stop, shape[3]];
    let strides = [1i32; 4];
    let stream = Stream::thread_local_or_default();
    // SAFETY: every pointer is valid for the call; `res` is owned by the returned Array on
    // success and freed on failure.
    unsafe {
        let mut res = mlx_sys::mlx_array_new();
        let rc = mlx_sys::mlx_slice_update(
            &mut res,
            buf.as_ptr(),
            update.as_ptr(),
            starts.as_ptr(),
            starts.len(),
            stops.as_ptr(),
            stops.len(),
            strides.as_ptr(),
            strides.len(),
            stream.as_ptr(),
        );
        if rc != 0 {
            mlx_sys::mlx_array_free(res);
            return Err(Exception::custom(format!("slice_update of the cache at positions {start}..{stop} failed")));
        }
        Ok(Array::from_ptr(res))
    }
}
