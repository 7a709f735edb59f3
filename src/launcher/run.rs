//! `decode-baseline run --job job.json`: the session from lease to `session.json`.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::{Instant, SystemTime},
};

use anyhow::Context;
use decode_baseline::host;
use decode_baseline_protocol::{
    pins::{self, PinError},
    report::Status,
    session::{
        self, CaseFiles, HostFacts, InterventionReason, InterventionSignal, LauncherMarker, LeaseFacts, SessionReport,
        SessionStatus, WorkerRun, LAUNCHER_MARKER_SCHEMA_VERSION, SESSION_REPORT_SCHEMA_VERSION,
    },
    Adapter, ExitCode,
};
use indicatif::{ProgressBar, ProgressStyle};

use super::{
    analysis, device, interleave, lease, memory, output, plan, preflight, recovery,
    session_job::{self, repo_root},
    signals::Interrupts,
    supervise::{self, Intervention, Limits},
    validate,
    worker_job::{self, LoadedManifest},
};

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The session job (JSON, see req/session.md).
    #[arg(long)]
    pub job: PathBuf,
    /// Fail at once (exit 7) if another session holds the benchmark lease, instead of waiting.
    #[arg(long)]
    pub no_wait: bool,
    /// Print the session report as JSON on stdout instead of the summary table.
    #[arg(long)]
    pub json: bool,
    /// Create the session folder and write every worker job, print the worker commands, run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Before each worker (or interleaved group), wait until other processes have used less
    /// than a quarter of a CPU over 2 s, for at most this many seconds; past the bound the
    /// worker starts anyway and its row is marked. 0 (the default): do not wait.
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub quiet_wait: u64,
    /// A session folder made beforehand by `bench` (it holds the session's own manifest), used
    /// instead of a new folder below `output_root`.
    #[arg(skip)]
    pub session_dir: Option<PathBuf>,
    /// Print nothing on stdout at the end (`bench` prints its own summary).
    #[arg(skip)]
    pub quiet: bool,
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    // A full disk can show up as RLIMIT_FSIZE, whose SIGXFSZ would kill the launcher in the
    // middle of writing `session.json` without a word. Ignored, the write fails with EFBIG,
    // the temp is removed and the error is reported. Workers inherit the ignored disposition.
    // SAFETY: setting a disposition to SIG_IGN installs no handler code.
    unsafe { nix::sys::signal::signal(nix::sys::signal::Signal::SIGXFSZ, nix::sys::signal::SigHandler::SigIgn) }
        .context("failed to ignore SIGXFSZ")?;
    let resolved = session_job::load(&args.job)?;
    let loaded = match load_manifest(&resolved.manifest_path) {
        Ok(loaded) => loaded,
        Err(err @ (PinError::ManifestPin { .. } | PinError::PinRead { .. } | PinError::PinFormat { .. })) => {
            eprintln!("decode-baseline: {err}; run `decode-baseline guard` for every check");
            return Ok(ExitCode::GuardMismatch);
        }
        Err(err) => return Err(err.into()),
    };
    let cells = session_job::select_cells(&resolved, &loaded.manifest)?;
    session_job::check_adapters(&resolved, &loaded.manifest)?;
    let runs = plan::plan(&resolved.job, &cells);
    let groups = plan::groups(resolved.job.order, &runs);
    let repo = repo_root();
    if let Err(problem) = check_memory(&loaded, &runs, &groups, &repo) {
        eprintln!("decode-baseline: error: session job {}: order: {problem}", resolved.job_path.display());
        return Ok(ExitCode::BadInput);
    }
    let programs: BTreeMap<Adapter, Vec<String>> = resolved
        .job
        .adapters
        .iter()
        .map(|a| plan::program(a, &loaded.manifest, &loaded.path, &repo).map(|argv| (a.clone(), argv)))
        .collect::<Result<_, String>>()
        .map_err(|problem| anyhow::anyhow!("session job {}: adapters: {problem}", resolved.job_path.display()))?;
    if !args.dry_run && plan::controlled_needs_probe() && runs.iter().any(|r| r.adapter == Adapter::Controlled) {
        if let Err(problem) = preflight::probe_controlled(&plan::controlled_program()) {
            eprintln!("decode-baseline: error: {problem}");
            return Ok(ExitCode::BadInput);
        }
    }
    let interrupts = Interrupts::install().context("failed to install the Ctrl-C handler")?;
    let started_utc = utc_now();
    let session_id = match &args.session_dir {
        Some(dir) => dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        None => session_id(&started_utc),
    };

    let lease = if args.dry_run {
        None
    } else {
        match lease::acquire(&session_id, args.no_wait) {
            Ok(lease) => Some(lease),
            Err(err @ lease::LeaseError::Busy { .. }) => {
                eprintln!("decode-baseline: {err}");
                return Ok(ExitCode::LeaseBusy);
            }
            Err(err) => return Err(err.into()),
        }
    };
    let started = Instant::now();
    if lease.is_some() {
        for line in recovery::recover(&resolved.output_root, &session_id, &started_utc) {
            eprintln!("decode-baseline: {line}");
        }
    }
    let session_dir = match &args.session_dir {
        Some(dir) => dir.clone(),
        None => create_session_dir(&resolved.output_root, &session_id)?,
    };
    if !args.dry_run {
        recovery::write_marker(
            &session_dir,
            &LauncherMarker {
                schema_version: LAUNCHER_MARKER_SCHEMA_VERSION,
                session_id: session_id.clone(),
                pid: std::process::id(),
                started_utc: started_utc.clone(),
                job: resolved.job.clone(),
                manifest_path: loaded.path.clone(),
                manifest_sha256: loaded.sha256,
            },
        )
        .with_context(|| format!("failed to write {}", session_dir.join(recovery::MARKER).display()))?;
    }

    // Every worker's folder and job first: a dry run stops here, a real run finds them ready.
    let mut prepared = Vec::new();
    let gated: Vec<bool> = groups.iter().flat_map(|g| std::iter::repeat_n(g.len() > 1, g.len())).collect();
    for (sequence, planned) in runs.iter().enumerate() {
        let out_dir = session_dir.join(planned.cell.name()).join(planned.folder_name());
        std::fs::create_dir_all(out_dir.parent().unwrap())
            .and_then(|_| std::fs::create_dir(&out_dir))
            .with_context(|| format!("failed to create worker folder {}", out_dir.display()))?;
        let run_id = format!("{session_id}/{}/{}", planned.cell.name(), planned.folder_name());
        let job = worker_job::build(&loaded, &planned.cell, &planned.adapter, run_id, &repo, gated[sequence])?;
        let mut bytes = serde_json::to_vec_pretty(&job)?;
        bytes.push(b'\n');
        std::fs::write(out_dir.join("job.json"), bytes)
            .with_context(|| format!("failed to write {}", out_dir.join("job.json").display()))?;
        let command = plan::worker_command(&programs[&planned.adapter], &out_dir);
        prepared.push(Prepared { sequence: sequence as u32, planned: planned.clone(), out_dir, job, command });
    }
    let replaced_programs = replaced_programs(&resolved.job.adapters);
    for (adapter, argv) in &replaced_programs {
        eprintln!("decode-baseline: {}", analysis::replaced_line(adapter, argv));
    }
    if args.dry_run {
        println!("session folder: {}", session_dir.display());
        for p in &prepared {
            println!("{}", p.command.join(" "));
        }
        return Ok(ExitCode::Ok);
    }

    // Taken once the session's folders exist, so that a session folder inside the repository
    // already shows in `git status` when the workers take theirs.
    let code_version = decode_baseline_protocol::worker::code_version(&repo);
    let expected: BTreeMap<Adapter, validate::ExpectedIdentity> = resolved
        .job
        .adapters
        .iter()
        .map(|a| (a.clone(), validate::ExpectedIdentity::new(&loaded.manifest, a, code_version.clone())))
        .collect();
    let total_requests: u64 = prepared.iter().map(|p| expected_requests(&p.job) as u64).sum();
    let progress = ProgressBar::new(total_requests).with_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} requests, ~{eta} left  {msg}")
            .expect("valid template"),
    );
    let mut workers: Vec<WorkerRun> = Vec::new();
    let mut problems: Vec<String> = Vec::new();
    // Wall time spent inside worker groups (members of an interleaved group overlap).
    let mut groups_wall = std::time::Duration::ZERO;
    for group in groups {
        let members = &prepared[group];
        if interrupts.count() > 0 {
            problems
                .extend(members.iter().map(|p| format!("{}: not started, the session was cancelled", p.job.run_id)));
            continue;
        }
        let names: Vec<&str> = members.iter().map(|p| p.planned.adapter.as_str()).collect();
        progress.set_message(format!("{} {}", members[0].planned.cell.name(), names.join(" + ")));
        let quiet_note = wait_for_quiet(args.quiet_wait, &interrupts, &progress);
        let limits = limits(&members[0].job.run_policy, members.len() as u32);
        let children_before = host::reaped_children_cpu_time();
        let sampler = host::HostSampler::start();
        let group_started = Instant::now();
        let outcomes = if members.len() == 1 {
            let p = &members[0];
            let outcome = supervise::supervise(&p.command, &p.out_dir, limits, &interrupts, || progress.tick())?;
            progress.inc(expected_requests(&p.job) as u64);
            vec![outcome]
        } else {
            let gated: Vec<interleave::Member<'_>> = members
                .iter()
                .map(|p| interleave::Member {
                    argv: &p.command,
                    out_dir: &p.out_dir,
                    requests: expected_requests(&p.job),
                })
                .collect();
            interleave::supervise_group(&gated, limits, &interrupts, || progress.tick(), |_| progress.inc(1))?
        };
        groups_wall += group_started.elapsed();
        let measured =
            host::reaped_children_cpu_time().zip(children_before).map(|(after, before)| after.saturating_sub(before));
        let activity = sampler.finish(measured);
        if let Some(note) = &quiet_note {
            progress.suspend(|| eprintln!("decode-baseline: {}: {note}", members[0].planned.cell.name()));
        }
        for (p, outcome) in members.iter().zip(outcomes) {
            let mut run = record_run(p, &expected[&p.planned.adapter], outcome, &mut problems);
            run.host_activity = Some(activity.clone());
            workers.push(run);
        }
    }
    progress.finish_and_clear();

    let reference = resolved.job.reference();
    let analysis = analysis::analyze(&workers, &cells, resolved.job.order, &reference);
    problems.extend(analysis.problems.iter().cloned());
    let status = session_status(&workers, &interrupts, &problems);
    let wall = started.elapsed();
    let workers_wall = groups_wall.as_nanos() as u64;
    let report = SessionReport {
        schema_version: SESSION_REPORT_SCHEMA_VERSION,
        session_id,
        status,
        job: resolved.job.clone(),
        manifest_path: loaded.path.clone(),
        manifest_sha256: loaded.sha256,
        model_files: Some(model_files(&loaded, &cells)),
        host: Some(host_facts()),
        device: device::identify(&workers),
        lease: Some(LeaseFacts {
            path: lease.as_ref().map(|l| l.path.clone()),
            waited_ns: lease.as_ref().map(|l| l.waited.as_nanos() as u64),
        }),
        started_utc,
        finished_utc: utc_now(),
        wall_ns: wall.as_nanos() as u64,
        launcher_overhead_ns: (wall.as_nanos() as u64).saturating_sub(workers_wall),
        reference,
        workers,
        analysis: Some(analysis.body.clone()),
        problems,
        unpinned: !replaced_programs.is_empty(),
        replaced_programs,
    };
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
        return Ok(ExitCode::OutputFailed);
    }
    if let Err(err) = crate::plot::write_session_plots(&report, &session_dir) {
        eprintln!("decode-baseline: warning: plots not written: {:#}", anyhow::Error::from(err));
    }
    if let Err(err) = crate::report::write_page(&report, &session_dir) {
        eprintln!("decode-baseline: warning: {} not written: {err:#}", session_dir.join(crate::report::PAGE).display());
    }
    drop(lease);
    if args.quiet {
        for problem in &report.problems {
            eprintln!("problem: {problem}");
        }
    } else if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", analysis::table(&report, &analysis.body));
        for problem in &report.problems {
            eprintln!("problem: {problem}");
        }
        println!("session: {:?}, report: {}", report.status, session_dir.join("session.json").display());
    }
    Ok(match status {
        SessionStatus::Ok => ExitCode::Ok,
        SessionStatus::ValidationFailed => ExitCode::Failed,
        SessionStatus::WorkerFailed | SessionStatus::Incomplete => ExitCode::WorkerFailed,
        SessionStatus::Timeout => ExitCode::Timeout,
        SessionStatus::Cancelled => ExitCode::Cancelled,
    })
}

