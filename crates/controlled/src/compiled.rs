//! The controlled loop's decode step under MLX's `compile` (mlx-c `mlx_compile` on an
//! `mlx_closure`), one trace per position, kept across requests.
//!
//! The step is the model's single-token forward: the token and every cache buffer go in, the
//! logits and every cache buffer after the write come out; the weights are captured constants.
//! The KV cache writes at its offset, an integer and not an array (as in mlx_lm), so a trace is
//! valid only at the offset it was traced at: the traces are keyed by (prompt length, offset).
//! The prompt length is in the key because a rotating cache's write index after the prompt
//! depends on it; for the standard cache the key is finer than it needs to be, at no cost, since
//! one worker runs one prompt. A worker's first request traces every position it reaches (the
//! cold request the session reports apart); later requests replay.
//!
//! Between traces the buffers live in the caller's state vector, not in the [`LayerCache`]s:
//! the caches' fields are private to the model and only `update_and_fetch` advances their
//! offset. So the caches lag on replayed steps, and before a trace they are brought to the
//! trace's offset by one throw-away `update_and_fetch` per missing position (lazy nodes, never
//! evaluated; only when the previous positions were replayed); inside the trace every cache is
//! handed the traced inputs as its buffers ([`LayerCache::set_buffers`], which refuses another
//! shape), so the traced graph reads the inputs and nothing stale. [`CompiledSteps::sync`] does
//! the same after a step for the per-step contract checks, which read the caches.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use mlx_rs::error::Exception;
use mlx_rs::ops::indexing::{Ellipsis, TryIndexOp};
use mlx_rs::Array;

use crate::model::{LayerCache, Model};

/// What one trace needs, lent for the duration of one `mlx_closure_apply`.
struct TraceCall<'a> {
    model: &'a Model,
    cache: &'a mut [LayerCache],
    offset: i32,
    error: Option<Exception>,
    traced: bool,
}

/// Where the trampoline finds the call in progress (null between calls).
struct Slot {
    call: Cell<*mut c_void>,
}

/// The compiled steps of one worker run, keyed by (prompt length, cache offset before the step).
pub struct CompiledSteps {
    steps: HashMap<(u32, i32), mlx_sys::mlx_closure>,
    traces: u64,
    // Boxed: the closures hold its address. Freed after them (see `Drop`).
    slot: Box<Slot>,
}

// The closures and the slot are only used from the thread that owns this value; the payload
// pointer is set and cleared around each synchronous apply.
unsafe impl Send for CompiledSteps {}

impl Default for CompiledSteps {
    fn default() -> Self {
        Self::new()
    }
}

impl CompiledSteps {
    pub fn new() -> Self {
        CompiledSteps {
            steps: HashMap::new(),
            traces: 0,
            slot: Box::new(Slot { call: Cell::new(std::ptr::null_mut()) }),
        }
    }

    /// Compiled steps held (one per position reached so far).
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Times the step function was traced (MLX called it), all positions together.
    pub fn traces(&self) -> u64 {
        self.traces
    }

