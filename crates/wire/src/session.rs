//! The session job (what a user hands to `decode-baseline run`) and the session report
//! (`session.json`, what the launcher writes once at the end).

use std::{collections::BTreeMap, path::PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::order::WorkerOrder;
use crate::{analysis::Analysis, Adapter, ExitCode, Sha256Digest, Status, WorkerReport};

/// The version of [`SessionJob`] this code reads.
pub const SESSION_JOB_SCHEMA_VERSION: u32 = 1;
/// The version of [`SessionReport`] this code writes. Every key added is a new version, so that
/// a reader of an older version refuses a newer report by its version rather than by an unknown
/// field; what each version changed is listed in `req/session.md` (`session.json`, "Versions").
pub const SESSION_REPORT_SCHEMA_VERSION: u32 = 8;
/// The oldest version of [`SessionReport`] this code still reads; versions before
/// [`SESSION_REPORT_SCHEMA_VERSION`] are converted to it when read (`compare`'s loader).
pub const SESSION_REPORT_OLDEST_SCHEMA_VERSION: u32 = 1;
/// The version of [`LauncherMarker`] this code writes (unchanged when the session report moved
/// to version 2).
pub const LAUNCHER_MARKER_SCHEMA_VERSION: u32 = 1;

/// The pinned files of some cases of a manifest: by case id, each file's name and SHA-256 (the
/// manifest's `cases.<case>.files`).
pub type CaseFiles = BTreeMap<String, BTreeMap<String, Sha256Digest>>;

impl SessionJob {
    /// The adapter the others are measured against: [`SessionJob::reference`], else `stock` when
    /// listed, else the first adapter.
    pub fn reference(&self) -> Adapter {
        self.reference.clone().unwrap_or_else(|| {
            if self.adapters.contains(&Adapter::Stock) {
                Adapter::Stock
            } else {
                self.adapters.first().cloned().unwrap_or(Adapter::Stock)
            }
        })
    }

    /// The prefill step size of every worker's job: the job's, else mlx_lm's default.
    pub fn prefill_step_size(&self) -> u32 {
        self.prefill_step_size.unwrap_or(crate::policy::PREFILL_STEP_SIZE)
    }
}

/// A session job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionJob {
    /// Must equal [`SESSION_JOB_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The manifest; relative paths are relative to the job file. Default: the repository's
    /// `workloads.json`.
    #[serde(default)]
    pub manifest: Option<PathBuf>,
    /// Cell names (`<case>.<prompt>.<mode>`) to run; `null` runs every cell of the manifest.
    #[serde(default)]
    pub cells: Option<Vec<String>>,
    /// Which adapters to run, at least one: `controlled`, `stock`, or adapters the manifest
    /// declares (`adapters.<name>`).
    pub adapters: Vec<Adapter>,
    /// The adapter every other one is measured and checked against (ratios, argmax agreement,
    /// reference streams). Default: `stock` when listed, else the first of `adapters`.
    #[serde(default)]
    pub reference: Option<Adapter>,
    /// Where session folders are created; relative paths are relative to the job file.
    pub output_root: PathBuf,
    /// Worker runs per adapter and cell (positive).
    pub repetitions: u32,
    /// Worker order within a cell.
    pub order: WorkerOrder,
    /// Also run each adapter's headline cells a second time as an A/A pair, to measure the
    /// noise threshold `compare` uses.
    #[serde(default)]
    pub aa_pair: bool,
    /// Run every worker as a group of ranks decoding one model sharded across processes
    /// (`req/distributed.md`); `null` (or absent): one process per worker.
    #[serde(default)]
    pub group: Option<crate::group::SessionGroup>,
    /// The most tokens of `prompt[:-1]` one prefill forward takes, in every worker's job
    /// (positive; `WorkerJob::prefill_step_size`). `null` (or absent): mlx_lm's default, 2048. A
    /// smaller one makes a prompt of several chunks affordable on a slow device.
    #[serde(default)]
    pub prefill_step_size: Option<u32>,
}

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// Every worker ran and validated, and the adapters agreed.
    Ok,
    /// A report failed validation, or the adapters disagreed.
    ValidationFailed,
    /// A worker failed (crashed, no valid report, never ready).
    WorkerFailed,
    /// A worker ran past its deadline (its own, or the launcher's backstop).
    Timeout,
    /// The user interrupted the session.
    Cancelled,
    /// The launcher died before finishing; written by the next launcher that found it.
    Incomplete,
}

