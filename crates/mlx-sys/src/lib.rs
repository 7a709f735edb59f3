//! Raw mlx-c bindings, compiled against the MLX of the pinned Python environment.
//!
//! A drop-in for the upstream `mlx-sys 0.7.0` (patched in through `[patch.crates-io]`): same
//! item names, generated from the same mlx-c headers. Two additions make it link off macOS
//! and off aarch64; see [`half_fallback`] and [`mach_time`].
#![allow(non_upper_case_globals)]
#![allow(non_camel_case_types)]
#![allow(non_snake_case)]
#![allow(clippy::all)]

include!(concat!(env!("OUT_DIR"), "/bindings.rs"));

#[cfg(not(target_arch = "aarch64"))]
mod half_fallback;
#[cfg(not(target_arch = "aarch64"))]
pub use half_fallback::*;

#[cfg(not(target_vendor = "apple"))]
pub mod mach_time;
