//! `run`'s command line: the job, how the session runs (the engine's [`SessionOptions`]) and how
//! it is shown ([`Show`]).

use std::path::PathBuf;

use decode_baseline_wire::row::Quantity;

use super::{
    placement,
    sequential::Budget,
    session_options::{Looks, SessionOptions},
    show::Show,
};

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The session job (JSON, see req/session.md).
    #[arg(long)]
    pub job: PathBuf,
    #[command(flatten)]
    pub options: RunOptions,
}

/// How a session runs and shows its result: everything of `run` but the job.
/// [`RunOptions::default`] is `run` with no option given.
#[derive(Debug, Clone, PartialEq, clap::Args)]
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
    /// With `--until-decided`: the rows the looks decide, `per-token` (default) or
    /// `first-token` (time to the first token; every cell of the job must be a headline cell).
    /// The other quantity's rows are shown, inconclusive: their number of pairs was the looks'.
    #[arg(
        long,
        value_name = "QUANTITY",
        requires = "until_decided",
        default_value = "per-token",
        value_parser = Quantity::parse
    )]
    pub decide_on: Quantity,
}

impl RunOptions {
    /// How the engine runs the session these options ask for.
    pub fn session(&self) -> SessionOptions {
        SessionOptions {
            no_wait: self.no_wait,
            dry_run: self.dry_run,
            quiet_wait: self.quiet_wait,
            cpus: self.cpus.clone(),
            noise_profile: self.noise_profile.clone(),
            repetitions: self.repetitions,
            looks: self
                .until_decided
                .then(|| Looks { budget: self.budget.unwrap_or_default(), decide_on: self.decide_on }),
            session_dir: None,
        }
    }

    /// How the finished session is shown.
    pub fn show(&self) -> Show {
        Show { json: self.json, quiet: false, verbose: self.verbose }
    }
}

impl Default for RunOptions {
    /// `run`'s options when none is given on the command line (a test holds the two equal).
    fn default() -> Self {
        RunOptions {
            no_wait: false,
            json: false,
            verbose: false,
            dry_run: false,
            quiet_wait: 0,
            cpus: placement::Cpus::First,
            noise_profile: None,
            until_decided: false,
            repetitions: None,
            budget: None,
            decide_on: Quantity::PerToken,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Run {
        #[command(flatten)]
        args: RunArgs,
    }

    #[test]
    fn the_default_options_are_runs_without_options() {
        let parsed = Run::try_parse_from(["run", "--job", "job.json"]).expect("a job is enough");
        assert_eq!(parsed.args.options, RunOptions::default());
        assert_eq!(parsed.args.options.session(), SessionOptions::default(), "the engine's default is run's");
        let given = Run::try_parse_from(["run", "--job", "job.json", "--cpus", "all", "--repetitions", "3"]).unwrap();
        assert_ne!(given.args.options, RunOptions::default(), "an option given changes them");
    }
}
