//! The command line: subcommands and their flags, dispatched to one module each.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use decode_baseline_launcher as launcher;
use decode_baseline_wire::{Adapter, ExitCode};

/// A reproducible measurement suite for LLM decoding on MLX.
#[derive(Debug, Parser)]
#[command(name = "decode-baseline", version, about)]
pub struct Cli {
    /// The checkout to serve (its workloads.json, models, workers and .venv). Default: the
    /// program files of the wheel this executable was installed from, else the nearest checkout
    /// at or above the current folder, else the one this executable was built in.
    #[arg(long, global = true, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// The workspace to work in (its workloads.json, jobs and out/). Default: the nearest folder
    /// at or above the current one with a workloads.json and a jobs/ folder, else the checkout.
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Make a workspace: a manifest of the embedded fixture cases with its pin, the main jobs,
    /// an output root; every command works in it (see `req/install.md`).
    Init(launcher::init::InitArgs),
    /// Run a session job: both workers on every cell, statistics and agreement.
    Run(launcher::launcher::RunArgs),
    /// Benchmark one model (a folder or a cached Hugging Face repo id) in one command: its own
    /// manifest in a new session folder, a normal session on it, the table at the end.
    Bench(launcher::bench::BenchArgs),
    /// Write a session's report page (`index.html`) again from its session.json.
    Report(launcher::report::ReportArgs),
    /// Check the manifest, its pin, the pinned files and (if present) the installed environment.
    Guard(launcher::guard::GuardArgs),
    /// Maintain the manifest: add a model case, re-pin.
    #[command(subcommand)]
    Manifest(launcher::manifest_cli::ManifestCommand),
    /// Compare controlled against stock in one session, or two sessions cell by cell.
    Compare(launcher::compare::CompareArgs),
    /// The history of an output root's sessions: every series of like sessions with its change
    /// points, one series point by point, exports; `history import` records existing sessions.
    History(launcher::history::HistoryArgs),
    /// The first commit of a loop's repository, or the first of a series of MLX releases
    /// (`--environments`), whose loop differs from a known good one, each step a paired session
    /// decided by the sequential test; `bisect step` for `git bisect run`.
    Bisect(Box<launcher::bisect::BisectArgs>),
    /// Write a session's figures (SVG): step times by position, distributions, roofline.
    Plot(launcher::plot::PlotArgs),
    /// Run the worker conformance scenarios against one worker (an adapter's, or any program)
    /// on the tiny fixture: one line per scenario, exit 0 only if all pass.
    Conformance(launcher::conformance::ConformanceArgs),
    /// Print what both workers run on: the MLX version, the libmlx this build maps (path and
    /// SHA-256) and the one the stock worker's Python maps; exit 2 when they differ.
    Env,
    /// Run K short A/A yardstick sessions and write this host's noise profile, which `compare`
    /// and `run` then use for sessions of the same design.
    Calibrate(launcher::calibrate::CalibrateArgs),
    /// One decode step's MLX graph, the controlled loop's beside mlx_lm's: primitive counts,
    /// the primitives one side has and the other lacks, bytes (controlled feature only).
    Graph {
        /// The model folder (config.json and model*.safetensors).
        #[arg(long, value_name = "DIR")]
        case: PathBuf,
        /// The position of the token the step feeds (the cache holds one fewer before it).
        #[arg(long, default_value_t = 17, value_parser = clap::value_parser!(u32).range(3..))]
        position: u32,
    },
    /// Print the command reference (Markdown) generated from these definitions, as
    /// `docs/commands.md` holds it.
    #[command(hide = true)]
    Reference,
    /// Run as a worker on a launcher-created folder (used by the launcher).
    #[command(hide = true)]
    Worker {
        /// The folder holding `job.json`.
        #[arg(long)]
        out_dir: PathBuf,
        /// Answer to this adapter name instead of `controlled`: the controlled loop run as an
        /// adapter the manifest declares (another build of it beside this one, for instance).
        #[arg(long = "as", value_name = "ADAPTER", value_parser = Adapter::parse)]
        as_adapter: Option<Adapter>,
    },
}

