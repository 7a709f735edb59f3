//! The two helpers every direct call into mlx-c needs (the ops mlx-rs does not wrap: quantized
//! matmuls, RoPE, the distributed `all_sum`): an optional int argument, and a result array taken
//! over or freed by the call's return code.

use mlx_rs::error::Exception;
use mlx_rs::Array;

/// A set optional int of the C API (a packing's group size or bits).
pub(crate) fn some_int(value: i32) -> mlx_sys::mlx_optional_int {
    mlx_sys::mlx_optional_int { value, has_value: true }
}

/// # Safety
/// `res` must be a fresh array the op filled on success.
pub(crate) unsafe fn finish(rc: i32, res: mlx_sys::mlx_array, op: &str) -> Result<Array, Exception> {
    if rc != 0 {
        mlx_sys::mlx_array_free(res);
        return Err(Exception::custom(format!("{op} failed")));
    }
    Ok(Array::from_ptr(res))
}
