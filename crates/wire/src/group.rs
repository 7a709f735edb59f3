//! Rank groups (`req/distributed.md`): one worker run of an adapter as `ranks` processes that
//! decode one model sharded across them over MLX's distributed layer.
//!
//! The launcher starts every rank of a group together, each with its own claimed out dir and
//! its own job, which names the rank, the group's size, the backend and the host file the
//! launcher wrote into the run's folder. Every rank signals ready, waits at the gate, and writes
//! its own report; rank 0's is the one the analysis reads.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// MLX's distributed backends a group can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GroupBackend {
    /// TCP sockets between the ranks, on the CPU stream (`MLX_HOSTFILE`, `MLX_RANK`).
    Ring,
    /// Thunderbolt 5 RDMA between Macs (macOS 26.2 and later); described, not run here.
    Jaccl,
    /// NVIDIA's collectives, one GPU per rank; described, not run here.
    Nccl,
}

impl GroupBackend {
    /// The name `mx.distributed.init(backend=…)` and `mlx_distributed_init` take.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupBackend::Ring => "ring",
            GroupBackend::Jaccl => "jaccl",
            GroupBackend::Nccl => "nccl",
        }
    }
}

/// A session job's `group`: every worker runs as `ranks` processes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionGroup {
    /// Processes per worker, at least 2.
    pub ranks: u32,
    /// Default `ring`, the only one the launcher starts itself.
    #[serde(default = "ring")]
    pub backend: GroupBackend,
    /// One `"ip:port"` per rank, for ranks on other machines: the launcher then writes the host
    /// file and prints each host's command (`run --dry-run`) instead of starting them. `null`:
    /// every rank on this machine, on loopback ports the launcher finds free.
    #[serde(default)]
    pub hosts: Option<Vec<String>>,
}

fn ring() -> GroupBackend {
    GroupBackend::Ring
}

/// The environment variable that carries the rank to MLX (`mx.distributed.init` reads it).
pub const RANK_ENV: &str = "MLX_RANK";
/// The environment variable that carries the host file's path to MLX's ring backend.
pub const HOSTFILE_ENV: &str = "MLX_HOSTFILE";
/// The host file's name in the run's folder.
pub const HOSTFILE_NAME: &str = "hostfile.json";

/// The job's part for a worker that is one rank of a group. The launcher also sets
/// [`RANK_ENV`] and [`HOSTFILE_ENV`] to the same values in the rank's environment; a worker
/// checks that they agree with these before it initializes the group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RankJob {
    /// This process's rank, 0-based; rank 0's report carries the session's figures.
    pub rank: u32,
    /// The group's size, at least 2.
    pub ranks: u32,
    /// The backend the worker must initialize (`strict`: no silent fallback to a group of one).
    pub backend: GroupBackend,
    /// Absolute path of the host file the launcher wrote (ring: a JSON list, per rank, of
    /// `"ip:port"` strings).
    pub hostfile: PathBuf,
}

/// What a rank's report says of the group it ran in, read from the initialized group (not
/// copied from the job): the launcher checks it against the job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RankIdentity {
    /// `group.rank()`.
    pub rank: u32,
    /// `group.size()`.
    pub ranks: u32,
    pub backend: GroupBackend,
}

/// The ring host file for one `"ip:port"` per rank (`[["ip:port"], …]`, as `mlx.launch`
/// writes it).
pub fn ring_hostfile(hosts: &[String]) -> String {
    let hosts: Vec<[&String; 1]> = hosts.iter().map(|h| [h]).collect();
    serde_json::to_string(&hosts).expect("a list of strings serializes")
}

/// One `127.0.0.1:<port>` per port.
pub fn loopback_hosts(ports: &[u16]) -> Vec<String> {
    ports.iter().map(|p| format!("127.0.0.1:{p}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loopback_hostfile_is_what_mlx_launch_writes() {
        assert_eq!(ring_hostfile(&loopback_hosts(&[32323, 32324])), r#"[["127.0.0.1:32323"],["127.0.0.1:32324"]]"#);
    }

    #[test]
    fn backends_are_named_as_mlx_names_them() {
        for b in [GroupBackend::Ring, GroupBackend::Jaccl, GroupBackend::Nccl] {
            assert_eq!(serde_json::to_value(b).unwrap(), serde_json::Value::String(b.as_str().into()));
        }
    }
}
