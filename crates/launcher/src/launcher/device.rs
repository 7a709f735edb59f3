//! What a session ran on (`session.json`'s `device`): the backend and the device its workers
//! reported in their identities, completed with what the host itself says about that device.
//!
//! * `backend`, `device` and MLX's `device_info` come from the first worker report with an
//!   identity (the launcher has already checked every report's backend and device against its
//!   job); `free_memory` is left out, as it changes from one process to the next.
//! * `name`: on a GPU MLX's `device_name` (e.g. `NVIDIA H200`); on the CPU the CPU model, from
//!   `/proc/cpuinfo`'s first `model name` (Linux) or `sysctl -n machdep.cpu.brand_string`
//!   (macOS), else MLX's `device_name`.
//! * On CUDA, `nvidia_driver_version` from `/proc/driver/nvidia/version` (the kernel module the
//!   driver library belongs to) and `cuda_runtime_version`, the version of the
//!   `nvidia-cuda-runtime` distribution in the site-packages that holds the `nvidia/` folder
//!   libmlx loads its CUDA libraries from (`<site>/mlx/lib/../../nvidia`, followed if linked).
//!   Neither needs nvidia-smi or a CUDA call.

use std::path::Path;

use decode_baseline_wire::{backend::DeviceIdentity, report::Identity, session::WorkerRun, Backend, DeviceKind};

/// The session's device, from its workers' identities; `None` when none reported one.
pub fn identify(workers: &[WorkerRun]) -> Option<DeviceIdentity> {
    let identity = workers.iter().find_map(|w| w.report.as_ref()?.identity.as_ref())?;
    Some(describe(identity, cpu_model().as_deref(), read("/proc/driver/nvidia/version").as_deref()))
}

/// The device identity of `identity`, given the host's CPU model and NVIDIA driver file.
pub fn describe(identity: &Identity, cpu_model: Option<&str>, nvidia_version_file: Option<&str>) -> DeviceIdentity {
    let backend = identity.backend.unwrap_or(Backend::Cpu);
    let mut info = identity.device_info.clone();
    info.remove("free_memory");
    if backend == Backend::Cuda {
        if let Some(version) = nvidia_version_file.and_then(nvidia_driver_version) {
            info.insert("nvidia_driver_version".to_owned(), version);
        }
        if let Some(version) = cuda_runtime_version(Path::new(&identity.libmlx_path)) {
            info.insert("cuda_runtime_version".to_owned(), version);
        }
    }
    let mlx_name = info.get("device_name").cloned().unwrap_or_else(|| "unknown".to_owned());
    let name = match (identity.device, cpu_model) {
        (DeviceKind::Cpu, Some(model)) => model.to_owned(),
        _ => mlx_name,
    };
    DeviceIdentity { backend, device: identity.device, name, info }
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// This host's CPU model, if it says.
pub fn cpu_model() -> Option<String> {
    if cfg!(target_os = "macos") {
        let out = std::process::Command::new("sysctl").args(["-n", "machdep.cpu.brand_string"]).output().ok()?;
        return Some(String::from_utf8_lossy(&out.stdout).trim().to_owned()).filter(|s| !s.is_empty());
    }
    read("/proc/cpuinfo").as_deref().and_then(cpuinfo_model)
}

/// The first `model name` of a `/proc/cpuinfo` text.
pub fn cpuinfo_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find_map(|line| {
            line.split_once(':').filter(|(key, _)| key.trim() == "model name").map(|(_, v)| v.trim().to_owned())
        })
        .filter(|model| !model.is_empty())
}

/// The driver version in `/proc/driver/nvidia/version`'s first line
/// (`NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.03  Sun ...`).
pub fn nvidia_driver_version(text: &str) -> Option<String> {
    let line = text.lines().next()?;
    let rest = line.split("Kernel Module").nth(1)?;
    // The version is the first word made of digits and dots ("for x86_64" may come before it).
    rest.split_whitespace()
        .find(|word| {
            word.starts_with(|c: char| c.is_ascii_digit()) && word.chars().all(|c| c.is_ascii_digit() || c == '.')
        })
        .map(str::to_owned)
}

