//! `decode-baseline run --job job.json`: the session from lease to `session.json`.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::{Instant, SystemTime},
};

use crate::{
    energy,
    export::Exporter,
    host,
    schedule::{self, Schedule},
};
use anyhow::Context;
use decode_baseline_pins::{self as pins, PinError, PinProblem};
use decode_baseline_wire::{
    report::Status,
    session::{
        CaseFiles, HostFacts, InterventionReason, LauncherMarker, LeaseFacts, RankRun, SessionReport, SessionStatus,
        WorkerRun, LAUNCHER_MARKER_SCHEMA_VERSION, SESSION_REPORT_SCHEMA_VERSION,
    },
    Adapter, ExitCode,
};
use indicatif::{ProgressBar, ProgressStyle};

use super::{
    analysis, device,
    execute::{Execution, Prepared, Processes},
    lease, memory, output, placement, plan, preflight, rank_group, recovery,
    sequential::{Budget, Sequential},
    session_job::{self, repo_root},
    signals::Interrupts,
    supervise::{self, Limits},
    validate,
    worker_job::{self, LoadedManifest},
};

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The session job (JSON, see req/session.md).
    #[arg(long)]
    pub job: PathBuf,
    #[command(flatten)]
    pub options: RunOptions,
}

/// How a session runs and shows its result: everything of `run` but the job, so that a caller
/// with a job in hand (`bench`) runs it through [`run_session`].
#[derive(Debug, Clone, clap::Args)]
pub struct RunOptions {
    /// Fail at once (exit 7) if another session holds the benchmark lease, instead of waiting.
    #[arg(long)]
    pub no_wait: bool,
    /// Print the session report as JSON on stdout instead of the summary table.
    #[arg(long)]
    pub json: bool,
    /// Print every figure of every row under the summary's place: the per-step split, the cold
    /// requests, each warning, each verdict with its rule and error, the energy rows (the
    /// default view fits 100 columns and leaves these to this flag and the report page).
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// Create the session folder and write every worker job, print the worker commands, run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Before each worker (or interleaved group), wait until other processes have used less
    /// than a quarter of a CPU over 2 s, for at most this many seconds; past the bound the
    /// worker starts anyway and its row is marked. 0 (the default): do not wait.
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub quiet_wait: u64,
    /// The CPUs every worker may run on: `first` (the default: the lowest-numbered CPU the
    /// launcher may use), `all` (left to the OS), or a list such as `0`, `0,1`, `0-3`. Applied
    /// to each worker before it starts (Linux; on macOS left to the OS) and recorded in the
    /// session; `compare` refuses sessions of different placement. See `req/findings.md` §18
    /// for how the default was chosen; a model bound by multi-threaded kernels may want more.
    #[arg(long, value_name = "LIST", default_value = "first", value_parser = placement::Cpus::parse)]
    pub cpus: placement::Cpus,
    /// The host noise profile file for the table's verdicts and the `--until-decided` looks
    /// (`decode-baseline calibrate`). Default: this host's profile file when it exists and holds
    /// the session's design.
    #[arg(long, value_name = "FILE")]
    pub noise_profile: Option<PathBuf>,
    /// Treat each cell's interleaved groups as the looks of a group-sequential test: after each
    /// group, test the cell's rows at the Pocock boundary and start no more groups of the cell
    /// once every row is decided (or at the budget); the job's `repetitions` is replaced by the
    /// planned number of looks. Needs `order: interleaved`.
    #[arg(long)]
    pub until_decided: bool,
    /// Worker runs per adapter and cell, in place of the job's `repetitions`: a row's verdict
    /// needs two runs or more a side (its error must hold run-to-run effects), and four give
    /// it power (req/compare.md).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repetitions: Option<u32>,
    /// With `--until-decided`: the most pairs per cell (`200`) or the most time for the session
    /// (`5m`, `90s`); default 5m.
    #[arg(long, value_name = "5m|N", requires = "until_decided", value_parser = Budget::parse)]
    pub budget: Option<Budget>,
    /// A session folder made beforehand by `bench` (it holds the session's own manifest), used
    /// instead of a new folder below `output_root`.
    #[arg(skip)]
    pub session_dir: Option<PathBuf>,
    /// Print nothing on stdout at the end (`bench` prints its own summary).
    #[arg(skip)]
    pub quiet: bool,
}

/// `decode-baseline run`: the session job at `args.job`, run by [`run_session`].
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let resolved = session_job::load(&args.job)?;
    Ok(run_session(resolved, &args.options)?.code)
}

/// How a session ended: its exit code, and its report when it ran (also when `session.json`
/// could not be written: the report is whole, only its file is missing).
#[derive(Debug)]
pub struct SessionOutcome {
    pub code: ExitCode,
    pub report: Option<SessionReport>,
}

