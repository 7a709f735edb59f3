//! The comparisons themselves: one row per cell (one session) or per cell and adapter (two
//! sessions), each a ratio of per-token medians (numerator over denominator) with its by-request
//! bootstrap interval, held against the row's noise threshold; and the overall verdict.
//!
//! One session: controlled over stock. Two sessions: B over A, per adapter. A ratio below 1 means
//! the numerator takes less time per token.

use std::collections::BTreeSet;

use decode_baseline::stats::{BootstrapConfig, Comparison, NoiseThreshold, RatioEstimate, Resampling, Verdict};
use decode_baseline_protocol::{session::SessionStatus, Adapter, ExitCode, Mode};
use serde::Serialize;

use super::{
    identity::{self, Mismatch},
    load::LoadedSession,
    samples::{self, CellData},
    threshold::{self, RowThreshold},
    CompareError,
};

/// The version of the JSON `compare --format json` prints.
pub const COMPARE_SCHEMA_VERSION: u32 = 1;

/// What was compared with what.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Controlled over stock, in one session.
    WithinSession,
    /// Session B over session A, per adapter.
    AcrossSessions,
}

/// A session as the output names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionRef {
    pub session_id: String,
    pub path: String,
    pub status: SessionStatus,
}

/// One side of a row: its label and per-token median.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    /// `controlled`, `stock`, `A` or `B`.
    pub label: String,
    /// Per-token median over the measured requests, ns; absent without valid data.
    pub median_ns: Option<f64>,
    /// Measured requests behind it.
    pub requests: usize,
}

/// How a row ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "result")]
pub enum RowResult {
    Compared {
        comparison: Comparison,
        threshold: RowThreshold,
    },
    /// No ratio could be estimated (e.g. a reference-pair cell has one request per adapter).
    NotCompared { reason: String },
}

/// One line of the comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub cell: String,
    pub mode: Mode,
    /// The adapter compared across sessions; absent within one session.
    pub adapter: Option<Adapter>,
    pub numerator: Side,
    pub denominator: Side,
    pub outcome: RowResult,
}

impl Row {
    pub fn verdict(&self) -> Option<Verdict> {
        match &self.outcome {
            RowResult::Compared { comparison, .. } => Some(comparison.verdict),
            RowResult::NotCompared { .. } => None,
        }
    }
}

/// The MLX versions of two sessions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Versions {
    /// Session A's, e.g. `mlx 0.32.2, mlx_lm 0.32.2`.
    pub a: String,
    /// Session B's.
    pub b: String,
    /// `--across-versions` was given: environment differences are expected, not mismatches.
    pub across_versions: bool,
    /// The environment fields that differ (`mlx_version`, `lock_sha256`, …), asked for or not.
    pub differences: Vec<Mismatch>,
}

/// Everything `compare` found; printed in each format, and as is for `--format json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareReport {
    /// Equals [`COMPARE_SCHEMA_VERSION`].
    pub schema_version: u32,
    pub kind: Kind,
    pub a: SessionRef,
    pub b: Option<SessionRef>,
    /// What differs between the things compared (see `identity`).
    pub mismatches: Vec<Mismatch>,
    /// Mismatches were found and `--allow-mismatch` was not given: no rows.
    pub refused: bool,
    /// Two sessions: the MLX versions each ran on, and whether the environment difference was
    /// asked for (`--across-versions`); absent within one session.
    pub versions: Option<Versions>,
    /// `--threshold`, when given.
    pub threshold_flag: Option<f64>,
    pub rows: Vec<Row>,
    /// Cells only session A ran (two sessions).
    pub only_in_a: Vec<String>,
    /// Cells only session B ran (two sessions).
    pub only_in_b: Vec<String>,
    /// The overall verdict: `slower` if any row is slower, else `faster` if any is faster, else
    /// `no_difference`; absent when refused.
    pub verdict: Option<Verdict>,
    /// The process exit code this report ends with.
    pub exit_code: i32,
}

