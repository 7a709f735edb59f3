//! The folders the built-in adapters' worker sources are taken from, by rule (`req/manifest.md`,
//! "worker_sources"). Listing and hashing them is the pins crate's (`sources.rs` there).
//!
//! The controlled worker's rule is the crates it is built from, and no more: the test
//! `controlled_crates_are_the_workers_build` (pins crate) compares this list with the path
//! dependencies Cargo resolves for `decode-baseline-controlled`.

/// The folders of the stock worker's files: its own and the Python worker kit's.
pub const STOCK_ROOTS: &[&str] = &["tools/stock", "tools/kit/python"];
/// Crates whose `.rs` files and `Cargo.toml` are controlled-worker sources: the controlled loop
/// and every crate of this repository it is built from.
pub const CONTROLLED_CRATES: &[&str] = &[
    "crates/controlled",
    "crates/model-config",
    "crates/wire",
    "crates/pins",
    "crates/worker-runtime",
    "crates/mlx-sys",
];
/// Folders whose every file is a controlled-worker source.
pub const CONTROLLED_WHOLE_TREES: &[&str] = &["crates/mlx-sys/native"];
/// Single files that are controlled-worker sources when they exist: `Cargo.lock` (the resolved
/// versions the worker is built from, mlx-rs among them). Both executables that carry the loop
/// enter it through the controlled crate (`worker::serve`), so no file outside it is a source.
pub const CONTROLLED_FILES: &[&str] = &["Cargo.lock"];