/// Refuses a group of runs whose models' weights, loaded at once, exceed the available memory.
fn check_memory(
    loaded: &LoadedManifest,
    runs: &[plan::PlannedRun],
    groups: &[std::ops::Range<usize>],
    repo: &Path,
) -> Result<(), String> {
    let available = memory::available();
    for group in groups.iter().filter(|g| g.len() > 1) {
        let needed: u64 = runs[group.clone()]
            .iter()
            .filter_map(|run| loaded.manifest.cases.get(&run.cell.case))
            .map(|case| memory::weight_bytes(&worker_job::model_dir(case, repo)))
            .sum();
        memory::check_fits(&runs[group.start].cell.name(), group.len(), needed, available)?;
    }
    Ok(())
}

/// A worker run with its folder and job written, ready to start.
struct Prepared {
    sequence: u32,
    planned: plan::PlannedRun,
    out_dir: PathBuf,
    job: decode_baseline_protocol::WorkerJob,
    command: Vec<String>,
}

/// The launcher's limits for a worker that runs in a group of `members` (1 when sequential).
/// A gated worker's own deadline pauses while it waits at the gate, so from its ready file to
/// its exit it may take every member's deadline.
fn limits(policy: &decode_baseline_protocol::RunPolicy, members: u32) -> Limits {
    let grace = std::time::Duration::from_secs(policy.backstop_grace_s.into());
    Limits {
        ready_timeout: std::time::Duration::from_secs(policy.ready_timeout_s.into()),
        run_timeout: std::time::Duration::from_secs(policy.job_deadline_s.into()) * members.max(1) + grace * 2,
        grace,
    }
}

