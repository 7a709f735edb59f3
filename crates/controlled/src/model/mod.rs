//! The models: one dense decoder (qwen3, qwen2, llama) written after mlx_lm, its layers, its
//! rotary embedding and its KV cache.

pub mod cache;
pub mod decoder;
pub mod layers;
pub mod rope;

pub use cache::KvCache;
pub use decoder::{LoadError, Model};