impl SessionOutcome {
    fn without_report(code: ExitCode) -> Self {
        SessionOutcome { code, report: None }
    }
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

/// A session with its folder, its marker and every worker's folder and job written.
struct Session {
    resolved: session_job::ResolvedJob,
    loaded: LoadedManifest,
    cells: Vec<decode_baseline_wire::manifest::Cell>,
    /// The runs in their groups; `prepared` holds them in the same order.
    schedule: Schedule,
    repo: PathBuf,
    interrupts: Interrupts,
    id: String,
    started_utc: String,
    started: Instant,
    /// `None` for a dry run.
    lease: Option<lease::Lease>,
    dir: PathBuf,
    prepared: Vec<Prepared>,
    replaced_programs: BTreeMap<Adapter, Vec<String>>,
    /// `--cpus` as asked, and resolved against the launcher's own CPUs.
    cpus: placement::Cpus,
    mask: placement::Mask,
    /// `--until-decided`.
    sequential: Option<std::cell::RefCell<Sequential>>,
}

/// Prepares a session; a session refused before it started is an error that carries its exit
/// code (`exit_code::of`).
/// `energy`: an energy source is active, so every worker goes through the request gate (an
/// interleaved group's members do anyway), where the launcher reads energy per request.
fn prepare(mut resolved: session_job::ResolvedJob, args: &RunOptions, energy: bool) -> anyhow::Result<Session> {
    // A full disk can show up as RLIMIT_FSIZE, whose SIGXFSZ would kill the launcher in the
    // middle of writing `session.json` without a word. Ignored, the write fails with EFBIG,
    // the temp is removed and the error is reported. Workers inherit the ignored disposition.
    // SAFETY: setting a disposition to SIG_IGN installs no handler code.
    unsafe { nix::sys::signal::signal(nix::sys::signal::Signal::SIGXFSZ, nix::sys::signal::SigHandler::SigIgn) }
        .context("failed to ignore SIGXFSZ")?;
    let loaded = match load_manifest(&resolved.manifest_path) {
        Ok(loaded) => loaded,
        Err(err)
            if matches!(
                err.problem,
                PinProblem::ManifestPin { .. } | PinProblem::PinRead { .. } | PinProblem::PinFormat { .. }
            ) =>
        {
            return Err(crate::exit::refused(
                ExitCode::GuardMismatch,
                format!("{err}; run `decode-baseline guard` for every check"),
            ));
        }
        Err(err) => return Err(err.into()),
    };
    if let Some(repetitions) = args.repetitions {
        resolved.job.repetitions = repetitions;
    }
    let cells = session_job::select_cells(&resolved, &loaded.manifest)?;
    if let Some(group) = &resolved.job.group {
        rank_group::check(group, args.dry_run).map_err(|problem| {
            crate::exit::bad_input(format!("session job {}: {problem}", resolved.job_path.display()))
        })?;
    }
    session_job::check_adapters(&resolved, &loaded.manifest)?;
    let ranks = resolved.job.group.as_ref().map_or(1, |g| g.ranks);
    let mask = placement::Mask::resolve(&args.cpus, ranks).map_err(crate::exit::bad_input)?;
    let sequential = match args.until_decided {
        false => None,
        true if !schedule::interleaves(&resolved.job) => {
            crate::bad_input!(
                "session job {}: --until-decided needs order `interleaved` (its looks are paired tests)",
                resolved.job_path.display()
            );
        }
        true => {
            let pairs = loaded.manifest.run_policy.measured_requests;
            let rows_per_cell = resolved.job.adapters.iter().filter(|a| **a != resolved.job.reference()).count();
            let (planned, state) = Sequential::new(
                args.budget.unwrap_or_default(),
                pairs,
                cells.len(),
                rows_per_cell,
                args.noise_profile.clone(),
            )
            .map_err(|problem| crate::exit::bad_input(format!("--until-decided: {problem}")))?;
            resolved.job.repetitions = planned;
            Some(std::cell::RefCell::new(state))
        }
    };
    let schedule = Schedule::new(&resolved.job, &cells);
    let runs = schedule.runs();
    let repo = repo_root();
    if let Err(problem) = check_memory(&loaded, &schedule, &repo) {
        crate::bad_input!("session job {}: order: {problem}", resolved.job_path.display());
    }
    let programs: BTreeMap<Adapter, Vec<String>> = resolved
        .job
        .adapters
        .iter()
        .map(|a| plan::program(a, &loaded.manifest, &loaded.path, &repo).map(|argv| (a.clone(), argv)))
        .collect::<Result<_, String>>()
        .map_err(|problem| {
            crate::exit::bad_input(format!("session job {}: adapters: {problem}", resolved.job_path.display()))
        })?;
    if !args.dry_run && plan::controlled_needs_probe() && runs.iter().any(|r| r.adapter == Adapter::Controlled) {
        preflight::probe_controlled(&plan::controlled_program()).map_err(crate::exit::bad_input)?;
    }
    let interrupts = Interrupts::install().context("failed to install the Ctrl-C handler")?;
    let started_utc = utc_now();
    let id = match &args.session_dir {
        Some(dir) => dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        None => session_id(&started_utc),
    };

    let lease = if args.dry_run {
        None
    } else {
        match lease::acquire(&id, args.no_wait) {
            Ok(lease) => Some(lease),
            Err(err @ lease::LeaseError::Busy { .. }) => {
                return Err(crate::exit::refused(ExitCode::LeaseBusy, err.to_string()));
            }
            Err(err) => return Err(err.into()),
        }
    };
    let started = Instant::now();
    if lease.is_some() {
        for line in recovery::recover(&resolved.output_root, &id, &started_utc) {
            eprintln!("decode-baseline: {line}");
        }
    }
    let dir = match &args.session_dir {
        Some(dir) => dir.clone(),
        None => create_session_dir(&resolved.output_root, &id)?,
    };
    if !args.dry_run {
        recovery::write_marker(
            &dir,
            &LauncherMarker {
                schema_version: LAUNCHER_MARKER_SCHEMA_VERSION,
                session_id: id.clone(),
                pid: std::process::id(),
                started_utc: started_utc.clone(),
                job: resolved.job.clone(),
                manifest_path: loaded.path.clone(),
                manifest_sha256: loaded.sha256,
            },
        )
        .with_context(|| format!("failed to write {}", dir.join(recovery::MARKER).display()))?;
    }

    // Every worker's folder and job first: a dry run stops here, a real run finds them ready.
    let mut prepared = Vec::new();
    let gated: Vec<bool> =
        schedule.groups().iter().flat_map(|g| std::iter::repeat_n(g.gated(energy), g.runs.len())).collect();
    for (sequence, planned) in runs.iter().enumerate() {
        let out_dir = dir.join(planned.cell.name()).join(planned.folder_name());
        std::fs::create_dir_all(out_dir.parent().unwrap())
            .and_then(|_| std::fs::create_dir(&out_dir))
            .with_context(|| format!("failed to create worker folder {}", out_dir.display()))?;
        let run_id = format!("{id}/{}/{}", planned.cell.name(), planned.folder_name());
        // A group's ranks wait at the gate even alone: the launcher starts each request on every
        // rank at once.
        let group = resolved.job.group.clone();
        let gate = gated[sequence] || group.is_some();
        let mut job = worker_job::build(&loaded, &planned.cell, &planned.adapter, run_id, &repo, gate)?;
        let program = &programs[&planned.adapter];
        let ranks = match &group {
            Some(group) => rank_group::prepare(&mut job, &out_dir, group, program)?,
            None => Vec::new(),
        };
        rank_group::write_job(&out_dir, &job)?;
        let command = plan::worker_command(program, &out_dir);
        prepared.push(Prepared {
            sequence: sequence as u32,
            planned: planned.clone(),
            out_dir,
            job,
            command,
            group,
            ranks,
        });
    }
    let replaced_programs = replaced_programs(&resolved.job.adapters);
    for (adapter, argv) in &replaced_programs {
        eprintln!("decode-baseline: {}", crate::session::replaced_line(adapter, argv));
    }
    Ok(Session {
        resolved,
        loaded,
        cells,
        schedule,
        repo,
        interrupts,
        id,
        started_utc,
        started,
        lease,
        dir,
        prepared,
        replaced_programs,
        cpus: args.cpus.clone(),
        mask,
        sequential,
    })
}

/// What the workers of a session left, as the launcher recorded it.
struct Executed {
    workers: Vec<WorkerRun>,
    problems: Vec<String>,
    /// Wall time spent inside worker groups (members of an interleaved group overlap).
    groups_wall: std::time::Duration,
    /// Time spent in `--quiet-wait` before the groups.
    quiet_wait: std::time::Duration,
    /// The energy sources and the groups' idle readings (the analysis comes in `finish`).
    energy: decode_baseline_wire::energy::SessionEnergy,
    /// The distinct CPU masks the workers were read back with.
    cpus: std::collections::BTreeSet<String>,
    /// `--until-decided`: each cell's sequential test.
    sequential: Option<decode_baseline_wire::sequential::SequentialRecord>,
}

/// Runs every group of the session in turn with `execution` and records each worker's run;
/// `meter` reads energy at the gate of interleaved groups. With `log`, a line per finished group
/// on stderr (`progress_log`: standard error is not a terminal, so the bar draws nothing).
fn execute(
    session: &Session,
    quiet_wait: u64,
    log: bool,
    execution: &mut dyn Execution,
    meter: &mut energy::Meter,
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
    let total_requests: u64 = session.prepared.iter().map(|p| u64::from(p.requests())).sum();
    let progress = ProgressBar::new(total_requests).with_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} requests, ~{eta} left  {msg}")
            .expect("valid template"),
    );
    let mut progress_log = super::progress_log::ProgressLog::new(session.schedule.groups().len(), total_requests);
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
        progress.set_message(format!("{} {}", members[0].planned.cell.name(), names.join(" + ")));
        let waiting = Instant::now();
        let quiet_note = wait_for_quiet(quiet_wait, interrupts, &progress);
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
        let outcomes = execution.run_group(members, limits, interrupts, &progress, &mut recorder)?;
        let (idle, energies) = recorder.finish();
        executed.groups_wall += group_started.elapsed();
        let measured =
            host::reaped_children_cpu_time().zip(children_before).map(|(after, before)| after.saturating_sub(before));
        let activity = sampler.finish(measured);
        if let Some(note) = &quiet_note {
            progress.suspend(|| eprintln!("decode-baseline: {}: {note}", members[0].planned.cell.name()));
        }
        if log {
            let requests = members.iter().map(|p| u64::from(p.requests())).sum();
            let what = format!("{cell_name} {}", names.join(" + "));
            let line = progress_log.group_done(&what, requests, group_started.elapsed(), session.started.elapsed());
            eprintln!("decode-baseline: {line}");
        }
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
            let so_far = provisional_report(session, &executed);
            sequential.borrow_mut().after_group(
                &cell_name,
                &so_far,
                group_started.elapsed(),
                session.started.elapsed(),
            );
        }
    }
    progress.finish_and_clear();
    executed.sequential = session.sequential.as_ref().map(|s| s.borrow().record());
    if let Some(record) = &executed.sequential {
        for line in crate::report::sequential_lines(record) {
            eprintln!("decode-baseline: {line}");
        }
    }
    Ok(executed)
}

