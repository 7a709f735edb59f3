//! The end of a session: the analysis, every row tested once and stored with the record,
//! `session.json` written and entered in the history, the exit code. The figures and the page
//! are views of the record (`report::publish`); what is shown of it is `show.rs`'s.

use std::path::{Path, PathBuf};

use decode_baseline_wire::{
    report::Status,
    session::{CaseFiles, InterventionReason, LeaseFacts, SessionReport, SessionStatus, WorkerRun},
    ExitCode,
};

use super::{
    analysis,
    events::{Event, Observer},
    lease, output,
    prepare::Session,
    record::{self, Executed},
    session_dir::utc_now,
    signals::Interrupts,
    worker_job::LoadedManifest,
};
use crate::energy;

/// How a session ended: its exit code, its report when it ran (also when `session.json` could
/// not be written: the report is whole, only its file is missing), and where it was recorded.
#[derive(Debug)]
pub struct SessionOutcome {
    pub code: ExitCode,
    pub report: Option<SessionReport>,
    /// Set when `session.json` was written.
    pub recorded: Option<Recorded>,
    /// The machine's lease, held until the session's views are written (`run_session`).
    pub(super) lease: Option<lease::Lease>,
}

/// A session's folder with `session.json` written in it (and the records `bench` wrote
/// beside it before the session): with the report, everything its views are given.
#[derive(Debug)]
pub struct Recorded {
    pub dir: PathBuf,
}

impl SessionOutcome {
    pub(super) fn without_report(code: ExitCode) -> Self {
        SessionOutcome { code, report: None, recorded: None, lease: None }
    }
}

/// Analyses what the workers left, tests every row (with the noise profile file `noise_profile`
/// names, else the host's), writes `session.json` and returns the session's exit code with its
/// report; what it has to say goes to `observer`.
pub(super) fn finish(
    session: Session,
    executed: Executed,
    noise_profile: Option<&Path>,
    observer: &dyn Observer,
) -> anyhow::Result<SessionOutcome> {
    let Executed { workers, mut problems, groups_wall, quiet_wait, energy: mut energy_record, cpus, sequential } =
        executed;
    let reference = session.resolved.job.reference();
    let interleaved = session.schedule.interleaved();
    let analysis = analysis::analyze(&workers, &session.cells, interleaved, &reference);
    let cell_names: Vec<String> = session.cells.iter().map(|c| c.name()).collect();
    energy_record.cells =
        energy::analyze(&workers, &cell_names, &reference, interleaved, &energy_record.idle, &analysis.body.bootstrap);
    problems.extend(analysis.problems.iter().cloned());
    let status = session_status(&workers, &session.interrupts, &problems);
    // The workers move into the record here: nothing below reads them but through it.
    let so_far = record::so_far(&session, workers, &cpus);
    let wall = session.started.elapsed();
    let workers_wall = groups_wall.as_nanos() as u64;
    let lease = session.lease;
    let mut report = SessionReport {
        status,
        model_files: Some(model_files(&session.loaded, &session.cells)),
        lease: Some(LeaseFacts {
            path: lease.as_ref().map(|l| l.path.clone()),
            waited_ns: lease.as_ref().map(|l| l.waited.as_nanos() as u64),
        }),
        finished_utc: utc_now(),
        wall_ns: wall.as_nanos() as u64,
        launcher_overhead_ns: (wall.as_nanos() as u64).saturating_sub(workers_wall + quiet_wait.as_nanos() as u64),
        quiet_wait_ns: Some(quiet_wait.as_nanos() as u64),
        analysis: Some(analysis.body.clone()),
        problems,
        energy: Some(energy_record),
        sequential,
        ..so_far
    };
    // Every row tested once, stored with the record: each view of the session reads these.
    let (profiles, said) = crate::noise_profiles::resolve_for_session(noise_profile, &report);
    if let Some(said) = said {
        observer.on(Event::Detail(said));
    }
    let settings =
        crate::compare::Settings { config: crate::stats::DecisionConfig::default(), profiles: profiles.as_ref() };
    report.decisions = Some(crate::compare::decide(&report, &settings));
    let session_dir = session.dir;
    if let Err(err) = output::write_session(&session_dir, &report) {
        // The session ran and only its record is missing: not bad input. The worker folders stay
        // for the next launcher, which marks the session incomplete.
        observer.on(Event::Error(format!(
            "{:#}; the session ran (status {:?}) but has no session.json: nothing was overwritten, its worker \
             folders are kept in {}",
            anyhow::Error::from(err),
            report.status,
            session_dir.display()
        )));
        return Ok(SessionOutcome { code: ExitCode::OutputFailed, report: Some(report), recorded: None, lease });
    }
    if let Err(why) = crate::history::record_finished(&session_dir, &report) {
        observer.on(Event::Warning(why));
    }
    let recorded = Recorded { dir: session_dir };
    Ok(SessionOutcome { code: status.exit_code(), report: Some(report), recorded: Some(recorded), lease })
}

/// The pinned files of every case of `cells`, from the manifest the session loaded.
fn model_files(loaded: &LoadedManifest, cells: &[decode_baseline_wire::manifest::Cell]) -> CaseFiles {
    cells
        .iter()
        .filter_map(|cell| Some((cell.case.clone(), loaded.manifest.cases.get(&cell.case)?.files.clone())))
        .collect()
}

/// Cancelled beats timeout beats worker failure beats validation failure.
pub(super) fn session_status(workers: &[WorkerRun], interrupts: &Interrupts, problems: &[String]) -> SessionStatus {
    let statuses: Vec<Option<Status>> = workers.iter().map(|w| w.report.as_ref().map(|r| r.status)).collect();
    // A rank the launcher stopped because another rank of its group ended says `cancelled`:
    // that is the other rank's failure, not the user's interrupt.
    let rank_stopped = |w: &WorkerRun| w.intervention.is_some_and(|i| i.reason == InterventionReason::RankStopped);
    let cancelled =
        workers.iter().any(|w| w.report.as_ref().is_some_and(|r| r.status == Status::Cancelled) && !rank_stopped(w));
    if interrupts.count() > 0 || cancelled {
        SessionStatus::Cancelled
    } else if statuses.contains(&Some(Status::Timeout))
        || workers.iter().any(|w| w.intervention.is_some_and(|i| i.reason == InterventionReason::PastDeadline))
    {
        SessionStatus::Timeout
    } else if workers.iter().any(|w| {
        w.report.is_none()
            || w.exit_code != Some(0)
            || w.intervention.is_some()
            || w.ranks.iter().any(|r| r.exit_code != Some(0) || r.signal.is_some() || r.intervention.is_some())
    }) || statuses.contains(&Some(Status::Failed))
    {
        SessionStatus::WorkerFailed
    } else if !problems.is_empty() {
        SessionStatus::ValidationFailed
    } else {
        SessionStatus::Ok
    }
}
