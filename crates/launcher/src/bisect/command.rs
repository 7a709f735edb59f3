//! `decode-baseline bisect`: the first commit of a loop's repository whose loop differs from a
//! known good one, each step a paired interleaved session decided by the sequential test; and
//! `bisect step`, one such comparison for `git bisect run` (see `req/bisect.md`).

use std::path::PathBuf;

use decode_baseline_wire::ExitCode;

use super::plan::{Bisection, Outcome, Verdict};
use super::workspace::{commits, describe, resolve, Loop, StepResult, StepSettings, Workspace};
use crate::checkout::Checkout;

/// The loop and how each session runs, shared by `bisect` and `bisect step`.
#[derive(Debug, clap::Args)]
pub struct LoopArgs {
    /// The loop's git repository.
    #[arg(long = "loop", value_name = "REPO")]
    pub loop_repo: PathBuf,
    /// The worker program, relative to the repository's root (it must accept `--as NAME`; every
    /// loop on the Python kit does).
    #[arg(long, value_name = "PATH")]
    pub worker: PathBuf,
    /// The worker is a program of its own, not a Python script for the pinned environment.
    #[arg(long)]
    pub native: bool,
    /// The known good commit.
    #[arg(long)]
    pub good: String,
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
    /// Where the bisection's folder is made (relative to the checkout).
    #[arg(long, default_value = "out/bisect", value_name = "DIR")]
    pub out: PathBuf,
}

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BisectArgs {
    #[command(subcommand)]
    pub step: Option<BisectStep>,
    #[command(flatten)]
    pub loop_args: Option<LoopArgs>,
    /// The bad commit: the range is --good (exclusive) to --bad (inclusive), first parents.
    #[arg(long)]
    pub bad: Option<String>,
}

#[derive(Debug, clap::Subcommand)]
pub enum BisectStep {
    /// One step for `git bisect run`: the loop repository's HEAD against --good in one session;
    /// exit 0 the same within the margin, 10 faster or 11 slower (both "bad" to git), 125
    /// unknown (git skips the commit).
    Step(LoopArgs),
}

/// The loop, the step settings and the good commit, checked; no folder is made yet.
fn prepared(args: &LoopArgs) -> anyhow::Result<(Loop, StepSettings, String)> {
    let repo = std::path::absolute(&args.loop_repo)?;
    let good = resolve(&repo, "--good", &args.good)?;
    let the_loop = Loop { repo, worker: args.worker.clone(), python: !args.native };
    let settings = StepSettings { cell: args.cell.clone(), budget: args.budget.clone(), cpus: args.cpus.clone() };
    Ok((the_loop, settings, good))
}

/// The bisection's folder, once everything else was checked.
fn workspace(args: &LoopArgs) -> anyhow::Result<Workspace> {
    Workspace::create(&Checkout::current().root, &args.out)
}

/// One step's line: what was compared, the row's estimate and verdict, the pairs and the time.
fn step_line(number: usize, the_loop: &Loop, base: &str, tested: &str, result: &StepResult) -> String {
    let outcome = match result.outcome {
        Outcome::Different => "different",
        Outcome::Same => "same",
        Outcome::Unknown => "unknown",
    };
    let estimate = result.row.as_ref().and_then(|r| r.decision()).map_or("no row".to_owned(), |d| {
        format!(
            "{} {:.3} [{:.3}, {:.3}], MDE ±{:.1} %, {} pairs",
            d.verdict.words(),
            d.ratio,
            d.ci.lower,
            d.ci.upper,
            d.mde * 100.0,
            d.pairs
        )
    });
    format!(
        "step {number}: {} against {}: {outcome} ({estimate}; {:.0} s; {})",
        describe(&the_loop.repo, tested),
        describe(&the_loop.repo, base),
        result.wall_s,
        result.session_dir.display()
    )
}

pub fn run(args: BisectArgs) -> anyhow::Result<ExitCode> {
    if let Some(BisectStep::Step(loop_args)) = args.step {
        return step(&loop_args);
    }
    let (Some(loop_args), Some(bad)) = (args.loop_args, args.bad) else {
        crate::bad_input!("bisect: expected --loop, --worker, --good and --bad (or `bisect step`)");
    };
    let (the_loop, settings, good) = prepared(&loop_args)?;
    let bad_commit = resolve(&the_loop.repo, "--bad", &bad)?;
    let commits = commits(&the_loop.repo, &good, &bad_commit, (&loop_args.good, &bad))?;
    let bad = bad_commit;
    let workspace = workspace(&loop_args)?;
    println!(
        "bisect: {} commits after {} up to {}; each step a session of {} (budget {}), in {}",
        commits.len() - 1,
        describe(&the_loop.repo, &good),
        describe(&the_loop.repo, &bad),
        settings.cell,
        settings.budget,
        workspace.dir.display()
    );
    let started = std::time::Instant::now();
    let mut bisection = Bisection::new(commits.len());
    let (mut sessions, mut pairs) = (0, 0);
    while let Some((base, tested)) = bisection.next() {
        sessions += 1;
        eprintln!(
            "decode-baseline: step {sessions}: {} against {}; its session's progress: {}",
            describe(&the_loop.repo, &commits[tested]),
            describe(&the_loop.repo, &commits[base]),
            workspace.dir.join(format!("step-{sessions}.log")).display()
        );
        let result = workspace.step(&the_loop, (&commits[base], &commits[tested]), &settings, sessions)?;
        pairs += result.row.as_ref().and_then(|r| r.decision()).map_or(0, |d| d.pairs);
        println!("{}", step_line(sessions, &the_loop, &commits[base], &commits[tested], &result));
        bisection.record(result.outcome);
    }
    let spent = format!("{sessions} session(s), {pairs} pairs, {:.0} s", started.elapsed().as_secs_f64());
    match bisection.verdict() {
        Verdict::FirstBad(i) => {
            println!(
                "first bad commit: {} ({} of {}); {spent}",
                describe(&the_loop.repo, &commits[i]),
                i,
                commits.len() - 1
            );
            Ok(ExitCode::Ok)
        }
        Verdict::NoChange => {
            println!(
                "no change: {} is the same as {} within the margin; {spent}",
                describe(&the_loop.repo, &bad),
                describe(&the_loop.repo, &good)
            );
            Ok(ExitCode::Ok)
        }
        Verdict::Undecided { good: g, bad: b } => {
            println!(
                "undecided: the change lies after {} and at or before {}; a step stayed unknown within the budget \
                 (--budget more); {spent}",
                describe(&the_loop.repo, &commits[g]),
                describe(&the_loop.repo, &commits[b])
            );
            Ok(ExitCode::Inconclusive)
        }
        Verdict::Open => unreachable!("the loop above runs until the bisection ends"),
    }
}

fn step(args: &LoopArgs) -> anyhow::Result<ExitCode> {
    let (the_loop, settings, good) = prepared(args)?;
    let head = resolve(&the_loop.repo, "HEAD", "HEAD")?;
    let workspace = workspace(args)?;
    let result = workspace.step(&the_loop, (&good, &head), &settings, 1)?;
    println!("{}", step_line(1, &the_loop, &good, &head, &result));
    Ok(match (result.outcome, result.row.as_ref().and_then(|r| r.verdict())) {
        (Outcome::Same, _) => ExitCode::Ok,
        (Outcome::Different, Some(decode_baseline_wire::stats::Verdict::Faster)) => ExitCode::Faster,
        (Outcome::Different, _) => ExitCode::Slower,
        (Outcome::Unknown, _) => ExitCode::BisectSkip,
    })
}