/// What a sequential look tests: the session's workers so far, in a report that is never written.
fn provisional_report(session: &Session, executed: &Executed) -> SessionReport {
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
        device: device::identify(&executed.workers),
        lease: None,
        started_utc: session.started_utc.clone(),
        finished_utc: String::new(),
        wall_ns: 0,
        launcher_overhead_ns: 0,
        quiet_wait_ns: None,
        reference: session.resolved.job.reference(),
        workers: executed.workers.clone(),
        analysis: None,
        problems: Vec::new(),
        unpinned: !session.replaced_programs.is_empty(),
        replaced_programs: session.replaced_programs.clone(),
        energy: None,
        placement: Some(placement::record(&session.cpus, &executed.cpus)),
        sequential: None,
        decisions: None,
    }
}

/// Where the end of a session is shown.
struct Show {
    /// The session report as JSON on stdout instead of the table.
    json: bool,
    /// Nothing on stdout (problems still go to stderr).
    quiet: bool,
    /// The detailed table instead of the 100-column summary.
    verbose: bool,
    /// `--noise-profile`: the profile file to judge the table's rows with.
    noise_profile: Option<PathBuf>,
}

impl Show {
    fn of(args: &RunOptions) -> Self {
        Self { json: args.json, quiet: args.quiet, verbose: args.verbose, noise_profile: args.noise_profile.clone() }
    }
}

