//! The rows every human view of a session shows (the report page, `bench`'s tables): per cell
//! and adapter the per-token median with its interval and the tokens per second derived from it,
//! prefill and time to first token with the prompt throughput, peak memory and the warnings;
//! each adapter's ratio to the reference; agreement; the decode time against context length.
//!
//! They are read from `session.json`'s typed `analysis` and worker reports, so a page can be
//! rebuilt from any session on disk that [`super::load_session`] reads (older versions are
//! converted when loaded). How they are shown is the views' (`report/rows.rs`, the page).

use std::collections::BTreeMap;

use decode_baseline_wire::{
    analysis::{pair_label, CellAnalysis},
    report::{Phase, Status},
    row::Quantity,
    session::SessionReport,
    Adapter,
};

/// One cell and adapter.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub cell: String,
    /// The manifest case (model), from the worker reports.
    pub case: Option<String>,
    pub mode: String,
    pub adapter: String,
    /// The prompt length L (the context depth of the decode steps), from the worker reports.
    pub prompt_len: Option<u32>,
    pub per_token_ns: f64,
    pub ci_ns: (f64, f64),
    pub p90_ns: f64,
    pub cv: Option<f64>,
    pub prefill_ns: Option<f64>,
    pub first_token_ns: Option<f64>,
    /// The 95 % interval of the time to first token's median, ns.
    pub first_token_ci_ns: Option<(f64, f64)>,
    /// Graph build, evaluation (medians, ns) and host overhead (controlled).
    pub split: Option<(f64, f64, f64)>,
    /// The first (cold) request of each run, apart from the measured ones.
    pub cold: Option<decode_baseline_wire::analysis::ColdRequests>,
    /// The largest per-request peak over this cell's measured requests, bytes.
    pub peak_memory_bytes: Option<u64>,
    pub warnings: Vec<String>,
}

impl Row {
    /// Tokens per second derived from the per-token median (1 / median): the figure people who
    /// think in tokens/s expect, not an averaged rate.
    pub fn tokens_per_s(&self) -> f64 {
        1e9 / self.per_token_ns
    }

    /// Prompt tokens per second of the median prefill.
    pub fn prompt_tokens_per_s(&self) -> Option<f64> {
        Some(f64::from(self.prompt_len?) * 1e9 / self.prefill_ns?)
    }
}

/// One point of the decode-time-against-context-length figure.
#[derive(Debug, Clone, PartialEq)]
pub struct DepthPoint {
    pub context: u32,
    pub median_ns: f64,
    pub ci_ns: (f64, f64),
}

/// Everything shown of a session.
#[derive(Debug, Clone, Default)]
pub struct Rows {
    pub rows: Vec<Row>,
    /// `(cell, "<adapter>/<reference>", ratio, lower, upper)`, one per adapter other than the
    /// session's reference.
    pub ratios: Vec<(String, String, f64, f64, f64)>,
    /// One sentence per cell with an agreement check.
    pub agreement: Vec<String>,
    /// Per adapter, the largest per-request peak memory of the session, bytes.
    pub peak_memory: BTreeMap<String, u64>,
}

impl Rows {
    pub fn of(session: &SessionReport) -> Rows {
        let mut out = Rows::default();
        for cell in session.analysis.iter().flat_map(|a| &a.cells) {
            for (adapter, stats) in &cell.adapters {
                let (case, prompt_len, peak) = measured_facts(session, &cell.cell, adapter);
                if let Some(peak) = peak {
                    let entry = out.peak_memory.entry(adapter.as_str().to_owned()).or_insert(0);
                    *entry = (*entry).max(peak);
                }
                let s = &stats.per_token_ns;
                out.rows.push(Row {
                    cell: cell.cell.clone(),
                    case,
                    mode: cell.mode.as_str().to_owned(),
                    adapter: adapter.as_str().to_owned(),
                    prompt_len,
                    per_token_ns: s.median,
                    ci_ns: (s.median_ci.lower, s.median_ci.upper),
                    p90_ns: s.p90,
                    cv: s.cv,
                    prefill_ns: stats.prefill_ns.as_ref().map(|p| p.median),
                    first_token_ns: stats.first_token_ns.as_ref().map(|p| p.median),
                    first_token_ci_ns: stats.first_token_ns.as_ref().map(|p| (p.median_ci.lower, p.median_ci.upper)),
                    split: match (stats.build_median_ns, stats.eval_median_ns, stats.host_overhead) {
                        (Some(b), Some(e), Some(h)) => Some((b, e, h)),
                        _ => None,
                    },
                    cold: stats.cold,
                    peak_memory_bytes: peak,
                    warnings: s
                        .warnings
                        .iter()
                        .map(|w| w.message.clone())
                        .chain(stats.host_warnings.iter().map(|w| format!("host: {w}")))
                        .chain(
                            stats.test_slowdown_us.map(|us| {
                                format!("test slowdown of {us} µs injected (each decode step, or each seed forward): not a real measurement")
                            }),
                        )
                        .collect(),
                });
            }
            let reference = &session.reference;
            for adapter in cell.adapters.keys().filter(|a| *a != reference) {
                if let Some((_, r)) = cell.ratio_to_reference(adapter) {
                    out.ratios.push((
                        cell.cell.clone(),
                        pair_label(adapter, reference),
                        r.ratio,
                        r.ci.lower,
                        r.ci.upper,
                    ));
                }
            }
            out.agreement.extend(agreement(cell, reference).into_iter().map(|line| format!("{}: {line}", cell.cell)));
        }
        out
    }