impl SessionStatus {
    /// The launcher's exit code for a session that ended so (`req/session.md`).
    pub fn exit_code(self) -> ExitCode {
        match self {
            SessionStatus::Ok => ExitCode::Ok,
            SessionStatus::ValidationFailed => ExitCode::ValidationFailed,
            SessionStatus::WorkerFailed | SessionStatus::Incomplete => ExitCode::WorkerFailed,
            SessionStatus::Timeout => ExitCode::Timeout,
            SessionStatus::Cancelled => ExitCode::Cancelled,
        }
    }
}

/// Why the launcher stepped in on a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InterventionReason {
    /// The worker did not signal ready within the run policy's `ready_timeout_s`.
    NeverReady,
    /// The worker ran past the launcher's backstop (its deadline plus grace).
    PastDeadline,
    /// The user pressed Ctrl-C (or sent SIGTERM) once: graceful cancel.
    Cancelled,
    /// The user interrupted twice: killed at once.
    Killed,
    /// Another rank of its group ended first, failed or killed: the launcher stopped the rest
    /// of the group (`req/distributed.md`).
    RankStopped,
}

/// The signal the launcher sent a worker's process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum InterventionSignal {
    /// Asked to stop; the worker may write a report first.
    #[serde(rename = "SIGTERM")]
    Sigterm,
    /// Killed after the grace period, or at once on a second interrupt.
    #[serde(rename = "SIGKILL")]
    Sigkill,
}

/// What the launcher had to do to a worker, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Intervention {
    /// Why the launcher stepped in.
    pub reason: InterventionReason,
    /// The last signal it sent the worker's process group; `null` when the worker ended before
    /// one was sent.
    pub signal: Option<InterventionSignal>,
}

/// The host the session ran on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostFacts {
    /// `/proc/sys/kernel/hostname`, `unknown` where it cannot be read.
    pub hostname: String,
    /// The OS the launcher was built for (`linux`, `macos`).
    pub os: String,
    /// The CPU architecture the launcher was built for (`x86_64`, `aarch64`).
    pub arch: String,
    /// CPUs available to the launcher.
    pub cpus: u32,
    /// The CPU's model name (`/proc/cpuinfo`, macOS `machdep.cpu.brand_string`); `null` where
    /// it cannot be read, and in version 1 sessions, which lack it.
    #[serde(default)]
    pub cpu_model: Option<String>,
}

/// The host lease the session held while it measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LeaseFacts {
    /// The lease file; `null` for a dry run, which takes none.
    pub path: Option<PathBuf>,
    /// How long the launcher waited for the lease, nanoseconds; `null` for a dry run.
    pub waited_ns: Option<u64>,
}

/// What the launcher saw of one worker process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkerRun {
    /// The worker's run id (also its folder name below the session folder).
    pub run_id: String,
    /// The cell, `<case>.<prompt>.<mode>`.
    pub cell: String,
    pub adapter: Adapter,
    /// 0-based repetition.
    pub repetition: u32,
    /// The extra run (interleaved: group) of an A/A pair, which only measures the noise and
    /// stays out of the statistics.
    pub aa: bool,
    /// Position in the session's worker order.
    pub sequence: u32,
    /// The exact command line.
    pub command: Vec<String>,
    /// The worker's process id; `null` when it never started.
    pub pid: Option<u32>,
    /// Exit code, or `null` if killed by a signal.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if any.
    pub signal: Option<i32>,
    /// What the launcher had to do to the worker, and why; `null` when nothing.
    pub intervention: Option<Intervention>,
    /// Wall time from spawn to reaped, nanoseconds.
    pub wall_ns: u64,
    /// Problems found validating the report (empty when valid).
    pub validation_errors: Vec<String>,
    /// What else used the host while this worker ran (interleaved: while its group ran), and
    /// how it was clocked; `null` in sessions before version 3.
    #[serde(default)]
    pub host_activity: Option<crate::host::HostActivity>,
    /// Interleaved sessions with an energy source: per request the launcher granted, its
    /// energy, clocks and throttle reasons read at the gate; `null` otherwise and before
    /// version 7.
    #[serde(default)]
    pub energy: Option<Vec<crate::energy::RequestEnergy>>,
    /// The report, when one was written and parsed. In a group: rank 0's.
    pub report: Option<WorkerReport>,
    /// In a group: ranks 1 and up, each as the launcher saw it (rank 0 is this run itself);
    /// empty for a single process, and absent in sessions written before groups existed.
    #[serde(default)]
    pub ranks: Vec<RankRun>,
}

