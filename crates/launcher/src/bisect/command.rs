//! `decode-baseline bisect`: the first commit of a loop's repository, or the first of a series of
//! pinned MLX environments, whose loop differs from a known good one, each step a paired
//! interleaved session decided by the sequential test; and `bisect step`, one such comparison
//! for `git bisect run` (see `req/bisect.md`).

use std::path::PathBuf;

use decode_baseline_wire::{row::Quantity, ExitCode};

use super::plan::{Bisection, Outcome, Verdict};
use super::workspace::{commits, describe, resolve, BuildFailed, Loop, StepResult, StepSettings, Workspace};
use crate::checkout::Checkout;

/// How each step's session runs, shared by every form of `bisect`.
#[derive(Debug, clap::Args)]
pub struct SessionArgs {
    /// The cell each session measures.
    #[arg(long, default_value = "tiny-qwen3.tiny-qwen3-L16.headline")]
    pub cell: String,
    /// Each session's budget (`run --until-decided --budget`): the most pairs per cell (`200`)
    /// or the most time (`5m`); past it the step is unknown.
    #[arg(long, default_value = "5m")]
    pub budget: String,
    /// `run --cpus`.
    #[arg(long, default_value = "first")]
    pub cpus: String,
    /// What each step decides on (`run --decide-on`): `per-token` time, or `first-token`, the
    /// time to the first token (the cell must be a headline cell).
    #[arg(long, default_value = "per-token", value_name = "QUANTITY", value_parser = Quantity::parse)]
    pub quantity: Quantity,
    /// Where the bisection's folder is made (relative to the checkout).
    #[arg(long, default_value = "out/bisect", value_name = "DIR")]
    pub out: PathBuf,
}

/// The loop under bisection over commits, shared by `bisect --loop` and `bisect step`: all but
/// `--native` are needed ([`prepared`] says so), and none goes with `--environments`.
#[derive(Debug, clap::Args)]
pub struct LoopArgs {
    /// The loop's git repository.
    #[arg(long = "loop", value_name = "REPO")]
    pub loop_repo: Option<PathBuf>,
    /// The worker program, relative to the repository's root (it must accept `--as NAME`; every
    /// loop on the Python kit does).
    #[arg(long, value_name = "PATH")]
    pub worker: Option<PathBuf>,
    /// The worker is a program of its own, not a Python script for the pinned environment.
    #[arg(long)]
    pub native: bool,
    /// Build each exported commit before its session: this command, run by `sh -c` in the
    /// commit's tree (e.g. `cargo build --release`, with `--worker target/release/NAME
    /// --native`). A tested commit that does not build is unknown (`bisect step`: 125, skipped).
    #[arg(long, value_name = "COMMAND")]
    pub build: Option<String>,
    /// The known good commit.
    #[arg(long)]
    pub good: Option<String>,
}

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BisectArgs {
    #[command(subcommand)]
    pub step: Option<BisectStep>,
    #[command(flatten)]
    pub loop_args: LoopArgs,
    /// The bad commit: the range is --good (exclusive) to --bad (inclusive), first parents.
    #[arg(long)]
    pub bad: Option<String>,
    /// Bisect the stock loop (mlx_lm's `stream_generate`) over these pinned environments instead
    /// of a loop's commits, oldest release first: the first is the known good one, the last the
    /// bad one (`default` is the default environment; `tools/env/mlxenv add` makes one a
    /// release). Each step runs the two environments' stock workers side by side in one session.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "ENV,ENV,...",
        conflicts_with_all = ["loop_repo", "worker", "native", "build", "good", "bad"]
    )]
    pub environments: Option<Vec<String>>,
    #[command(flatten)]
    pub session: SessionArgs,
}

#[derive(Debug, clap::Subcommand)]
pub enum BisectStep {
    /// One step for `git bisect run`: the loop repository's HEAD against --good in one session;
    /// exit 0 the same within the margin, 10 faster or 11 slower (both "bad" to git), 125
    /// unknown (git skips the commit).
    Step(StepArgs),
}

#[derive(Debug, clap::Args)]
pub struct StepArgs {
    #[command(flatten)]
    pub loop_args: LoopArgs,
    #[command(flatten)]
    pub session: SessionArgs,
}