    /// The cases of the rows, in order of first appearance.
    pub fn cases(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for case in self.rows.iter().filter_map(|r| r.case.as_ref()) {
            if !out.contains(case) {
                out.push(case.clone());
            }
        }
        out
    }

    /// Per adapter, the headline medians of `quantity` of `case` (per-token time, or time to
    /// first token) by context length (the prompt length), ascending; only adapters with at
    /// least two lengths.
    pub fn depth_series(&self, case: &str, quantity: Quantity) -> BTreeMap<String, Vec<DepthPoint>> {
        let mut series: BTreeMap<String, Vec<DepthPoint>> = BTreeMap::new();
        for row in self.rows.iter().filter(|r| r.mode == "headline" && r.case.as_deref() == Some(case)) {
            let (median_ns, ci_ns) = match quantity {
                Quantity::PerToken => (Some(row.per_token_ns), Some(row.ci_ns)),
                Quantity::FirstToken => (row.first_token_ns, row.first_token_ci_ns),
            };
            if let (Some(context), Some(median_ns), Some(ci_ns)) = (row.prompt_len, median_ns, ci_ns) {
                series.entry(row.adapter.clone()).or_default().push(DepthPoint { context, median_ns, ci_ns });
            }
        }
        series.retain(|_, points| {
            points.sort_by_key(|p| p.context);
            points.len() >= 2
        });
        series
    }
}

/// The agreement checks of one cell, one sentence each, as every view words them (the table
/// puts the cell before it, the page and Markdown `cell: `): the argmax of fixed-continuation,
/// then the reference streams.
pub fn agreement(cell: &CellAnalysis, reference: &Adapter) -> Vec<String> {
    let argmax = cell.argmax.iter().map(|(adapter, g)| {
        format!(
            "argmax {}: {} steps, {} mismatches, ties at {:?}",
            pair_label(adapter, reference),
            g.steps_compared,
            g.mismatches.len(),
            g.tie_positions
        )
    });
    let streams = cell.stream.iter().map(|(adapter, s)| {
        let at = s.first_divergence.as_ref().map_or("the end".to_owned(), |m| format!("position {}", m.position));
        let verdict = match (s.identical, s.diverged_at_tie) {
            (true, _) => "identical".to_owned(),
            (false, true) => format!("diverge at {at}, at an exact top-1/top-2 tie (either token is a greedy choice)"),
            (false, false) => format!("diverge at {at}"),
        };
        format!("reference streams {}: {} tokens, {verdict}", pair_label(adapter, reference), s.tokens_compared)
    });
    argmax.chain(streams).collect()
}

/// The case, the prompt length and the largest peak memory of the measured requests of one cell
/// and adapter, over the worker runs that passed validation.
fn measured_facts(
    session: &SessionReport,
    cell: &str,
    adapter: &Adapter,
) -> (Option<String>, Option<u32>, Option<u64>) {
    let reports: Vec<_> = session
        .workers
        .iter()
        .filter(|w| w.cell == cell && w.adapter == *adapter && w.validation_errors.is_empty())
        .filter_map(|w| w.report.as_ref())
        .filter(|r| r.status == Status::Ok)
        .collect();
    let case = reports.first().map(|r| r.case_id.clone());
    let requests: Vec<_> =
        reports.iter().flat_map(|r| &r.requests).filter(|q| matches!(q.phase, Some(Phase::Measured) | None)).collect();
    let prompt_len = requests.first().map(|q| q.prompt_len);
    let peak = requests.iter().filter_map(|q| q.peak_memory_bytes).max();
    (case, prompt_len, peak)
}
