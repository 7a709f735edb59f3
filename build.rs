//! Gives the executables an rpath to the libmlx they link, so they run without
//! `LD_LIBRARY_PATH`. The mlx-sys override publishes the folder as `DEP_MLX_LIB_DIR`; a
//! dependency's own `rustc-link-arg` would never reach the final link, so it is done here.
//! It also publishes the name of the pinned environment that libmlx belongs to, which the
//! executable selects at start-up (`DECODE_BASELINE_BUILD_ENV`, see `select_environment` in `src/main.rs`).
//!
//! A launcher that linked a CUDA libmlx could not start on a machine without the NVIDIA driver,
//! not even to say so; the CUDA build's launcher links no MLX and runs the controlled worker's
//! own program (`tools/env/mlxenv build cuda`), so linking one here is refused.
fn main() {
    if std::env::var("DEP_MLX_BACKEND").as_deref() == Ok("cuda") {
        eprintln!(
            "error: the selected environment's libmlx is a CUDA build: the launcher links no MLX there; \
             build with `tools/env/mlxenv build cuda` (the launcher with --no-default-features and the \
             decode-baseline-controlled worker program)"
        );
        std::process::exit(1);
    }
    // The checkout's own environment first (`$ORIGIN`-relative, so that a copied checkout
    // loads its own libmlx), then the folder it was built against.
    for rpath in ["DEP_MLX_ORIGIN_RPATH", "DEP_MLX_LIB_DIR"].into_iter().filter_map(|v| std::env::var(v).ok()) {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{rpath}");
    }
    if let Ok(environment) = std::env::var("DEP_MLX_ENVIRONMENT") {
        println!("cargo:rustc-env=DECODE_BASELINE_BUILD_ENV={environment}");
    }
}