/// The `nvidia-cuda-runtime` version beside the `nvidia/` folder next to `libmlx`'s package.
pub fn cuda_runtime_version(libmlx: &Path) -> Option<String> {
    let nvidia = libmlx.parent()?.parent()?.parent()?.join("nvidia");
    let site = nvidia.canonicalize().ok()?.parent()?.to_owned();
    std::fs::read_dir(&site)
        .ok()?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter_map(|name| name.strip_suffix(".dist-info")?.strip_prefix("nvidia_cuda_runtime").map(str::to_owned))
        .find_map(|rest| rest.strip_prefix('-').map(str::to_owned))
}

#[cfg(test)]
mod tests {
    use super::*;
    use decode_baseline_wire::Sha256Digest;

    fn identity(backend: Backend, device: DeviceKind, libmlx: &str) -> Identity {
        let d = Sha256Digest::of_bytes(b"x");
        Identity {
            manifest_sha256: d,
            code_version: "c".into(),
            worker_sources_sha256: d,
            lock_sha256: d,
            mlx_version: "0.32.4".into(),
            mlx_lm_version: "0.32.2".into(),
            mlx_lm_freeze_sha256: d,
            libmlx_path: libmlx.into(),
            libmlx_sha256: d,
            device,
            backend: Some(backend),
            device_info: [("device_name", "NVIDIA H200"), ("total_memory", "150754820096"), ("free_memory", "1")]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        }
    }

    #[test]
    fn a_cuda_device_has_its_gpu_name_driver_and_runtime() {
        let tmp = tempfile::tempdir().unwrap();
        // <venv site>/mlx/lib/libmlx.so, <venv site>/nvidia -> <host site>/nvidia, as host.sh links it.
        let (venv_site, host_site) = (tmp.path().join("venv-site"), tmp.path().join("host-site"));
        std::fs::create_dir_all(venv_site.join("mlx/lib")).unwrap();
        std::fs::create_dir_all(host_site.join("nvidia/cu13/lib")).unwrap();
        std::fs::create_dir_all(host_site.join("nvidia_cuda_runtime-13.0.96.dist-info")).unwrap();
        std::os::unix::fs::symlink(host_site.join("nvidia"), venv_site.join("nvidia")).unwrap();
        let libmlx = venv_site.join("mlx/lib/libmlx.so");
        let proc = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.03  Tue Sep 30 2025\nGCC version: gcc\n";
        let d = describe(
            &identity(Backend::Cuda, DeviceKind::Gpu, libmlx.to_str().unwrap()),
            Some("AMD EPYC 9654"),
            Some(proc),
        );
        assert_eq!((d.backend, d.device, d.name.as_str()), (Backend::Cuda, DeviceKind::Gpu, "NVIDIA H200"));
        assert_eq!(d.info["nvidia_driver_version"], "580.159.03");
        assert_eq!(d.info["cuda_runtime_version"], "13.0.96");
        assert_eq!(d.info["total_memory"], "150754820096");
        assert!(!d.info.contains_key("free_memory"));
    }

    #[test]
    fn a_cpu_device_is_named_by_the_cpu_model() {
        let d = describe(&identity(Backend::Cpu, DeviceKind::Cpu, "/v/mlx/lib/libmlx.so"), Some("AMD EPYC 9B14"), None);
        assert_eq!((d.backend, d.name.as_str()), (Backend::Cpu, "AMD EPYC 9B14"));
        assert!(!d.info.contains_key("nvidia_driver_version"));
        let without = describe(&identity(Backend::Cpu, DeviceKind::Cpu, "/v/mlx/lib/libmlx.so"), None, None);
        assert_eq!(without.name, "NVIDIA H200", "falls back to MLX's device_name");
    }

    #[test]
    fn parsers_of_host_files() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9B14 96-Core Processor\n\nprocessor\t: 1\n";
        assert_eq!(cpuinfo_model(cpuinfo).as_deref(), Some("AMD EPYC 9B14 96-Core Processor"));
        assert_eq!(cpuinfo_model("processor : 0\n"), None);
        let open =
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U22)\n";
        assert_eq!(nvidia_driver_version(open).as_deref(), Some("580.159.04"));
        assert_eq!(nvidia_driver_version("garbage"), None);
    }
}
