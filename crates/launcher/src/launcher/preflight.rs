//! Before a session spawns a controlled worker that is a program of its own (a launcher built
//! without MLX, as the CUDA build is), it checks that the program can start at all: it runs
//! `decode-baseline-controlled probe` and, when the dynamic loader refuses it, says which
//! library is missing and where it should come from, instead of leaving a loader message in
//! each worker's log. A CUDA libmlx.so needs the NVIDIA driver (`libcuda.so.1`) and the
//! `nvidia-*` wheels' libraries; a machine without a GPU has neither.

use std::path::Path;
use std::process::Command;

/// What glibc's dynamic loader prints when a program's library is not found.
const LOADER_MARK: &str = "error while loading shared libraries: ";

/// Runs `program probe`; `Err` is the message for the user (the launcher exits with BadInput).
pub fn probe_controlled(program: &Path) -> Result<(), String> {
    let output = match Command::new(program).arg("probe").output() {
        Ok(output) => output,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "the controlled worker {} is missing: this launcher links no MLX and runs the controlled \
                 worker's own program beside it; build both with `tools/env/mlxenv build NAME`",
                program.display()
            ))
        }
        Err(err) => return Err(format!("failed to run the controlled worker {} probe: {err}", program.display())),
    };
    if output.status.success() {
        return Ok(());
    }
    Err(explain(program, &String::from_utf8_lossy(&output.stderr)))
}

/// The message for a probe that failed with `stderr`.
pub fn explain(program: &Path, stderr: &str) -> String {
    let Some(first) = missing_library(stderr) else {
        return format!(
            "the controlled worker {} cannot start ({}); see `{} probe`",
            program.display(),
            stderr.trim(),
            program.display()
        );
    };
    // The loader stops at the first library it misses; `ldd` lists every one.
    let mut missing = ldd_missing(program);
    if !missing.iter().any(|m| m == first) {
        missing.insert(0, first.to_owned());
    }
    let groups = [Provider::Driver, Provider::NvidiaWheels, Provider::Mlx, Provider::Other]
        .into_iter()
        .filter_map(|provider| {
            let names: Vec<&str> =
                missing.iter().map(String::as_str).filter(|name| Provider::of(name) == provider).collect();
            (!names.is_empty()).then(|| format!("{} ({})", names.join(", "), provider.advice()))
        })
        .collect::<Vec<_>>();
    format!(
        "the controlled worker {} cannot start: the dynamic loader finds no {}",
        program.display(),
        groups.join("; no ")
    )
}

/// The library named in a loader refusal, if `stderr` holds one.
pub fn missing_library(stderr: &str) -> Option<&str> {
    let rest = &stderr[stderr.find(LOADER_MARK)? + LOADER_MARK.len()..];
    rest.split(':').next().map(str::trim).filter(|name| !name.is_empty())
}

/// Every library `ldd` reports as not found for `program` (empty when ldd cannot run).
fn ldd_missing(program: &Path) -> Vec<String> {
    Command::new("ldd")
        .arg(program)
        .output()
        .map(|out| parse_ldd_missing(&String::from_utf8_lossy(&out.stdout)))
        .unwrap_or_default()
}

/// The `NAME => not found` lines of ldd's output.
pub fn parse_ldd_missing(ldd: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in ldd.lines().filter_map(|line| line.trim().strip_suffix("=> not found")) {
        if !out.iter().any(|seen| seen == name.trim()) {
            out.push(name.trim().to_owned());
        }
    }
    out
}

/// Where a missing library comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Provider {
    /// `libcuda.so.1`: the NVIDIA driver.
    Driver,
    /// The CUDA libraries of the `nvidia-*` wheels (cuBLAS, cuDNN, NCCL, ...).
    NvidiaWheels,
    /// libmlx itself: the environment is not where the program was built against it.
    Mlx,
    Other,
}

impl Provider {
    fn of(library: &str) -> Self {
        if library.starts_with("libcuda.so") {
            Provider::Driver
        } else if ["libcu", "libnccl", "libnvrtc", "libnvJitLink"].iter().any(|p| library.starts_with(p)) {
            Provider::NvidiaWheels
        } else if library.starts_with("libmlx") {
            Provider::Mlx
        } else {
            Provider::Other
        }
    }

    fn advice(self) -> &'static str {
        match self {
            Provider::Driver => {
                "the NVIDIA driver's library: run on a host with an NVIDIA GPU and its driver \
                 (`ldconfig -p | grep libcuda` lists it there), or use an environment of another backend"
            }
            Provider::NvidiaWheels => {
                "from the nvidia-* wheels, which libmlx.so looks for in <site-packages>/nvidia/*/lib: \
                 install them into the environment or link a host's copies there, as tools/gpu/host.sh does"
            }
            Provider::Mlx => {
                "the environment this program was built against is not where it was: provision it \
                 (tools/env/provision.py) or point LD_LIBRARY_PATH at its mlx/lib"
            }
            Provider::Other => "install it, or point LD_LIBRARY_PATH at the folder that holds it",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DRIVER: &str = "/opt/x/decode-baseline-controlled: error while loading shared libraries: \
                          libcuda.so.1: cannot open shared object file: No such file or directory\n";

    #[test]
    fn names_the_missing_driver_and_its_provider() {
        assert_eq!(missing_library(DRIVER), Some("libcuda.so.1"));
        let message = explain(Path::new("/opt/x/decode-baseline-controlled"), DRIVER);
        assert!(message.contains("finds no libcuda.so.1 (the NVIDIA driver"), "{message}");
        assert!(message.contains("NVIDIA driver"), "{message}");
    }

    #[test]
    fn names_a_missing_wheel_library() {
        let stderr = DRIVER.replace("libcuda.so.1", "libcudnn.so.9");
        assert!(explain(Path::new("w"), &stderr).contains("nvidia-* wheels"));
    }

    #[test]
    fn ldd_lists_every_missing_library() {
        let ldd = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibmlx.so => /v/mlx/lib/libmlx.so (0x7f)\n\
                   \tlibnccl.so.2 => not found\n\tlibcuda.so.1 => not found\n\tlibnccl.so.2 => not found\n";
        assert_eq!(parse_ldd_missing(ldd), ["libnccl.so.2", "libcuda.so.1"]);
    }

    #[test]
    fn any_other_failure_is_quoted() {
        assert_eq!(missing_library("mlx: no device\n"), None);
        assert!(explain(Path::new("w"), "mlx: no device\n").contains("(mlx: no device)"));
    }

    #[test]
    fn a_missing_program_is_named() {
        let err = probe_controlled(Path::new("/nonexistent/decode-baseline-controlled")).unwrap_err();
        assert!(err.contains("/nonexistent/decode-baseline-controlled is missing"), "{err}");
    }
}