/// One rank past rank 0 of a worker's group, as the launcher saw it. Its report stays in its
/// own folder; what the session needs of it is here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RankRun {
    pub rank: u32,
    /// Its run id, `<rank 0's run id>.rank<r>`, also its folder's name.
    pub run_id: String,
    pub command: Vec<String>,
    pub pid: Option<u32>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub intervention: Option<Intervention>,
    pub wall_ns: u64,
    /// Its report's status; `null` without a report.
    pub status: Option<Status>,
    /// Its report's error.
    pub error: Option<String>,
    /// Problems found validating its report, and any step where its tokens differ from rank 0's.
    pub validation_errors: Vec<String>,
}

impl RankRun {
    /// Why this rank keeps its group's run from counting: it did not exit 0 by itself with a
    /// valid ok report. `None` when it ended well.
    pub fn problem(&self) -> Option<String> {
        let ended = match (self.exit_code, self.signal, &self.intervention) {
            (_, _, Some(i)) => Some(format!("stopped by the launcher ({:?})", i.reason)),
            (_, Some(signal), None) => Some(format!("killed by signal {signal}")),
            (Some(0), None, None) => None,
            (code, None, None) => Some(format!("exited with {code:?}")),
        };
        let status = match self.status {
            Some(Status::Ok) => None,
            Some(other) => {
                Some(format!("its report says {other:?}: {}", self.error.as_deref().unwrap_or("no reason given")))
            }
            None => Some("no report".to_owned()),
        };
        let problems: Vec<String> =
            ended.into_iter().chain(status).chain(self.validation_errors.iter().cloned()).collect();
        (!problems.is_empty()).then(|| format!("rank {}: {}", self.rank, problems.join("; ")))
    }
}

/// `session.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionReport {
    /// [`SESSION_REPORT_SCHEMA_VERSION`] when written; readers also take versions from
    /// [`SESSION_REPORT_OLDEST_SCHEMA_VERSION`] on.
    pub schema_version: u32,
    /// `<UTC stamp>-<pid>`, also the session folder's name.
    pub session_id: String,
    /// How the session ended.
    pub status: SessionStatus,
    /// The session job as given.
    pub job: SessionJob,
    /// The manifest the session read, absolute.
    pub manifest_path: PathBuf,
    /// The manifest's SHA-256, as its pin file states it.
    pub manifest_sha256: crate::Sha256Digest,
    /// The pinned model files (`cases.<case>.files` of the manifest) of every case of the cells
    /// the session ran, so that `compare` can tell whether two sessions used the same models
    /// without the manifest on disk. `null` when not known: version 1 reports (which lack the
    /// key) and sessions marked incomplete by a later launcher.
    #[serde(default)]
    pub model_files: Option<CaseFiles>,
    /// The host; `null` in sessions marked incomplete by a later launcher.
    pub host: Option<HostFacts>,
    /// The backend and the device the workers ran on (see [`crate::backend::DeviceIdentity`]);
    /// `null` before version 4 and when no worker reported an identity.
    #[serde(default)]
    pub device: Option<crate::backend::DeviceIdentity>,
    /// The lease file and how long the launcher waited for it; `null` in sessions marked
    /// incomplete by a later launcher.
    pub lease: Option<LeaseFacts>,
    /// When the session started, RFC 3339 UTC to the second.
    pub started_utc: String,
    /// When it finished.
    pub finished_utc: String,
    /// Session wall time, nanoseconds.
    pub wall_ns: u64,
    /// Session wall time minus the time spent running worker groups (one worker, or the members
    /// of an interleaved group together) and waiting for a quiet host: what the launcher itself
    /// cost. Before version 7 it included the quiet wait.
    pub launcher_overhead_ns: u64,
    /// Time spent waiting for a quiet host before the groups (`run --quiet-wait`), ns; `null`
    /// before version 7.
    #[serde(default)]
    pub quiet_wait_ns: Option<u64>,
    /// The adapter the analysis measures every other one against (the job's `reference`, or its
    /// default). Sessions before version 6 read as `stock`.
    pub reference: Adapter,
    /// Every worker run, in the order they ran.
    pub workers: Vec<WorkerRun>,
    /// Statistics per cell and adapter, ratios, agreement (see `req/session.md`); `null` in
    /// sessions marked incomplete by a later launcher.
    pub analysis: Option<Analysis>,
    /// Human-readable problems, in the order found.
    pub problems: Vec<String>,
    /// `true` when some adapter's worker program was replaced (`replaced_programs` is not
    /// empty): its reports passed the launcher's checks, but nothing pins the program that
    /// wrote them, so `compare` refuses to set this session beside a pinned one. `false` in
    /// sessions before version 5 and in sessions marked incomplete (which record no programs).
    #[serde(default)]
    pub unpinned: bool,
    /// Per adapter whose program was replaced (`DECODE_BASELINE_WORKER_<ADAPTER>`), the command
    /// that ran instead of the pinned worker, without the launcher's `--out-dir DIR`. Empty for
    /// a pinned session and before version 5.
    #[serde(default)]
    pub replaced_programs: BTreeMap<Adapter, Vec<String>>,
    /// The energy sources tried (and why each missing one is), the idle readings and the
    /// energy analysis; `null` before version 7 and in sessions marked incomplete.
    #[serde(default)]
    pub energy: Option<crate::energy::SessionEnergy>,
    /// Where the workers' threads were allowed to run (`run --cpus`); `null` in sessions
    /// written before the field was added (version 7 sessions of the first builds) and in
    /// sessions marked incomplete by a later launcher.
    #[serde(default)]
    pub placement: Option<Placement>,
    /// `run --until-decided`: each cell's sequential test, its looks and how it ended; `null`
    /// for a session of fixed size and in sessions written before the field was added (version
    /// 7 sessions of the first builds).
    #[serde(default)]
    pub sequential: Option<crate::sequential::SequentialRecord>,
    /// Every adapter against the reference in every cell, tested once when the session
    /// finished: the decision every view of the session reads. `null` before version 8 and in
    /// sessions marked incomplete (readers then test the rows themselves).
    #[serde(default)]
    pub decisions: Option<crate::row::SessionDecisions>,
}

