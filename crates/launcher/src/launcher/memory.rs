//! The interleaved order loads every model of a group at once: before anything is created, the
//! launcher checks that their weights fit in the memory the host has available.
//!
//! The weights are the `*.safetensors` files of each member's case (what MLX maps or reads); the
//! KV cache and activations come on top, so the check is a floor, not a promise. Available
//! memory is `MemAvailable` from `/proc/meminfo` on Linux and the physical memory
//! (`sysctl hw.memsize`) on macOS, where unified memory serves CPU and GPU alike; elsewhere the
//! check is skipped and says so.

use std::path::Path;

/// Bytes of `*.safetensors` in a model folder (0 if it cannot be read: the worker's own
/// validation names that problem).
pub fn weight_bytes(model_dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(model_dir) else { return 0 };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".safetensors"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// The memory available to new processes, bytes, and where the figure came from.
pub fn available() -> Option<(u64, &'static str)> {
    if cfg!(target_os = "macos") {
        let out = std::process::Command::new("sysctl").args(["-n", "hw.memsize"]).output().ok()?;
        let bytes = String::from_utf8_lossy(&out.stdout).trim().parse().ok()?;
        return Some((bytes, "hw.memsize"));
    }
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    mem_available(&text).map(|bytes| (bytes, "MemAvailable"))
}

/// `MemAvailable` of a `/proc/meminfo` text, bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// `Err` with a sentence when `needed` bytes of weights cannot fit in `available`.
pub fn check_fits(cell: &str, members: usize, needed: u64, available: Option<(u64, &str)>) -> Result<(), String> {
    match available {
        Some((available, source)) if needed > available => Err(format!(
            "cell {cell}: the interleaved order loads {members} models at once, {} of weights, but only {} are available \
             ({source}); use \"order\": \"alternate\" to load one at a time, or free memory",
            gib(needed),
            gib(available)
        )),
        _ => Ok(()),
    }
}

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / f64::from(1u32 << 30))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mem_available_and_refuses_what_does_not_fit() {
        let meminfo = "MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:   2097152 kB\n";
        assert_eq!(mem_available(meminfo), Some(2 << 30));
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
        assert!(check_fits("c", 2, 1 << 30, Some((2 << 30, "MemAvailable"))).is_ok());
        let refused = check_fits("c", 2, 3 << 30, Some((2 << 30, "MemAvailable"))).unwrap_err();
        assert!(refused.contains("2 models at once, 3.00 GiB of weights, but only 2.00 GiB"), "{refused}");
        assert!(check_fits("c", 2, u64::MAX, None).is_ok(), "unknown memory: not refused");
    }

    #[test]
    fn counts_only_safetensors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("model.safetensors"), [0u8; 100]).unwrap();
        std::fs::write(dir.path().join("model-2.safetensors"), [0u8; 20]).unwrap();
        std::fs::write(dir.path().join("config.json"), b"{}").unwrap();
        assert_eq!(weight_bytes(dir.path()), 120);
        assert_eq!(weight_bytes(&dir.path().join("missing")), 0);
    }
}
