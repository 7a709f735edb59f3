//! The `history` subcommand: every series of an output root's history with its change points,
//! one series point by point, exports, and `history import` of existing session folders (see
//! `req/history.md`).

use std::collections::{btree_map::Entry, BTreeMap};
use std::path::{Path, PathBuf};

use decode_baseline_wire::ExitCode;

use super::record::{database_in, record, root_of};
use super::series::Series;
use super::store::{Store, FILE};
use crate::export::Exporter;
use crate::stats::{ChangeSettings, DEFAULT_CHANGE_ALPHA, DEFAULT_MIN_SEGMENT, DEFAULT_WINDOW};
use crate::{bad_input, ensure_input};

/// Output formats of `history`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HistoryFormat {
    /// Aligned columns: every series, or one point by point (`--series`).
    Table,
    /// Apache Otava's CSV columns (`time`, `commit`, then the ratio and its interval), one line per
    /// point.
    Csv,
    /// Bencher Metric Format JSON of each series' newest point.
    Bmf,
    /// github-action-benchmark's `data.js`, one entry per session.
    DataJs,
}

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub action: Option<HistoryAction>,
    /// The output root whose history to read (its `history.sqlite`), or the database file itself.
    /// Default: the workspace's `out/`.
    #[arg(long, value_name = "DIR|FILE")]
    pub root: Option<PathBuf>,
    /// One series: its id (`s` and 10 hex digits, as the list prints it) or a part of its key
    /// that no other series contains.
    #[arg(long)]
    pub series: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = HistoryFormat::Table)]
    pub format: HistoryFormat,
    /// False-alarm rate of the change-point test in one series without a change.
    #[arg(long, default_value_t = DEFAULT_CHANGE_ALPHA)]
    pub alpha: f64,
    /// Fewest sessions on each side of a change.
    #[arg(long, default_value_t = DEFAULT_MIN_SEGMENT)]
    pub min_segment: usize,
    /// Most sessions on each side that a split's means use.
    #[arg(long, default_value_t = DEFAULT_WINDOW)]
    pub window: usize,
}

#[derive(Debug, clap::Subcommand)]
pub enum HistoryAction {
    /// Record existing session folders (each a session, or an output root of sessions) in the
    /// history of their output root, or of `--into`; a session recorded before is replaced.
    Import {
        #[arg(required = true, value_name = "FOLDER")]
        folders: Vec<PathBuf>,
        /// The output root (or database file) to record into instead of each session's own.
        #[arg(long, value_name = "DIR|FILE")]
        into: Option<PathBuf>,
    },
}

/// The database a `--root`/`--into` names: the file itself, or `history.sqlite` in the folder.
fn database(path: &Path) -> PathBuf {
    if path.is_dir() {
        database_in(path)
    } else {
        path.to_path_buf()
    }
}

pub fn run(args: HistoryArgs) -> anyhow::Result<ExitCode> {
    if let Some(HistoryAction::Import { folders, into }) = args.action {
        return import(&folders, into.as_deref());
    }
    ensure_input!(
        args.alpha > 0.0 && args.alpha < 1.0,
        "--alpha: expected a number between 0 and 1, got {}",
        args.alpha
    );
    ensure_input!(args.min_segment >= 1, "--min-segment: expected at least 1, got {}", args.min_segment);
    ensure_input!(
        args.window >= args.min_segment,
        "--window: expected at least --min-segment ({}), got {}",
        args.min_segment,
        args.window
    );
    let settings = ChangeSettings { alpha: args.alpha, min_segment: args.min_segment, window: args.window };
    let root = args.root.unwrap_or_else(crate::workspace::output_root);
    let db = database(&root);
    if !db.is_file() {
        bad_input!(
            "--root {}: no history at {}: every session records into {FILE} in its output root; name that root with \
             --root, or build one from session folders with `decode-baseline history import FOLDER`",
            root.display(),
            db.display()
        );
    }
    let store = Store::open_to_read(&db)?;
    let summaries = match &args.series {
        Some(wanted) => vec![store.find_series(wanted)?],
        None => store.series()?,
    };
    let all: Vec<Series> =
        summaries.into_iter().map(|s| Series::read(&store, s, settings)).collect::<anyhow::Result<_>>()?;
    let text = match (args.format, args.series.is_some()) {
        (HistoryFormat::Table, true) => super::One.export(&all[0])?,
        (HistoryFormat::Table, false) => super::List.export(&all)?,
        (HistoryFormat::Csv, _) => super::Csv.export(&all)?,
        (HistoryFormat::Bmf, _) => super::Bmf.export(&all)?,
        (HistoryFormat::DataJs, _) => super::DataJs.export(&all)?,
    };
    print!("{text}");
    Ok(ExitCode::Ok)
}

/// The session folders under `folder`: itself when it holds a `session.json`, else its
/// subfolders that do, by name.
fn sessions_under(folder: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if folder.join("session.json").is_file() {
        return Ok(vec![folder.to_path_buf()]);
    }
    let entries = std::fs::read_dir(folder).map_err(|e| {
        crate::exit::bad_input(format!("{}: not a session folder nor a folder of sessions: {e}", folder.display()))
    })?;
    let mut found: Vec<PathBuf> =
        entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.join("session.json").is_file()).collect();
    found.sort();
    Ok(found)
}

fn import(folders: &[PathBuf], into: Option<&Path>) -> anyhow::Result<ExitCode> {
    let mut recorded = 0;
    let mut skipped = Vec::new();
    // Each database opened once, however many sessions go into it.
    let mut stores: BTreeMap<PathBuf, Store> = BTreeMap::new();
    for folder in folders {
        let sessions = sessions_under(folder)?;
        if sessions.is_empty() {
            bad_input!("{}: no session.json in it or in its subfolders", folder.display());
        }
        for dir in sessions {
            let loaded = match crate::session::load_session(&dir) {
                Ok(loaded) => loaded,
                Err(e) => {
                    skipped.push(format!("{}: {e:#}", dir.display()));
                    continue;
                }
            };
            let db = into.map_or_else(|| database_in(&root_of(&dir)), database);
            let store = match stores.entry(db.clone()) {
                Entry::Occupied(open) => open.into_mut(),
                Entry::Vacant(slot) => slot.insert(Store::open(&db)?),
            };
            let points = record(store, &dir, &loaded.report)?;
            println!("recorded {} ({points} points) in {}", loaded.report.session_id, db.display());
            recorded += 1;
        }
    }
    for line in &skipped {
        eprintln!("decode-baseline: history import: skipped {line}");
    }
    println!("history import: {recorded} session(s) recorded, {} skipped", skipped.len());
    Ok(ExitCode::Ok)
}