impl SessionArgs {
    fn settings(&self) -> StepSettings {
        StepSettings {
            cell: self.cell.clone(),
            budget: self.budget.clone(),
            cpus: self.cpus.clone(),
            quantity: self.quantity,
        }
    }

    /// The bisection's folder, once everything else was checked.
    fn workspace(&self) -> anyhow::Result<Workspace> {
        Workspace::create(&Checkout::current().root, &self.out)
    }
}

/// The loop and the good commit, checked; no folder is made yet.
fn prepared(args: &LoopArgs) -> anyhow::Result<(Loop, String)> {
    let (Some(repo), Some(worker), Some(good)) = (&args.loop_repo, &args.worker, &args.good) else {
        crate::bad_input!(
            "bisect: expected --loop REPO, --worker PATH and --good REV (with --bad REV, or `bisect step`), or \
             --environments ENV,ENV,..."
        );
    };
    let repo = std::path::absolute(repo)?;
    let good = resolve(&repo, "--good", good)?;
    Ok((Loop { repo, worker: worker.clone(), python: !args.native, build: args.build.clone() }, good))
}

/// One step's line: what was compared, the row's estimate and verdict, the pairs and the time.
fn step_line(number: usize, base: &str, tested: &str, result: &StepResult) -> String {
    let outcome = match result.outcome {
        Outcome::Different => "different",
        Outcome::Same => "same",
        Outcome::Unknown => "unknown",
    };
    let no_row = result.unmeasured.clone().unwrap_or_else(|| "no row".to_owned());
    let estimate = result.row.as_ref().and_then(|r| Some((r.quantity, r.decision()?))).map_or(no_row, |(q, d)| {
        format!(
            "{}{} {:.3} [{:.3}, {:.3}], MDE ±{:.1} %, {} pairs",
            if q == Quantity::FirstToken { "TTFT " } else { "" },
            d.verdict.words(),
            d.ratio,
            d.ci.lower,
            d.ci.upper,
            d.mde * 100.0,
            d.pairs
        )
    });
    format!(
        "step {number}: {tested} against {base}: {outcome} ({estimate}; {:.0} s; {})",
        result.wall_s,
        result.session_dir.display()
    )
}

/// What a bisection walks: its points oldest first (the good one first, the bad one last), how
/// each is named in its lines, and what it calls them.
struct Series {
    points: Vec<String>,
    described: Vec<String>,
    /// `commit` or `environment`.
    noun: &'static str,
}

pub fn run(args: BisectArgs) -> anyhow::Result<ExitCode> {
    if let Some(BisectStep::Step(step_args)) = args.step {
        return step(&step_args);
    }
    let settings = args.session.settings();
    if let Some(names) = &args.environments {
        let environments = super::environments::checked(&Checkout::current().root, names)?;
        let series = Series {
            described: environments.iter().map(|e| e.described.clone()).collect(),
            points: environments.into_iter().map(|e| e.name).collect(),
            noun: "environment",
        };
        let workspace = args.session.workspace()?;
        return bisect(&series, &settings, &workspace, |(base, tested), number| {
            workspace.step(&super::environments::adapters((base, tested)), &settings, number)
        });
    }
    let (the_loop, good) = prepared(&args.loop_args)?;
    let Some(bad) = args.bad else {
        crate::bad_input!("bisect: expected --bad REV, the bad end of the range (or `bisect step` for one comparison)");
    };
    let bad_commit = resolve(&the_loop.repo, "--bad", &bad)?;
    let good_given = args.loop_args.good.as_deref().unwrap_or_default();
    let points = commits(&the_loop.repo, &good, &bad_commit, (good_given, &bad))?;
    let described = points.iter().map(|c| describe(&the_loop.repo, c)).collect();
    let workspace = args.session.workspace()?;
    let series = Series { points, described, noun: "commit" };
    bisect(&series, &settings, &workspace, |(base, tested), number| {
        measure_commits(&workspace, &the_loop, (base, tested), &settings, number)
    })
}

