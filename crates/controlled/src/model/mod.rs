//! The model: one decoder written after mlx_lm that every architecture resolves to, its
//! layers, its rotary embeddings, its KV caches and a rank's shard of it.

pub mod cache;
pub mod decoder;
pub mod layers;
pub mod moe;
pub mod rope;
pub mod shard;

pub use cache::{KvCache, LayerCache};
pub use decoder::{LoadError, Model};
