//! `compare --format markdown`: a table for a pull request.

use crate::export::Exporter;

use super::render::{
    devices_line, extra_cells, header, mismatch_intro, ratio_line, row_cells, rule_line, test_line, text_columns,
    title, verdict_line, versions_line,
};
use decode_baseline_wire::compare::CompareReport;

/// `s` for a Markdown table cell or line: `|` escaped.
pub(super) fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Markdown for a pull request.
pub struct Markdown;

impl Exporter<CompareReport> for Markdown {
    fn export(&self, report: &CompareReport) -> anyhow::Result<String> {
        Ok(markdown(report))
    }
}

fn markdown(report: &CompareReport) -> String {
    let mut out = format!("### decode-baseline compare\n\n{}.\n", title(report));
    for line in [versions_line(report), devices_line(report)].into_iter().flatten() {
        out.push_str(&format!("{}.\n", md_escape(&line)));
    }
    if !report.mismatches.is_empty() {
        out.push_str(&format!("\n> **{}**\n>\n", md_escape(&mismatch_intro(report))));
        for m in &report.mismatches {
            out.push_str(&format!("> - `{}`: `{}` vs `{}`\n", md_escape(&m.field), md_escape(&m.a), md_escape(&m.b)));
        }
    }
    if !report.refused {
        out.push_str(&format!(
            "\n{}.\n{}.\n{}.\n\n",
            ratio_line(report),
            md_escape(&test_line(report)),
            md_escape(&rule_line(report))
        ));
        let head = header(report);
        out.push_str(&format!("| {} |\n", head.join(" | ")));
        let align: Vec<&str> = (0..head.len())
            .map(|i| {
                let text = i <= text_columns(report) || i + 1 >= head.len();
                if text {
                    "---"
                } else {
                    "---:"
                }
            })
            .collect();
        out.push_str(&format!("|{}|\n", align.join("|")));
        for row in &report.rows {
            let mut cells: Vec<String> = row_cells(report, row).iter().map(|c| md_escape(c)).collect();
            cells[0] = format!("`{}`", cells[0]);
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        for line in extra_cells(report).into_iter().chain(super::energy::lines(&report.energy, &report.settings)) {
            out.push_str(&format!("\n{}\n", md_escape(&line)));
        }
    }
    out.push_str(&format!("\n**{}**\n", verdict_line(report)));
    out
}
