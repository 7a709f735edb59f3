//! Builds mlx-c against the MLX of the project's pinned Python environment.
//!
//! 1. Provisions (or finds current) the selected pinned environment (`DECODE_BASELINE_ENV`,
//!    see `tools/env/provision.py`), which reports the MLX install, the bundled libclang and the
//!    lock digest. `MLX_DIR` points at another MLX install instead.
//! 2. Obtains the mlx-c sources shipped inside the upstream `mlx-sys 0.7.0` package by asking
//!    Cargo for that package's metadata (which downloads and unpacks it into the registry).
//! 3. Compiles those sources with the `cc` crate (no CMake), force-including a `std::format`
//!    shim for standard libraries without `<format>` and `native/mlx_compat.h`, which adapts
//!    mlx-c 0.7.0 to the MLX releases after 0.32.2 (`gather_qmm`), plus the float16/bfloat16
//!    accessors that mlx-c only declares on aarch64.
//! 4. Generates the bindings with bindgen against the environment's libclang.
//! 5. Links `libmlx` dynamically and publishes its folder as `DEP_MLX_LIB_DIR`, so that the
//!    binary crates' own build scripts can give their executables an rpath (a dependency's
//!    `rustc-link-arg` never reaches the final link), and the environment's MLX backend as
//!    `DEP_MLX_BACKEND` (`cpu`, `cuda`, `metal`): a CUDA libmlx.so needs the NVIDIA driver and
//!    the `nvidia-*` libraries at run time, which a build machine need not have. When both the
//!    environment and the build's output folder lie inside the repository, it also publishes
//!    `DEP_MLX_ORIGIN_RPATH`, the same folder relative to the executables' own (`$ORIGIN/...`):
//!    a copied or moved checkout then loads its own `.venv`'s libmlx, not the original's.

use std::{
    collections::BTreeMap,
    env,
    path::{Path, PathBuf},
    process::Command,
};

/// The upstream package whose bundled mlx-c this crate compiles. mlx-c 0.7.0 was written for
/// MLX 0.32.2; `native/mlx_compat.h` makes it build against 0.32.3 and later.
const UPSTREAM_VERSION: &str = "0.7.0";

/// mlx-c translation units, as listed in its CMakeLists.txt (object.cpp is commented out there).
const MLX_C_SOURCES: &[&str] = &[
    "array",
    "closure",
    "compile",
    "cuda",
    "device",
    "distributed",
    "distributed_group",
    "error",
    "export",
    "fast",
    "fft",
    "graph_utils",
    "io",
    "io_types",
    "linalg",
    "map",
    "memory",
    "metal",
    "ops",
    "random",
    "stream",
    "string",
    "transforms",
    "transforms_impl",
    "vector",
    "version",
];

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let repo = manifest_dir.join("../..").canonicalize().expect("repository root");
    for var in ["MLX_DIR", "DECODE_BASELINE_PYTHON", "DECODE_BASELINE_VENV", "DECODE_BASELINE_ENV", "LIBCLANG_PATH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=native");
    println!("cargo:rerun-if-changed={}", repo.join("tools/env").display());

    let env_facts = provision(&repo);
    let mlx_dir = PathBuf::from(&env_facts["mlx_dir"]);
    let mlx_c = upstream_mlx_c();

    compile_mlx_c(&mlx_c, &mlx_dir, &manifest_dir);
    generate_bindings(&mlx_c, &env_facts);

    let lib_dir = mlx_dir.join("lib");
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rustc-link-lib=dylib=mlx");
    // Read by dependents as DEP_MLX_LIB_DIR, DEP_MLX_MLX_DIR, DEP_MLX_PYTHON, DEP_MLX_LOCK_SHA256
    // DEP_MLX_ENVIRONMENT (the environment's name, `default` for the default one) and
    // DEP_MLX_BACKEND.
    println!("cargo:lib_dir={}", lib_dir.display());
    println!("cargo:backend={}", env_facts["backend"]);
    println!("cargo:environment={}", env_facts["environment"]);
    println!("cargo:mlx_dir={}", mlx_dir.display());
    println!("cargo:python={}", env_facts["python"]);
    println!("cargo:lock_sha256={}", env_facts["lock_sha256"]);
    if let Some(rpath) = origin_rpath(&repo, &lib_dir) {
        println!("cargo:origin_rpath={rpath}");
    }
}

/// `lib_dir` as seen from the folder the executables of this build are written to
/// (`<target>/<profile>`, three levels above `OUT_DIR`), as an `$ORIGIN`-relative rpath; `None`
/// unless both lie inside the repository, since only then do they move together.
fn origin_rpath(repo: &Path, lib_dir: &Path) -> Option<String> {
    let out_dir = PathBuf::from(env::var("OUT_DIR").ok()?);
    let bin_dir = out_dir.ancestors().nth(3)?.canonicalize().ok()?;
    let lib = lib_dir.canonicalize().ok()?.strip_prefix(repo).ok()?.to_owned();
    let depth = bin_dir.strip_prefix(repo).ok()?.components().count();
    Some(format!("$ORIGIN/{}{}", "../".repeat(depth), lib.display()))
}

