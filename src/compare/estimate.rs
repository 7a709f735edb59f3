//! The comparisons themselves: one row per cell (one session) or per cell and adapter (two
//! sessions), each a ratio of per-token medians (numerator over denominator) with its by-request
//! bootstrap interval, held against the row's noise threshold; and the overall verdict.
//!
//! One session: controlled over stock. Two sessions: B over A, per adapter. A ratio below 1 means
//! the numerator takes less time per token.

use std::collections::BTreeSet;

use decode_baseline::stats::{
    against_yardstick, ratio_of_medians, BootstrapConfig, Comparison, NoiseBound, NoiseThreshold, RatioEstimate,
    Resampling, SessionRatio, Verdict,
};
use decode_baseline_wire::{session::SessionStatus, Adapter, ExitCode, Mode};
use serde::Serialize;

use super::{
    identity::{self, Mismatch},
    load::LoadedSession,
    samples::{self, CellData},
    threshold::{self, RowThreshold},
    CompareError,
};

/// The version of the JSON `compare --format json` prints. Version 2 added `basis`, `against`,
/// `noise`, the `inconclusive` verdict and `raw`.
pub const COMPARE_SCHEMA_VERSION: u32 = 2;

/// What a row's ratio rests on, i.e. what it holds constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// One session, sequential order: ratio of the two adapters' pooled medians. The machine is
    /// held constant only as far as it stayed the same between the two workers' runs.
    RatioOfMedians,
    /// One session, interleaved order: the median ratio of adjacent requests. The machine is
    /// held constant request by request.
    Paired,
    /// Two sessions: the adapter's ratio to the reference adapter in B over the same in A. The
    /// machine is held constant within each session; what moves is the adapter against the
    /// reference.
    AgainstReference,
    /// Two sessions: the adapter's own times, B over A. Holds nothing constant: the machine's
    /// drift between the sessions is part of it, so its verdict is `inconclusive` unless `--raw`.
    Raw,
}

/// What was compared with what.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Controlled over stock, in one session.
    WithinSession,
    /// Session B over session A, per adapter.
    AcrossSessions,
}

/// A session as the output names it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SessionRef {
    pub session_id: String,
    pub path: String,
    pub status: SessionStatus,
}

/// One side of a row: its label and per-token median.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Side {
    /// `controlled`, `stock`, `A` or `B`.
    pub label: String,
    /// Per-token median over the measured requests, ns; absent without valid data.
    pub median_ns: Option<f64>,
    /// Measured requests behind it.
    pub requests: usize,
}

/// How a row ended.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "result")]
pub enum RowResult {
    Compared {
        comparison: Comparison,
        threshold: RowThreshold,
    },
    /// No ratio could be estimated (e.g. a reference-pair cell has one request per adapter).
    NotCompared {
        reason: String,
    },
}

/// One line of the comparison.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Row {
    pub cell: String,
    pub mode: Mode,
    /// The adapter compared: across sessions, the one whose times or ratio are compared; within
    /// one session, the one measured against the session's reference.
    pub adapter: Option<Adapter>,
    /// What the ratio rests on.
    pub basis: Basis,
    /// The adapter it is measured against within each session: the reference of
    /// `against_reference` rows and of every row within one session; absent for raw rows.
    pub against: Option<Adapter>,
    /// Whether the row's verdict counts toward the overall verdict: `false` for raw rows across
    /// sessions without `--raw`, which are shown for context only.
    pub judged: bool,
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
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
    /// Two sessions compared with `--across-devices`: their backend and device differences
    /// (`identity::DEVICE_FIELDS`), named here instead of refusing; empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub device_differences: Vec<Mismatch>,
    /// `--threshold`, when given.
    pub threshold_flag: Option<f64>,
    /// `--raw`: raw rows across sessions get a verdict too.
    pub raw: bool,
    pub rows: Vec<Row>,
    /// Cells only session A ran (two sessions).
    pub only_in_a: Vec<String>,
    /// Cells only session B ran (two sessions).
    pub only_in_b: Vec<String>,
    /// The overall verdict: `slower` if any row is slower, else `faster` if any is faster, else
    /// `inconclusive` if any is inconclusive, else `no_difference`; absent when refused.
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
            (false, Some(Verdict::Inconclusive)) => ExitCode::Inconclusive,
            (false, Some(Verdict::NoDifference) | None) => ExitCode::Ok,
        }
    }
}

fn session_ref(s: &LoadedSession) -> SessionRef {
    SessionRef { session_id: s.report.session_id.clone(), path: s.path.display().to_string(), status: s.report.status }
}