/// Analyses what the workers left, writes `session.json` (then the plots and the page), shows
/// the result and returns the session's exit code with its report.
fn finish(session: Session, executed: Executed, show: &Show) -> anyhow::Result<SessionOutcome> {
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
    let wall = session.started.elapsed();
    let workers_wall = groups_wall.as_nanos() as u64;
    let lease = session.lease;
    let mut report = SessionReport {
        schema_version: SESSION_REPORT_SCHEMA_VERSION,
        session_id: session.id,
        status,
        job: session.resolved.job.clone(),
        manifest_path: session.loaded.path.clone(),
        manifest_sha256: session.loaded.sha256,
        model_files: Some(model_files(&session.loaded, &session.cells)),
        host: Some(host_facts()),
        device: device::identify(&workers),
        lease: Some(LeaseFacts {
            path: lease.as_ref().map(|l| l.path.clone()),
            waited_ns: lease.as_ref().map(|l| l.waited.as_nanos() as u64),
        }),
        started_utc: session.started_utc,
        finished_utc: utc_now(),
        wall_ns: wall.as_nanos() as u64,
        launcher_overhead_ns: (wall.as_nanos() as u64).saturating_sub(workers_wall + quiet_wait.as_nanos() as u64),
        quiet_wait_ns: Some(quiet_wait.as_nanos() as u64),
        reference,
        workers,
        analysis: Some(analysis.body.clone()),
        problems,
        unpinned: !session.replaced_programs.is_empty(),
        replaced_programs: session.replaced_programs,
        energy: Some(energy_record),
        placement: Some(placement::record(&session.cpus, &cpus)),
        sequential,
        decisions: None,
    };
    // Every row tested once, stored with the record: each view of the session reads these.
    let profiles =
        crate::noise_profiles::resolve_or_warn(show.noise_profile.as_deref(), &report, show.quiet || show.json);
    let settings =
        crate::compare::Settings { config: crate::stats::DecisionConfig::default(), profiles: profiles.as_ref() };
    report.decisions = Some(crate::compare::decide(&report, &settings));
    let session_dir = session.dir;
    if let Err(err) = output::write_session(&session_dir, &report) {
        // The session ran and only its record is missing: not bad input. The worker folders stay
        // for the next launcher, which marks the session incomplete.
        eprintln!(
            "decode-baseline: error: {:#}; the session ran (status {:?}) but has no session.json: nothing was \
             overwritten, its worker folders are kept in {}",
            anyhow::Error::from(err),
            report.status,
            session_dir.display()
        );
        return Ok(SessionOutcome { code: ExitCode::OutputFailed, report: Some(report) });
    }
    if let Err(err) = crate::plot::write_session_plots(&report, &session_dir) {
        eprintln!("decode-baseline: warning: plots not written: {:#}", anyhow::Error::from(err));
    }
    let view = crate::report::SessionView::new(&report, &session_dir, None, true);
    if let Err(err) = crate::report::write_page(&view) {
        eprintln!("decode-baseline: warning: {} not written: {err:#}", session_dir.join(crate::report::PAGE).display());
    }
    drop(lease);
    if show.quiet {
        for problem in &report.problems {
            eprintln!("problem: {problem}");
        }
    } else {
        let exporter: &dyn Exporter<_> = match (show.json, show.verbose) {
            (true, _) => &crate::report::Json,
            (false, true) => &crate::report::Table,
            (false, false) => &crate::report::Summary,
        };
        print!("{}", exporter.export(&view)?);
    }
    if !show.quiet && !show.json {
        for problem in &report.problems {
            eprintln!("problem: {problem}");
        }
        println!("session: {:?}, report: {}", report.status, session_dir.join("session.json").display());
    }
    Ok(SessionOutcome { code: status.exit_code(), report: Some(report) })
}

