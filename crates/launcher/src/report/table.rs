//! `run --verbose`'s table: per cell each adapter's per-token median with its interval, the
//! split and cold requests, the ratios to the reference with the test's verdict, agreement, the
//! profiles, placement, host and energy lines. The default view is `summary`.

use crate::duration::human_ns;
use crate::export::Exporter;
use crate::stats::RatioEstimate;
use decode_baseline_wire::{
    analysis::{pair_label, Analysis, CellAnalysis, ColdRequests},
    session::SessionReport,
    Adapter, Mode,
};

use super::SessionView;

/// The label of a ratio row of the table: `<adapter>/<reference> paired` or `… ratio`.
fn ratio_label(cell: &CellAnalysis, adapter: &Adapter, reference: &Adapter) -> Option<(String, RatioEstimate)> {
    let (kind, r) = cell.ratio_to_reference(adapter)?;
    Some((format!("{} {kind}", pair_label(adapter, reference)), *r))
}

/// The detailed table `run --verbose` prints (and the tests read): every figure and warning of
/// every row, each verdict with its rule.
pub struct Table;

impl Exporter<SessionView<'_>> for Table {
    fn export(&self, view: &SessionView<'_>) -> anyhow::Result<String> {
        Ok(view.report.analysis.as_ref().map_or_else(String::new, |a| table(view.report, a, &view.rows)))
    }
}

pub(crate) fn table(report: &SessionReport, analysis: &Analysis, tested: &[crate::compare::Row]) -> String {
    let reference = &report.reference;
    // Cell names come from the manifest and can be long; the first column fits the longest,
    // the second its longest adapter name or ratio label.
    let w = analysis.cells.iter().map(|c| c.cell.len()).max().unwrap_or(0).max(4);
    let a = analysis
        .cells
        .iter()
        .flat_map(|c| {
            let names = c.adapters.keys().map(|a| a.as_str().len());
            let labels = c.adapters.keys().filter_map(|a| ratio_label(c, a, reference)).map(|(l, _)| l.len());
            names.chain(labels).collect::<Vec<_>>()
        })
        .max()
        .unwrap_or(0)
        .max(10);
    let mut out = unpinned_lines(report);
    out.push_str(&format!(
        "\n{:<w$} {:<a$} {:>11} {:>23} {:>10} {:>6} {:>11}\n",
        "cell", "adapter", "per token", "95% CI", "p90", "CV", "prefill"
    ));
    for cell in &analysis.cells {
        for (adapter, stats) in &cell.adapters {
            let s = &stats.per_token_ns;
            out.push_str(&format!(
                "{:<w$} {:<a$} {:>11} {:>23} {:>10} {:>5.1}% {:>11}\n",
                cell.cell,
                adapter.as_str(),
                human_ns(s.median),
                format!("[{}, {}]", human_ns(s.median_ci.lower), human_ns(s.median_ci.upper)),
                human_ns(s.p90),
                s.cv.unwrap_or(0.0) * 100.0,
                stats.prefill_ns.as_ref().map_or("-".to_owned(), |p| human_ns(p.median)),
            ));
            if let (Some(build), Some(eval), Some(overhead)) =
                (stats.build_median_ns, stats.eval_median_ns, stats.host_overhead)
            {
                out.push_str(&format!(
                    "{:<w$} per step: graph build {} + MLX evaluation {} (medians); host overhead {:.1} %\n",
                    "",
                    human_ns(build),
                    human_ns(eval),
                    100.0 * overhead
                ));
            }
            if let Some(cold) = &stats.cold {
                out.push_str(&format!("{:<w$} {}\n", "", cold_line(cold)));
            }
            for warning in &s.warnings {
                out.push_str(&format!("{:<w$} warning: {}\n", "", warning.message));
            }
            for warning in &stats.host_warnings {
                out.push_str(&format!("{:<w$} warning: host: {warning}\n", ""));
            }
            if let Some(us) = stats.test_slowdown_us {
                out.push_str(&format!(
                    "{:<w$} note: test slowdown of {us} µs injected (each decode step, or each seed forward): not a real measurement\n",
                    ""
                ));
            }
        }
        for adapter in cell.adapters.keys().filter(|a| *a != reference) {
            if let Some((label, r)) = ratio_label(cell, adapter, reference) {
                out.push_str(&format!(
                    "{:<w$} {:<a$} {:>11.3} {:>23}\n",
                    cell.cell,
                    label,
                    r.ratio,
                    format!("[{:.3}, {:.3}]", r.ci.lower, r.ci.upper)
                ));
            }
        }
        // A reference-pair cell has one request per adapter: nothing to time, nothing to test.
        for row in tested.iter().filter(|r| r.cell == cell.cell && cell.mode != Mode::ReferencePair) {
            out.push_str(&verdict_line(row, w, reference));
        }
        for line in crate::session::agreement(cell, reference) {
            out.push_str(&format!("{:<w$} {line}\n", cell.cell));
        }
    }
    for line in crate::compare::profile_lines(tested) {
        out.push_str(&line);
        out.push('\n');
    }
    let parts = crate::decomposition::of_session(report, &crate::compare::decided_settings(report));
    if !parts.is_empty() {
        out.push_str(&format!("\n{}\n", crate::decomposition::EXPLANATION));
        for line in crate::decomposition::lines(&parts) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    // Energy rows (when a source produced data) and the one line about the sources.
    out.push_str(&crate::energy::table(report));
    out.push_str(&footer(report, analysis, tested));
    out
}

/// What both views begin with: an unpinned session says so before its first figure, whatever
/// the width.
pub(super) fn unpinned_lines(report: &SessionReport) -> String {
    crate::session::replaced_lines(report).map(|line| format!("\n{line}")).collect()
}

/// What both views end with: the workers and the wall time, the placement, the group, the quiet
/// wait, and the answer last, where a terminal leaves the eye.
pub(super) fn footer(report: &SessionReport, analysis: &Analysis, tested: &[crate::compare::Row]) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "\n{} workers, wall {}, launcher overhead {}\n",
        report.workers.len(),
        human_ns(report.wall_ns as f64),
        human_ns(report.launcher_overhead_ns as f64)
    ));
    out.push_str(&crate::session::placement_line(report.placement.as_ref()));
    out.push('\n');
    for line in crate::compare::identity::other_environments(report) {
        out.push_str(&format!("its own environment (the adapter's `environment`): {line}\n"));
    }
    if report.job.group.is_some() {
        out.push_str(&crate::session::group_line(report));
        out.push('\n');
    }
    if let Some(waited) = report.quiet_wait_ns.filter(|ns| *ns > 0) {
        out.push_str(&format!(
            "waited {} for a quiet host (--quiet-wait), not part of either\n",
            human_ns(waited as f64)
        ));
    }
    // The answer last, where a terminal leaves the eye.
    let answer = super::answer::lines(&super::answer::heading(tested), &super::answer::of(report, analysis, tested));
    if !answer.is_empty() {
        out.push_str(&format!("\n{}\n", answer.join("\n")));
    }
    out
}

