//! The worker report: what a worker writes exactly once as `<out_dir>/report.json`.
//!
//! One key set for every mode and status; a value that does not apply is `null`. Times are
//! integer nanoseconds from a monotonic clock, relative to the start of the request
//! (`*_ns` stamps) or durations (`*_dur_ns`); the definitions are in `req/protocol.md`.

use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use crate::{Adapter, Backend, DeviceKind, ExitCode, Mode, Sha256Digest};

/// The version of [`WorkerReport`] this code reads and writes.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// How a worker run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every request of the job completed.
    Ok,
    /// Refused, invalid, crashed in a request, or the report link was refused.
    Failed,
    /// The job deadline fired; only complete requests are recorded.
    Timeout,
    /// SIGTERM or SIGINT arrived; only complete requests are recorded.
    Cancelled,
}

impl Status {
    /// Every status, in the order of their exit codes.
    pub const ALL: [Status; 4] = [Status::Ok, Status::Failed, Status::Timeout, Status::Cancelled];

    /// The exit code a worker whose report has this status ends with (`req/protocol.md`): the
    /// one mapping, for the worker that exits with it and every reader that checks it.
    pub fn exit_code(self) -> ExitCode {
        match self {
            Status::Ok => ExitCode::Ok,
            Status::Failed => ExitCode::Failed,
            Status::Timeout => ExitCode::Timeout,
            Status::Cancelled => ExitCode::Cancelled,
        }
    }
}

/// Where a request sits in the run policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    First,
    Warmup,
    Measured,
}

/// What the worker ran on, as it found it (not as the job claimed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    /// SHA-256 of the manifest file the worker validated.
    pub manifest_sha256: Sha256Digest,
    /// `git rev-parse HEAD` of the repository the worker runs from, `+dirty` if modified.
    pub code_version: String,
    /// SHA-256 over the worker's pinned source files (see `req/protocol.md`).
    pub worker_sources_sha256: Sha256Digest,
    /// SHA-256 of the hash-locked requirements file.
    pub lock_sha256: Sha256Digest,
    /// MLX version reported by the loaded library.
    pub mlx_version: String,
    /// `mlx_lm.__version__` for stock; the pinned one for controlled (it does not load it).
    pub mlx_lm_version: String,
    /// SHA-256 over every file of the installed `mlx_lm` package.
    pub mlx_lm_freeze_sha256: Sha256Digest,
    /// Canonical path of the libmlx mapped into the worker process.
    pub libmlx_path: String,
    /// SHA-256 of that file.
    pub libmlx_sha256: Sha256Digest,
    /// The MLX device the worker ran on (the default device once the job's `device` was set).
    pub device: DeviceKind,
    /// The backend of the environment the worker validated (`environment.backend`); `null` in
    /// reports written before backends were recorded.
    #[serde(default)]
    pub backend: Option<Backend>,
    /// MLX's `device_info()` of that device, values as decimal strings where MLX gives numbers
    /// (CPU: `device_name`, `architecture`; CUDA also `total_memory`, `free_memory`, `uuid`,
    /// `pci_bus_id`, `compute_capability_major`, `compute_capability_minor`; Metal
    /// `memory_size`, `max_buffer_size`, ...). Empty in reports written before it was recorded.
    #[serde(default)]
    pub device_info: BTreeMap<String, String>,
}

/// One decode step: a token produced (headline, reference-pair) or fed (fixed-continuation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepRecord {
    /// Sequence position of the token fed in this step (prompt positions are 1..=L).
    pub position: u32,
    /// Argmax of the logits evaluated in this step.
    pub argmax: u32,
    /// Time since request start at which this step's logits were evaluated.
    pub t_ns: u64,
    /// This step's duration. Headline and reference-pair: from the previous token's stamp to
    /// this one (`t_ns` minus the previous `t_ns`, or minus `first_token_ns` for the first
    /// step). Fixed-continuation: from the start of this step's forward to its logits
    /// evaluated, so argmax and sorting stay outside (see `req/protocol.md`).
    pub dur_ns: u64,
    /// Graph build part of the step (controlled only; `null` for stock).
    pub build_ns: Option<u64>,
    /// Evaluation part of the step (controlled only; `null` for stock).
    pub eval_ns: Option<u64>,
    /// Top-1 minus top-2 logit (fixed-continuation and reference-pair; `null` for headline).
    pub margin: Option<f64>,
    /// The top-1 and top-2 logits are exactly equal (the lower index won).
    pub tie: Option<bool>,
}

/// One request: a prompt, its prefill, and its steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestRecord {
    /// 0-based index in the job.
    pub index: u32,
    /// Run-policy phase (`null` for reference-pair, which has one request).
    pub phase: Option<Phase>,
    /// Prompt length L.
    pub prompt_len: u32,
    /// Duration of the prompt forward pass(es) up to the first token's logits evaluated.
    pub prefill_dur_ns: u64,
    /// Time since request start at which the first generated token was known.
    pub first_token_ns: u64,
    /// The first generated token (argmax at position L).
    pub first_token: u32,
    /// The cached steps after the first token, positions L+1, L+2, …
    pub steps: Vec<StepRecord>,
    /// Forward passes whose result was never used (stock's look-ahead); 0 for controlled.
    pub unused_forwards: u32,
    /// Model forward calls made for this request.
    pub model_calls: u32,
    /// Peak memory during this request, bytes (reset before it).
    pub peak_memory_bytes: Option<u64>,
    /// Why generation ended: `length` or `stop`.
    pub finish_reason: String,
}

/// A worker's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkerReport {
    /// Must equal [`REPORT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Copied from the job.
    pub run_id: String,
    pub adapter: Adapter,
    pub mode: Mode,
    pub case_id: String,
    pub prompt_id: String,
    /// How the run ended.
    pub status: Status,
    /// The exit code the worker ends with (consistent with `status`).
    pub exit_code: i32,
    /// Human-readable reason when status is not `ok`, naming the field or file.
    pub error: Option<String>,
    /// The worker's process id (equal to the claim's and the ready file's).
    pub pid: u32,
    /// UTC time of the claim, RFC 3339.
    pub claimed_utc: String,
    /// UTC time the report was written, RFC 3339.
    pub finished_utc: String,
    /// Nanoseconds from process start to `worker-ready` (includes import/load and validation).
    pub start_to_ready_ns: Option<u64>,
    /// Nanoseconds from process start to the model loaded.
    pub load_ns: Option<u64>,
    /// What the worker ran on; `null` if it failed before finding out.
    pub identity: Option<Identity>,
    /// The test-only slowdown this worker applied at its site, microseconds
    /// (`DECODE_BASELINE_TEST_SLOWDOWN_US`: every decode step unless
    /// `DECODE_BASELINE_TEST_SLOWDOWN_SITE` named the seed forward); `null` for every real
    /// measurement. Absent in
    /// reports written before it existed, which read as `null`.
    #[serde(default)]
    pub test_slowdown_us: Option<u32>,
    /// The group this rank ran in, as the initialized group reports it; `null` for a
    /// single process; absent in reports written before groups existed, which read as `null`.
    #[serde(default)]
    pub group: Option<crate::group::RankIdentity>,
    /// Every complete request, in order.
    pub requests: Vec<RequestRecord>,
}