/// The CPU placement of a session's workers: what was asked for and what the workers got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    /// `run --cpus` as given (`all`, `first`, or a list such as `0`, `0,1`, `0-3`).
    pub requested: String,
    /// The CPUs the workers were allowed on, as a list (`0`, `0-1`), read back from each
    /// started worker with `sched_getaffinity`; several distinct masks are joined with ` / `.
    /// `null` where the system has no affinity call (macOS: placement is left to the OS) or no
    /// worker was started.
    pub effective: Option<String>,
}

/// `launcher.json`: written into a session folder when the session starts, so that a launcher
/// that dies leaves enough behind for the next one to mark the session incomplete.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LauncherMarker {
    /// [`LAUNCHER_MARKER_SCHEMA_VERSION`].
    pub schema_version: u32,
    pub session_id: String,
    /// The launcher's process id.
    pub pid: u32,
    pub started_utc: String,
    pub job: SessionJob,
    pub manifest_path: PathBuf,
    pub manifest_sha256: crate::Sha256Digest,
}

#[cfg(test)]
mod exit_order {
    use super::*;
    use crate::ExitCode;

    /// `worse` ranks sessions' codes as `run` ranks one session's workers: each status's code
    /// wins over every status below it, whichever comes first.
    #[test]
    fn the_worse_of_two_sessions_follows_the_order_of_a_sessions_status() {
        let order = [
            SessionStatus::Ok,
            SessionStatus::ValidationFailed,
            SessionStatus::WorkerFailed,
            SessionStatus::Timeout,
            SessionStatus::Cancelled,
        ];
        for (i, low) in order.iter().enumerate() {
            for high in &order[i..] {
                assert_eq!(low.exit_code().worse(high.exit_code()), high.exit_code(), "{low:?} then {high:?}");
                assert_eq!(high.exit_code().worse(low.exit_code()), high.exit_code(), "{high:?} then {low:?}");
            }
        }
        assert_eq!(ExitCode::Cancelled.worse(ExitCode::Internal), ExitCode::Internal);
        assert_eq!(ExitCode::OutputFailed.worse(ExitCode::WorkerFailed), ExitCode::OutputFailed);
    }
}