/// Reads and validates the report of a finished worker and records what the launcher saw.
fn record_run(
    p: &Prepared,
    expected: &validate::ExpectedIdentity,
    outcome: supervise::Outcome,
    problems: &mut Vec<String>,
) -> WorkerRun {
    let (job, out_dir) = (&p.job, &p.out_dir);
    let exit_code = supervise::exit_code(&outcome.status);
    let (report, validation_errors) = match validate::read_report(out_dir) {
        Ok(report) => {
            let errors = validate::validate(&report, job, expected, outcome.pid, exit_code, out_dir);
            (Some(report), errors)
        }
        Err(problem) => (None, vec![problem]),
    };
    for error in &validation_errors {
        problems.push(format!("{}: {error}", job.run_id));
    }
    if let Some(r) = report.as_ref().filter(|r| r.status != Status::Ok) {
        let reason = r.error.as_deref().unwrap_or("no reason given");
        problems.push(format!("{}: worker ended {:?}: {reason}", job.run_id, r.status));
    }
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
        intervention: describe(outcome.intervention, outcome.sent),
        wall_ns: outcome.wall.as_nanos() as u64,
        validation_errors,
        host_activity: None,
        report,
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
fn model_files(loaded: &LoadedManifest, cells: &[decode_baseline_protocol::manifest::Cell]) -> CaseFiles {
    cells
        .iter()
        .filter_map(|cell| Some((cell.case.clone(), loaded.manifest.cases.get(&cell.case)?.files.clone())))
        .collect()
}

/// Cancelled beats timeout beats worker failure beats validation failure.
fn session_status(workers: &[WorkerRun], interrupts: &Interrupts, problems: &[String]) -> SessionStatus {
    let statuses: Vec<Option<Status>> = workers.iter().map(|w| w.report.as_ref().map(|r| r.status)).collect();
    if interrupts.count() > 0 || statuses.contains(&Some(Status::Cancelled)) {
        SessionStatus::Cancelled
    } else if statuses.contains(&Some(Status::Timeout))
        || workers.iter().any(|w| w.intervention.is_some_and(|i| i.reason == InterventionReason::PastDeadline))
    {
        SessionStatus::Timeout
    } else if workers.iter().any(|w| w.report.is_none() || w.exit_code != Some(0) || w.intervention.is_some())
        || statuses.contains(&Some(Status::Failed))
    {
        SessionStatus::WorkerFailed
    } else if !problems.is_empty() {
        SessionStatus::ValidationFailed
    } else {
        SessionStatus::Ok
    }
}

/// The record of what the supervisor did; `None` when it only watched.
fn describe(intervention: Intervention, sent: Option<nix::sys::signal::Signal>) -> Option<session::Intervention> {
    let reason = match intervention {
        Intervention::None => return None,
        Intervention::NeverReady => InterventionReason::NeverReady,
        Intervention::PastDeadline => InterventionReason::PastDeadline,
        Intervention::Cancelled => InterventionReason::Cancelled,
        Intervention::Killed => InterventionReason::Killed,
    };
    let signal = sent.map(|s| match s {
        nix::sys::signal::Signal::SIGTERM => InterventionSignal::Sigterm,
        nix::sys::signal::Signal::SIGKILL => InterventionSignal::Sigkill,
        other => unreachable!("the supervisor sends only SIGTERM and SIGKILL, not {other}"),
    });
    Some(session::Intervention { reason, signal })
}

fn expected_requests(job: &decode_baseline_protocol::WorkerJob) -> u32 {
    match job.mode {
        decode_baseline_protocol::Mode::ReferencePair => 1,
        _ => job.run_policy.total_requests(),
    }
}

/// Reads the manifest and checks it against its pin; the workers check everything else it pins.
fn load_manifest(path: &Path) -> Result<LoadedManifest, PinError> {
    let (manifest, bytes) = pins::load_manifest(path)?;
    let sha256 = pins::verify_pin(path, &bytes)?;
    let path = path.canonicalize().map_err(|source| PinError::ManifestRead { path: path.to_owned(), source })?;
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
    std::fs::create_dir_all(root).with_context(cannot)?;
    let dir = root.canonicalize().with_context(cannot)?.join(id);
    std::fs::create_dir(&dir)
        .with_context(|| format!("failed to create session folder {} (output_root must be writable)", dir.display()))?;
    Ok(dir)
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