impl CompareReport {
    /// The exit code: refused, else by the overall verdict (see `req/compare.md`).
    pub fn exit(&self) -> ExitCode {
        match (self.refused, self.verdict) {
            (true, _) => ExitCode::Refused,
            (false, Some(Verdict::Slower)) => ExitCode::Slower,
            (false, Some(Verdict::Faster)) => ExitCode::Faster,
            (false, Some(Verdict::NoDifference) | None) => ExitCode::Ok,
        }
    }
}

fn session_ref(s: &LoadedSession) -> SessionRef {
    SessionRef { session_id: s.report.session_id.clone(), path: s.path.display().to_string(), status: s.report.status }
}

fn side(label: &str, cell: &CellData, adapter: Adapter) -> Side {
    let sample = cell.sample(adapter).ok();
    Side {
        label: label.to_owned(),
        median_ns: sample.as_ref().map(|s| s.pooled().median()),
        requests: cell.adapters.get(&adapter).map_or(0, Vec::len),
    }
}

fn estimate(
    numerator: Result<decode_baseline::stats::ClusteredSample, String>,
    denominator: Result<decode_baseline::stats::ClusteredSample, String>,
    threshold: RowThreshold,
) -> RowResult {
    let ratio = numerator.and_then(|n| denominator.map(|d| (n, d))).and_then(|(n, d)| {
        RatioEstimate::of_medians(&n, &d, Resampling::ByRequest, &BootstrapConfig::default()).map_err(|e| e.to_string())
    });
    match ratio {
        Ok(ratio) => RowResult::Compared { comparison: Comparison::new(ratio, threshold.threshold), threshold },
        Err(reason) => RowResult::NotCompared { reason },
    }
}

fn flag_threshold(flag: Option<f64>) -> Result<Option<NoiseThreshold>, CompareError> {
    flag.map(NoiseThreshold::given).transpose().map_err(CompareError::Threshold)
}

/// Controlled over stock in every cell of one session.
pub fn compare_within(a: &LoadedSession, flag: Option<f64>, allow_mismatch: bool) -> Result<CompareReport, CompareError> {
    let flag_t = flag_threshold(flag)?;
    let cells = samples::cells(&a.report, &a.path)?;
    let mismatches = identity::within(&a.report);
    let refused = !mismatches.is_empty() && !allow_mismatch;
    let mut rows = Vec::new();
    let labelled = |cell: &CellData| -> Vec<(String, RatioEstimate)> {
        cell.aa_ratios.iter().map(|(adapter, r)| (format!("{} {}", cell.cell, adapter.as_str()), *r)).collect()
    };
    if !refused {
        for cell in &cells {
            let aa: Vec<(String, RatioEstimate)> =
                cell.aa_ratios.iter().map(|(adapter, r)| (adapter.as_str().to_owned(), *r)).collect();
            let others: Vec<(String, RatioEstimate)> =
                cells.iter().filter(|c| c.cell != cell.cell).flat_map(labelled).collect();
            rows.push(Row {
                cell: cell.cell.clone(),
                mode: cell.mode,
                adapter: None,
                numerator: side("controlled", cell, Adapter::Controlled),
                denominator: side("stock", cell, Adapter::Stock),
                outcome: estimate(
                    cell.sample(Adapter::Controlled),
                    cell.sample(Adapter::Stock),
                    threshold::choose(flag_t, &aa, &others),
                ),
            });
        }
    }
    finish(CompareReport {
        schema_version: COMPARE_SCHEMA_VERSION,
        kind: Kind::WithinSession,
        a: session_ref(a),
        b: None,
        mismatches,
        refused,
        versions: None,
        threshold_flag: flag,
        rows,
        only_in_a: Vec::new(),
        only_in_b: Vec::new(),
        verdict: None,
        exit_code: 0,
    })
}

