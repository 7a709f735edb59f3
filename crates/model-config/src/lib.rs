//! A model folder's `config.json`, read the way mlx_lm's model classes read it, with no MLX:
//! [`config::ModelConfig`] is what the controlled worker's decoder builds from, and what the
//! launcher's roofline reads a decode step's bytes from, so the two cannot disagree on a model's
//! shape, its caches or its experts.

pub mod arch;
pub mod config;
