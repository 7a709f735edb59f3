//! The raw material of a comparison or a plot, taken from a session report: per cell and
//! adapter, the decode-step times of every measured request (or, for the rows of time to the
//! first token, each request's time to its first token), and the A/A ratios the launcher
//! recorded.
//!
//! Only worker runs that passed the launcher's validation and ended `ok` count, the same runs the
//! launcher's own analysis uses; the extra run of an A/A pair (`workers[].aa`) is kept apart,
//! because its only job is to measure the noise.

use std::collections::BTreeMap;

use crate::stats::{quantile_sorted, ClusteredSample, PairedSample, RatioEstimate, Sample, StatsError};
use decode_baseline_wire::{
    analysis::CellAnalysis,
    report::{Phase, RequestRecord, Status, WorkerReport},
    row::Quantity,
    session::{SessionReport, WorkerRun},
    Adapter, Mode,
};

/// One measured request: its decode steps, in order (for [`Quantity::FirstToken`], one value:
/// its time to the first token, at position L).
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredRequest {
    /// The worker run it belongs to, counted per adapter in the order the session ran them.
    pub run: usize,
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
    /// What each request's value is: its decode steps, or its time to the first token.
    pub quantity: Quantity,
    /// The manifest case (model) of the cell.
    pub case_id: String,
    /// The session's reference adapter, which every other one is measured against.
    pub reference: Adapter,
    /// Measured requests per adapter, over all repetitions, A/A runs excluded. An adapter with no
    /// valid run is absent.
    pub adapters: BTreeMap<Adapter, Vec<MeasuredRequest>>,
    /// The launcher's A/A ratios (the extra run over the others), per adapter; per token only.
    pub aa_ratios: BTreeMap<Adapter, RatioEstimate>,
    /// Valid worker runs per adapter, A/A runs excluded.
    pub runs: BTreeMap<Adapter, usize>,
    /// Interleaved sessions: per adapter other than the reference, its requests paired with the
    /// reference's (`request_pairs`), by worker run. Empty for non-interleaved sessions.
    pub pairs: BTreeMap<Adapter, Vec<Vec<(f64, f64)>>>,
    /// Interleaved sessions: per adapter other than the reference, the launcher's A/A ratio of
    /// its paired ratio (the A/A group's over the others'); per token only.
    pub paired_aa: BTreeMap<Adapter, RatioEstimate>,
    /// Interleaved sessions with an A/A group: per adapter other than the reference, the A/A
    /// group's request pairs with the reference's A/A run, as `pairs`.
    pub aa_pairs: BTreeMap<Adapter, Vec<Vec<(f64, f64)>>>,
}

impl CellData {
    /// The pair ratios of `adapter` against the reference, when the session interleaved them.
    pub fn paired(&self, adapter: &Adapter) -> Option<Result<PairedSample, String>> {
        let runs = self.pairs.get(adapter)?;
        Some(PairedSample::from_medians(runs).map_err(|err| format!("{adapter} against {}: {err}", self.reference)))
    }

    /// The log of each measured request's median step time (or its one value: the time to the
    /// first token) of `adapter`, over all its runs: the units of a non-interleaved session's
    /// test.
    pub fn log_request_medians(&self, adapter: &Adapter) -> Result<Vec<f64>, String> {
        let requests = self.adapters.get(adapter).ok_or_else(|| format!("no valid {adapter} run"))?;
        requests
            .iter()
            .map(|r| {
                let mut steps: Vec<f64> = r.dur_ns.iter().map(|&d| d as f64).collect();
                steps.sort_by(f64::total_cmp);
                let median = quantile_sorted(&steps, 0.5);
                if median > 0.0 {
                    Ok(median.ln())
                } else {
                    Err(format!("{adapter}: a request's median step time is {median} ns: expected > 0"))
                }
            })
            .collect()
    }

    /// The log of each measured request's median step time of `adapter`, grouped by worker
    /// run in run order: the units of the run-means rule.
    pub fn log_request_medians_by_run(&self, adapter: &Adapter) -> Result<Vec<Vec<f64>>, String> {
        let medians = self.log_request_medians(adapter)?;
        let mut by_run: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
        for (request, median) in self.adapters[adapter].iter().zip(medians) {
            by_run.entry(request.run).or_default().push(median);
        }
        Ok(by_run.into_values().collect())
    }

