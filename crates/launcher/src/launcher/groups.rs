//! The session's groups of workers run in turn: the quiet wait, the limits, the host sampler and
//! the energy recorder around each group, each worker's report read and validated, the progress
//! told as events, and the `--until-decided` look after each group.

use std::{collections::BTreeMap, time::Instant};

use super::{
    events::{Event, Observer},
    execute::{Execution, Prepared},
    placement,
    prepare::Session,
    rank_group,
    record::{self, Executed},
    signals::Interrupts,
    supervise::{self, Limits},
    validate,
};
use crate::{energy, host};
use decode_baseline_wire::{
    report::Status,
    session::{RankRun, WorkerRun},
    Adapter,
};

/// Runs every group of the session in turn with `execution` and records each worker's run;
/// `meter` reads energy at the gate of interleaved groups; `observer` hears how far it got.
pub(super) fn execute(
    session: &Session,
    quiet_wait: u64,
    execution: &mut dyn Execution,
    meter: &mut energy::Meter,
    observer: &dyn Observer,
) -> anyhow::Result<Executed> {
    // Taken once the session's folders exist, so that a session folder inside the repository
    // already shows in `git status` when the workers take theirs.
    let code_version = decode_baseline_pins::code_version(&session.repo);
    let expected: BTreeMap<Adapter, validate::ExpectedIdentity> = session
        .resolved
        .job
        .adapters
        .iter()
        .map(|a| (a.clone(), validate::ExpectedIdentity::new(&session.loaded.manifest, a, code_version.clone())))
        .collect();
    let requests: u64 = session.prepared.iter().map(|p| u64::from(p.requests())).sum();
    observer.on(Event::Started { groups: session.schedule.groups().len(), requests });
    let interrupts = &session.interrupts;
    let mut executed = Executed {
        workers: Vec::new(),
        problems: Vec::new(),
        groups_wall: Default::default(),
        quiet_wait: Default::default(),
        energy: meter.record(),
        cpus: Default::default(),
        sequential: None,
    };
    for group in session.schedule.groups() {
        let members = &session.prepared[group.runs.clone()];
        let cell_name = members[0].planned.cell.name();
        if !members[0].planned.aa && session.sequential.as_ref().is_some_and(|s| s.borrow().skips(&cell_name)) {
            continue;
        }
        if interrupts.count() > 0 {
            let not_started =
                members.iter().map(|p| format!("{}: not started, the session was cancelled", p.job.run_id));
            executed.problems.extend(not_started);
            continue;
        }
        let names: Vec<&str> = members.iter().map(|p| p.planned.adapter.as_str()).collect();
        let what = names.join(" + ");
        observer.on(Event::GroupStarted { cell: &cell_name, members: &what });
        let waiting = Instant::now();
        let quiet_note = wait_for_quiet(quiet_wait, interrupts, observer);
        if quiet_wait > 0 {
            // Without --quiet-wait nothing waited: the call's own nanoseconds are launcher time.
            executed.quiet_wait += waiting.elapsed();
        }
        let limits = Limits { placement: session.mask, ..limits(&members[0].job.run_policy, members.len() as u32) };
        let children_before = host::reaped_children_cpu_time();
        let sampler = host::HostSampler::start();
        let group_started = Instant::now();
        // Gated: an interleaved group, or a lone worker while an energy source is active (the
        // schedule decided it when the jobs were written).
        let gated = members[0].job.gate;
        let idle_window = if gated { energy::IDLE_WINDOW } else { std::time::Duration::ZERO };
        let mut recorder = energy::GroupRecorder::new(meter, members.len(), idle_window);
        let outcomes = execution.run_group(members, limits, interrupts, observer, &mut recorder)?;
        let (idle, energies) = recorder.finish();
        executed.groups_wall += group_started.elapsed();
        let measured =
            host::reaped_children_cpu_time().zip(children_before).map(|(after, before)| after.saturating_sub(before));
        let activity = sampler.finish(measured);
        if let Some(note) = quiet_note {
            observer.on(Event::Note(format!("{cell_name}: {note}")));
        }
        observer.on(Event::GroupDone {
            cell: &cell_name,
            members: &what,
            requests: members.iter().map(|p| u64::from(p.requests())).sum(),
            wall: group_started.elapsed(),
            elapsed: session.started.elapsed(),
        });
        if let Some(idle) = idle {
            executed.energy.idle.push(energy::idle_reading(
                &members[0].planned.cell.name(),
                members[0].planned.repetition,
                members[0].planned.aa,
                idle,
            ));
        }
        let processes = outcomes.iter().flat_map(|o| std::iter::once(o).chain(&o.ranks));
        executed.cpus.extend(processes.filter_map(|o| o.cpus.clone()));
        for ((p, outcome), requests) in members.iter().zip(outcomes).zip(energies) {
            let mut run = record_run(p, &expected[&p.planned.adapter], outcome, &mut executed.problems);
            run.host_activity = Some(activity.clone());
            run.energy = (gated && meter.is_active()).then_some(requests);
            executed.workers.push(run);
        }
        if let (Some(sequential), false) = (&session.sequential, members[0].planned.aa) {
            let so_far = record::so_far(session, executed.workers.clone(), &executed.cpus);
            sequential.borrow_mut().after_group(
                &cell_name,
                &so_far,
                group_started.elapsed(),
                session.started.elapsed(),
            );
        }
    }
    observer.on(Event::GroupsDone);
    executed.sequential = session.sequential.as_ref().map(|s| s.borrow().record());
    if let Some(record) = &executed.sequential {
        for line in crate::report::sequential_lines(record) {
            observer.on(Event::Note(line));
        }
    }
    Ok(executed)
}

