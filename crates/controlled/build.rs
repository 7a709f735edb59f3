//! Gives this crate's test and bench executables an rpath to the linked libmlx (see the root
//! build.rs for why a dependency cannot do it).
fn main() {
    if let Ok(lib_dir) = std::env::var("DEP_MLX_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{lib_dir}");
    }
}
