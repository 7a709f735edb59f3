//! `decode-baseline run --job job.json`: the session from lease to `session.json`, in three
//! steps: prepare (`prepare.rs`), run the groups (`groups.rs`), finish (`finish.rs`).

use decode_baseline_wire::ExitCode;

use super::{
    execute::Processes,
    finish::{finish, SessionOutcome, Show},
    groups::execute,
    options::{RunArgs, RunOptions},
    prepare::prepare,
    rank_group, session_job,
};
use crate::energy;

/// `decode-baseline run`: the session job at `args.job`, run by [`run_session`].
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let resolved = session_job::load(&args.job)?;
    Ok(run_session(resolved, &args.options)?.code)
}

/// Runs a session: prepare (manifest, schedule, folders, worker jobs) → execute (each group
/// of workers) → finish (analysis, `session.json`, the table, the exit code).
pub fn run_session(resolved: session_job::ResolvedJob, options: &RunOptions) -> anyhow::Result<SessionOutcome> {
    // Opened before anything is created: a bad DECODE_BASELINE_FAKE_ENERGY is bad input.
    let mut meter = energy::Meter::from_environment().map_err(crate::exit::bad_input)?;
    let session = prepare(resolved, options, meter.is_active())?;
    if options.dry_run {
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
        return Ok(SessionOutcome::without_report(ExitCode::Ok));
    }
    let log = !options.quiet && !std::io::IsTerminal::is_terminal(&std::io::stderr());
    let executed = execute(&session, options.quiet_wait, log, &mut Processes, &mut meter)?;
    finish(session, executed, &Show::of(options))
}
