//! The raw material of a comparison or a plot, taken from a session report: per cell and
//! adapter, the decode-step times of every measured request, and the A/A ratios the launcher
//! recorded.
//!
//! Only worker runs that passed the launcher's validation and ended `ok` count, the same runs the
//! launcher's own analysis uses; the extra run of an A/A pair (folder suffix `-aa`) is kept apart,
//! because its only job is to measure the noise.

use std::{collections::BTreeMap, path::Path};

use decode_baseline::stats::{ClusteredSample, RatioEstimate, StatsError};
use decode_baseline_protocol::{
    report::{Phase, Status},
    session::{SessionReport, WorkerRun},
    Adapter, Mode,
};
use serde::Deserialize;

use super::error::CompareError;

/// One measured request: its decode steps, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredRequest {
    /// Sequence position of each step (L+1, L+2, …).
    pub positions: Vec<u32>,
    /// Duration of each step, ns.
    pub dur_ns: Vec<u64>,
}

/// One cell of a session.
#[derive(Debug, Clone, PartialEq)]
pub struct CellData {
    /// `<case>.<prompt>.<mode>`.
    pub cell: String,
    pub mode: Mode,
    /// The manifest case (model) of the cell.
    pub case_id: String,
    /// Measured requests per adapter, over all repetitions, A/A runs excluded. An adapter with no
    /// valid run is absent.
    pub adapters: BTreeMap<Adapter, Vec<MeasuredRequest>>,
    /// The launcher's A/A ratios (the extra run over the others), per adapter.
    pub aa_ratios: BTreeMap<Adapter, RatioEstimate>,
}

impl CellData {
    /// The steps of `adapter` as a by-request sample, for the bootstrap.
    pub fn sample(&self, adapter: Adapter) -> Result<ClusteredSample, String> {
        let requests = self.adapters.get(&adapter).ok_or_else(|| format!("no valid {} run", adapter.as_str()))?;
        ClusteredSample::new(requests.iter().map(|r| r.dur_ns.iter().map(|&d| d as f64).collect()).collect())
            .map_err(|err: StatsError| format!("{}: {err}", adapter.as_str()))
    }
}

fn is_aa(run: &WorkerRun) -> bool {
    run.run_id.ends_with("-aa")
}

/// Every cell of `session` that has at least one valid run, in the order the session ran them.
/// `path` names the report in errors about its analysis.
pub fn cells(session: &SessionReport, path: &Path) -> Result<Vec<CellData>, CompareError> {
    let aa = aa_ratios(session, path)?;
    let mut out: Vec<CellData> = Vec::new();
    for run in &session.workers {
        let Some(report) = run.report.as_ref().filter(|r| r.status == Status::Ok && run.validation_errors.is_empty()) else {
            continue;
        };
        let index = match out.iter().position(|c| c.cell == run.cell) {
            Some(index) => index,
            None => {
                out.push(CellData {
                    cell: run.cell.clone(),
                    mode: report.mode,
                    case_id: report.case_id.clone(),
                    adapters: BTreeMap::new(),
                    aa_ratios: aa.get(&run.cell).cloned().unwrap_or_default(),
                });
                out.len() - 1
            }
        };
        if is_aa(run) {
            continue;
        }
        let requests = report
            .requests
            .iter()
            .filter(|q| matches!(q.phase, Some(Phase::Measured) | None))
            .map(|q| MeasuredRequest {
                positions: q.steps.iter().map(|s| s.position).collect(),
                dur_ns: q.steps.iter().map(|s| s.dur_ns).collect(),
            })
            .filter(|q| !q.dur_ns.is_empty());
        out[index].adapters.entry(run.adapter).or_default().extend(requests);
    }
    out.retain(|c| !c.adapters.is_empty() || !c.aa_ratios.is_empty());
    Ok(out)
}

/// The part of the launcher's analysis this module reads; the rest is ignored.
#[derive(Deserialize)]
struct AnalysisView {
    #[serde(default)]
    cells: Vec<CellView>,
}

#[derive(Deserialize)]
struct CellView {
    cell: String,
    #[serde(default)]
    aa_ratios: BTreeMap<Adapter, RatioEstimate>,
}

/// `analysis.cells[].aa_ratios`, by cell. A session without an analysis (`null`) has none.
fn aa_ratios(session: &SessionReport, path: &Path) -> Result<BTreeMap<String, BTreeMap<Adapter, RatioEstimate>>, CompareError> {
    if session.analysis.is_null() {
        return Ok(BTreeMap::new());
    }
    let view: AnalysisView = serde_json::from_value(session.analysis.clone())
        .map_err(|err| CompareError::Analysis { path: path.to_owned(), detail: err.to_string() })?;
    Ok(view.cells.into_iter().map(|c| (c.cell, c.aa_ratios)).collect())
}
