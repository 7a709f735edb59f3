//! `decode-baseline calibrate`: runs `K` short A/A yardstick sessions (interleaved, the tiny
//! fixture's L16 headline cell) of one loop against itself under a second name (`--loop
//! controlled`: `controlled-b` against `controlled`; `--loop stock`: `stock-b` against `stock`,
//! both declared in `workloads.json`), takes from each the paired-test log estimate `compare`
//! would test (`crate::stats`), and writes their spread per design, pair and session size into
//! the host's profile file (`crate::noise_profiles`, which also says how a row of two loops uses
//! both).

use std::path::PathBuf;

use anyhow::Context;
use decode_baseline_wire::{
    profile::{Design, NoiseProfileFile, ProfiledDesign, NOISE_PROFILE_SCHEMA_VERSION},
    ExitCode,
};
use serde_json::json;

use crate::noise_profiles as profiles;
use crate::{
    compare::{self, RowResult, Settings},
    launcher::{self, placement::Cpus, RunArgs, RunOptions},
};

/// The cell every calibration session runs: the tiny fixture's L16 headline cell.
pub const CELL: &str = "tiny-qwen3.tiny-qwen3-L16.headline";
/// The loop whose A/A noise is calibrated.
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
    /// How many A/A sessions to run (at least 2; 20 or more for a useful t reference).
    #[arg(long, value_name = "K", default_value_t = 20)]
    pub sessions: usize,
    /// The loop to calibrate: its A/A pair runs in every session.
    #[arg(long = "loop", value_enum, default_value = "controlled")]
    pub loop_: Loop,
    /// Repetitions (interleaved groups) per session: the size of the sessions the profile is
    /// for (a session of another size is held to a bound derived from it).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub repetitions: u32,
    /// The CPUs the workers may run on (see `run --cpus`); the profile is of that placement.
    #[arg(long, value_name = "LIST", default_value = "first", value_parser = Cpus::parse)]
    pub cpus: Cpus,
    /// The profile file to write (its other designs are kept). Default: the host's profile,
    /// `~/.cache/decode-baseline/profiles/<host>.json` (see `--noise-profile` of `compare`).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Where the sessions' folders go. Default: `out/calibrate` in the checkout.
    #[arg(long, value_name = "DIR")]
    pub output_root: Option<PathBuf>,
    /// Make the profile from these existing A/A sessions (`session.json` or their folders)
    /// instead of running new ones.
    #[arg(long, value_name = "SESSION", num_args = 1.., conflicts_with = "sessions")]
    pub from: Vec<PathBuf>,
}

pub fn run(args: CalibrateArgs) -> anyhow::Result<ExitCode> {
    let out = match args.out.clone().or_else(profiles::default_path) {
        Some(out) => out,
        None => crate::bad_input!("no --out given and no home folder for the default profile file"),
    };
    let sessions = if args.from.is_empty() { run_sessions(&args)? } else { args.from.clone() };
    if sessions.len() < crate::stats::MIN_PROFILE_SESSIONS {
        eprintln!("decode-baseline: error: calibrate needs at least 2 A/A sessions, got {}", sessions.len());
        return Ok(ExitCode::BadInput);
    }
    let mut estimates = Vec::new();
    let mut folders = Vec::new();
    let mut design = None;
    for path in &sessions {
        let loaded = crate::session::load_session(path)?;
        let (estimate, this_design) = aa_estimate(&loaded)?;
        if design.as_ref().is_some_and(|d| *d != this_design) {
            crate::bad_input!(
                "session {} is of another design, pair or size than the first one (host, device, libmlx, cell, \
                 order, placement, adapters or repetitions differ): a profile stands for one of each",
                loaded.path.display()
            );
        }
        println!("{}: log estimate {estimate:+.4} ({:+.2} %)", loaded.dir().display(), 100.0 * estimate.exp_m1());
        design = Some(this_design);
        estimates.push(estimate);
        folders.push(loaded.dir().display().to_string());
    }
    let (design, pair, repetitions) = design.expect("at least two sessions");
    let profile =
        crate::stats::profile_of(&estimates, "calibrate").map_err(|e| crate::exit::bad_input(e.to_string()))?;
    let mut file = match out.is_file() {
        true => profiles::read(&out)?,
        false => NoiseProfileFile {
            schema_version: NOISE_PROFILE_SCHEMA_VERSION,
            written_utc: String::new(),
            designs: vec![],
        },
    };
    file.written_utc = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    profiles::upsert(
        &mut file,
        ProfiledDesign {
            design: design.clone(),
            pair: pair.clone(),
            repetitions,
            log_estimates: estimates,
            sd: profile.sd,
            sessions: folders,
        },
    );
    profiles::write(&out, &file)?;
    println!(
        "noise profile: sd {:.4} of one session's log estimate ({:.2} %), K = {} sessions of {pair} with {}, \
         t on {} df\n\
         design: {} / {} / {} {} / {} / placement {}\nwritten: {}",
        profile.sd,
        100.0 * profile.sd.exp_m1(),
        profile.sessions,
        profiles::repetitions(repetitions),
        profile.sessions - 1,
        design.host,
        design.device,
        design.case_id,
        design.mode,
        design.order,
        design.placement,
        out.display()
    );
    Ok(ExitCode::Ok)
}

