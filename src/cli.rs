//! The command line: subcommands and their flags, dispatched to one module each.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use decode_baseline_wire::ExitCode;

/// A reproducible measurement suite for LLM decoding on MLX.
#[derive(Debug, Parser)]
#[command(name = "decode-baseline", version, about)]
pub struct Cli {
    /// The checkout to serve (its workloads.json, models, workers and .venv). Default: the
    /// nearest checkout at or above the current folder, else the one this executable was built in.
    #[arg(long, global = true, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a session job: both workers on every cell, statistics and agreement.
    Run(crate::launcher::RunArgs),
    /// Benchmark one model (a folder or a cached Hugging Face repo id) in one command: its own
    /// manifest in a new session folder, a normal session on it, the table at the end.
    Bench(crate::bench::BenchArgs),
    /// Write a session's report page (`index.html`) again from its session.json.
    Report(crate::report::ReportArgs),
    /// Check the manifest, its pin, the pinned files and (if present) the installed environment.
    Guard(crate::guard::GuardArgs),
    /// Maintain the manifest: add a model case, re-pin.
    #[command(subcommand)]
    Manifest(crate::manifest_cli::ManifestCommand),
    /// Compare controlled against stock in one session, or two sessions cell by cell.
    Compare(crate::compare::CompareArgs),
    /// Write a session's figures (SVG): step times by position, distributions, roofline.
    Plot(crate::plot::PlotArgs),
    /// Run the worker conformance scenarios against one worker (an adapter's, or any program)
    /// on the tiny fixture: one line per scenario, exit 0 only if all pass.
    Conformance(crate::conformance::ConformanceArgs),
    /// Print what this build runs on: MLX version, libmlx path and SHA-256.
    Env,
    /// Run K short A/A yardstick sessions and write this host's noise profile, which `compare`
    /// and `run` then use for sessions of the same design.
    Calibrate(crate::calibrate::CalibrateArgs),
    /// Run as a worker on a launcher-created folder (used by the launcher).
    #[command(hide = true)]
    Worker {
        /// The folder holding `job.json`.
        #[arg(long)]
        out_dir: PathBuf,
        /// Answer to this adapter name instead of `controlled`: the controlled loop run as an
        /// adapter the manifest declares (another build of it beside this one, for instance).
        #[arg(long = "as", value_name = "ADAPTER", value_parser = decode_baseline_wire::Adapter::parse)]
        as_adapter: Option<decode_baseline_wire::Adapter>,
    },
}

/// Settles which checkout the commands that measure serve (`run`, `bench`, `conformance`, `env`)
/// and hands it to every process they start through `$DECODE_BASELINE_REPO` (and its Python
/// worker kit through `$DECODE_BASELINE_KIT`); refuses an
/// executable that stands in another checkout than its own (`launcher::checkout`).
pub fn serve_checkout(cli: &Cli) -> anyhow::Result<()> {
    use decode_baseline::launcher::checkout::Checkout;
    use decode_baseline_pins::installed::{KIT_DIR, KIT_ENV, REPO_ENV};
    if let Some(repo) = &cli.repo {
        let repo = repo.canonicalize().map_err(|err| anyhow::anyhow!("--repo {}: {err}", repo.display()))?;
        std::env::set_var(REPO_ENV, repo);
    }
    if matches!(
        cli.command,
        Command::Run(_) | Command::Bench(_) | Command::Conformance(_) | Command::Env | Command::Calibrate(_)
    ) {
        let checkout = Checkout::current();
        checkout.check(&std::env::current_exe()?)?;
        std::env::set_var(REPO_ENV, &checkout.root);
        std::env::set_var(KIT_ENV, checkout.root.join(KIT_DIR));
    }
    Ok(())
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => crate::launcher::run(args),
        Command::Bench(args) => crate::bench::run(args),
        Command::Report(args) => crate::report::run(args),
        Command::Guard(args) => crate::guard::run(args),
        Command::Manifest(command) => crate::manifest_cli::run(command),
        Command::Compare(args) => crate::compare::run(args),
        Command::Plot(args) => crate::plot::run(args),
        Command::Conformance(args) => crate::conformance::run(args),
        Command::Env => crate::environment::run(),
        Command::Calibrate(args) => crate::calibrate::run(args),
        Command::Worker { out_dir, as_adapter } => crate::worker::run(&out_dir, as_adapter),
    }
}
