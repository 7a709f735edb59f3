//! The worker job: what the launcher writes into a worker's folder as `job.json`.
//!
//! Everything a worker needs is in here, including the pins it must verify before loading
//! anything; a worker trusts none of it until its own validation passed.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::{Backend, DeviceKind, RunPolicy, Sha256Digest};

/// The version of [`WorkerJob`] this code reads and writes.
pub const WORKER_JOB_SCHEMA_VERSION: u32 = 1;

/// Which decode loop a worker runs: one of the two built-in adapters, or one the manifest
/// declares (`adapters.<name>`). On the wire it is the plain name (`"controlled"`, `"stock"`,
/// `"python-sync"`); the built-ins sort first, then declared names alphabetically.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Adapter {
    /// Ours: Rust on mlx-rs, synchronous, no look-ahead.
    Controlled,
    /// The shipped `mlx_lm.stream_generate`, unmodified, driven from Python.
    Stock,
    /// A decode loop declared in the manifest's `adapters`.
    Declared(AdapterName),
}

/// The name of a declared adapter: 1 to 32 characters of `a-z`, `0-9`, `-` and `_`, starting
/// with a letter, and neither `controlled` nor `stock` (it names folders and files).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AdapterName(String);

/// The pattern every adapter name matches (the schema's and [`AdapterName`]'s rule).
pub const ADAPTER_NAME_PATTERN: &str = "^[a-z][a-z0-9_-]{0,31}$";

impl AdapterName {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Adapter {
    /// The adapter named `name`; `Err` says what a name must look like.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "controlled" => return Ok(Adapter::Controlled),
            "stock" => return Ok(Adapter::Stock),
            _ => {}
        }
        let mut chars = name.chars();
        let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
        let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
        if first_ok && rest_ok && name.len() <= 32 {
            Ok(Adapter::Declared(AdapterName(name.to_owned())))
        } else {
            Err(format!(
                "adapter name {name:?} is not \"controlled\", \"stock\" or a declared name: 1 to 32 of a-z, 0-9, \
                 '-', '_', starting with a letter"
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Adapter::Controlled => "controlled",
            Adapter::Stock => "stock",
            Adapter::Declared(name) => name.as_str(),
        }
    }

    /// One of the two adapters this repository ships (their pins follow fixed rules).
    pub fn is_built_in(&self) -> bool {
        !matches!(self, Adapter::Declared(_))
    }
}

/// The quoted name, as in JSON (`"controlled"`), so that messages show what the user wrote.
impl std::fmt::Debug for Adapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl std::fmt::Display for Adapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl TryFrom<String> for Adapter {
    type Error = String;
    fn try_from(name: String) -> Result<Self, String> {
        Adapter::parse(&name)
    }
}

impl From<Adapter> for String {
    fn from(adapter: Adapter) -> String {
        adapter.as_str().to_owned()
    }
}

impl std::str::FromStr for Adapter {
    type Err = String;
    fn from_str(name: &str) -> Result<Self, String> {
        Adapter::parse(name)
    }
}

impl schemars::JsonSchema for Adapter {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Adapter".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "An adapter: `controlled`, `stock`, or a name the manifest declares in `adapters`.",
            "type": "string",
            "pattern": ADAPTER_NAME_PATTERN,
        })
    }
}

/// What a worker measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum), value(rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Greedy generation of `max_new_tokens` tokens per request, per-token times recorded.
    Headline,
    /// The manifest's continuation fed one token per step; argmax, margin and time per step.
    FixedContinuation,
    /// One full greedy generation; the whole stream and per-step margins recorded.
    ReferencePair,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Headline, Mode::FixedContinuation, Mode::ReferencePair];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Headline => "headline",
            Mode::FixedContinuation => "fixed_continuation",
            Mode::ReferencePair => "reference_pair",
        }
    }
}

/// The pins a worker checks against the installed environment before loading the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentPins {
    /// The MLX backend the lock installs (`cpu`, `cuda`, `metal`; see `backend.rs`). `manifest
    /// pin` always writes it; absent (`null`) in manifests pinned before backends were recorded,
    /// which pinned the CPU backend (see [`EnvironmentPins::backend`]).
    #[serde(default)]
    pub backend: Option<Backend>,
    /// SHA-256 of the platform's hash-locked requirements file.
    pub lock_sha256: Sha256Digest,
    /// `mlx.core.__version__` / mlx-c's `mlx_version`.
    pub mlx_version: String,
    /// `mlx_lm.__version__`.
    pub mlx_lm_version: String,
    /// The source freeze: SHA-256 over every file of the installed `mlx_lm` package.
    pub mlx_lm_freeze_sha256: Sha256Digest,
    /// SHA-256 of the `libmlx` shared library both workers load.
    pub libmlx_sha256: Sha256Digest,
}

