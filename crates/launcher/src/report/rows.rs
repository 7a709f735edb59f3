//! The session's rows ([`crate::session::Rows`]) as text: the terminal's headline table
//! (`bench`) and the Markdown of every row, after the answer.

use crate::duration::human_ns;
use crate::export::Exporter;
use crate::session::Rows;

use super::SessionView;

/// `bench`'s table: the headline rows as llama-bench's pp and tg lines.
pub struct Headline;

impl Exporter<SessionView<'_>> for Headline {
    fn export(&self, view: &SessionView<'_>) -> anyhow::Result<String> {
        Ok(text(&Rows::of(view.report)))
    }
}

/// The answer (each row's verdict, from the view's rows), then every row as a Markdown table,
/// then the ratios and agreement.
pub struct Markdown;

impl Exporter<SessionView<'_>> for Markdown {
    fn export(&self, view: &SessionView<'_>) -> anyhow::Result<String> {
        let answer = view.report.analysis.as_ref().map_or_else(String::new, |analysis| {
            super::answer::markdown(
                &super::answer::heading(&view.rows),
                &super::answer::of(view.report, analysis, &view.rows),
            )
        });
        Ok(answer + &markdown(&Rows::of(view.report)))
    }
}

/// The headline rows as llama-bench's pp and tg lines, for the terminal.
fn text(rows: &Rows) -> String {
    let mut out = format!(
        "\n{:<8} {:<10} {:>12} {:>22} {:>12} {:>11} {:>14} {:>11}\n",
        "context", "adapter", "per token", "95% CI", "tokens/s*", "prefill", "prompt tok/s", "TTFT"
    );
    for row in rows.rows.iter().filter(|r| r.mode == "headline") {
        out.push_str(&format!(
            "{:<8} {:<10} {:>12} {:>22} {:>12.1} {:>11} {:>14} {:>11}\n",
            row.prompt_len.map_or("-".into(), |l| l.to_string()),
            row.adapter,
            human_ns(row.per_token_ns),
            format!("[{}, {}]", human_ns(row.ci_ns.0), human_ns(row.ci_ns.1)),
            row.tokens_per_s(),
            row.prefill_ns.map_or("-".into(), human_ns),
            row.prompt_tokens_per_s().map_or("-".into(), |v| format!("{v:.0}")),
            row.first_token_ns.map_or("-".into(), human_ns),
        ));
    }
    out.push_str("* tokens/s = 1 / per-token median (derived, not an averaged rate)\n");
    out
}

/// Every row as a Markdown table.
fn markdown(rows: &Rows) -> String {
    let mut out = String::from(
        "| cell | adapter | per token (median) | 95% CI | tokens/s (from median) | p90 | prefill | prompt tokens/s | TTFT |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for row in &rows.rows {
        out.push_str(&format!(
            "| {} | {} | {} | [{}, {}] | {:.1} | {} | {} | {} | {} |\n",
            row.cell,
            row.adapter,
            human_ns(row.per_token_ns),
            human_ns(row.ci_ns.0),
            human_ns(row.ci_ns.1),
            row.tokens_per_s(),
            human_ns(row.p90_ns),
            row.prefill_ns.map_or("-".into(), human_ns),
            row.prompt_tokens_per_s().map_or("-".into(), |v| format!("{v:.0}")),
            row.first_token_ns.map_or("-".into(), human_ns),
        ));
    }
    out.push('\n');
    for (cell, pair, ratio, lo, hi) in &rows.ratios {
        out.push_str(&format!("- {cell}: {pair} {ratio:.3} [{lo:.3}, {hi:.3}]\n"));
    }
    for line in &rows.agreement {
        out.push_str(&format!("- {line}\n"));
    }
    out
}