/// The line under an adapter's row (table and report page) for its first, unmeasured requests.
fn cold_line(cold: &ColdRequests) -> String {
    let runs = if cold.requests == 1 { "1 run".to_owned() } else { format!("{} runs, medians", cold.requests) };
    format!(
        "cold (first request of each run, {runs}; not in the statistics): per token {}, prefill {}",
        human_ns(cold.per_token_ns),
        human_ns(cold.prefill_ns)
    )
}

/// The quantity's tag and a space before a row's pair, nothing for per token.
fn tag(quantity: crate::compare::Quantity) -> String {
    match quantity.tag() {
        "" => String::new(),
        tag => format!("{tag} "),
    }
}

/// A row's verdict under the ratios of its cell: verdict, ratio and interval of the test, the
/// rule, its p-value and smallest detectable difference, whose error; then its warnings.
fn verdict_line(row: &crate::compare::Row, w: usize, reference: &Adapter) -> String {
    use crate::compare::RowResult;
    let adapter = row.adapter.as_ref().map_or("", Adapter::as_str);
    let label = format!("{}{adapter}/{}", tag(row.quantity), reference.as_str());
    match &row.outcome {
        RowResult::Compared { decision: d, warnings, .. } => {
            let mut line = format!(
                "{:<w$} verdict {label}: {} (ratio {:.3} [{:.3}, {:.3}], {}, p = {:.3}; no difference would need \
                 ±{:.1} %; detectable ±{:.1} %; {error})\n",
                row.cell,
                d.verdict.words(),
                d.ratio,
                d.ci.lower,
                d.ci.upper,
                d.rule.describe(),
                d.p_value,
                100.0 * d.config.margin,
                100.0 * d.mde,
                error = crate::compare::error_words(d),
            );
            for warning in warnings {
                line.push_str(&format!("{:<w$} warning: {warning}\n", ""));
            }
            line
        }
        RowResult::NotCompared { reason } => format!("{:<w$} verdict {label}: not tested: {reason}\n", row.cell),
    }
}