    /// The steps of `adapter` as a by-request sample, for the bootstrap.
    pub fn sample(&self, adapter: &Adapter) -> Result<ClusteredSample, String> {
        let requests = self.adapters.get(adapter).ok_or_else(|| format!("no valid {adapter} run"))?;
        ClusteredSample::new(requests.iter().map(|r| r.dur_ns.iter().map(|&d| d as f64).collect()).collect())
            .map_err(|err: StatsError| format!("{}: {err}", adapter.as_str()))
    }
}

/// The report of a worker run that passed validation and ended ok.
fn valid(run: &WorkerRun) -> Option<&WorkerReport> {
    run.report.as_ref().filter(|r| r.status == Status::Ok && run.validation_errors.is_empty())
}

/// A request's value of `quantity`: its median step time (`None` below two steps: no pair is
/// formed from it), or its time to the first token (`None` when not recorded).
fn request_value(quantity: Quantity, request: &RequestRecord) -> Option<f64> {
    match quantity {
        Quantity::PerToken => {
            Sample::new(request.steps.iter().map(|s| s.dur_ns as f64).collect()).ok().map(|s| s.median())
        }
        Quantity::FirstToken => (request.first_token_ns > 0).then_some(request.first_token_ns as f64),
    }
}

/// One measured request of `quantity` (`None` when it has no value of it).
fn measured_request(quantity: Quantity, run: usize, request: &RequestRecord) -> Option<MeasuredRequest> {
    let (positions, dur_ns) = match quantity {
        Quantity::PerToken => (
            request.steps.iter().map(|s| s.position).collect(),
            request.steps.iter().map(|s| s.dur_ns).collect::<Vec<u64>>(),
        ),
        Quantity::FirstToken if request.first_token_ns > 0 => (vec![request.prompt_len], vec![request.first_token_ns]),
        Quantity::FirstToken => return None,
    };
    (!dur_ns.is_empty()).then_some(MeasuredRequest { run, positions, dur_ns })
}

/// Pairs of adjacent requests in one cell of an interleaved session: for each repetition in
/// which both `numerator` and `denominator` have a valid run (the A/A group when `aa`), their
/// measured requests matched by index, as the two requests' values of `quantity`. One list per
/// repetition, in repetition order.
pub fn request_pairs(
    quantity: Quantity,
    workers: &[WorkerRun],
    cell: &str,
    numerator: &Adapter,
    denominator: &Adapter,
    aa: bool,
) -> Vec<Vec<(f64, f64)>> {
    let run = |adapter: &Adapter, repetition: u32| {
        workers
            .iter()
            .filter(|w| w.cell == cell && w.adapter == *adapter && w.repetition == repetition && w.aa == aa)
            .find_map(valid)
    };
    let mut repetitions: Vec<u32> =
        workers.iter().filter(|w| w.cell == cell && w.aa == aa).map(|w| w.repetition).collect();
    repetitions.sort_unstable();
    repetitions.dedup();
    let measured = |r: &RequestRecord| matches!(r.phase, Some(Phase::Measured) | None);
    repetitions
        .into_iter()
        .filter_map(|rep| {
            let (num, den) = (run(numerator, rep)?, run(denominator, rep)?);
            let pairs: Vec<(f64, f64)> = num
                .requests
                .iter()
                .filter(|q| measured(q))
                .filter_map(|q| {
                    let other = den.requests.iter().find(|d| d.index == q.index && measured(d))?;
                    Some((request_value(quantity, q)?, request_value(quantity, other)?))
                })
                .collect();
            (!pairs.is_empty()).then_some(pairs)
        })
        .collect()
}

/// Every cell of `session` that has at least one valid run, in the order the session ran them:
/// the decode steps of each request.
pub fn cells(session: &SessionReport) -> Vec<CellData> {
    cells_of(session, Quantity::PerToken)
}

