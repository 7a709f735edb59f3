//! Gives the executables an rpath to the libmlx they link, so they run without
//! `LD_LIBRARY_PATH`. The mlx-sys override publishes the folder as `DEP_MLX_LIB_DIR`; a
//! dependency's own `rustc-link-arg` would never reach the final link, so it is done here.
//! It also publishes the name of the pinned environment that libmlx belongs to, which the
//! executable selects at start-up (`DECODE_BASELINE_BUILD_ENV`, see `select_environment` in `src/main.rs`).
//!
//! A launcher that linked a CUDA libmlx could not start on a machine without the NVIDIA driver,
//! not even to say so; the CUDA build's launcher links no MLX and runs the controlled worker's
//! own program (`tools/env/mlxenv build cuda`), so linking one here is refused.
/// The Python versions whose site-packages an installed executable looks in for libmlx.
const INSTALLED_PYTHONS: &[&str] = &["python3.10", "python3.11", "python3.12", "python3.13", "python3.14"];

fn main() {
    if std::env::var("DEP_MLX_BACKEND").as_deref() == Ok("cuda") {
        eprintln!(
            "error: the selected environment's libmlx is a CUDA build: the launcher links no MLX there; \
             build with `tools/env/mlxenv build cuda` (the launcher with --no-default-features and the \
             decode-baseline-controlled worker program)"
        );
        std::process::exit(1);
    }
    // Installed from the wheel (`req/install.md`), the executable is `<env>/bin/decode-baseline`
    // and the environment's own libmlx is in its site-packages: those folders come first, one
    // for each Python the `mlx` wheels are built for (in a checkout's `target/` none exists).
    // Then the checkout's own environment (`$ORIGIN`-relative, so that a copied checkout loads
    // its own libmlx), then the folder it was built against.
    let origin =
        if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("macos") { "@executable_path" } else { "$ORIGIN" };
    let installed = INSTALLED_PYTHONS.iter().map(|python| format!("{origin}/../lib/{python}/site-packages/mlx/lib"));
    let built = ["DEP_MLX_ORIGIN_RPATH", "DEP_MLX_LIB_DIR"].into_iter().filter_map(|v| std::env::var(v).ok());
    for rpath in installed.chain(built) {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{rpath}");
    }
    // Installed beside another `mlx` than it was built against, the executable must start to
    // say so, with the fix (`launcher::checkout::installed_environment`), rather than die in the
    // dynamic loader on the first libmlx symbol that release lacks. Lazy binding resolves each
    // libmlx function at its first call, after that check; the measured requests come after
    // warm-up requests that have made every call of the loop once.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg=-Wl,-z,lazy");
    }
    if let Ok(environment) = std::env::var("DEP_MLX_ENVIRONMENT") {
        println!("cargo:rustc-env=DECODE_BASELINE_BUILD_ENV={environment}");
    }
}
