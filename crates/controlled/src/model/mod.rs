//! The model: one decoder written after mlx_lm that every architecture resolves to, its
//! layers, its rotary embeddings and its KV caches.

pub mod cache;
pub mod decoder;
pub mod layers;
pub mod moe;
pub mod rope;

pub use cache::{KvCache, LayerCache};
pub use decoder::{LoadError, Model};