fn side(label: &str, cell: &CellData, adapter: &Adapter) -> Side {
    let sample = cell.sample(adapter).ok();
    Side {
        label: label.to_owned(),
        median_ns: sample.as_ref().map(|s| s.pooled().median()),
        requests: cell.adapters.get(adapter).map_or(0, Vec::len),
    }
}

/// Holds an estimated ratio against its threshold; `Err` means not compared, with the reason.
fn outcome(ratio: Result<RatioEstimate, String>, threshold: RowThreshold, noise: NoiseBound) -> RowResult {
    match ratio {
        Ok(ratio) => RowResult::Compared { comparison: Comparison::new(ratio, threshold.threshold, noise), threshold },
        Err(reason) => RowResult::NotCompared { reason },
    }
}

fn of_medians(
    numerator: Result<decode_baseline::stats::ClusteredSample, String>,
    denominator: Result<decode_baseline::stats::ClusteredSample, String>,
) -> Result<RatioEstimate, String> {
    let (n, d) = (numerator?, denominator?);
    ratio_of_medians(&n, &d, Resampling::ByRequest, &BootstrapConfig::default()).map_err(|e| e.to_string())
}

/// A recorded A/A pair bounds the run-to-run variation (also when `--threshold` sets the band);
/// so does an interval that resampled whole runs.
fn noise(
    aa_pairs: &[(String, RatioEstimate)],
    other_pairs: &[(String, RatioEstimate)],
    runs_resampled: bool,
) -> NoiseBound {
    if !aa_pairs.is_empty() || !other_pairs.is_empty() || runs_resampled {
        NoiseBound::Bounded
    } else {
        NoiseBound::Unbounded
    }
}

fn flag_threshold(flag: Option<f64>) -> Result<Option<NoiseThreshold>, CompareError> {
    flag.map(NoiseThreshold::given).transpose().map_err(CompareError::Threshold)
}

/// Labelled A/A ratios of `pick` over `cells` other than `except`, each labelled with `prefix`.
fn others<'a>(
    prefix: &str,
    cells: &'a [CellData],
    except: &str,
    pick: impl Fn(&'a CellData) -> Vec<(Adapter, RatioEstimate)>,
) -> Vec<(String, RatioEstimate)> {
    cells
        .iter()
        .filter(|c| c.cell != except)
        .flat_map(|c| pick(c).into_iter().map(move |(a, r)| (format!("{prefix}{} {a}", c.cell), r)))
        .collect()
}

/// Every adapter over the session's reference adapter in every cell of one session: the paired
/// ratio where the session interleaved them, else the ratio of medians.
pub fn compare_within(
    a: &LoadedSession,
    flag: Option<f64>,
    allow_mismatch: bool,
) -> Result<CompareReport, CompareError> {
    let flag_t = flag_threshold(flag)?;
    let cells = samples::cells(&a.report);
    let mismatches = identity::within(&a.report);
    let refused = !mismatches.is_empty() && !allow_mismatch;
    let mut rows = Vec::new();
    if !refused {
        for cell in &cells {
            for adapter in cell.adapters.keys().filter(|a| **a != cell.reference) {
                rows.push(within_row(cell, &cells, adapter, flag_t));
            }
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
        device_differences: Vec::new(),
        threshold_flag: flag,
        raw: false,
        rows,
        only_in_a: Vec::new(),
        only_in_b: Vec::new(),
        verdict: None,
        exit_code: 0,
    })
}

/// `adapter` over the reference in one cell of one session.
fn within_row(cell: &CellData, cells: &[CellData], adapter: &Adapter, flag: Option<NoiseThreshold>) -> Row {
    let reference = &cell.reference;
    let (basis, ratio, own, other, resampled_runs) = match cell.paired(adapter) {
        Some(pairs) => {
            let own: Vec<(String, RatioEstimate)> = cell
                .paired_aa
                .get(adapter)
                .map(|r| (format!("{adapter} against {reference}"), *r))
                .into_iter()
                .collect();
            let other = others("", cells, &cell.cell, |c| c.paired_aa.iter().map(|(a, r)| (a.clone(), *r)).collect());
            let runs = pairs.as_ref().map_or(0, |p| p.runs());
            let ratio = pairs.and_then(|p| p.estimate(&BootstrapConfig::default()).map_err(|e| e.to_string()));
            (Basis::Paired, ratio, own, other, runs > 1)
        }
        None => {
            let own: Vec<(String, RatioEstimate)> = [adapter, reference]
                .into_iter()
                .filter_map(|a| cell.aa_ratios.get(a).map(|r| (a.to_string(), *r)))
                .collect();
            let other = others("", cells, &cell.cell, |c| c.aa_ratios.iter().map(|(a, r)| (a.clone(), *r)).collect());
            let ratio = of_medians(cell.sample(adapter), cell.sample(reference));
            (Basis::RatioOfMedians, ratio, own, other, false)
        }
    };
    let threshold = threshold::choose(flag, &own, &other);
    let bound = noise(&own, &other, resampled_runs);
    Row {
        cell: cell.cell.clone(),
        mode: cell.mode,
        adapter: Some(adapter.clone()),
        basis,
        against: Some(reference.clone()),
        judged: true,
        numerator: side(adapter.as_str(), cell, adapter),
        denominator: side(reference.as_str(), cell, reference),
        outcome: outcome(ratio, threshold, bound),
    }
}

