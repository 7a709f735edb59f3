//! A session prepared: the manifest loaded and checked against its pin, the schedule planned,
//! the lease taken, the session folder, its marker and every worker's folder and job written.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::Instant,
};

use anyhow::Context;
use decode_baseline_pins::{self as pins, PinError, PinProblem};
use decode_baseline_wire::{
    row::Quantity,
    session::{LauncherMarker, LAUNCHER_MARKER_SCHEMA_VERSION},
    Adapter, ExitCode, Mode,
};

use super::{
    events::{Event, Observer},
    execute::Prepared,
    lease, memory, placement, plan, preflight, rank_group, recovery,
    sequential::Sequential,
    session_dir::{create_session_dir, session_id, utc_now},
    session_job::{self, repo_root},
    session_options::SessionOptions,
    signals::Interrupts,
    worker_job::{self, LoadedManifest, RunSettings},
};
use crate::schedule::{self, Schedule};

/// A session with its folder, its marker and every worker's folder and job written.
pub(super) struct Session {
    pub(super) resolved: session_job::ResolvedJob,
    pub(super) loaded: LoadedManifest,
    pub(super) cells: Vec<decode_baseline_wire::manifest::Cell>,
    /// The runs in their groups; `prepared` holds them in the same order.
    pub(super) schedule: Schedule,
    pub(super) repo: PathBuf,
    pub(super) interrupts: Interrupts,
    pub(super) id: String,
    pub(super) started_utc: String,
    pub(super) started: Instant,
    /// `None` for a dry run.
    pub(super) lease: Option<lease::Lease>,
    pub(super) dir: PathBuf,
    pub(super) prepared: Vec<Prepared>,
    pub(super) replaced_programs: BTreeMap<Adapter, Vec<String>>,
    /// `--cpus` as asked, and resolved against the launcher's own CPUs.
    pub(super) cpus: placement::Cpus,
    pub(super) mask: placement::Mask,
    /// `--until-decided`.
    pub(super) sequential: Option<std::cell::RefCell<Sequential>>,
}

/// Prepares a session; a session refused before it started is an error that carries its exit
/// code (`exit_code::of`).
/// `energy`: an energy source is active, so every worker goes through the request gate (an
/// interleaved group's members do anyway), where the launcher reads energy per request.
/// `observer` hears the lease waited for, the folders recovered and the programs replaced.
pub(super) fn prepare(
    mut resolved: session_job::ResolvedJob,
    args: &SessionOptions,
    energy: bool,
    observer: &dyn Observer,
) -> anyhow::Result<Session> {
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
    let sequential = match args.looks {
        None => None,
        Some(_) if !schedule::interleaves(&resolved.job) => {
            crate::bad_input!(
                "session job {}: --until-decided needs order `interleaved` (its looks are paired tests)",
                resolved.job_path.display()
            );
        }
        Some(looks) => {
            if looks.decide_on == Quantity::FirstToken {
                if let Some(cell) = cells.iter().find(|c| c.mode != Mode::Headline) {
                    crate::bad_input!(
                        "--decide-on first-token: cell {} of session job {} is not a headline cell; the time to \
                         the first token is tested in headline cells only",
                        cell.name(),
                        resolved.job_path.display()
                    );
                }
            }
            let pairs = loaded.manifest.run_policy.measured_requests;
            let rows_per_cell = resolved.job.adapters.iter().filter(|a| **a != resolved.job.reference()).count();
            let (planned, state) = Sequential::new(
                looks.budget,
                pairs,
                cells.len(),
                rows_per_cell,
                args.noise_profile.clone(),
                looks.decide_on,
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
        let waiting = |line: String| observer.on(Event::Note(line));
        match lease::acquire(&id, (!args.no_wait).then_some(&waiting)) {
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
            observer.on(Event::Note(line));
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
        let settings = RunSettings { prefill_step_size: resolved.job.prefill_step_size(), gate };
        let mut job = worker_job::build(&loaded, &planned.cell, &planned.adapter, run_id, &repo, settings)?;
        let program = &programs[&planned.adapter];
        let ranks = match &group {
            Some(group) => rank_group::prepare(&mut job, &out_dir, group, program)?,
            None => Vec::new(),
        };
        rank_group::write_job(&out_dir, &job)?;
        let command = plan::worker_command(program, &out_dir);
        let env = plan::worker_environment(&planned.adapter, &loaded.manifest, &repo);
        prepared.push(Prepared {
            sequence: sequence as u32,
            planned: planned.clone(),
            out_dir,
            job,
            command,
            env,
            group,
            ranks,
        });
    }
    let replaced_programs = replaced_programs(&resolved.job.adapters);
    for (adapter, argv) in &replaced_programs {
        observer.on(Event::Note(crate::session::replaced_line(adapter, argv)));
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

/// The adapters of the session whose worker program is replaced, with the replacing command.
fn replaced_programs(adapters: &[Adapter]) -> BTreeMap<Adapter, Vec<String>> {
    adapters.iter().filter_map(|a| Some((a.clone(), plan::replacement(a)?))).collect()
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