/// Session B over session A, cell by cell and adapter by adapter.
pub fn compare_across(
    a: &LoadedSession,
    b: &LoadedSession,
    flag: Option<f64>,
    allow_mismatch: bool,
    across_versions: bool,
) -> Result<CompareReport, CompareError> {
    let flag_t = flag_threshold(flag)?;
    let cells_a = samples::cells(&a.report, &a.path)?;
    let cells_b = samples::cells(&b.report, &b.path)?;
    let names_b: BTreeSet<&str> = cells_b.iter().map(|c| c.cell.as_str()).collect();
    let names_a: BTreeSet<&str> = cells_a.iter().map(|c| c.cell.as_str()).collect();
    let shared_cases: BTreeSet<String> = cells_a
        .iter()
        .filter(|c| cells_b.iter().any(|d| d.case_id == c.case_id))
        .map(|c| c.case_id.clone())
        .collect();
    let mut mismatches = identity::across(&a.report, &b.report, &shared_cases);
    let versions = Versions {
        a: identity::versions(&a.report),
        b: identity::versions(&b.report),
        across_versions,
        differences: mismatches.iter().filter(|m| identity::is_environment(m)).cloned().collect(),
    };
    if across_versions {
        mismatches.retain(|m| !identity::is_environment(m));
    }
    let refused = !mismatches.is_empty() && !allow_mismatch;
    let mut rows = Vec::new();
    if !refused {
        for ca in &cells_a {
            let Some(cb) = cells_b.iter().find(|c| c.cell == ca.cell) else { continue };
            for adapter in [Adapter::Controlled, Adapter::Stock] {
                if !ca.adapters.contains_key(&adapter) && !cb.adapters.contains_key(&adapter) {
                    continue;
                }
                let mut aa = Vec::new();
                for (label, cell) in [("A", ca), ("B", cb)] {
                    if let Some(r) = cell.aa_ratios.get(&adapter) {
                        aa.push((format!("{label} {}", adapter.as_str()), *r));
                    }
                }
                let mut others = Vec::new();
                for (label, cells) in [("A", &cells_a), ("B", &cells_b)] {
                    for cell in cells.iter().filter(|c| c.cell != ca.cell) {
                        if let Some(r) = cell.aa_ratios.get(&adapter) {
                            others.push((format!("{label} {} {}", cell.cell, adapter.as_str()), *r));
                        }
                    }
                }
                rows.push(Row {
                    cell: ca.cell.clone(),
                    mode: ca.mode,
                    adapter: Some(adapter),
                    numerator: side("B", cb, adapter),
                    denominator: side("A", ca, adapter),
                    outcome: estimate(cb.sample(adapter), ca.sample(adapter), threshold::choose(flag_t, &aa, &others)),
                });
            }
        }
    }
    finish(CompareReport {
        schema_version: COMPARE_SCHEMA_VERSION,
        kind: Kind::AcrossSessions,
        a: session_ref(a),
        b: Some(session_ref(b)),
        mismatches,
        refused,
        versions: Some(versions),
        threshold_flag: flag,
        rows,
        only_in_a: names_a.difference(&names_b).map(|s| (*s).to_owned()).collect(),
        only_in_b: names_b.difference(&names_a).map(|s| (*s).to_owned()).collect(),
        verdict: None,
        exit_code: 0,
    })
}

/// Sets the overall verdict and exit code; a comparison with no row compared is bad input.
fn finish(mut report: CompareReport) -> Result<CompareReport, CompareError> {
    if report.refused {
        report.exit_code = report.exit().code();
        return Ok(report);
    }
    let verdicts: Vec<Verdict> = report.rows.iter().filter_map(Row::verdict).collect();
    if verdicts.is_empty() {
        let reasons: Vec<String> = report
            .rows
            .iter()
            .filter_map(|r| match &r.outcome {
                RowResult::NotCompared { reason } => Some(format!("{}: {reason}", r.cell)),
                RowResult::Compared { .. } => None,
            })
            .collect();
        let detail = if reasons.is_empty() {
            "no cell with valid runs on both sides".to_owned()
        } else {
            format!("no cell could be compared ({})", reasons.join("; "))
        };
        return Err(CompareError::NothingToCompare { detail });
    }
    let verdict = if verdicts.contains(&Verdict::Slower) {
        Verdict::Slower
    } else if verdicts.contains(&Verdict::Faster) {
        Verdict::Faster
    } else {
        Verdict::NoDifference
    };
    report.verdict = Some(verdict);
    report.exit_code = report.exit().code();
    Ok(report)
}
