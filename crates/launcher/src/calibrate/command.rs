//! `decode-baseline calibrate`: runs `K` sessions of a job (`--job`; without one, the A/A
//! yardstick of one loop against itself under a second name: `controlled-b` against
//! `controlled`, or `stock-b` against `stock`, the tiny fixture's L16 headline cell), or reads
//! sessions already run (`--from`), and fits every judged row of every cell (each adapter's
//! pairs with the reference, and each adapter's own times; per token, and in headline cells
//! for the time to the first token as well) with the two-level model of
//! `crate::stats::profile`: a unit part, a run part and a session part. The fits go into the
//! host's profile file (`crate::noise_profiles`), one entry per design, row and quantity, and any later
//! session of that design, of any size, is judged with them.
//!
//! A calibration session that ran while something else used the host (the host judge's
//! warnings, `crate::host::judge`) puts that load into the profile: its sd then overstates a
//! quiet host's, and every verdict judged with it loses power (never its level). The table
//! counts such sessions per row, and a closing warning names them.

use std::{collections::BTreeMap, path::PathBuf};

use anyhow::Context;
use decode_baseline_wire::{
    compare::Quantity,
    job::Mode,
    profile::{Design, NoiseProfileFile, ProfiledDesign, NOISE_PROFILE_SCHEMA_VERSION},
    session::WorkerRun,
    ExitCode,
};
use serde_json::json;

use crate::noise_profiles as profiles;
use crate::{
    compare::rule,
    launcher::{self, placement::Cpus, SessionOptions, Show},
    stats::DecisionConfig,
};

/// The cell of the yardstick sessions: the tiny fixture's L16 headline cell.
pub const CELL: &str = "tiny-qwen3.tiny-qwen3-L16.headline";

/// Fewest runs per adapter a calibration session runs: with two or more, the run part and the
/// session part separate within the sessions (`crate::stats::profile`).
pub const MIN_CALIBRATION_REPETITIONS: u32 = 2;

/// The loop whose A/A noise the yardstick calibrates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Loop {
    /// `controlled-b` against `controlled`.
    Controlled,
    /// `stock-b` against `stock`.
    Stock,
}