/// One step over commits: `tested` against `base`, built and measured; a tested commit that
/// does not build is an unknown step (the base, known good, must build).
fn measure_commits(
    workspace: &Workspace,
    the_loop: &Loop,
    (base, tested): (&str, &str),
    settings: &StepSettings,
    number: usize,
) -> anyhow::Result<StepResult> {
    match workspace.loop_adapters(the_loop, (base, tested), number) {
        Ok(adapters) => workspace.step(&adapters, settings, number),
        Err(err) => match err.downcast_ref::<BuildFailed>() {
            Some(failed) if failed.commit == tested && tested != base => Ok(StepResult::unbuilt(failed)),
            Some(failed) => Err(crate::exit::bad_input(format!("--good: {failed}: the known good commit must build"))),
            None => Err(err),
        },
    }
}

/// Halves `series` with one session a step (`step` runs the session of the tested point
/// against the base) and prints every step and the end.
fn bisect(
    series: &Series,
    settings: &StepSettings,
    workspace: &Workspace,
    mut step: impl FnMut((&str, &str), usize) -> anyhow::Result<StepResult>,
) -> anyhow::Result<ExitCode> {
    let (points, named, noun) = (&series.points, &series.described, series.noun);
    let last = points.len() - 1;
    println!(
        "bisect: {last} {noun}{} after {} up to {}; each step a session of {} deciding on its {} (budget {}), in {}",
        if last == 1 { "" } else { "s" },
        named[0],
        named[last],
        settings.cell,
        match settings.quantity {
            Quantity::PerToken => "time per token",
            Quantity::FirstToken => "time to the first token",
        },
        settings.budget,
        workspace.dir.display()
    );
    let started = std::time::Instant::now();
    let mut bisection = Bisection::new(points.len());
    let (mut sessions, mut pairs) = (0, 0);
    while let Some((base, tested)) = bisection.next() {
        sessions += 1;
        eprintln!(
            "decode-baseline: step {sessions}: {} against {}; its session's progress: {}",
            named[tested],
            named[base],
            workspace.dir.join(format!("step-{sessions}.log")).display()
        );
        let result = step((&points[base], &points[tested]), sessions)?;
        pairs += result.row.as_ref().and_then(|r| r.decision()).map_or(0, |d| d.pairs);
        println!("{}", step_line(sessions, &named[base], &named[tested], &result));
        bisection.record(result.outcome);
    }
    let spent = format!("{sessions} session(s), {pairs} pairs, {:.0} s", started.elapsed().as_secs_f64());
    match bisection.verdict() {
        Verdict::FirstBad(i) => {
            println!("first bad {noun}: {} ({i} of {last}); {spent}", named[i]);
            Ok(ExitCode::Ok)
        }
        Verdict::NoChange => {
            println!("no change: {} is the same as {} within the margin; {spent}", named[last], named[0]);
            Ok(ExitCode::Ok)
        }
        Verdict::Undecided { good, bad } => {
            println!(
                "undecided: the change lies after {} and at or before {}; a step stayed unknown within the budget \
                 (--budget more); {spent}",
                named[good], named[bad]
            );
            Ok(ExitCode::Inconclusive)
        }
        Verdict::Open => unreachable!("the loop above runs until the bisection ends"),
    }
}

fn step(args: &StepArgs) -> anyhow::Result<ExitCode> {
    let (the_loop, good) = prepared(&args.loop_args)?;
    let head = resolve(&the_loop.repo, "HEAD", "HEAD")?;
    let workspace = args.session.workspace()?;
    let result = measure_commits(&workspace, &the_loop, (&good, &head), &args.session.settings(), 1)?;
    println!("{}", step_line(1, &describe(&the_loop.repo, &good), &describe(&the_loop.repo, &head), &result));
    Ok(match (result.outcome, result.row.as_ref().and_then(|r| r.verdict())) {
        (Outcome::Same, _) => ExitCode::Ok,
        (Outcome::Different, Some(decode_baseline_wire::stats::Verdict::Faster)) => ExitCode::Faster,
        (Outcome::Different, _) => ExitCode::Slower,
        (Outcome::Unknown, _) => ExitCode::BisectSkip,
    })
}