/// The paired-test log estimate of an A/A session's one row (`controlled-b` against
/// `controlled`, or `stock-b` against `stock`, in the sessions `calibrate` runs), as `compare`
/// of that session (without a profile) makes it, and what the profile entry is keyed by: the
/// session's design, the row's adapter pair and the session's size (runs per adapter).
fn aa_estimate(loaded: &crate::session::LoadedSession) -> anyhow::Result<(f64, (Design, String, u32))> {
    let settings = Settings { config: Default::default(), profiles: None };
    let report = compare::compare_within(loaded, &settings, false)?;
    let [row] = report.rows.as_slice() else {
        crate::bad_input!(
            "session {}: {} rows; an A/A session for calibrate has one cell and two adapters (e.g. controlled-b \
             against controlled)",
            loaded.path.display(),
            report.rows.len()
        );
    };
    let (RowResult::Compared { decision, .. }, Some(adapter), Some(against)) =
        (&row.outcome, &row.adapter, &row.against)
    else {
        crate::bad_input!("session {}: its row was not compared", loaded.path.display());
    };
    let cell = crate::session::cells(&loaded.report).into_iter().find(|c| c.cell == row.cell);
    let case_id = cell.as_ref().map(|c| c.case_id.clone()).unwrap_or_default();
    let runs = cell.as_ref().and_then(|c| c.runs.get(against).copied()).unwrap_or(0) as u32;
    let key = (
        profiles::design_of(&loaded.report, &row.cell, &case_id),
        format!("{}/{}", adapter.as_str(), against.as_str()),
        runs,
    );
    Ok((decision.log_estimate, key))
}

/// Runs the sessions; returns their folders.
fn run_sessions(args: &CalibrateArgs) -> anyhow::Result<Vec<PathBuf>> {
    let repo = crate::launcher::session_job::repo_root();
    let root = args.output_root.clone().unwrap_or_else(|| repo.join("out/calibrate"));
    let batch = launcher::new_session_dir(&root)?;
    let job = batch.join("job.json");
    let (reference, numerator) = args.loop_.pair();
    let body = json!({
        "schema_version": 1, "manifest": repo.join("workloads.json"), "cells": [CELL],
        "adapters": [reference, numerator], "reference": reference, "output_root": batch,
        "repetitions": args.repetitions, "order": "interleaved", "aa_pair": false
    });
    std::fs::write(&job, body.to_string()).with_context(|| format!("failed to write {}", job.display()))?;
    let mut folders = Vec::new();
    for i in 0..args.sessions {
        let dir = batch.join(format!("aa-{i:02}"));
        std::fs::create_dir(&dir).with_context(|| format!("failed to create {}", dir.display()))?;
        eprintln!("calibrate: session {}/{} in {}", i + 1, args.sessions, dir.display());
        let code = launcher::run(RunArgs {
            job: job.clone(),
            options: RunOptions {
                no_wait: false,
                json: false,
                dry_run: false,
                quiet_wait: 0,
                cpus: args.cpus.clone(),
                noise_profile: None,
                until_decided: false,
                repetitions: None,
                budget: None,
                session_dir: Some(dir.clone()),
                quiet: true,
            },
        })?;
        if code != ExitCode::Ok {
            anyhow::bail!("calibration session {} ended with {code:?}; nothing written", dir.display());
        }
        folders.push(dir);
    }
    Ok(folders)
}
