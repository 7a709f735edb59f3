//! `decode-baseline run --job job.json`: the session from lease to `session.json`, in three
//! steps of the engine: prepare (`prepare.rs`), run the groups (`groups.rs`), finish
//! (`finish.rs`), which print nothing and tell their progress as events; `run` shows those
//! (`display.rs`) and the finished session (`show.rs`).

use std::path::Path;

use decode_baseline_wire::{session::SessionReport, ExitCode};

use super::{
    display::Display,
    events::{Event, Observer},
    execute::Processes,
    finish::{finish, SessionOutcome},
    groups::execute,
    options::RunArgs,
    prepare::{prepare, Session},
    rank_group, session_job,
    session_options::SessionOptions,
    show::{show, Show},
};
use crate::energy;

/// `decode-baseline run`: the session job at `args.job`, run by [`run_session`].
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let resolved = session_job::load(&args.job)?;
    Ok(run_session(resolved, &args.options.session(), &args.options.show(), |_, _| Ok(()))?.code)
}

/// Runs a session: prepare (manifest, schedule, folders, worker jobs) → execute (each group
/// of workers) → finish (analysis, `session.json`) as `options` say, its progress drawn on stderr
/// as it goes; then lets `beside` write the caller's records into the session folder (`bench
/// --ranks`'s rank table), writes its figures and page (`report::publish`) once, with them,
/// and prints the table, the JSON or nothing as `shown` says; returns the exit code with the
/// report. A record `beside` could not write is a warning: the session's own record stands.
pub fn run_session(
    resolved: session_job::ResolvedJob,
    options: &SessionOptions,
    shown: &Show,
    beside: impl FnOnce(&SessionReport, &Path) -> anyhow::Result<()>,
) -> anyhow::Result<SessionOutcome> {
    let log = !shown.quiet && !std::io::IsTerminal::is_terminal(&std::io::stderr());
    let display = Display::new(log, shown.details());
    // Opened before anything is created: a bad DECODE_BASELINE_FAKE_ENERGY is bad input.
    let mut meter = energy::Meter::from_environment().map_err(crate::exit::bad_input)?;
    let session = prepare(resolved, options, meter.is_active(), &display)?;
    if options.dry_run {
        print_dry_run(&session)?;
        return Ok(SessionOutcome::without_report(ExitCode::Ok));
    }
    let executed = execute(&session, options.quiet_wait, &mut Processes, &mut meter, &display)?;
    let mut outcome = finish(session, executed, options.noise_profile.as_deref(), &display)?;
    if let (Some(report), Some(recorded)) = (&outcome.report, &outcome.recorded) {
        if let Err(err) = beside(report, &recorded.dir) {
            display.on(Event::Warning(format!("{err:#}")));
        }
        let (view, warnings) = crate::report::publish(report, &recorded.dir);
        for warning in warnings {
            display.on(Event::Warning(warning));
        }
        show(report, &view, shown)?;
    }
    // Held while the figures and the page were drawn: a session waiting for this machine
    // starts on a quiet one.
    drop(outcome.lease.take());
    Ok(outcome)
}

/// `--dry-run`: the session folder and each worker's command (a rank group's host file written
/// where its hosts are given).
fn print_dry_run(session: &Session) -> anyhow::Result<()> {
    println!("session folder: {}", session.dir.display());
    for p in &session.prepared {
        match &p.group {
            None => println!("{}", p.command.join(" ")),
            Some(group) => {
                let hostfile = rank_group::hostfile_path(&p.out_dir);
                // Hosts given: the host file each host needs is written now; without them the
                // ports are found when the group starts.
                if group.hosts.is_some() {
                    rank_group::write_hostfile(&hostfile, group).map_err(crate::exit::bad_input)?;
                }
                println!(
                    "{} as {} ranks over {} (host file {}):",
                    p.job.run_id,
                    group.ranks,
                    group.backend.as_str(),
                    hostfile.display()
                );
                for (rank, process) in p.processes().iter().enumerate() {
                    println!("  {}", rank_group::rank_line(group, rank, &process.env, process.argv));
                }
            }
        }
    }
    Ok(())
}
