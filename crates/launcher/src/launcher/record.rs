//! What a session's workers left, and the session's record put together from it.

use decode_baseline_wire::session::{
    HostFacts, SessionReport, SessionStatus, WorkerRun, SESSION_REPORT_SCHEMA_VERSION,
};

use std::collections::BTreeSet;

use super::{device, placement, prepare::Session};

/// What the workers of a session left, as the launcher recorded it.
pub(super) struct Executed {
    pub(super) workers: Vec<WorkerRun>,
    pub(super) problems: Vec<String>,
    /// Wall time spent inside worker groups (members of an interleaved group overlap).
    pub(super) groups_wall: std::time::Duration,
    /// Time spent in `--quiet-wait` before the groups.
    pub(super) quiet_wait: std::time::Duration,
    /// The energy sources and the groups' idle readings (the analysis comes in `finish`).
    pub(super) energy: decode_baseline_wire::energy::SessionEnergy,
    /// The distinct CPU masks the workers were read back with.
    pub(super) cpus: BTreeSet<String>,
    /// `--until-decided`: each cell's sequential test.
    pub(super) sequential: Option<decode_baseline_wire::sequential::SequentialRecord>,
}

/// The session's record as its workers have left it so far: what an `--until-decided` look
/// tests (a report that is never written), and what `finish` completes (the one place the
/// record is put together), from the workers' runs and the CPU masks they were read back with.
pub(super) fn so_far(session: &Session, workers: Vec<WorkerRun>, cpus: &BTreeSet<String>) -> SessionReport {
    SessionReport {
        schema_version: SESSION_REPORT_SCHEMA_VERSION,
        session_id: session.id.clone(),
        status: SessionStatus::Ok,
        job: session.resolved.job.clone(),
        manifest_path: session.loaded.path.clone(),
        manifest_sha256: session.loaded.sha256,
        model_files: None,
        // The facts a noise profile's design is keyed by, as in `finish`.
        host: Some(host_facts()),
        device: device::identify(&workers),
        lease: None,
        started_utc: session.started_utc.clone(),
        finished_utc: String::new(),
        wall_ns: 0,
        launcher_overhead_ns: 0,
        quiet_wait_ns: None,
        reference: session.resolved.job.reference(),
        workers,
        analysis: None,
        problems: Vec::new(),
        unpinned: !session.replaced_programs.is_empty(),
        replaced_programs: session.replaced_programs.clone(),
        energy: None,
        placement: Some(placement::record(&session.cpus, cpus)),
        sequential: None,
        decisions: None,
    }
}

/// The facts of the host a session ran on, which a noise profile's design is keyed by.
pub(super) fn host_facts() -> HostFacts {
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "unknown".to_owned());
    HostFacts {
        hostname,
        os: std::env::consts::OS.to_owned(),
        arch: std::env::consts::ARCH.to_owned(),
        cpus: std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX)),
        cpu_model: device::cpu_model(),
    }
}
