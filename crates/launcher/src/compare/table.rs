//! `compare --format table`: aligned columns for a terminal.

use crate::export::Exporter;

use super::render::{
    devices_line, extra_cells, header, mismatch_intro, ratio_line, row_cells, rule_line, test_line, text_columns,
    title, verdict_line, versions_line,
};
use decode_baseline_wire::compare::CompareReport;

/// The terminal table.
pub struct Table;

impl Exporter<CompareReport> for Table {
    fn export(&self, report: &CompareReport) -> anyhow::Result<String> {
        Ok(table(report))
    }
}

fn table(report: &CompareReport) -> String {
    let mut out = String::new();
    if !report.mismatches.is_empty() {
        out.push_str(&mismatch_intro(report));
        out.push('\n');
        for m in &report.mismatches {
            out.push_str(&format!("  - {m}\n"));
        }
        out.push('\n');
    }
    out.push_str(&title(report));
    out.push('\n');
    for line in [versions_line(report), devices_line(report)].into_iter().flatten() {
        out.push_str(&line);
        out.push('\n');
    }
    if !report.refused {
        for line in [ratio_line(report), test_line(report), rule_line(report)] {
            out.push_str(&line);
            out.push('\n');
        }
        out.push('\n');
        let mut lines = vec![header(report)];
        lines.extend(report.rows.iter().map(|r| row_cells(report, r)));
        let columns = lines[0].len();
        // Text columns (cell, adapter, basis, verdict) left, numbers right.
        let text = |i: usize| i <= text_columns(report) || i + 1 >= columns;
        out.push_str(&crate::export::columns(&lines, |i| !text(i)));
        for line in extra_cells(report).into_iter().chain(super::energy::lines(&report.energy, &report.settings)) {
            out.push_str(&line);
            out.push('\n');
        }
        out.push('\n');
    }
    out.push_str(&verdict_line(report));
    out.push('\n');
    out
}