/// Refuses a group of runs whose models' weights, loaded at once, exceed the available memory.
fn check_memory(loaded: &LoadedManifest, schedule: &Schedule, repo: &Path) -> Result<(), String> {
    let available = memory::available();
    let runs = schedule.runs();
    for group in schedule.groups().iter().filter(|g| g.interleaved) {
        let needed: u64 = runs[group.runs.clone()]
            .iter()
            .filter_map(|run| loaded.manifest.cases.get(&run.cell.case))
            .map(|case| memory::weight_bytes(&worker_job::model_dir(case, repo)))
            .sum();
        memory::check_fits(&runs[group.runs.start].cell.name(), group.runs.len(), needed, available)?;
    }
    Ok(())
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

/// The adapters of the session whose worker program is replaced, with the replacing command.
fn replaced_programs(adapters: &[Adapter]) -> BTreeMap<Adapter, Vec<String>> {
    adapters.iter().filter_map(|a| Some((a.clone(), plan::replacement(a)?))).collect()
}

/// With `--quiet-wait S`, waits for a quiet host for at most S seconds; returns a sentence when
/// the host did not get quiet in time (the run goes ahead, and the session lists it).
fn wait_for_quiet(bound_s: u64, interrupts: &Interrupts, progress: &ProgressBar) -> Option<String> {
    if bound_s == 0 {
        return None;
    }
    progress.set_message("waiting for a quiet host");
    let stop = || interrupts.count() > 0;
    let window = std::time::Duration::from_secs(2);
    match host::wait_for_quiet(host::MAX_OTHER_CPUS, window, std::time::Duration::from_secs(bound_s), &stop) {
        Ok(_) | Err(host::QuietError::Stopped) => None,
        Err(err) => Some(format!("--quiet-wait: {err}; started anyway")),
    }
}

/// The pinned files of every case of `cells`, from the manifest the session loaded.
fn model_files(loaded: &LoadedManifest, cells: &[decode_baseline_wire::manifest::Cell]) -> CaseFiles {
    cells
        .iter()
        .filter_map(|cell| Some((cell.case.clone(), loaded.manifest.cases.get(&cell.case)?.files.clone())))
        .collect()
}

/// Cancelled beats timeout beats worker failure beats validation failure.
fn session_status(workers: &[WorkerRun], interrupts: &Interrupts, problems: &[String]) -> SessionStatus {
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

/// Reads the manifest and checks it against its pin; the workers check everything else it pins.
fn load_manifest(path: &Path) -> Result<LoadedManifest, PinError> {
    let (manifest, bytes) = pins::load_manifest(path)?;
    let sha256 = pins::verify_pin(path, &bytes)?;
    let path = path
        .canonicalize()
        .map_err(|source| PinError::of_manifest(PinProblem::ManifestRead { path: path.to_owned(), source }))?;
    Ok(LoadedManifest { path, sha256, manifest })
}

/// A new session's id: its UTC start stamp and the launcher's pid.
fn session_id(started_utc: &str) -> String {
    format!("{}-{}", started_utc.replace([':', '-'], ""), std::process::id())
}

/// A new, empty session folder below `root`, named as `run` names its own.
pub fn new_session_dir(root: &Path) -> anyhow::Result<PathBuf> {
    create_session_dir(root, &session_id(&utc_now()))
}

/// Creates `<root>/<id>`, refusing to reuse an existing folder. The root itself may be created.
/// Returns the canonical path, so that every path printed and recorded is absolute and free of
/// `..` (a job in `jobs/` with `output_root: "../out"`).
fn create_session_dir(root: &Path, id: &str) -> anyhow::Result<PathBuf> {
    let cannot = || format!("output_root {} cannot be created; expected a writable folder", root.display());
    std::fs::create_dir_all(root).map_err(|err| io_failure(err, cannot()))?;
    let dir = root.canonicalize().map_err(|err| io_failure(err, cannot()))?.join(id);
    std::fs::create_dir(&dir).map_err(|err| {
        io_failure(err, format!("failed to create session folder {} (output_root must be writable)", dir.display()))
    })?;
    Ok(dir)
}

/// An I/O error on a folder the job named: the input's fault (exit 2) when the folder is not
/// one the user may write (permissions, a read-only file system, a file in the way), anything
/// else (a full disk, an I/O error) unexpected (exit 9).
fn io_failure(err: std::io::Error, what: String) -> anyhow::Error {
    use std::io::ErrorKind::*;
    match err.kind() {
        PermissionDenied | ReadOnlyFilesystem | NotADirectory | AlreadyExists | NotFound => {
            crate::exit::bad_input(format!("{what}: {err}"))
        }
        _ => anyhow::Error::new(err).context(what),
    }
}

fn utc_now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

fn host_facts() -> HostFacts {
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

#[cfg(test)]
mod tests {
    use std::{os::unix::process::ExitStatusExt, process::ExitStatus, time::Duration};

    use crate::launcher::supervise::Intervention;

    use decode_baseline_wire::{
        marker::Marker,
        outdir::{CLAIM_FILE, REPORT_FILE},
        report::{Identity, Phase, RequestRecord, StepRecord, WorkerReport},
        Mode, REPORT_SCHEMA_VERSION,
    };

    use super::*;

    /// An in-process stand-in for the worker processes: each member leaves its claim and a
    /// report of the given status, as a worker of its job would, and "exits" accordingly.
    struct FakeWorkers {
        status: Status,
        code_version: String,
        manifest: decode_baseline_wire::manifest::Manifest,
    }

    impl FakeWorkers {
        fn report(&self, p: &Prepared, pid: u32) -> WorkerReport {
            let job = &p.job;
            let pins = &job.environment;
            let steps_per_request = match job.mode {
                Mode::FixedContinuation => job.run_policy.fixed_continuation_steps,
                Mode::Headline | Mode::ReferencePair => job.run_policy.max_new_tokens - 1,
            };
            let prompt_len = job.prompt_ids.len() as u32;
            let plan: Vec<Option<Phase>> = job.run_policy.request_plan(job.mode);
            let requests = if self.status == Status::Ok { plan } else { Vec::new() };
            let requests = requests
                .into_iter()
                .enumerate()
                .map(|(index, phase)| RequestRecord {
                    index: index as u32,
                    phase,
                    prompt_len,
                    prefill_dur_ns: 1_000,
                    first_token_ns: 1_000,
                    first_token: 1,
                    steps: (1..=steps_per_request)
                        .map(|s| StepRecord {
                            position: prompt_len + s,
                            argmax: 1,
                            // Step times that differ a little, as measured ones do.
                            t_ns: 1_000 + u64::from(s) * 500 + u64::from(s % 3),
                            dur_ns: 500,
                            build_ns: None,
                            eval_ns: None,
                            margin: (job.mode != Mode::Headline).then_some(1.0),
                            tie: (job.mode != Mode::Headline).then_some(false),
                        })
                        .collect(),
                    unused_forwards: 0,
                    model_calls: steps_per_request + 1,
                    peak_memory_bytes: Some(1),
                    finish_reason: "length".into(),
                })
                .collect();
            WorkerReport {
                schema_version: REPORT_SCHEMA_VERSION,
                run_id: job.run_id.clone(),
                adapter: job.adapter.clone(),
                mode: job.mode,
                case_id: job.case_id.clone(),
                prompt_id: job.prompt_id.clone(),
                status: self.status,
                exit_code: self.status.exit_code().code(),
                error: (self.status != Status::Ok).then(|| "validation failed: model_dir: fake refusal".to_owned()),
                pid,
                claimed_utc: "2026-12-01T00:00:00.000000Z".into(),
                finished_utc: "2026-12-01T00:00:01.000000Z".into(),
                start_to_ready_ns: Some(1),
                load_ns: Some(1),
                identity: Some(Identity {
                    manifest_sha256: job.manifest_sha256,
                    code_version: self.code_version.clone(),
                    worker_sources_sha256: self.manifest.worker_sources_sha256(&job.adapter),
                    lock_sha256: pins.lock_sha256,
                    mlx_version: pins.mlx_version.clone(),
                    mlx_lm_version: pins.mlx_lm_version.clone(),
                    mlx_lm_freeze_sha256: pins.mlx_lm_freeze_sha256,
                    libmlx_path: "/fake/libmlx.so".into(),
                    libmlx_sha256: pins.libmlx_sha256,
                    device: job.device,
                    backend: Some(pins.backend()),
                    device_info: Default::default(),
                }),
                test_slowdown_us: None,
                group: None,
                requests,
            }
        }
    }

    impl Execution for FakeWorkers {
        fn run_group(
            &mut self,
            members: &[Prepared],
            _: Limits,
            _: &Interrupts,
            progress: &ProgressBar,
            energy: &mut energy::GroupRecorder<'_>,
        ) -> anyhow::Result<Vec<supervise::Outcome>> {
            // An interleaved group goes through the gate as `interleave` drives it: each
            // request granted in turn and seen done 2 ms later.
            if members[0].job.gate {
                let requests: Vec<u32> = members.iter().map(|p| p.requests()).collect();
                let order = crate::launcher::interleave::grant_order(&requests, true);
                for (m, k) in order {
                    energy.before_grant(m, k);
                    std::thread::sleep(Duration::from_millis(2));
                    energy.done(m, k);
                }
            }
            let mut outcomes = Vec::new();
            for p in members {
                let pid = 40_000 + p.sequence;
                let claim = Marker { utc: "2026-12-01T00:00:00.000000Z".into(), pid };
                std::fs::write(p.out_dir.join(CLAIM_FILE), serde_json::to_vec(&claim)?)?;
                let report = self.report(p, pid);
                std::fs::write(p.out_dir.join(REPORT_FILE), serde_json::to_vec_pretty(&report)?)?;
                progress.inc(u64::from(p.requests()));
                outcomes.push(supervise::Outcome {
                    pid,
                    status: ExitStatus::from_raw(report.exit_code << 8),
                    intervention: Intervention::None,
                    sent: None,
                    wall: Duration::from_millis(3),
                    cpus: Some("0".to_owned()),
                    ranks: Vec::new(),
                });
            }
            Ok(outcomes)
        }
    }

    /// A session of the repository's manifest, prepared (folders and worker jobs) in a temp
    /// folder without the host lease, and a fake for its workers.
    fn prepared_session(root: &Path, status: Status) -> (Session, FakeWorkers) {
        prepared_session_in_order(root, status, "fixed")
    }

    fn prepared_session_in_order(root: &Path, status: Status, order: &str) -> (Session, FakeWorkers) {
        prepared_session_with(root, status, order, false)
    }

    /// As [`prepared_session_in_order`], with `energy` telling `prepare` whether an energy
    /// source is active.
    fn prepared_session_with(root: &Path, status: Status, order: &str, energy: bool) -> (Session, FakeWorkers) {
        let job = serde_json::json!({
            "schema_version": decode_baseline_wire::session::SESSION_JOB_SCHEMA_VERSION,
            "manifest": repo_root().join("workloads.json"),
            "cells": ["tiny-qwen3.tiny-qwen3-L16.headline", "tiny-qwen3.tiny-qwen3-L16.reference_pair"],
            "adapters": ["stock", "controlled"],
            "reference": "stock",
            "output_root": root.join("out"),
            "repetitions": 1,
            "order": order,
            "aa_pair": false
        });
        let job_path = root.join("job.json");
        std::fs::write(&job_path, job.to_string()).unwrap();
        let resolved = session_job::load(&job_path).unwrap();
        let options = RunOptions {
            no_wait: true,
            json: false,
            verbose: false,
            // Prepared as a dry run prepares it: no lease, no launcher marker.
            dry_run: true,
            quiet_wait: 0,
            cpus: placement::Cpus::First,
            noise_profile: None,
            until_decided: false,
            repetitions: None,
            budget: None,
            session_dir: None,
            quiet: true,
        };
        let session = prepare(resolved, &options, energy).unwrap_or_else(|err| panic!("prepare refused: {err:#}"));
        let fake = FakeWorkers {
            status,
            code_version: decode_baseline_pins::code_version(&session.repo),
            manifest: session.loaded.manifest.clone(),
        };
        (session, fake)
    }

    const SHOW: Show = Show { json: false, quiet: true, verbose: false, noise_profile: None };

    /// A meter with no source, as on this project's machines.
    fn no_energy() -> energy::Meter {
        energy::Meter::new(
            Vec::new(),
            vec![energy::MissingSource {
                source: "nvml",
                why: energy::Missing::NoDriver { library: energy::NVML_LIBRARY.into() },
            }],
            None,
        )
    }

    /// A meter with the fake source of `spec` (`DECODE_BASELINE_FAKE_ENERGY`'s syntax).
    fn fake_meter(spec: &str) -> energy::Meter {
        energy::Meter::new(
            vec![Box::new(energy::FakeSource::from_spec(energy::FakeSpec::parse(spec).unwrap()))],
            Vec::new(),
            Some(spec.into()),
        )
    }

    /// `run`'s summary table of a session written by these tests.
    fn table_of(report: &SessionReport) -> String {
        let view = crate::report::SessionView::new(report, Path::new("."), None, true);
        crate::report::Table.export(&view).unwrap()
    }

    #[test]
    fn an_interleaved_session_with_the_fake_source_records_energy_and_marks_it_fake() {
        let tmp = tempfile::tempdir().unwrap();
        let (session, mut fake) = prepared_session_in_order(tmp.path(), Status::Ok, "interleaved");
        let dir = session.dir.clone();
        let spec = "watts=120,throttle_every=5";
        let mut meter = fake_meter(spec);
        let executed = execute(&session, 0, false, &mut fake, &mut meter).unwrap();
        assert_eq!(finish(session, executed, &SHOW).unwrap().code, ExitCode::Ok);
        let report: SessionReport = serde_json::from_slice(&std::fs::read(dir.join("session.json")).unwrap()).unwrap();
        let record = report.energy.as_ref().expect("an energy record");
        assert_eq!(record.fake.as_deref(), Some(spec));
        assert_eq!(record.idle.len(), 2, "one idle reading per interleaved group");
        for w in &report.workers {
            let requests = w.report.as_ref().unwrap().requests.len();
            assert_eq!(w.energy.as_ref().map(Vec::len), Some(requests), "{}", w.run_id);
        }
        let headline = record.cells.iter().find(|c| c.cell.ends_with(".headline")).expect("the headline cell");
        let domain = &headline.domains[0];
        assert_eq!(domain.domain, "fake:0");
        assert!(domain.adapters.contains_key(&Adapter::Stock) && domain.adapters.contains_key(&Adapter::Controlled));
        let paired = &domain.paired[&Adapter::Controlled];
        assert!(paired.throttled_pairs > 0, "every fifth reading is throttled: {paired:?}");
        let table = table_of(&report);
        assert!(
            table.contains("energy: FAKE source (DECODE_BASELINE_FAKE_ENERGY=watts=120,throttle_every=5)"),
            "{table}"
        );
        assert!(table.contains("controlled/stock energy paired (fake:0)"), "{table}");
        let page = std::fs::read_to_string(dir.join(crate::report::PAGE)).unwrap();
        let options = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
        let doc = roxmltree::Document::parse_with_options(&page, options).expect("the page is well-formed XML");
        let section = doc.descendants().find(|n| n.attribute("id") == Some("energy")).expect("an energy section");
        assert!(section.descendants().any(|n| n.attribute("id") == Some("energy-table")));
        // The energy figure is a file of the session folder and on the page, as every figure is:
        // one per cell and domain of the analysis, here the headline cell (the reference-pair
        // cell has one request per worker, too few for a summary).
        let analysed: Vec<String> = record
            .cells
            .iter()
            .flat_map(|c| c.domains.iter().map(|d| format!("{}.energy-{}", c.cell, d.domain.replace(':', "-"))))
            .collect();
        assert_eq!(analysed, ["tiny-qwen3.tiny-qwen3-L16.headline.energy-fake-0"]);
        let svg = std::fs::read_to_string(dir.join(format!("{}.svg", analysed[0]))).expect("the energy figure's file");
        assert!(svg.contains("energy per token against time per token, fake:0 FAKE"), "the figure says it is fake");
        assert!(doc.descendants().any(|n| n.attribute("data-figure") == Some(analysed[0].as_str())));
        let csv = std::fs::read_to_string(dir.join(energy::CSV_FILE)).unwrap();
        assert!(csv.lines().skip(1).all(|l| l.ends_with(",true")), "{csv}");
    }

    #[test]
    fn a_sequential_session_with_an_energy_source_gates_each_worker_and_tests_energy_unpaired() {
        let tmp = tempfile::tempdir().unwrap();
        let (session, mut fake) = prepared_session_with(tmp.path(), Status::Ok, "alternate", true);
        assert!(session.prepared.iter().all(|p| p.job.gate), "every lone worker goes through the gate");
        let dir = session.dir.clone();
        let mut meter = fake_meter("watts=120");
        let executed = execute(&session, 0, false, &mut fake, &mut meter).unwrap();
        assert_eq!(finish(session, executed, &SHOW).unwrap().code, ExitCode::Ok);
        let report: SessionReport = serde_json::from_slice(&std::fs::read(dir.join("session.json")).unwrap()).unwrap();
        let record = report.energy.as_ref().expect("an energy record");
        assert_eq!(record.idle.len(), report.workers.len(), "one idle reading before each lone worker");
        for w in &report.workers {
            let requests = w.report.as_ref().unwrap().requests.len();
            assert_eq!(w.energy.as_ref().map(Vec::len), Some(requests), "{}", w.run_id);
        }
        let headline = record.cells.iter().find(|c| c.cell.ends_with(".headline")).expect("the headline cell");
        let paired = &headline.domains[0].paired[&Adapter::Controlled];
        let ratio = paired.all.expect("a two-sample ratio");
        // The fake draws the same power for both and each fake request takes about as long:
        // joules per token about equal; the requests of both, not pairs, are counted.
        assert!(ratio.lower < ratio.ratio && ratio.ratio < ratio.upper, "{ratio:?}");
        let measured: usize = report
            .workers
            .iter()
            .filter(|w| w.cell.ends_with(".headline"))
            .flat_map(|w| &w.report.as_ref().unwrap().requests)
            .filter(|q| matches!(q.phase, Some(decode_baseline_wire::report::Phase::Measured) | None))
            .count();
        assert_eq!(paired.pairs, measured, "{paired:?}");
        let table = table_of(&report);
        assert!(table.contains("controlled/stock energy"), "{table}");
    }

    #[test]
    fn without_quiet_wait_nothing_is_counted_as_waiting_and_no_waited_line_is_printed() {
        let tmp = tempfile::tempdir().unwrap();
        let (session, mut fake) = prepared_session_in_order(tmp.path(), Status::Ok, "interleaved");
        let dir = session.dir.clone();
        let executed = execute(&session, 0, false, &mut fake, &mut no_energy()).unwrap();
        assert_eq!(executed.quiet_wait, std::time::Duration::ZERO);
        assert_eq!(finish(session, executed, &SHOW).unwrap().code, ExitCode::Ok);
        let report: SessionReport = serde_json::from_slice(&std::fs::read(dir.join("session.json")).unwrap()).unwrap();
        assert_eq!(report.quiet_wait_ns, Some(0));
        let table = table_of(&report);
        assert!(!table.contains("quiet host"), "{table}");
    }

    #[test]
    fn a_session_without_a_source_says_why_once_and_shows_no_energy_figures() {
        let tmp = tempfile::tempdir().unwrap();
        let (session, mut fake) = prepared_session_in_order(tmp.path(), Status::Ok, "interleaved");
        let dir = session.dir.clone();
        let executed = execute(&session, 0, false, &mut fake, &mut no_energy()).unwrap();
        assert_eq!(finish(session, executed, &SHOW).unwrap().code, ExitCode::Ok);
        let report: SessionReport = serde_json::from_slice(&std::fs::read(dir.join("session.json")).unwrap()).unwrap();
        assert!(report.workers.iter().all(|w| w.energy.is_none()));
        let table = table_of(&report);
        let lines: Vec<&str> = table.lines().filter(|l| l.starts_with("energy")).collect();
        assert_eq!(
            lines,
            ["energy: no source: nvml missing (no NVIDIA driver: libnvidia-ml.so.1 not found)"],
            "{table}"
        );
        assert!(!table.contains("J/token"), "{table}");
        assert!(!dir.join(energy::CSV_FILE).exists());
    }

    #[test]
    fn a_session_of_fake_workers_is_validated_analysed_and_recorded_ok() {
        let tmp = tempfile::tempdir().unwrap();
        let (session, mut fake) = prepared_session(tmp.path(), Status::Ok);
        assert_eq!(session.prepared.len(), 4, "two cells, two adapters");
        let dir = session.dir.clone();
        let executed = execute(&session, 0, false, &mut fake, &mut no_energy()).unwrap();
        assert!(executed.problems.is_empty(), "{:?}", executed.problems);
        assert_eq!(finish(session, executed, &SHOW).unwrap().code, ExitCode::Ok);

        let report: SessionReport = serde_json::from_slice(&std::fs::read(dir.join("session.json")).unwrap()).unwrap();
        assert_eq!(report.status, SessionStatus::Ok, "{:?}", report.problems);
        assert_eq!(report.workers.len(), 4);
        assert!(report.workers.iter().all(|w| w.validation_errors.is_empty() && w.exit_code == Some(0)));
        let analysis = report.analysis.expect("an analysis");
        let headline =
            analysis.cells.iter().find(|c| c.cell == "tiny-qwen3.tiny-qwen3-L16.headline").expect("headline");
        // Both fake adapters take 500 ns a step: the medians are 500 ns and the ratio is 1.
        for adapter in [Adapter::Controlled, Adapter::Stock] {
            assert_eq!(headline.adapters[&adapter].per_token_ns.median, 500.0, "{adapter:?}");
        }
        let (_, ratio) = headline.ratio_to_reference(&Adapter::Controlled).expect("controlled against stock");
        assert!((ratio.ratio - 1.0).abs() < 1e-12, "{ratio:?}");
        assert!(ratio.ci.lower <= 1.0 && 1.0 <= ratio.ci.upper, "{ratio:?}");
        assert!(dir.join(crate::report::PAGE).is_file());
    }

    #[test]
    fn a_session_whose_fake_workers_fail_is_worker_failed_with_exit_5() {
        let tmp = tempfile::tempdir().unwrap();
        let (session, mut fake) = prepared_session(tmp.path(), Status::Failed);
        let dir = session.dir.clone();
        let executed = execute(&session, 0, false, &mut fake, &mut no_energy()).unwrap();
        assert_eq!(finish(session, executed, &SHOW).unwrap().code, ExitCode::WorkerFailed);
        let report: SessionReport = serde_json::from_slice(&std::fs::read(dir.join("session.json")).unwrap()).unwrap();
        assert_eq!(report.status, SessionStatus::WorkerFailed);
        assert!(
            report.problems.iter().any(|p| p.contains("worker ended Failed: validation failed: model_dir")),
            "{:?}",
            report.problems
        );
    }
}