/// Settles which checkout the commands that measure serve (`run`, `bench`, `conformance`, `env`)
/// and hands it to every process they start through `$DECODE_BASELINE_REPO` (and its Python
/// worker kit through `$DECODE_BASELINE_KIT`); refuses an executable that stands in another
/// checkout than its own (`launcher::checkout`). An executable installed from the wheel serves
/// its program files for every command, with the environment it is installed in as the
/// workers' (`$DECODE_BASELINE_VENV`), once that environment is checked to hold the `mlx` and
/// `mlx_lm` it was built against.
pub fn serve_checkout(cli: &Cli) -> anyhow::Result<()> {
    use decode_baseline_pins::installed::{KIT_DIR, KIT_ENV, REPO_ENV, VENV_ENV};
    use launcher::checkout::{installed_environment, Checkout, Origin};
    if let Some(repo) = &cli.repo {
        let repo = repo.canonicalize().map_err(|err| anyhow::anyhow!("--repo {}: {err}", repo.display()))?;
        std::env::set_var(REPO_ENV, repo);
    }
    if let Some(dir) = &cli.workspace {
        let dir = dir.canonicalize().map_err(|err| anyhow::anyhow!("--workspace {}: {err}", dir.display()))?;
        std::env::set_var(launcher::workspace::WORKSPACE_ENV, dir);
    }
    let checkout = Checkout::current();
    if checkout.origin == Origin::Installed {
        let env = installed_environment(&checkout.root)?;
        if std::env::var_os(VENV_ENV).is_none_or(|v| v.is_empty()) {
            std::env::set_var(VENV_ENV, env);
        }
    } else if matches!(
        cli.command,
        Command::Run(_)
            | Command::Bench(_)
            | Command::Conformance(_)
            | Command::Env
            | Command::Calibrate(_)
            | Command::Bisect(_)
            | Command::Graph { .. }
    ) {
        checkout.check(&std::env::current_exe()?)?;
    } else {
        return Ok(());
    }
    std::env::set_var(REPO_ENV, &checkout.root);
    std::env::set_var(KIT_ENV, checkout.root.join(KIT_DIR));
    Ok(())
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Init(args) => launcher::init::run(args),
        Command::Run(args) => launcher::launcher::run(args),
        Command::Bench(args) => launcher::bench::run(args),
        Command::Report(args) => launcher::report::run(args),
        Command::Guard(args) => launcher::guard::run(args),
        Command::Manifest(command) => launcher::manifest_cli::run(command),
        Command::Compare(args) => launcher::compare::run(args),
        Command::History(args) => launcher::history::run(args),
        Command::Bisect(args) => launcher::bisect::run(*args),
        Command::Plot(args) => launcher::plot::run(args),
        Command::Conformance(args) => launcher::conformance::run(args),
        Command::Env => environment(),
        Command::Calibrate(args) => launcher::calibrate::run(args),
        Command::Graph { case, position } => graph(&case, position),
        Command::Reference => {
            print!("{}", crate::reference::markdown(<Cli as clap::CommandFactory>::command()));
            Ok(ExitCode::Ok)
        }
        Command::Worker { out_dir, as_adapter } => worker(&out_dir, as_adapter.unwrap_or(Adapter::Controlled)),
    }
}

/// `worker`: the controlled loop under the frozen protocol (its entry point is the controlled
/// crate's, shared with the `decode-baseline-controlled` program).
#[cfg(feature = "controlled")]
fn worker(out_dir: &std::path::Path, adapter: Adapter) -> anyhow::Result<ExitCode> {
    Ok(decode_baseline_controlled::worker::serve(out_dir, adapter))
}

#[cfg(not(feature = "controlled"))]
fn worker(_out_dir: &std::path::Path, _adapter: Adapter) -> anyhow::Result<ExitCode> {
    anyhow::bail!("this build has no controlled worker: rebuild with the default `controlled` feature")
}

/// `env`: what this build's controlled worker runs on, and the libmlx the stock worker's Python
/// maps once it imports `mlx.core` (the kit's own rule, `mapped_libmlx`). Both must be one file:
/// exit 2 when they are not.
#[cfg(feature = "controlled")]
fn environment() -> anyhow::Result<ExitCode> {
    use decode_baseline_pins::installed::{repo_root, KIT_DIR};
    let mut facts = decode_baseline_controlled::identity::facts(true)?;
    let repo = repo_root(std::path::Path::new(env!("CARGO_MANIFEST_DIR")));
    let python = launcher::launcher::plan::venv_python(&repo);
    let script = "import json, mlx.core as mx\n\
                  from decode_baseline_worker.validate import mapped_libmlx\n\
                  print(json.dumps({'libmlx_path': mapped_libmlx(), 'mlx_version': mx.__version__}))";
    let out = std::process::Command::new(&python)
        .args(["-c", script])
        .env("PYTHONPATH", repo.join(KIT_DIR))
        .output()
        .map_err(|err| anyhow::anyhow!("failed to start {}: {err}", python.display()))?;
    anyhow::ensure!(
        out.status.success(),
        "{} could not import mlx.core: {}",
        python.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    let mut stock: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    stock["python"] = python.display().to_string().into();
    let one = stock["libmlx_path"] == facts["libmlx_path"];
    facts["stock"] = stock;
    facts["one_libmlx"] = one.into();
    println!("{}", serde_json::to_string_pretty(&facts)?);
    if !one {
        eprintln!(
            "decode-baseline: error: the controlled worker and the stock worker's Python load different libmlx files"
        );
        return Ok(ExitCode::BadInput);
    }
    Ok(ExitCode::Ok)
}

#[cfg(not(feature = "controlled"))]
fn environment() -> anyhow::Result<ExitCode> {
    anyhow::bail!("this build links no MLX: rebuild with the default `controlled` feature")
}

/// `graph`: the controlled loop's step graph beside mlx_lm's, run from the served checkout with
/// its environment's Python (`tools/graph/stock_step.py`). Exit 0 whatever the graphs hold:
/// the test that fails on a controlled excess is the controlled crate's `graph_tests`.
#[cfg(feature = "controlled")]
fn graph(case: &std::path::Path, position: u32) -> anyhow::Result<ExitCode> {
    use decode_baseline_pins::installed::repo_root;
    let repo = repo_root(std::path::Path::new(env!("CARGO_MANIFEST_DIR")));
    let python = launcher::launcher::plan::venv_python(&repo);
    let comparison = decode_baseline_controlled::graph::Comparison::of(&repo, &python, case, position)
        .map_err(|e| anyhow::anyhow!(e).context(format!("compare the step graphs of {}", case.display())))?;
    print!("{}", comparison.render());
    Ok(ExitCode::Ok)
}

#[cfg(not(feature = "controlled"))]
fn graph(_case: &std::path::Path, _position: u32) -> anyhow::Result<ExitCode> {
    anyhow::bail!("this build links no MLX: rebuild with the default `controlled` feature")
}