/// The headline cells of `session` (where stock is `stream_generate` itself) with each
/// request's time to the first token; the other modes' first token is not stock's own. An
/// adapter whose requests recorded none (`first_token_ns` 0) is left out, and a cell left with
/// no adapter.
pub fn first_token_cells(session: &SessionReport) -> Vec<CellData> {
    let mut out = first_token_times(session);
    out.retain(|c| c.mode == Mode::Headline);
    out
}

/// Every cell of `session` with each request's time to the first token, whatever its mode (the
/// decomposition reads fixed-continuation's: the prefill forwards alone); as
/// [`first_token_cells`], adapters and cells without any left out.
pub fn first_token_times(session: &SessionReport) -> Vec<CellData> {
    let mut out = cells_of(session, Quantity::FirstToken);
    for cell in &mut out {
        cell.adapters.retain(|_, requests| !requests.is_empty());
    }
    out.retain(|c| !c.adapters.is_empty());
    out
}

/// The cells of `session` for both quantities, per token first: every row a session is judged on.
pub fn judged_cells(session: &SessionReport) -> Vec<CellData> {
    let mut out = judged_cells_of(session, Quantity::PerToken);
    out.extend(judged_cells_of(session, Quantity::FirstToken));
    out
}

/// The cells of `session` whose rows of `quantity` it is judged on: [`cells`] per token,
/// [`first_token_cells`] for the time to the first token.
pub fn judged_cells_of(session: &SessionReport, quantity: Quantity) -> Vec<CellData> {
    match quantity {
        Quantity::PerToken => cells(session),
        Quantity::FirstToken => first_token_cells(session),
    }
}

fn cells_of(session: &SessionReport, quantity: Quantity) -> Vec<CellData> {
    // The launcher's recorded A/A ratios are of per-token times.
    let recorded = if quantity == Quantity::PerToken { recorded(session) } else { BTreeMap::new() };
    let mut out: Vec<CellData> = Vec::new();
    for run in &session.workers {
        let Some(report) = valid(run) else {
            continue;
        };
        let index = match out.iter().position(|c| c.cell == run.cell) {
            Some(index) => index,
            None => {
                out.push(CellData {
                    cell: run.cell.clone(),
                    mode: report.mode,
                    quantity,
                    case_id: report.case_id.clone(),
                    reference: session.reference.clone(),
                    adapters: BTreeMap::new(),
                    aa_ratios: recorded.get(run.cell.as_str()).map(|c| c.aa_ratios.clone()).unwrap_or_default(),
                    runs: BTreeMap::new(),
                    pairs: BTreeMap::new(),
                    paired_aa: recorded.get(run.cell.as_str()).map(|c| c.paired_aa.clone()).unwrap_or_default(),
                    aa_pairs: BTreeMap::new(),
                });
                out.len() - 1
            }
        };
        if run.aa {
            continue;
        }
        let run_index = out[index].runs.get(&run.adapter).copied().unwrap_or(0);
        let requests = report
            .requests
            .iter()
            .filter(|q| matches!(q.phase, Some(Phase::Measured) | None))
            .filter_map(|q| measured_request(quantity, run_index, q));
        out[index].adapters.entry(run.adapter.clone()).or_default().extend(requests);
        *out[index].runs.entry(run.adapter.clone()).or_default() += 1;
    }
    if crate::schedule::interleaves(&session.job) {
        for cell in &mut out {
            let reference = cell.reference.clone();
            for adapter in cell.adapters.keys().filter(|a| **a != reference) {
                let pairs = request_pairs(quantity, &session.workers, &cell.cell, adapter, &reference, false);
                if !pairs.is_empty() {
                    cell.pairs.insert(adapter.clone(), pairs);
                }
                let aa = request_pairs(quantity, &session.workers, &cell.cell, adapter, &reference, true);
                if !aa.is_empty() {
                    cell.aa_pairs.insert(adapter.clone(), aa);
                }
            }
        }
    }
    out.retain(|c| !c.adapters.is_empty() || !c.aa_ratios.is_empty());
    out
}

/// `analysis.cells[]` by cell name. A session without an analysis (`null`: marked incomplete)
/// has none.
fn recorded(session: &SessionReport) -> BTreeMap<&str, &CellAnalysis> {
    session.analysis.iter().flat_map(|a| &a.cells).map(|c| (c.cell.as_str(), c)).collect()
}
