//! The command: which worker to run (an adapter, started as the launcher starts it, or any
//! program under an adapter name), the scratch folder, one line per scenario and the tally.
//!
//! Exit 0 when every scenario run passed, 1 (`Failed`) when any failed, 2 (`BadInput`) when the
//! run could not start (an unknown scenario, no pinned environment, an unusable `--keep`).

use std::{
    io::Write,
    path::{Path, PathBuf},
};

use crate::conformance::{
    fixture::FixtureSource,
    harness::{Outcome, Suite, Target, WorkerCommand},
    scenarios::Scenario,
    suite::{run_all, select},
};
use anyhow::Context;
use decode_baseline_wire::{Adapter, ExitCode};

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["adapter", "worker"])))]
pub struct ConformanceArgs {
    /// The adapter whose worker to run, with the command the launcher would run for it:
    /// `controlled`, `stock`, or an adapter the manifest declares.
    #[arg(long, value_parser = parse_adapter)]
    pub adapter: Option<Adapter>,
    /// The adapter name the worker after `--` answers to: the job's `adapter`, whose pinned
    /// sources it must check and name in its report.
    #[arg(long, value_parser = parse_adapter, requires = "worker")]
    pub name: Option<Adapter>,
    /// The manifest the fixture's case and prompt are taken from when it has the tiny fixture's
    /// case (default: the workspace's `workloads.json`).
    #[arg(long)]
    pub manifest: Option<PathBuf>,
    /// Keep every scenario's folders (jobs, markers, reports) in this folder, which must be
    /// empty or not exist; by default they go in a temporary folder that is removed.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Run only this scenario (repeatable); a certificate is a run of all of them.
    #[arg(long = "scenario", value_name = "NAME")]
    pub scenarios: Vec<String>,
    /// Any worker program and its arguments, after `--`; `--out-dir <dir>` is appended, as the
    /// launcher does. Needs `--name`. It runs in the repository, as the launcher runs workers: a
    /// program path is resolved against the current folder first, its other arguments are
    /// passed as given.
    #[arg(last = true, value_name = "PROGRAM [ARGS]", requires = "name")]
    pub worker: Vec<String>,
}

fn parse_adapter(text: &str) -> Result<Adapter, String> {
    Adapter::parse(text)
}

pub fn run(args: ConformanceArgs) -> anyhow::Result<ExitCode> {
    let scenarios = select(&args.scenarios).map_err(crate::exit::bad_input)?;
    let repo = crate::launcher::session_job::repo_root();
    let manifest = match &args.manifest {
        Some(path) => std::path::absolute(path).with_context(|| format!("failed to resolve {}", path.display()))?,
        None => crate::workspace::current().join(crate::guard::MANIFEST_NAME),
    };
    if !manifest.is_file() {
        crate::bad_input!("--manifest {}: no such file", manifest.display());
    }
    let source = FixtureSource::of(&repo, &manifest).context("failed to make the fixture")?;
    let target = target(&args, &repo, &source)?;
    let (scratch, _temp) = scratch(args.keep.as_deref())?;
    let shown = (target.command)(Path::new("<out-dir>")).join(" ");
    println!("conformance of adapter {}: {shown}", target.adapter.as_str());
    let suite = Suite::new(target, source, scratch.clone());
    let tally = run_all(&suite, &scenarios, print_line);
    println!("{tally}");
    if args.keep.is_some() {
        eprintln!("decode-baseline: scenario folders kept in {}", scratch.display());
    }
    Ok(if tally.failed == 0 { ExitCode::Ok } else { ExitCode::ScenarioFailed })
}

/// One line per scenario, written as soon as it is known (a full run takes minutes).
fn print_line(scenario: &Scenario, outcome: &Outcome) {
    match outcome {
        Ok(()) => println!("pass  {}", scenario.name),
        Err(why) => println!("FAIL  {}: {why}", scenario.name),
    }
    let _ = std::io::stdout().flush();
}

/// The worker under test: the launcher's command for `--adapter`, or the program after `--`.
fn target(args: &ConformanceArgs, repo: &Path, source: &FixtureSource) -> anyhow::Result<Target> {
    if let Some(adapter) = &args.adapter {
        return Ok(Target { adapter: adapter.to_owned(), command: launcher_command(adapter, repo, source)? });
    }
    let name = args.name.as_ref().context("--name is required with a worker program")?;
    let mut argv = args.worker.clone();
    // The worker starts in the repository, as the launcher starts it; a program given relative
    // to the current folder is resolved here first.
    if argv[0].contains('/') {
        argv[0] = std::path::absolute(&argv[0])
            .with_context(|| format!("failed to resolve {}", argv[0]))?
            .display()
            .to_string();
    }
    let command = move |out: &Path| {
        let mut argv = argv.clone();
        argv.extend(["--out-dir".to_owned(), out.display().to_string()]);
        argv
    };
    Ok(Target { adapter: name.to_owned(), command: Box::new(command) })
}

/// The command the launcher runs for `adapter` under the source manifest: the one place it is
/// asked for. `Err` names an adapter the manifest does not declare.
fn launcher_command(adapter: &Adapter, repo: &Path, source: &FixtureSource) -> anyhow::Result<WorkerCommand> {
    let program = crate::launcher::plan::program(adapter, &source.loaded, &source.manifest, repo)
        .map_err(|problem| crate::exit::bad_input(format!("--adapter: {problem}")))?;
    Ok(Box::new(move |out| crate::launcher::plan::worker_command(&program, out)))
}

/// The scratch folder: `keep` (created, required empty) or a new temporary folder, removed when
/// the returned guard drops.
fn scratch(keep: Option<&Path>) -> anyhow::Result<(PathBuf, Option<tempfile::TempDir>)> {
    let Some(dir) = keep else {
        let temp = tempfile::Builder::new()
            .prefix("decode-baseline-conformance.")
            .tempdir()
            .context("failed to create a temporary folder")?;
        return Ok((temp.path().to_owned(), Some(temp)));
    };
    std::fs::create_dir_all(dir).with_context(|| format!("--keep {}: failed to create it", dir.display()))?;
    let mut entries = std::fs::read_dir(dir).with_context(|| format!("--keep {}: failed to list it", dir.display()))?;
    if entries.next().is_some() {
        crate::bad_input!("--keep {}: not empty; give a new or empty folder", dir.display());
    }
    Ok((std::path::absolute(dir)?, None))
}
