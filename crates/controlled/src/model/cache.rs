//! mlx_lm's caches. `KVCache` ([`KvCache`]): keys and values preallocated along the sequence
//! axis in steps of 256 positions, written in place through slice assignment, read back as the
//! `[..., :offset, :]` prefix. `RotatingKVCache` ([`RotatingKvCache`], sliding-window layers):
//! a multi-token update concatenates in temporal order and trims to `max_size - 1` old
//! positions; a one-token update grows in steps of 256 up to `max_size`, then overwrites the
//! oldest slot. Same rules and the same ops, so attention sees the same arrays as mlx_lm.
//! [`LayerCache::make_mask`] is each cache's `make_mask`.
//!
//! The write is one `slice_update` node, called directly: mlx-rs's `index_mut` (like Python's
//! `__setitem__`) wraps the update in two reshapes (leading singletons dropped, then restored),
//! which cost graph-build time every step and cannot change a value, since `slice_update`
//! copies elements.

use mlx_rs::error::Exception;
use mlx_rs::ops::indexing::{Ellipsis, NewAxis, TryIndexOp};
use mlx_rs::ops::{arange, concatenate, zeros_dtype};
use mlx_rs::{Array, Stream};

use crate::config::CacheKind;

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

/// mlx_lm's `RotatingKVCache(max_size, keep=0)`.
pub struct RotatingKvCache {
    keys: Option<Array>,
    values: Option<Array>,
    offset: i32,
    max_size: i32,
    idx: i32,
}

impl RotatingKvCache {
    pub fn new(max_size: i32) -> Self {
        RotatingKvCache { keys: None, values: None, offset: 0, max_size, idx: 0 }
    }

    /// `_trim(trim_size, v, append)` with `keep = 0`.
    fn trim(trim_size: i32, v: &Array, append: Option<&Array>) -> Result<Array, Exception> {
        let mut parts = if trim_size > 0 {
            vec![v.try_index((Ellipsis, ..0, ..))?, v.try_index((Ellipsis, trim_size.., ..))?]
        } else {
            vec![v.clone()]
        };
        parts.extend(append.cloned());
        concatenate(&parts, 2)
    }

    /// `_temporal_order(v)` with `keep = 0`.
    fn temporal_order(&self, v: &Array) -> Result<Array, Exception> {
        let idx = self.idx;
        if idx == v.dim(2) {
            Ok(v.clone())
        } else if idx < self.offset {
            concatenate(
                &[
                    v.try_index((Ellipsis, ..0, ..))?,
                    v.try_index((Ellipsis, idx.., ..))?,
                    v.try_index((Ellipsis, 0..idx, ..))?,
                ],
                2,
            )
        } else {
            v.try_index((Ellipsis, ..idx, ..))
        }
    }

    fn update_concat(&mut self, keys: &Array, values: &Array) -> Result<(Array, Array), Exception> {
        match (self.keys.take(), self.values.take()) {
            (Some(k), Some(v)) => {
                let k = self.temporal_order(&k)?;
                let v = self.temporal_order(&v)?;
                self.idx = k.dim(2);
                let trim_size = self.idx - self.max_size + 1;
                self.keys = Some(Self::trim(trim_size, &k, Some(keys))?);
                self.values = Some(Self::trim(trim_size, &v, Some(values))?);
            }
            _ => {
                self.keys = Some(keys.clone());
                self.values = Some(values.clone());
            }
        }
        self.offset += keys.dim(2);
        self.idx = self.keys.as_ref().expect("set above").dim(2);
        Ok((self.keys.clone().expect("set above"), self.values.clone().expect("set above")))
    }

    fn update_in_place(&mut self, keys: &Array, values: &Array) -> Result<(Array, Array), Exception> {
        let (b, h, s, kd) = (keys.dim(0), keys.dim(1), keys.dim(2), keys.dim(3));
        let prev = self.offset;
        let grow = match &self.keys {
            None => true,
            Some(k) => prev >= k.dim(2) && k.dim(2) < self.max_size,
        };
        if grow {
            let new_size = STEP.min(self.max_size - prev);
            let new_k = zeros_dtype(&[b, h, new_size, kd], keys.dtype())?;
            let new_v = zeros_dtype(&[b, h, new_size, values.dim(3)], values.dtype())?;
            match (self.keys.take(), self.values.take()) {
                (Some(k), Some(v)) => {
                    self.keys = Some(concatenate(&[k, new_k], 2)?);
                    self.values = Some(concatenate(&[v, new_v], 2)?);
                }
                _ => {
                    self.keys = Some(new_k);
                    self.values = Some(new_v);
                }
            }
            self.idx = prev;
        }
        let (k, v) = (self.keys.as_mut().expect("allocated above"), self.values.as_mut().expect("allocated above"));
        let trim_size = k.dim(2) - self.max_size;
        if trim_size > 0 {
            *k = Self::trim(trim_size, k, None)?;
            *v = Self::trim(trim_size, v, None)?;
            self.idx = self.max_size;
        }
        if self.idx == self.max_size {
            self.idx = 0;
        }
        *k = slice_update_seq(k, keys, self.idx, self.idx + s)?;
        *v = slice_update_seq(v, values, self.idx, self.idx + s)?;
        self.offset += s;
        self.idx += s;
        if self.offset < k.dim(2) {
            Ok((k.try_index((Ellipsis, ..self.offset, ..))?, v.try_index((Ellipsis, ..self.offset, ..))?))
        } else {
            Ok((k.clone(), v.clone()))
        }
    }

