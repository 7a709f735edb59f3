//! Half-precision types and accessors where mlx-c's `half.h` declares none.
//!
//! On aarch64 bindgen produces `float16_t` (a wrapper around the 16 bits of an `__fp16`) and
//! `bfloat16_t` (a `u16`) from the ARM headers. Elsewhere this module declares the same names
//! with the same layouts, backed by `native/half_accessors.cpp`, so mlx-rs builds unchanged.

use crate::mlx_array;

/// The bits of an IEEE half, as bindgen represents `__fp16`.
#[repr(transparent)]
#[derive(Debug, Default, Copy, Clone, PartialEq, Eq, Hash)]
pub struct __BindgenFloat16(pub u16);

pub type float16_t = __BindgenFloat16;
pub type bfloat16_t = u16;

extern "C" {
    pub fn mlx_array_item_float16(res: *mut float16_t, arr: mlx_array) -> ::std::os::raw::c_int;
    pub fn mlx_array_item_bfloat16(res: *mut bfloat16_t, arr: mlx_array) -> ::std::os::raw::c_int;
    pub fn mlx_array_data_float16(arr: mlx_array) -> *const float16_t;
    pub fn mlx_array_data_bfloat16(arr: mlx_array) -> *const bfloat16_t;
}
