//! `run`'s default view, made to fit 100 columns: per case, each cell and adapter's per-token
//! median with its interval, p90, CV and prefill (a `*` where the figure drew a warning), each
//! headline ratio's two parts in numbers, one line on energy, then the footer and the answer.
//! Every warning, the per-step split, the cold requests and each verdict's rule are one flag
//! away (`run --verbose`: `table`), and on the page.

use decode_baseline_wire::analysis::Analysis;

use super::SessionView;
use crate::duration::human_ns;
use crate::export::Exporter;

/// The width the default view is made for.
pub const COLUMNS: usize = 100;

/// The default view of a finished session.
pub struct Summary;

impl Exporter<SessionView<'_>> for Summary {
    fn export(&self, view: &SessionView<'_>) -> anyhow::Result<String> {
        Ok(view.report.analysis.as_ref().map_or_else(String::new, |a| summary(view, a)))
    }
}

fn summary(view: &SessionView<'_>, analysis: &Analysis) -> String {
    let report = view.report;
    let short = |cell: &str| crate::session::within_case(cell).1.len() + 2;
    let w = analysis.cells.iter().map(|c| short(&c.cell)).max().unwrap_or(0).max(6);
    let a = analysis.cells.iter().flat_map(|c| c.adapters.keys().map(|a| a.as_str().len())).max().unwrap_or(0).max(7);
    let mut out = super::table::unpinned_lines(report);
    out.push_str(&format!(
        "\n{:<w$} {:<a$} {:>9} {:>20} {:>9} {:>6} {:>9}\n",
        "cell", "adapter", "per token", "95% CI", "p90", "CV", "prefill"
    ));
    let (mut case, mut flagged) = ("", 0);
    for cell in &analysis.cells {
        let (of, name) = crate::session::within_case(&cell.cell);
        if of != case {
            case = of;
            out.push_str(&format!("{case}\n"));
        }
        for (adapter, stats) in &cell.adapters {
            let s = &stats.per_token_ns;
            let warned = !s.warnings.is_empty() || !stats.host_warnings.is_empty();
            flagged += usize::from(warned);
            out.push_str(&format!(
                "  {name:<n$} {:<a$} {:>9} {:>20} {:>9} {:>5.1}%{} {:>9}\n",
                adapter.as_str(),
                human_ns(s.median),
                format!("[{}, {}]", human_ns(s.median_ci.lower), human_ns(s.median_ci.upper)),
                human_ns(s.p90),
                s.cv.unwrap_or(0.0) * 100.0,
                if warned { "*" } else { " " },
                stats.prefill_ns.as_ref().map_or("-".to_owned(), |p| human_ns(p.median)),
                n = w - 2,
            ));
            if let Some(us) = stats.test_slowdown_us {
                out.push_str(&format!(
                    "  note: {us} µs test slowdown injected (per step or seed forward): not a real measurement\n"
                ));
            }
        }
    }
    if flagged > 0 {
        out.push_str(&format!(
            "* {flagged} figures unstable, uncertain or taken on a busy host: `run --verbose` or the page says why\n"
        ));
    }
    let parts = crate::decomposition::of_session(report, &crate::compare::decided_settings(report));
    if !parts.is_empty() {
        out.push_str("\nheadline ratio = same synchronous work (fixed continuation) × headline-only part:\n");
        let names: Vec<String> = parts
            .iter()
            .map(|p| {
                let (case, prompt) = crate::session::within_case(&p.cells);
                format!("{case} {prompt}")
            })
            .collect();
        let n = names.iter().map(String::len).max().unwrap_or(0);
        let ratio = |d: &Result<crate::stats::Decision, String>| {
            d.as_ref().map_or("-".to_owned(), |d| format!("{:.3}", d.ratio))
        };
        let line = |name: &str, p: &crate::decomposition::Decomposition, three: [&Result<_, _>; 3]| {
            let [whole, same, rest] = three.map(ratio);
            format!("  {name:<n$}  {}/{}  {whole} = {same} × {rest}\n", p.adapter.as_str(), p.reference.as_str())
        };
        for (p, name) in parts.iter().zip(&names) {
            out.push_str(&line(name, p, [&p.headline, &p.fixed, &p.headline_only]));
        }
        if parts.iter().any(|p| p.first_token.is_some()) {
            out.push_str("TTFT ratio = prefill structure (fixed continuation) × around the prefill:\n");
            for (p, name) in parts.iter().zip(&names) {
                if let Some(t) = &p.first_token {
                    out.push_str(&line(name, p, [&t.headline, &t.prefill, &t.around]));
                }
            }
        }
    }
    if let Some(energy) = &report.energy {
        out.push_str(if energy.cells.is_empty() {
            "energy: no source on this host (`run --verbose` or the page says why)\n"
        } else {
            "energy: joules per token per adapter with `run --verbose`, in energy.csv and on the page\n"
        });
    }
    if let Some(file) = report.decisions.as_ref().and_then(|d| d.noise_profile.as_ref()) {
        out.push_str(&format!("noise profile: {file}\n"));
    }
    out.push_str(&super::table::footer(report, analysis, &view.rows));
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The recorded sessions, as recorded and as four runs a side, in the default view: no line
    /// wider than [`COLUMNS`], one line per cell and adapter under its case, the answer last
    /// with each row's verdict, and the way to the detail.
    #[test]
    fn the_default_view_fits_100_columns_and_ends_with_the_answer() {
        let root = crate::launcher::session_job::repo_root().join("tests/data/sessions");
        for name in ["back-to-back-a", "back-to-back-b"] {
            let path = root.join(name).join("session.json");
            let recorded = crate::session::load_session(&path).unwrap().report;
            for session in [recorded.clone(), crate::session::fixtures::repeated(&recorded, 4)] {
                let rows = crate::compare::tested_without_profile(&session);
                let view =
                    SessionView { report: &session, rows: rows.into(), dir: Path::new("."), bench: None, ranks: None };
                let text = Summary.export(&view).unwrap();
                let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
                assert!(widest <= COLUMNS, "{name}: a line of {widest} columns:\n{text}");
                let analysis = session.analysis.as_ref().unwrap();
                let adapters: usize = analysis.cells.iter().map(|c| c.adapters.len()).sum();
                let figures = text.lines().filter(|l| l.starts_with("  ") && l.contains(" ms ")).count();
                assert!(figures >= adapters, "{name}: {figures} figure lines for {adapters} adapters:\n{text}");
                let answer = text.rfind("answer: ").expect("the answer");
                assert!(text[answer..].lines().any(|l| l.contains("controlled/stock") && l.contains('[')), "{text}");
                // The time to first token of the headline cell is one more answer row.
                assert!(
                    text[answer..].lines().any(|l| l.contains("L16.headline TTFT") && l.contains("controlled/stock  ")),
                    "{text}"
                );
                assert!(!text.contains("verdict controlled/stock:"), "the rule is --verbose's:\n{text}");
            }
        }
    }
}