    /// `update_and_fetch`: one token in place, several by concatenation.
    pub fn update_and_fetch(&mut self, keys: &Array, values: &Array) -> Result<(Array, Array), Exception> {
        if keys.dim(2) == 1 {
            self.update_in_place(keys, values)
        } else {
            self.update_concat(keys, values)
        }
    }
}

/// An attention mask as mlx_lm passes it to SDPA.
pub enum Mask {
    None,
    Causal,
    Array(Array),
}

/// One layer's cache, of the kind the architecture's `make_cache` gives it.
pub enum LayerCache {
    Standard(KvCache),
    Rotating(RotatingKvCache),
}

impl LayerCache {
    pub fn new(kind: CacheKind) -> Self {
        match kind {
            CacheKind::Standard => LayerCache::Standard(KvCache::new()),
            CacheKind::Rotating { max_size } => LayerCache::Rotating(RotatingKvCache::new(max_size)),
        }
    }

    /// Positions fed so far.
    pub fn offset(&self) -> i32 {
        match self {
            LayerCache::Standard(c) => c.offset,
            LayerCache::Rotating(c) => c.offset,
        }
    }

    pub fn state(&self) -> impl Iterator<Item = &Array> {
        let (k, v) = match self {
            LayerCache::Standard(c) => (&c.keys, &c.values),
            LayerCache::Rotating(c) => (&c.keys, &c.values),
        };
        k.iter().chain(v.iter())
    }

    pub fn update_and_fetch(&mut self, keys: &Array, values: &Array) -> Result<(Array, Array), Exception> {
        match self {
            LayerCache::Standard(c) => c.update_and_fetch(keys, values),
            LayerCache::Rotating(c) => c.update_and_fetch(keys, values),
        }
    }

    /// Replaces the backing buffers with `keys` and `values` (arrays of the same shapes, e.g.
    /// the inputs of a compiled step's trace or its outputs, `crate::compiled`), leaving the
    /// offset and write index as they are. Refused for a cache that holds no buffers yet.
    pub fn set_buffers(&mut self, keys: Array, values: Array) -> Result<(), Exception> {
        let (k, v) = match self {
            LayerCache::Standard(c) => (&mut c.keys, &mut c.values),
            LayerCache::Rotating(c) => (&mut c.keys, &mut c.values),
        };
        match (k.as_ref(), v.as_ref()) {
            (Some(old_k), Some(old_v)) if old_k.shape() == keys.shape() && old_v.shape() == values.shape() => {
                (*k, *v) = (Some(keys), Some(values));
                Ok(())
            }
            (Some(old_k), Some(_)) => Err(Exception::custom(format!(
                "cache buffers of shape {:?} cannot be replaced by {:?}",
                old_k.shape(),
                keys.shape()
            ))),
            _ => Err(Exception::custom("a cache without buffers cannot have them replaced")),
        }
    }

    /// `cache.make_mask(n, window_size=window)` before this forward's update.
    pub fn make_mask(&self, n: i32, window: Option<i32>) -> Result<Mask, Exception> {
        match self {
            // cache.py's create_attention_mask(N, offset, return_array=False, window_size).
            LayerCache::Standard(c) => match window {
                Some(w) => Ok(Mask::Array(causal_mask(n, c.offset, Some(w))?)),
                None if n == 1 => Ok(Mask::None),
                None => Ok(Mask::Causal),
            },
            LayerCache::Rotating(c) if n > 1 => {
                let w = window.unwrap_or(c.max_size);
                let offset = (c.max_size - 1).min(c.offset);
                if offset + n > w {
                    Ok(Mask::Array(causal_mask(n, offset, Some(w))?))
                } else {
                    Ok(Mask::Causal)
                }
            }
            LayerCache::Rotating(c) => match window {
                Some(w) if c.offset >= w && c.max_size > w => Err(Exception::custom(format!(
                    "a window of {w} inside a rotating cache of {} is not implemented",
                    c.max_size
                ))),
                _ => Ok(Mask::None),
            },
        }
    }
}

/// base.py's `create_causal_mask(N, offset, window_size)`: `linds >= rinds`, and
/// `linds < rinds + window` with a window.
pub fn causal_mask(n: i32, offset: i32, window: Option<i32>) -> Result<Array, Exception> {
    let rinds = arange::<_, i32>(0, offset + n, 1)?;
    let linds = if offset != 0 { arange::<_, i32>(offset, offset + n, 1)? } else { rinds.clone() };
    let linds = linds.try_index((.., NewAxis))?;
    let rinds = rinds.try_index(NewAxis)?;
    let mask = linds.ge(&rinds)?;
    match window {
        Some(w) => mask.logical_and(&linds.lt(rinds.add(Array::from_int(w))?)?),
        None => Ok(mask),
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
