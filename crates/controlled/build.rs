//! Gives this crate's executables (the worker program, tests, benches) an rpath to the linked
//! libmlx (see the root build.rs for why a dependency cannot do it).
//!
//! A CUDA libmlx.so (`DEP_MLX_BACKEND=cuda`) needs `libcuda.so.1`, which only the NVIDIA driver
//! installs, and the `nvidia-*` wheels' libraries, which the CUDA environment leaves to the host
//! (`tools/env/envs/cuda/host-provided.txt`). The linker cannot find them on a build machine
//! without a GPU, and by default refuses an executable whose shared libraries have symbols it
//! cannot resolve; `--allow-shlib-undefined` leaves those to the dynamic loader at start-up,
//! where they are resolved on a CUDA host (or the launcher's probe names the missing library).
//! Only libmlx's own dependencies are concerned: this crate's undefined symbols are still errors.
fn main() {
    // The checkout's own environment first (`$ORIGIN`-relative, so that a copied checkout
    // loads its own libmlx), then the folder it was built against.
    for rpath in ["DEP_MLX_ORIGIN_RPATH", "DEP_MLX_LIB_DIR"].into_iter().filter_map(|v| std::env::var(v).ok()) {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{rpath}");
    }
    if std::env::var("DEP_MLX_BACKEND").as_deref() == Ok("cuda") {
        println!("cargo:rustc-link-arg=-Wl,--allow-shlib-undefined");
    }
}