/// Runs the provisioning script and parses its `key=value` line.
fn provision(repo: &Path) -> BTreeMap<String, String> {
    let python = env::var("DECODE_BASELINE_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let script = repo.join("tools/env/provision.py");
    let output = Command::new(&python).arg(&script).output().unwrap_or_else(|err| {
        fail(&format!(
            "could not run `{python} {}`: {err}; install Python 3.11 or newer, or set DECODE_BASELINE_PYTHON",
            script.display()
        ))
    });
    if !output.status.success() {
        fail(&format!("provisioning the pinned environment failed:\n{}", String::from_utf8_lossy(&output.stderr)));
    }
    let line = String::from_utf8(output.stdout).expect("provision output is UTF-8");
    line.split_whitespace().filter_map(|pair| pair.split_once('=')).map(|(k, v)| (k.to_owned(), v.to_owned())).collect()
}

/// Locates `src/mlx-c` inside the upstream package, downloading it through Cargo if needed.
fn upstream_mlx_c() -> PathBuf {
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let probe = out_dir.join("upstream-probe");
    std::fs::create_dir_all(probe.join("src")).unwrap();
    // Its own `[workspace]` keeps it out of ours, and so out of reach of our `[patch]`.
    std::fs::write(
        probe.join("Cargo.toml"),
        format!(
            "[package]\nname = \"upstream-probe\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n\
             [dependencies]\nmlx-sys = {{ version = \"={UPSTREAM_VERSION}\", default-features = false }}\n\n\
             [workspace]\n"
        ),
    )
    .unwrap();
    std::fs::write(probe.join("src/lib.rs"), "").unwrap();
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(probe.join("Cargo.toml"))
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("run cargo metadata");
    if !output.status.success() {
        fail(&format!(
            "could not obtain the upstream mlx-sys {UPSTREAM_VERSION} package (its mlx-c sources are compiled here):\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("metadata JSON");
    let manifest = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "mlx-sys" && p["version"] == UPSTREAM_VERSION)
        .and_then(|p| p["manifest_path"].as_str())
        .unwrap_or_else(|| fail("cargo metadata did not list the upstream mlx-sys package"));
    Path::new(manifest).parent().unwrap().join("src/mlx-c")
}

fn compile_mlx_c(mlx_c: &Path, mlx_dir: &Path, manifest_dir: &Path) {
    let native = manifest_dir.join("native");
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .std("c++20")
        .include(mlx_c)
        .include(mlx_dir.join("include"))
        .flag(format!("-include{}", native.join("format_shim.h").display()))
        .flag(format!("-include{}", native.join("mlx_compat.h").display()))
        .flag_if_supported("-Wno-unused-parameter")
        .flag_if_supported("-Wno-deprecated-declarations")
        .warnings(false)
        // No debug information for these thin wrappers: it would not change the code, and
        // without it they compile in about three quarters of the time.
        .debug(false)
        .pic(true)
        .file(native.join("half_accessors.cpp"));
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("macos") {
        // What MLXConfig.cmake adds for the Metal wheel (untested here, see README).
        build.define("_METAL_", None).define("ACCELERATE_NEW_LAPACK", None).include(mlx_dir.join("include/metal_cpp"));
    }
    for name in MLX_C_SOURCES {
        build.file(mlx_c.join("mlx/c").join(format!("{name}.cpp")));
    }
    build.compile("mlxc");
}

fn generate_bindings(mlx_c: &Path, env_facts: &BTreeMap<String, String>) {
    if env::var_os("LIBCLANG_PATH").is_none() {
        // bindgen loads libclang at run time; the pinned environment ships one.
        env::set_var("LIBCLANG_PATH", &env_facts["libclang_dir"]);
    }
    let header_dir = mlx_c.join("mlx/c");
    let mut headers: Vec<PathBuf> = std::fs::read_dir(&header_dir)
        .expect("read mlx-c headers")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "h"))
        .collect();
    headers.sort();
    let builder = headers.iter().fold(
        bindgen::Builder::default()
            .rust_target("1.73.0".parse().expect("rust target"))
            .clang_arg(format!("-I{}", mlx_c.display()))
            .clang_args(compiler_builtin_includes())
            .blocklist_function("malloc")
            .blocklist_function("realloc"),
        |builder, header| builder.header(header.to_string_lossy()),
    );
    let bindings = builder.generate().unwrap_or_else(|err| {
        fail(&format!(
            "bindgen failed on the mlx-c headers in {}: {err} (libclang from {})",
            header_dir.display(),
            env::var("LIBCLANG_PATH").unwrap_or_default()
        ))
    });
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("bindings.rs");
    bindings.write_to_file(out).expect("write bindings.rs");
}

/// The C compiler's own header folder (float.h, stddef.h, ...). The pinned libclang wheel ships
/// the library without its resource headers, so bindgen borrows the system compiler's.
fn compiler_builtin_includes() -> Vec<String> {
    let compiler = cc::Build::new().get_compiler();
    let ask = |flag: &str| -> Option<PathBuf> {
        let output = Command::new(compiler.path()).arg(flag).output().ok()?;
        let path = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
        path.is_absolute().then_some(path)
    };
    [ask("-print-file-name=include"), ask("-print-resource-dir").map(|dir| dir.join("include"))]
        .into_iter()
        .flatten()
        .filter(|dir| dir.join("float.h").is_file())
        .take(1)
        .map(|dir| format!("-isystem{}", dir.display()))
        .collect()
}

fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(1);
}
