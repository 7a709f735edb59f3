//! `compare --format github`: Markdown for a CI step summary (`$GITHUB_STEP_SUMMARY`). The
//! verdict comes first, then the rows that decided it and the detectable size; the whole table
//! (the `markdown` format) is folded below. The exit code carries the result, as with every
//! format.

use crate::export::Exporter;

use super::markdown::md_escape;
use super::render::{deciding_rows, detectable_line, estimate_phrase, mismatch_intro, row_name, title};
use decode_baseline_wire::compare::CompareReport;
use decode_baseline_wire::stats::Verdict;

/// Markdown for a CI step summary.
pub struct Github;

impl Exporter<CompareReport> for Github {
    fn export(&self, report: &CompareReport) -> anyhow::Result<String> {
        github(report)
    }
}

/// The top line: a mark a reader sees at a glance, the verdict, the exit code.
fn top_line(report: &CompareReport) -> String {
    let mark = match report.verdict {
        None => ":no_entry:",
        Some(Verdict::Slower) => ":x:",
        Some(Verdict::Faster) => ":rocket:",
        Some(Verdict::NoDifference) => ":white_check_mark:",
        Some(Verdict::Inconclusive) => ":grey_question:",
    };
    let words = report.verdict.map_or("refused", Verdict::words);
    format!("## {mark} decode-baseline: {words} (exit {})", report.exit_code)
}

fn github(report: &CompareReport) -> anyhow::Result<String> {
    let mut out = format!("{}\n\n{}.\n", top_line(report), title(report));
    if report.refused {
        out.push_str(&format!("\n**{}**\n\n", md_escape(&mismatch_intro(report))));
        for m in &report.mismatches {
            out.push_str(&format!("- `{}`: `{}` vs `{}`\n", md_escape(&m.field), md_escape(&m.a), md_escape(&m.b)));
        }
        return Ok(out);
    }
    let deciding = deciding_rows(report);
    if !deciding.is_empty() {
        let verdict = report.verdict.map_or("", Verdict::words);
        out.push_str(&format!("\nDecided by {} row(s), each {verdict}:\n\n", deciding.len()));
        for row in deciding {
            let estimate = estimate_phrase(row).unwrap_or_default();
            out.push_str(&format!("- `{}`: {}\n", md_escape(&row_name(row)), md_escape(&estimate)));
        }
    }
    if let Some(line) = detectable_line(report) {
        out.push_str(&format!("\n{}.\n", md_escape(&line)));
    }
    let table = super::Markdown.export(report)?;
    out.push_str(&format!("\n<details><summary>all rows</summary>\n\n{table}\n</details>\n"));
    Ok(out)
}