impl EnvironmentPins {
    /// The pinned backend; `cpu` for pins written before backends were recorded.
    pub fn backend(&self) -> Backend {
        self.backend.unwrap_or(Backend::Cpu)
    }
}

/// The job a launcher hands to one worker (`<out_dir>/job.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkerJob {
    /// Must equal [`WORKER_JOB_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Unique id of this worker run within its session (`<session>/<cell>/<adapter>-<n>`).
    pub run_id: String,
    /// Which loop this worker must be; a worker refuses a job for the other adapter.
    pub adapter: Adapter,
    /// What to measure.
    pub mode: Mode,
    /// The MLX device the worker must run on: its environment's backend's (`environment.backend`:
    /// cpu on cpu, gpu on cuda and metal). Both workers make it the default device before
    /// loading anything and report the device they ran on. Absent in jobs written before devices
    /// were named, which read as `cpu` (every such launcher ran on the CPU backend).
    #[serde(default = "cpu")]
    pub device: DeviceKind,
    /// The repository the worker code runs from; sources are hashed relative to it.
    pub repo_root: PathBuf,
    /// Absolute path of the manifest (`workloads.json`).
    pub manifest_path: PathBuf,
    /// SHA-256 of the manifest file, as pinned.
    pub manifest_sha256: Sha256Digest,
    /// The manifest case id (the model artifact).
    pub case_id: String,
    /// Absolute path of the model folder.
    pub model_dir: PathBuf,
    /// The manifest prompt id.
    pub prompt_id: String,
    /// Prompt token ids, as pinned in the manifest.
    pub prompt_ids: Vec<u32>,
    /// SHA-256 of the prompt ids (see `req/protocol.md` for the canonical encoding).
    pub prompt_sha256: Sha256Digest,
    /// The fixed continuation, for `fixed_continuation`; `null` otherwise.
    pub continuation: Option<Vec<u32>>,
    /// The stop set (eos ids) the manifest recorded for this case.
    pub stop_ids: Vec<u32>,
    /// The frozen limits.
    pub run_policy: RunPolicy,
    /// The most tokens of `prompt[:-1]` one prefill forward takes (positive): both built-in
    /// loops prefill as mlx_lm's `generate_step` does (`req/protocol.md` section 5), stock by
    /// passing it to `stream_generate` as `prefill_step_size`. From the session job; absent in
    /// jobs written before it existed, which read as mlx_lm's default,
    /// [`crate::policy::PREFILL_STEP_SIZE`].
    #[serde(default = "default_prefill_step_size")]
    pub prefill_step_size: u32,
    /// The environment the worker must find installed.
    pub environment: EnvironmentPins,
    /// Interleaved sessions: before request `i` the worker waits at the request gate until the
    /// launcher creates `request-<i>-granted`, and creates `request-<i>-done` once the request's
    /// record is complete (`req/protocol.md`, "The request gate"). `false`: no gate. Absent in
    /// jobs written before the gate existed, which read as `false`.
    #[serde(default)]
    pub gate: bool,
    /// A worker run that is one rank of a group (`req/distributed.md`); `null` for a single
    /// process; absent in jobs written before groups existed, which read as `null`.
    #[serde(default)]
    pub group: Option<crate::group::RankJob>,
}

fn cpu() -> DeviceKind {
    DeviceKind::Cpu
}

fn default_prefill_step_size() -> u32 {
    crate::policy::PREFILL_STEP_SIZE
}

/// The canonical digest of a token id sequence: SHA-256 of the ids as decimal numbers joined
/// by single commas, no spaces (`"1,2,3"`), UTF-8.
pub fn token_ids_sha256(ids: &[u32]) -> Sha256Digest {
    let text = ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    Sha256Digest::of_bytes(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_digest_is_of_the_comma_joined_decimal_ids() {
        assert_eq!(token_ids_sha256(&[1, 2, 3]), Sha256Digest::of_bytes(b"1,2,3"));
        assert_ne!(token_ids_sha256(&[12, 3]), token_ids_sha256(&[1, 23]));
    }
}
