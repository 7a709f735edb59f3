//! The `compare` subcommand: arguments, the choice between one and two sessions, printing, and
//! the exit code (see `req/compare.md`).

use std::{io::Write, path::PathBuf};

use crate::stats::DecisionConfig;
use decode_baseline_wire::ExitCode;

use super::{estimate, render};
use crate::export::Exporter;
use crate::session::load_session;
use decode_baseline_wire::compare::CompareReport;

/// Output formats, one exporter each ([`Format::exporter`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns for a terminal.
    Table,
    /// A Markdown table for a pull request.
    Markdown,
    /// The full comparison as JSON (`schema_version` 3, `schemas/compare.schema.json`).
    Json,
    /// One line per row.
    Csv,
    /// Markdown for a CI step summary (`>> $GITHUB_STEP_SUMMARY`): the verdict first, the rows
    /// that decided it, the detectable size, the full table folded.
    Github,
    /// JUnit XML: a slower row is a failing case with its ratio and interval; inconclusive is
    /// skipped with the reason.
    Junit,
    /// Bencher Metric Format JSON: per row, the ratio with its interval and the median time.
    Bmf,
}

impl Format {
    /// The exporter of this format.
    pub fn exporter(self) -> &'static dyn Exporter<CompareReport> {
        match self {
            Format::Table => &super::Table,
            Format::Markdown => &super::Markdown,
            Format::Json => &super::Json,
            Format::Csv => &super::Csv,
            Format::Github => &super::Github,
            Format::Junit => &super::Junit,
            Format::Bmf => &super::Bmf,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// Session A: a `session.json` or the session folder. Alone: controlled against stock in it.
    pub a: PathBuf,
    /// Session B: compared against A cell by cell, per adapter (ratio B / A).
    pub b: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// False-alarm rate of the whole comparison, two-sided (Holm across its judged rows).
    #[arg(long, default_value_t = crate::stats::DEFAULT_TEST_ALPHA)]
    pub alpha: f64,
    /// Equivalence margin as a fraction (0.03 = ±3 %): "no difference" means a test showed the
    /// ratio within it. Stated, never estimated from the data. (`--threshold` is its old name.)
    #[arg(long, alias = "threshold", default_value_t = crate::stats::DEFAULT_MARGIN)]
    pub margin: f64,
    /// Practical floor as a fraction: a significant difference smaller than it is reported as
    /// such and not counted as faster or slower.
    #[arg(long)]
    pub floor: Option<f64>,
    /// Compare even when manifest, model, libmlx, worker sources or host differ; the differences
    /// are printed above the result.
    #[arg(long)]
    pub allow_mismatch: bool,
    /// Across sessions, also judge each adapter's raw times B / A (by default `inconclusive`:
    /// nothing holds the machine's speed constant between two sessions; the `against stock`
    /// rows do). Use only when you know the host ran equally fast for both.
    #[arg(long)]
    pub raw: bool,
    /// Two sessions on two pinned MLX environments (`tools/env/mlxenv`): their MLX / mlx_lm
    /// versions, lock and libmlx may differ and are named in the output; anything else that
    /// differs still refuses.
    #[arg(long, requires = "b")]
    pub across_versions: bool,
    /// Two sessions on different backends or devices (e.g. CPU against CUDA, or two GPUs): their
    /// backend and device may differ and are named in the output; anything else that differs
    /// still refuses. Without it such a pair is refused (exit 12).
    #[arg(long, requires = "b")]
    pub across_devices: bool,
    /// Two sessions whose workers ran on different CPUs (`run --cpus`): their placement may
    /// differ and is named in the output; anything else that differs still refuses. Without it
    /// such a pair is refused (exit 12).
    #[arg(long, requires = "b")]
    pub across_placements: bool,
    /// The host noise profile file (`decode-baseline calibrate`): verdicts use the larger of
    /// its error and the row's own, with t on K − 1 degrees of freedom. Default: this host's
    /// profile file (`~/.cache/decode-baseline/profiles/<host>.json`) when it exists and holds
    /// the sessions' design; without one the output says which error was used.
    #[arg(long, value_name = "FILE")]
    pub noise_profile: Option<PathBuf>,
}

pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let a = load_session(&args.a)?;
    if args.b.is_none() && a.report.unpinned {
        eprintln!(
            "decode-baseline: note: session A ({}) is {}: its rows measure the replaced program, not the pinned worker",
            args.a.display(),
            super::identity::pinning(&a.report)
        );
    }
    let b = args.b.as_ref().map(|b| load_session(b)).transpose()?;
    let sessions: Vec<&decode_baseline_wire::session::SessionReport> =
        std::iter::once(&a.report).chain(b.as_ref().map(|b| &b.report)).collect();
    let cells = crate::noise_profiles::timed_cells(&a.report);
    let (profiles, note) = crate::noise_profiles::resolve(args.noise_profile.as_deref(), &sessions, &cells)?;
    if let Some(note) = note {
        eprintln!("decode-baseline: note: {note}");
    }
    let settings = super::Settings {
        config: DecisionConfig {
            alpha: args.alpha,
            margin: args.margin,
            floor: args.floor,
            ..DecisionConfig::default()
        },
        profiles: profiles.as_ref(),
    };
    // One session: the decisions it stored, unless other settings or a profile file are asked for.
    let retest = args.noise_profile.is_some()
        || a.report.decisions.as_ref().is_none_or(|stored| stored.settings != settings.config);
    let report = match &b {
        None => super::compare_within(&a, &settings, args.allow_mismatch, retest)?,
        Some(b) => estimate::compare_across(
            &a,
            b,
            &settings,
            args.allow_mismatch,
            args.across_versions,
            args.across_devices,
            args.across_placements,
            args.raw,
        )?,
    };
    for line in render::profile_lines(&report.rows) {
        eprintln!("decode-baseline: {line}");
    }
    // CSV and BMF keep stdout to their one document: the mismatch list goes to stderr.
    if matches!(args.format, Format::Csv | Format::Bmf) && !report.mismatches.is_empty() {
        eprint!("{}", render::mismatch_list(&report));
    }
    let text = args.format.exporter().export(&report)?;
    if report.refused {
        eprintln!(
            "decode-baseline: compare refused: {} difference(s); see the list above or --allow-mismatch",
            report.mismatches.len()
        );
        for m in report.mismatches.iter().filter(|m| super::identity::is_pinning(m)) {
            let (who, why) = if m.a == "pinned" { ("B", &m.b) } else { ("A", &m.a) };
            let path = if who == "A" { Some(&args.a) } else { args.b.as_ref() };
            eprintln!(
                "decode-baseline: session {who} ({}) is {why}: an unpinned session is compared only with another \
                 unpinned one",
                path.map_or(String::new(), |p| p.display().to_string())
            );
        }
        if report.mismatches.iter().any(super::identity::is_placement) {
            eprintln!(
                "decode-baseline: the sessions' workers ran on different CPUs (see placement above): pass \
                 --across-placements to compare them anyway"
            );
        }
        if report.mismatches.iter().any(super::identity::is_device) {
            eprintln!(
                "decode-baseline: the sessions ran on different backends or devices (see backend/device above): \
                 pass --across-devices to compare them anyway"
            );
        }
    }
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|_| stdout.flush()) {
        Ok(()) => {}
        // A reader that stopped reading (`| head`) is not an error.
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(err) => return Err(err.into()),
    }
    Ok(report.exit())
}
