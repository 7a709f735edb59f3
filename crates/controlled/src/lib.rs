//! The controlled worker: a synchronous decode loop on mlx-rs.
pub mod identity;