/// The launcher's limits for a worker that runs in a group of `members` (1 when not interleaved).
/// A gated worker's own deadline pauses while it waits at the gate, so from its ready file to
/// its exit it may take every member's deadline.
fn limits(policy: &decode_baseline_wire::RunPolicy, members: u32) -> Limits {
    let grace = std::time::Duration::from_secs(policy.backstop_grace_s.into());
    Limits {
        ready_timeout: std::time::Duration::from_secs(policy.ready_timeout_s.into()),
        run_timeout: std::time::Duration::from_secs(policy.job_deadline_s.into()) * members.max(1) + grace * 2,
        grace,
        placement: placement::Mask::inherit(),
    }
}

/// Reads and validates the report of a finished worker and records what the launcher saw.
fn record_run(
    p: &Prepared,
    expected: &validate::ExpectedIdentity,
    mut outcome: supervise::Outcome,
    problems: &mut Vec<String>,
) -> WorkerRun {
    let (job, out_dir) = (&p.job, &p.out_dir);
    let exit_code = supervise::exit_code(&outcome.status);
    let rank_outcomes = std::mem::take(&mut outcome.ranks);
    let (report, validation_errors) = validate::read_and_validate(out_dir, job, expected, outcome.pid, exit_code);
    for error in &validation_errors {
        problems.push(format!("{}: {error}", job.run_id));
    }
    if let Some(r) = report.as_ref().filter(|r| r.status != Status::Ok) {
        let reason = r.error.as_deref().unwrap_or("no reason given");
        problems.push(format!("{}: worker ended {:?}: {reason}", job.run_id, r.status));
    }
    let ranks = rank_group::record_ranks(&p.ranks, rank_outcomes, expected, report.as_ref(), problems);
    // A group's run counts only when every rank ended well: every reader of the session skips
    // a run with validation errors (the ranks' own problems are in `problems` already).
    let mut validation_errors = validation_errors;
    validation_errors.extend(ranks.iter().filter_map(RankRun::problem));
    WorkerRun {
        run_id: job.run_id.clone(),
        cell: p.planned.cell.name(),
        adapter: p.planned.adapter.clone(),
        repetition: p.planned.repetition,
        aa: p.planned.aa,
        sequence: p.sequence,
        command: p.command.clone(),
        pid: Some(outcome.pid),
        exit_code,
        signal: supervise::exit_signal(&outcome.status),
        intervention: supervise::describe(outcome.intervention, outcome.sent),
        wall_ns: outcome.wall.as_nanos() as u64,
        validation_errors,
        host_activity: None,
        energy: None,
        report,
        ranks,
    }
}

/// With `--quiet-wait S`, waits for a quiet host for at most S seconds; returns a sentence when
/// the host did not get quiet in time (the run goes ahead, and the session lists it).
fn wait_for_quiet(bound_s: u64, interrupts: &Interrupts, observer: &dyn Observer) -> Option<String> {
    if bound_s == 0 {
        return None;
    }
    observer.on(Event::WaitingForQuiet);
    let stop = || interrupts.count() > 0;
    let window = std::time::Duration::from_secs(2);
    match host::wait_for_quiet(host::MAX_OTHER_CPUS, window, std::time::Duration::from_secs(bound_s), &stop) {
        Ok(_) | Err(host::QuietError::Stopped) => None,
        Err(err) => Some(format!("--quiet-wait: {err}; started anyway")),
    }
}
