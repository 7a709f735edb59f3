//! The controlled worker: a synchronous decode loop on mlx-rs.
//!
//! [`config`] reads a model folder's `config.json`, [`weights`] its safetensors, [`model`] is
//! the decoder written after mlx_lm's, [`decode`] the controlled loop and [`contract`] the
//! per-step invariants it keeps, [`graph`] one step's MLX graph beside mlx_lm's, [`group`] the
//! MLX distributed group a rank joins, [`worker`] the driver the shared protocol runtime runs.

pub use decode_baseline_model_config::{arch, config};
pub mod compiled;
pub mod contract;
pub mod decode;
mod ffi;
pub mod graph;
pub mod group;
pub mod identity;
pub mod model;
pub mod weights;
pub mod worker;

#[cfg(test)]
mod compiled_tests;
#[cfg(test)]
mod gather_qmm_tests;
#[cfg(test)]
mod graph_tests;
#[cfg(test)]
mod reference_server;
#[cfg(test)]
mod reference_tests;
#[cfg(test)]
mod sharded_tests;
