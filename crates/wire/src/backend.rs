//! Which MLX backend an environment installs, and which device a worker uses on it.
//!
//! An environment's backend is the one MLX backend package its lock names: `mlx-cpu` (cpu),
//! `mlx-cuda-*` (cuda), `mlx-metal` (metal). `tools/env/provision.py` follows the same rule.
//! On cpu a worker runs on MLX's CPU device, on cuda and metal on its GPU device.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The MLX backend of a pinned environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// `mlx-cpu`: MLX's CPU backend (Linux).
    Cpu,
    /// `mlx-cuda-*`: MLX's CUDA backend (Linux, NVIDIA GPUs).
    Cuda,
    /// `mlx-metal`: MLX's Metal backend (macOS, Apple silicon).
    Metal,
}

/// The MLX device type a worker must run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeviceKind {
    /// `mx.cpu`.
    Cpu,
    /// `mx.gpu`.
    Gpu,
}

/// The lock names no MLX backend package, or more than one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the lock names {found} MLX backend package(s): expected exactly one of mlx-cpu, mlx-cuda-*, mlx-metal")]
pub struct LockBackendError {
    pub found: usize,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Cuda => "cuda",
            Backend::Metal => "metal",
        }
    }

    /// The device a worker uses on this backend.
    pub fn device(self) -> DeviceKind {
        match self {
            Backend::Cpu => DeviceKind::Cpu,
            Backend::Cuda | Backend::Metal => DeviceKind::Gpu,
        }
    }

    /// The backend a hash-locked requirements file installs (see the module docs).
    pub fn of_lock(text: &str) -> Result<Backend, LockBackendError> {
        let mut found: Vec<Backend> = text
            .lines()
            .filter_map(|line| {
                if line.starts_with("mlx-cpu==") {
                    Some(Backend::Cpu)
                } else if line.starts_with("mlx-cuda-") {
                    Some(Backend::Cuda)
                } else if line.starts_with("mlx-metal==") {
                    Some(Backend::Metal)
                } else {
                    None
                }
            })
            .collect();
        found.dedup();
        match found.as_slice() {
            [one] => Ok(*one),
            _ => Err(LockBackendError { found: found.len() }),
        }
    }
}

impl DeviceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Gpu => "gpu",
        }
    }
}

/// What a session ran on, as its launcher recorded it: the environment's backend, the device
/// the workers reported, and the host's own facts about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeviceIdentity {
    /// The environment's backend.
    pub backend: Backend,
    /// The device type the workers ran on.
    pub device: DeviceKind,
    /// One name for the device: the CPU model (`/proc/cpuinfo`'s `model name`, macOS's
    /// `machdep.cpu.brand_string`) on cpu, MLX's `device_name` on a GPU (e.g. `NVIDIA H200`).
    pub name: String,
    /// MLX's `device_info()` for that device as the workers reported it (on CUDA: `device_name`,
    /// `architecture`, `total_memory`, `compute_capability_major`/`_minor`, `uuid`, ...), values
    /// as strings; plus, where the host has them, `nvidia_driver_version`
    /// (`/proc/driver/nvidia/version`) and `cuda_runtime_version` (the nvidia-cuda-runtime
    /// distribution beside the `nvidia/` folder libmlx loads from).
    pub info: BTreeMap<String, String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backend_package_of_a_lock() {
        let lock = |pkg: &str| {
            format!("mlx==0.32.4 \\\n    --hash=sha256:aa\n{pkg}==0.32.4 \\\n    --hash=sha256:bb\nmlx-lm==0.32.2\n")
        };
        assert_eq!(Backend::of_lock(&lock("mlx-cpu")), Ok(Backend::Cpu));
        assert_eq!(Backend::of_lock(&lock("mlx-cuda-13")), Ok(Backend::Cuda));
        assert_eq!(Backend::of_lock(&lock("mlx-metal")), Ok(Backend::Metal));
        assert_eq!(Backend::of_lock("mlx==0.32.4\nmlx-lm==0.32.2\n"), Err(LockBackendError { found: 0 }));
        assert_eq!(Backend::of_lock("mlx-cpu==1\nmlx-metal==1\n"), Err(LockBackendError { found: 2 }));
        assert_eq!(Backend::Cuda.device(), DeviceKind::Gpu);
        assert_eq!(Backend::Cpu.device(), DeviceKind::Cpu);
    }
}