/// One session's ratio of `adapter` to the reference, paired when the session interleaved them.
enum Yardstick {
    Paired(decode_baseline::stats::PairedSample),
    Medians(decode_baseline::stats::ClusteredSample, decode_baseline::stats::ClusteredSample),
}

impl Yardstick {
    fn of(cell: &CellData, adapter: &Adapter) -> Result<Self, String> {
        match cell.paired(adapter) {
            Some(pairs) => pairs.map(Yardstick::Paired),
            None => Ok(Yardstick::Medians(cell.sample(adapter)?, cell.sample(&cell.reference)?)),
        }
    }

    fn ratio(&self) -> SessionRatio<'_> {
        match self {
            Yardstick::Paired(pairs) => SessionRatio::Paired(pairs),
            Yardstick::Medians(adapter, reference) => SessionRatio::Medians { adapter, reference },
        }
    }

    fn resamples_runs(&self) -> bool {
        matches!(self, Yardstick::Paired(pairs) if pairs.runs() > 1)
    }

    /// The A/A ratios that measure this yardstick's run-to-run noise in `cell`.
    fn aa(cell: &CellData, adapter: &Adapter) -> Vec<(Adapter, RatioEstimate)> {
        if cell.pairs.contains_key(adapter) {
            cell.paired_aa.get(adapter).map(|r| (adapter.clone(), *r)).into_iter().collect()
        } else {
            [adapter, &cell.reference]
                .into_iter()
                .filter_map(|a| cell.aa_ratios.get(a).map(|r| (a.clone(), *r)))
                .collect()
        }
    }
}

