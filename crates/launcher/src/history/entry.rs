//! What one session adds to the history: its facts (when, where, on what, from which loop), and
//! one point per compared row of its decisions (the row's ratio against the session's reference,
//! with its interval and error), each keyed to the series of like sessions it belongs to.
//!
//! A series is one row (cell, quantity, adapter against reference) on one machine and design:
//! host, backend and device, CPU placement, worker order and repetitions, prefill step size and
//! rank group. Everything a change may come from stays out of the key and is recorded beside
//! each point instead: the loop's commit and worker source digests, the MLX and mlx_lm versions.

use decode_baseline_wire::compare::{Row, RowResult};
use decode_baseline_wire::session::SessionReport;
use decode_baseline_wire::Sha256Digest;

use crate::compare::identity;
use crate::session::serde_word;

/// One session's facts.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionEntry {
    pub session_id: String,
    /// The session folder, as given when it was recorded.
    pub folder: String,
    pub started_utc: String,
    /// `ok`, `worker_failed`, … as `session.json` spells it.
    pub status: String,
    pub host: String,
    /// Backend and device, e.g. `cpu: AMD EPYC 9B14 96-Core Processor`.
    pub device: String,
    pub placement: String,
    /// Order, repetitions, prefill step size and rank group, e.g. `interleaved × 6, prefill step
    /// 2048, one process per worker`.
    pub design: String,
    /// e.g. `mlx 0.32.4, mlx_lm 0.32.2`.
    pub versions: String,
    /// The commit the workers ran from (`+dirty` with uncommitted changes).
    pub code_version: String,
    /// Each adapter's worker source digest, e.g. `controlled 3f2a91c0d4e1, stock 9b0c…`.
    pub loop_sources: String,
}

/// One row of one session.
#[derive(Debug, Clone, PartialEq)]
pub struct PointEntry {
    /// The series' short id: `s` and the first 10 hex digits of the key's SHA-256.
    pub series: String,
    /// The series key in words (see the module docs).
    pub series_key: String,
    pub cell: String,
    /// `per_token` or `first_token`.
    pub quantity: String,
    pub adapter: String,
    pub against: String,
    pub ratio: f64,
    pub lower: f64,
    pub upper: f64,
    pub log_estimate: f64,
    pub se: f64,
    pub df: f64,
    pub verdict: String,
    pub mde: f64,
    pub numerator_median_ns: Option<f64>,
    pub denominator_median_ns: Option<f64>,
}

/// The session's facts; `folder` is where it was read from or written to.
pub fn session_entry(session: &SessionReport, folder: &str) -> SessionEntry {
    let mut adapters: Vec<_> = session.workers.iter().map(|w| &w.adapter).collect();
    adapters.sort();
    adapters.dedup();
    let loop_sources = adapters
        .iter()
        .map(|a| {
            let digests = identity::worker_sources(session, a);
            format!("{} {}", a.as_str(), digests.get(..12).unwrap_or(&digests))
        })
        .collect::<Vec<_>>()
        .join(", ");
    SessionEntry {
        session_id: session.session_id.clone(),
        folder: folder.to_owned(),
        started_utc: session.started_utc.clone(),
        status: serde_word(&session.status),
        host: identity::hostname(session),
        device: session
            .device
            .as_ref()
            .map_or("not recorded".to_owned(), |d| format!("{}: {}", d.backend.as_str(), identity::device_line(d))),
        placement: session.placement.as_ref().map_or("not recorded".to_owned(), crate::session::placement_as_compared),
        design: format!(
            "{} × {}, prefill step {}, {}",
            serde_word(&session.job.order),
            session.job.repetitions,
            session.job.prefill_step_size.map_or("default".to_owned(), |s| s.to_string()),
            crate::session::group_setup(session)
        ),
        versions: identity::versions(session),
        code_version: identity::code_versions(session),
        loop_sources,
    }
}

/// The series key of `row` in a session with `entry`'s facts.
fn series_key(row: &Row, entry: &SessionEntry) -> String {
    let adapter = row.adapter.as_ref().map_or(row.numerator.label.as_str(), |a| a.as_str());
    let against = row.against.as_ref().map_or(row.denominator.label.as_str(), |a| a.as_str());
    format!(
        "{} {adapter}/{against} | {} | {} | {} | {}",
        row.subject(),
        entry.host,
        entry.device,
        entry.placement,
        entry.design
    )
}

/// The short id of a series key.
pub fn series_id(key: &str) -> String {
    format!("s{}", &Sha256Digest::of_bytes(key.as_bytes()).to_hex()[..10])
}

/// The points of `rows` (a session's decisions) in a session with `entry`'s facts: one per
/// compared row.
pub fn point_entries(rows: &[Row], entry: &SessionEntry) -> Vec<PointEntry> {
    rows.iter()
        .filter_map(|row| {
            let RowResult::Compared { decision: d, .. } = &row.outcome else { return None };
            let key = series_key(row, entry);
            Some(PointEntry {
                series: series_id(&key),
                series_key: key,
                cell: row.cell.clone(),
                quantity: row.quantity.as_str().to_owned(),
                adapter: row.numerator.label.clone(),
                against: row.denominator.label.clone(),
                ratio: d.ratio,
                lower: d.ci.lower,
                upper: d.ci.upper,
                log_estimate: d.log_estimate,
                se: d.se,
                df: d.df,
                verdict: d.verdict.words().to_owned(),
                mde: d.mde,
                numerator_median_ns: row.numerator.median_ns,
                denominator_median_ns: row.denominator.median_ns,
            })
        })
        .collect()
}