impl Loop {
    /// The yardstick pair: reference and numerator (the same program under a second name).
    fn pair(self) -> (&'static str, &'static str) {
        match self {
            Loop::Controlled => ("controlled", "controlled-b"),
            Loop::Stock => ("stock", "stock-b"),
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct CalibrateArgs {
    /// The job to profile: every judged row of every cell it runs, for any model it names.
    /// Without it, the A/A yardstick of `--loop`.
    #[arg(long, value_name = "FILE", conflicts_with = "loop_")]
    pub job: Option<PathBuf>,
    /// How many sessions to run (at least 2; the session-level part of the fit is on K − 1
    /// degrees of freedom).
    #[arg(long, value_name = "K", default_value_t = 10)]
    pub sessions: usize,
    /// The yardstick's loop, when no `--job` is given: its A/A pair runs in every session.
    #[arg(long = "loop", value_enum)]
    pub loop_: Option<Loop>,
    /// Worker runs per adapter in each session (default: the job's, and at least 2, so the run
    /// and session parts separate).
    #[arg(long, value_name = "N")]
    pub repetitions: Option<u32>,
    /// The CPUs the workers may run on (see `run --cpus`); the profile is of that placement.
    #[arg(long, value_name = "LIST", default_value = "first", value_parser = Cpus::parse)]
    pub cpus: Cpus,
    /// The profile file to write (its other entries are kept). Default: the host's profile,
    /// `~/.cache/decode-baseline/profiles/<host>.json` (see `--noise-profile` of `compare`).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Where the sessions' folders go. Default: `out/calibrate` in the workspace.
    #[arg(long, value_name = "DIR")]
    pub output_root: Option<PathBuf>,
    /// Fit the profile from these existing sessions (`session.json` or their folders) instead
    /// of running new ones.
    #[arg(long, value_name = "SESSION", num_args = 1.., conflicts_with_all = ["sessions", "job"])]
    pub from: Vec<PathBuf>,
}

/// One row's units by run in each session, and the sessions' folders.
#[derive(Default)]
struct Collected {
    units: Vec<Vec<Vec<f64>>>,
    folders: Vec<String>,
}

/// How busy the host was during one session, from its worker runs' host records.
#[derive(Debug, Clone, Copy, PartialEq)]
struct SessionLoad {
    /// Worker runs whose host record drew a warning.
    warned: usize,
    /// Worker runs with a host record.
    recorded: usize,
    /// The most CPUs' worth that other processes used during one run, where known.
    worst_others: Option<f64>,
}

impl SessionLoad {
    fn of(workers: &[WorkerRun]) -> SessionLoad {
        let records: Vec<_> = workers.iter().filter_map(|w| w.host_activity.as_ref()).collect();
        SessionLoad {
            warned: records
                .iter()
                .filter(|a| !crate::host::judge(a, crate::host::MAX_OTHER_CPUS).warnings.is_empty())
                .count(),
            recorded: records.len(),
            worst_others: records.iter().filter_map(|a| a.others_cpus).reduce(f64::max),
        }
    }

    fn busy(&self) -> bool {
        self.warned > 0
    }

    /// One line for the closing warning.
    fn describe(&self, folder: &str) -> String {
        let others = self.worst_others.map(|o| format!(", other processes up to {o:.2} CPUs")).unwrap_or_default();
        format!("  {folder}: {} of {} worker runs drew host warnings{others}", self.warned, self.recorded)
    }
}

pub fn run(args: CalibrateArgs) -> anyhow::Result<ExitCode> {
    let out = match args.out.clone().or_else(profiles::default_path) {
        Some(out) => out,
        None => crate::bad_input!("no --out given and no home folder for the default profile file"),
    };
    let sessions = if args.from.is_empty() {
        if args.sessions < crate::stats::MIN_PROFILE_SESSIONS {
            crate::bad_input!("--sessions {}: calibrate needs at least 2 sessions", args.sessions);
        }
        match run_sessions(&args)? {
            Ok(folders) => folders,
            Err(code) => return Ok(code),
        }
    } else {
        args.from.clone()
    };
    if sessions.len() < crate::stats::MIN_PROFILE_SESSIONS {
        crate::bad_input!("calibrate needs at least 2 sessions, got {}", sessions.len());
    }
    let trim = DecisionConfig::default().trim;
    let mut rows: BTreeMap<(Design, Quantity, String), Collected> = BTreeMap::new();
    let mut loads: BTreeMap<String, SessionLoad> = BTreeMap::new();
    for path in &sessions {
        let loaded = crate::session::load_session(path)?;
        loads.insert(loaded.dir().display().to_string(), SessionLoad::of(&loaded.report.workers));
        // A reference pair is one request a run, for the agreement check: never timed as a row.
        for cell in crate::session::judged_cells(&loaded.report).into_iter().filter(|c| c.mode != Mode::ReferencePair) {
            let design = profiles::design_of(&loaded.report, &cell.cell);
            let adapters: Vec<_> = cell.adapters.keys().cloned().collect();
            let pairs = adapters.iter().filter(|a| **a != cell.reference).map(|a| (a, Some(&cell.reference)));
            for (adapter, against) in adapters.iter().map(|a| (a, None)).chain(pairs) {
                if let Some(units) = rule::units_by_run(&cell, adapter, against) {
                    let key = (design.clone(), cell.quantity, profiles::row_key(adapter, against));
                    let entry = rows.entry(key).or_default();
                    entry.units.push(units);
                    entry.folders.push(loaded.dir().display().to_string());
                }
            }
        }
    }
    let mut file = match out.is_file() {
        true => profiles::read(&out)?,
        false => NoiseProfileFile {
            schema_version: NOISE_PROFILE_SCHEMA_VERSION,
            written_utc: String::new(),
            designs: vec![],
        },
    };
    file.written_utc = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let width = rows.keys().map(|(d, ..)| d.cell.len()).max().unwrap_or(4);
    let pair_width = rows.keys().map(|(_, q, p)| q.label(p).len()).max().unwrap_or(3);
    println!(
        "{:<width$}  {:<pair_width$} {:>3} {:>4} {:>7} {:>8} {:>8} {:>8} {:>6} {:>9}",
        "cell", "row", "K", "busy", "runs×n", "session", "run", "unit/√n", "df", "one sess."
    );
    let mut written = 0;
    for ((design, quantity, pair), collected) in rows {
        let row = quantity.label(&pair);
        let (fit, log_estimates) = match crate::stats::fit_profile(&collected.units, trim) {
            Ok(fitted) => fitted,
            Err(err) => {
                eprintln!("decode-baseline: note: {} {row}: not profiled: {err}", design.cell);
                continue;
            }
        };
        let runs = fit.runs_per_session.round() as usize;
        let one = crate::stats::profile_of(&[(&fit, runs, fit.units_per_run)], "");
        let (c2, a2, units) = crate::stats::profile_levels(&fit);
        let pct = |var: f64| format!("{:.2} %", 100.0 * var.sqrt().exp_m1());
        let busy = collected.folders.iter().filter(|f| loads.get(*f).is_some_and(SessionLoad::busy)).count();
        println!(
            "{:<width$}  {:<pair_width$} {:>3} {:>4} {:>7} {:>8} {:>8} {:>8} {:>6.1} {:>9}",
            design.cell,
            row,
            fit.sessions,
            busy,
            format!("{}×{:.0}", fit.runs_per_session, fit.units_per_run),
            pct(c2),
            pct(a2),
            pct(units),
            one.df,
            pct(one.sd.powi(2)),
        );
        profiles::upsert(
            &mut file,
            ProfiledDesign { design, pair, quantity, fit, log_estimates, sessions: collected.folders },
        );
        written += 1;
    }
    if written == 0 {
        crate::bad_input!("no row of these sessions could be profiled (see the notes above)");
    }
    profiles::write(&out, &file)?;
    println!(
        "noise profile: {written} rows written to {}\n\
         columns: the sessions fitted (K) and of them those on a busy host; the sd of each part (session, run, \
         and a run's units), and of one session's estimate like these",
        out.display()
    );
    if let Some(warning) = busy_warning(&loads) {
        eprintln!("{warning}");
    }
    Ok(ExitCode::Ok)
}

/// The warning when some sessions ran on a busy host, naming them; `None` when none did.
fn busy_warning(loads: &BTreeMap<String, SessionLoad>) -> Option<String> {
    let busy: Vec<String> = loads.iter().filter(|(_, l)| l.busy()).map(|(f, l)| l.describe(f)).collect();
    (!busy.is_empty()).then(|| {
        format!(
            "decode-baseline: warning: {} of {} calibration sessions ran while the host was busy, so their load is \
             in the profile: it overstates the noise of a quiet host, and sessions judged with it lose power (never \
             their error rate). Calibrate with the host as it will be when it measures.\n{}",
            busy.len(),
            loads.len(),
            busy.join("\n")
        )
    })
}

/// Runs the sessions; returns their folders, or the exit code of a session that did not end
/// well (nothing is written then).
fn run_sessions(args: &CalibrateArgs) -> anyhow::Result<Result<Vec<PathBuf>, ExitCode>> {
    let workspace = crate::workspace::current();
    let root = args.output_root.clone().unwrap_or_else(|| crate::workspace::output_root().join("calibrate"));
    let batch = launcher::new_session_dir(&root)?;
    let (job, repetitions) = match &args.job {
        Some(job) => {
            let resolved = launcher::session_job::load(job)?;
            (job.clone(), args.repetitions.unwrap_or(resolved.job.repetitions))
        }
        None => {
            let job = batch.join("job.json");
            let (reference, numerator) = args.loop_.unwrap_or(Loop::Controlled).pair();
            let body = json!({
                "schema_version": 1, "manifest": workspace.join(crate::guard::MANIFEST_NAME), "cells": [CELL],
                "adapters": [reference, numerator], "reference": reference, "output_root": batch,
                "repetitions": 1, "order": "interleaved", "aa_pair": false
            });
            std::fs::write(&job, body.to_string()).with_context(|| format!("failed to write {}", job.display()))?;
            (job, args.repetitions.unwrap_or(MIN_CALIBRATION_REPETITIONS))
        }
    };
    if repetitions < MIN_CALIBRATION_REPETITIONS {
        eprintln!(
            "decode-baseline: note: {repetitions} run per adapter cannot tell the run part from the session part; \
             calibrating with {MIN_CALIBRATION_REPETITIONS}"
        );
    }
    let repetitions = repetitions.max(MIN_CALIBRATION_REPETITIONS);
    let mut folders = Vec::new();
    for i in 0..args.sessions {
        let dir = batch.join(format!("session-{i:02}"));
        std::fs::create_dir(&dir).with_context(|| format!("failed to create {}", dir.display()))?;
        eprintln!(
            "calibrate: session {}/{} ({repetitions} runs per adapter) in {}",
            i + 1,
            args.sessions,
            dir.display()
        );
        let started = std::time::Instant::now();
        let options = SessionOptions {
            cpus: args.cpus.clone(),
            repetitions: Some(repetitions),
            session_dir: Some(dir.clone()),
            ..SessionOptions::default()
        };
        let quiet = Show { quiet: true, ..Show::default() };
        let code = launcher::run_session(launcher::session_job::load(&job)?, &options, &quiet, |_, _| Ok(()))?.code;
        if code != ExitCode::Ok {
            eprintln!(
                "decode-baseline: error: calibration session {} ended with {code:?}; nothing written",
                dir.display()
            );
            return Ok(Err(code));
        }
        eprintln!("calibrate: session {}/{} done in {:.0} s", i + 1, args.sessions, started.elapsed().as_secs_f64());
        folders.push(dir);
    }
    Ok(Ok(folders))
}

#[cfg(test)]
mod tests {
    use decode_baseline_wire::host::HostActivity;

    use super::*;

    /// A host record of one second in which other processes used `others` CPUs.
    fn activity(others: f64) -> HostActivity {
        serde_json::from_value(json!({
            "wall_ns": 1_000_000_000u64, "cpus": 2, "busy_share": 0.5, "busy_cpu_ns": 1_000_000_000u64,
            "measured_cpu_ns": 950_000_000u64, "others_cpu_ns": (others * 1e9) as u64, "others_cpus": others,
            "load1_start": 1.0, "load1_end": 1.1, "freq_khz_start": null, "freq_khz_end": null,
            "governors": ["performance"], "cpu_speed_limit_pct": null, "thermal_warnings": null,
            "power_source": null, "low_power_mode": null
        }))
        .expect("a host record")
    }

    /// A session's worker runs, one per entry: its others' CPUs, or no record.
    fn session(others: &[Option<f64>]) -> Vec<WorkerRun> {
        others
            .iter()
            .enumerate()
            .map(|(i, o)| WorkerRun {
                host_activity: o.map(activity),
                ..crate::session::fixtures::worker_run(decode_baseline_wire::Adapter::Controlled, i as u32)
            })
            .collect()
    }

    #[test]
    fn a_session_is_busy_when_any_run_drew_a_host_warning() {
        let quiet = SessionLoad::of(&session(&[Some(0.05), Some(0.1), None]));
        assert_eq!(quiet, SessionLoad { warned: 0, recorded: 2, worst_others: Some(0.1) });
        assert!(!quiet.busy());
        let busy = SessionLoad::of(&session(&[Some(0.05), Some(0.9), Some(0.6)]));
        assert_eq!(busy, SessionLoad { warned: 2, recorded: 3, worst_others: Some(0.9) });
        assert!(busy.busy());
    }

    #[test]
    fn the_warning_names_the_busy_sessions_only() {
        let mut loads = BTreeMap::new();
        loads.insert("out/c/session-00".to_string(), SessionLoad::of(&session(&[Some(0.05)])));
        assert_eq!(busy_warning(&loads), None, "a quiet calibration draws no warning");
        loads.insert("out/c/session-01".to_string(), SessionLoad::of(&session(&[Some(0.05), Some(1.02)])));
        loads.insert("out/c/session-02".to_string(), SessionLoad::of(&session(&[])));
        let warning = busy_warning(&loads).expect("one session was busy");
        assert!(warning.contains("1 of 3 calibration sessions"), "{warning}");
        assert!(
            warning
                .contains("out/c/session-01: 1 of 2 worker runs drew host warnings, other processes up to 1.02 CPUs"),
            "{warning}"
        );
        assert!(!warning.contains("session-00") && !warning.contains("session-02"), "{warning}");
    }
}