/// Session B against session A, cell by cell: for every adapter other than the reference, its
/// ratio to the reference in B over the same in A (`against_reference`); and for every adapter,
/// its own times B over A (`raw`), whose verdict is `inconclusive` unless `raw` is set.
pub fn compare_across(
    a: &LoadedSession,
    b: &LoadedSession,
    flag: Option<f64>,
    allow_mismatch: bool,
    across_versions: bool,
    across_devices: bool,
    raw: bool,
) -> Result<CompareReport, CompareError> {
    let flag_t = flag_threshold(flag)?;
    let cells_a = samples::cells(&a.report);
    let cells_b = samples::cells(&b.report);
    let names_b: BTreeSet<&str> = cells_b.iter().map(|c| c.cell.as_str()).collect();
    let names_a: BTreeSet<&str> = cells_a.iter().map(|c| c.cell.as_str()).collect();
    let shared_cases: BTreeSet<String> =
        cells_a.iter().filter(|c| cells_b.iter().any(|d| d.case_id == c.case_id)).map(|c| c.case_id.clone()).collect();
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
    let device_differences: Vec<identity::Mismatch> =
        mismatches.iter().filter(|m| identity::is_device(m)).cloned().collect();
    if across_devices {
        mismatches.retain(|m| !identity::is_device(m));
    }
    let refused = !mismatches.is_empty() && !allow_mismatch;
    let mut rows = Vec::new();
    if !refused {
        for ca in &cells_a {
            let Some(cb) = cells_b.iter().find(|c| c.cell == ca.cell) else { continue };
            let reference = &ca.reference;
            let mut adapters: Vec<&Adapter> = ca.adapters.keys().chain(cb.adapters.keys()).collect();
            adapters.sort();
            adapters.dedup();
            for adapter in adapters {
                let in_both = ca.adapters.contains_key(adapter) && cb.adapters.contains_key(adapter);
                let with_reference = in_both
                    && cb.reference == *reference
                    && ca.adapters.contains_key(reference)
                    && cb.adapters.contains_key(reference);
                if adapter != reference && with_reference {
                    rows.push(yardstick_row(ca, cb, &cells_a, &cells_b, adapter, flag_t));
                }
                rows.push(raw_row(ca, cb, &cells_a, &cells_b, adapter, flag_t, raw));
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
        device_differences: if across_devices { device_differences } else { Vec::new() },
        threshold_flag: flag,
        raw,
        rows,
        only_in_a: names_a.difference(&names_b).map(|s| (*s).to_owned()).collect(),
        only_in_b: names_b.difference(&names_a).map(|s| (*s).to_owned()).collect(),
        verdict: None,
        exit_code: 0,
    })
}

/// Labelled A/A ratios a threshold is chosen from.
type Candidates = Vec<(String, RatioEstimate)>;

/// The labelled A/A candidates of a row across sessions: `pick` of the cell in A and in B
/// (`own`), and of the other cells of both sessions (`other`).
fn aa_candidates<'a>(
    ca: &'a CellData,
    cb: &'a CellData,
    cells_a: &'a [CellData],
    cells_b: &'a [CellData],
    pick: impl Fn(&'a CellData) -> Vec<(Adapter, RatioEstimate)> + Copy,
) -> (Candidates, Candidates) {
    let mut own = Vec::new();
    for (label, cell) in [("A", ca), ("B", cb)] {
        own.extend(pick(cell).into_iter().map(|(a, r)| (format!("{label} {a}"), r)));
    }
    let mut other = others("A ", cells_a, &ca.cell, pick);
    other.extend(others("B ", cells_b, &ca.cell, pick));
    (own, other)
}

fn yardstick_row(
    ca: &CellData,
    cb: &CellData,
    cells_a: &[CellData],
    cells_b: &[CellData],
    adapter: &Adapter,
    flag: Option<NoiseThreshold>,
) -> Row {
    let (own, other) = aa_candidates(ca, cb, cells_a, cells_b, |c| Yardstick::aa(c, adapter));
    let threshold = threshold::choose(flag, &own, &other);
    let sides = Yardstick::of(cb, adapter).and_then(|yb| Yardstick::of(ca, adapter).map(|ya| (yb, ya)));
    let resampled_runs = sides.as_ref().is_ok_and(|(yb, ya)| yb.resamples_runs() && ya.resamples_runs());
    let ratio = sides.and_then(|(yb, ya)| {
        against_yardstick(yb.ratio(), ya.ratio(), &BootstrapConfig::default()).map_err(|e| e.to_string())
    });
    let bound = noise(&own, &other, resampled_runs);
    Row {
        cell: ca.cell.clone(),
        mode: ca.mode,
        adapter: Some(adapter.clone()),
        basis: Basis::AgainstReference,
        against: Some(ca.reference.clone()),
        judged: true,
        numerator: side("B", cb, adapter),
        denominator: side("A", ca, adapter),
        outcome: outcome(ratio, threshold, bound),
    }
}

fn raw_row(
    ca: &CellData,
    cb: &CellData,
    cells_a: &[CellData],
    cells_b: &[CellData],
    adapter: &Adapter,
    flag: Option<NoiseThreshold>,
    raw: bool,
) -> Row {
    let pick = |c: &CellData| c.aa_ratios.get(adapter).map(|r| (adapter.clone(), *r)).into_iter().collect();
    let (own, other) = aa_candidates(ca, cb, cells_a, cells_b, pick);
    let threshold = threshold::choose(flag, &own, &other);
    // Without --raw nothing bounds the machine's drift between the sessions.
    let bound = if raw { noise(&own, &other, false) } else { NoiseBound::Unbounded };
    Row {
        cell: ca.cell.clone(),
        mode: ca.mode,
        adapter: Some(adapter.clone()),
        basis: Basis::Raw,
        against: None,
        judged: raw,
        numerator: side("B", cb, adapter),
        denominator: side("A", ca, adapter),
        outcome: outcome(of_medians(cb.sample(adapter), ca.sample(adapter)), threshold, bound),
    }
}

/// Sets the overall verdict and exit code; a comparison with no row compared is bad input.
fn finish(mut report: CompareReport) -> Result<CompareReport, CompareError> {
    if report.refused {
        report.exit_code = report.exit().code();
        return Ok(report);
    }
    let mut verdicts: Vec<Verdict> = report.rows.iter().filter(|r| r.judged).filter_map(Row::verdict).collect();
    if verdicts.is_empty() && report.rows.iter().any(|r| r.verdict().is_some()) {
        // Only raw rows could be compared (e.g. stock-only sessions): nothing holds the machine
        // constant, so nothing is shown either way.
        verdicts.push(Verdict::Inconclusive);
    }
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
    } else if verdicts.contains(&Verdict::Inconclusive) {
        Verdict::Inconclusive
    } else {
        Verdict::NoDifference
    };
    report.verdict = Some(verdict);
    report.exit_code = report.exit().code();
    Ok(report)
}