    /// One decode step: `ids` (`[1, 1]`) fed at cache offset `offset` of a request whose prompt
    /// has `prompt_len` tokens, `state` the cache buffers in [`LayerCache::state`] order. Returns
    /// the logits (`[1, 1, vocab]`, unevaluated) and the buffers after the write. `cache` is
    /// the request's cache, read (and advanced) only when this position is traced.
    pub fn step(
        &mut self,
        model: &Model,
        cache: &mut [LayerCache],
        prompt_len: u32,
        offset: i32,
        ids: &Array,
        state: &[Array],
    ) -> Result<(Array, Vec<Array>), Exception> {
        let key = (prompt_len, offset);
        let closure = match self.steps.get(&key) {
            Some(&c) => c,
            None => {
                advance(cache, offset)?;
                let c = self.compile()?;
                self.steps.insert(key, c);
                c
            }
        };
        let mut call = TraceCall { model, cache, offset, error: None, traced: false };
        self.slot.call.set(&mut call as *mut TraceCall<'_> as *mut c_void);
        let inputs: Vec<&Array> = std::iter::once(ids).chain(state).collect();
        let result = apply(closure, &inputs);
        self.slot.call.set(std::ptr::null_mut());
        if call.traced {
            self.traces += 1;
        }
        let mut outputs = match (result, call.error.take()) {
            (Ok(outputs), _) => outputs,
            (Err(_), Some(e)) => return Err(e),
            (Err(e), None) => return Err(e),
        };
        if outputs.len() != state.len() + 1 {
            return Err(Exception::custom(format!(
                "the compiled step at offset {offset} returned {} arrays for {} state buffers",
                outputs.len(),
                state.len()
            )));
        }
        let state = outputs.split_off(1);
        let logits = outputs.pop().expect("one output left");
        Ok((logits, state))
    }

    /// Brings `cache` to `offset` and points its buffers at `state` (after a step, for the
    /// contract checks, which read the caches).
    pub fn sync(cache: &mut [LayerCache], offset: i32, state: &[Array]) -> Result<(), Exception> {
        advance(cache, offset)?;
        point(cache, state)
    }

    fn compile(&self) -> Result<mlx_sys::mlx_closure, Exception> {
        let payload = &*self.slot as *const Slot as *mut c_void;
        // SAFETY: the payload outlives every closure (they are freed first, in `Drop`); no
        // destructor is given, the box owns it.
        unsafe {
            let raw = mlx_sys::mlx_closure_new_func_payload(Some(trampoline), payload, None);
            let mut compiled = mlx_sys::mlx_closure_new();
            let rc = mlx_sys::mlx_compile(&mut compiled, raw, false);
            mlx_sys::mlx_closure_free(raw);
            if rc != 0 {
                mlx_sys::mlx_closure_free(compiled);
                return Err(Exception::custom("mlx_compile of the decode step failed"));
            }
            Ok(compiled)
        }
    }
}

impl Drop for CompiledSteps {
    fn drop(&mut self) {
        for (_, c) in self.steps.drain() {
            // SAFETY: each closure was created by `compile` and is freed once.
            unsafe {
                mlx_sys::mlx_closure_free(c);
            }
        }
    }
}

/// Advances every layer's cache to `offset` with throw-away one-token writes (lazy, never
/// evaluated: only the offsets, write indices and buffer shapes matter).
fn advance(cache: &mut [LayerCache], offset: i32) -> Result<(), Exception> {
    for lc in cache.iter_mut() {
        if lc.offset() > offset {
            return Err(Exception::custom(format!("a cache at offset {} cannot go back to {offset}", lc.offset())));
        }
        while lc.offset() < offset {
            let (k, v) = {
                let mut s = lc.state();
                match (s.next(), s.next()) {
                    (Some(k), Some(v)) => (k.try_index((Ellipsis, ..1, ..))?, v.try_index((Ellipsis, ..1, ..))?),
                    _ => return Err(Exception::custom("a compiled step needs the prompt's cache")),
                }
            };
            lc.update_and_fetch(&k, &v)?;
        }
    }
    Ok(())
}

/// Hands every layer's cache its two buffers from `state` (in [`LayerCache::state`] order).
fn point(cache: &mut [LayerCache], state: &[Array]) -> Result<(), Exception> {
    if state.len() != 2 * cache.len() {
        return Err(Exception::custom(format!("{} caches for {} state arrays", cache.len(), state.len())));
    }
    for (lc, kv) in cache.iter_mut().zip(state.chunks(2)) {
        lc.set_buffers(kv[0].clone(), kv[1].clone())?;
    }
    Ok(())
}

fn apply(closure: mlx_sys::mlx_closure, inputs: &[&Array]) -> Result<Vec<Array>, Exception> {
    let ptrs: Vec<mlx_sys::mlx_array> = inputs.iter().map(|a| a.as_ptr()).collect();
    // SAFETY: the vectors are created and freed here; the outputs are copied out before.
    unsafe {
        let input = mlx_sys::mlx_vector_array_new_data(ptrs.as_ptr(), ptrs.len());
        let mut out = mlx_sys::mlx_vector_array_new();
        let rc = mlx_sys::mlx_closure_apply(&mut out, closure, input);
        mlx_sys::mlx_vector_array_free(input);
        let result = if rc == 0 { values(out) } else { Err(Exception::custom("the compiled decode step failed")) };
        mlx_sys::mlx_vector_array_free(out);
        result
    }
}

/// The arrays of an mlx-c vector (copies of the handles).
unsafe fn values(v: mlx_sys::mlx_vector_array) -> Result<Vec<Array>, Exception> {
    let n = mlx_sys::mlx_vector_array_size(v);
    (0..n)
        .map(|i| {
            let mut a = mlx_sys::mlx_array_new();
            if mlx_sys::mlx_vector_array_get(&mut a, v, i) != 0 {
                mlx_sys::mlx_array_free(a);
                return Err(Exception::custom("mlx_vector_array_get failed"));
            }
            Ok(Array::from_ptr(a))
        })
        .collect()
}

/// The step function MLX traces: `[ids, state...]` → `[logits, state after the write...]`.
unsafe extern "C" fn trampoline(
    res: *mut mlx_sys::mlx_vector_array,
    input: mlx_sys::mlx_vector_array,
    payload: *mut c_void,
) -> c_int {
    let slot = &*(payload as *const Slot);
    let call = slot.call.get() as *mut TraceCall<'_>;
    if call.is_null() {
        return 1;
    }
    let call = &mut *call;
    match catch_unwind(AssertUnwindSafe(|| trace(call, input))) {
        Ok(Ok(outputs)) => {
            let ptrs: Vec<mlx_sys::mlx_array> = outputs.iter().map(Array::as_ptr).collect();
            if mlx_sys::mlx_vector_array_set_data(res, ptrs.as_ptr(), ptrs.len()) != 0 {
                call.error = Some(Exception::custom("mlx_vector_array_set_data failed"));
                return 1;
            }
            call.traced = true;
            0
        }
        Ok(Err(e)) => {
            call.error = Some(e);
            1
        }
        Err(_) => {
            call.error = Some(Exception::custom("panic while tracing the decode step"));
            1
        }
    }
}

fn trace(call: &mut TraceCall<'_>, input: mlx_sys::mlx_vector_array) -> Result<Vec<Array>, Exception> {
    // SAFETY: `input` is the vector MLX passes to the closure, alive for this call.
    let inputs = unsafe { values(input)? };
    let (ids, state) = inputs.split_first().ok_or_else(|| Exception::custom("the step got no inputs"))?;
    // A retrace (MLX traces again when input shapes change) at a lagging cache would bake in
    // the wrong offset: refuse it.
    if let Some(c) = call.cache.iter().find(|c| c.offset() != call.offset) {
        return Err(Exception::custom(format!(
            "traced at offset {} with a cache at offset {}",
            call.offset,
            c.offset()
        )));
    }
    point(call.cache, state)?;
    let logits = call.model.forward(ids, call.cache)?;
    Ok(std::iter::once(logits).chain(call.cache.iter().flat_map(LayerCache::state).cloned()).collect())
}
