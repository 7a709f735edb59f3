//! The words and cells every face of a comparison shares (title, lines, header, row cells,
//! verdict); the faces themselves are one exporter each: `table.rs`, `markdown.rs`, `csv.rs`,
//! `json.rs`.

use std::collections::BTreeMap;

use crate::stats::ErrorSource;

use crate::duration::human_ns;
use crate::session::serde_word;

use decode_baseline_wire::compare::{Basis, CompareReport, Kind, Row, RowResult};

/// What a row's ratio rests on, in a few words.
fn basis_cell(row: &Row) -> String {
    match (row.basis, &row.against) {
        (Basis::RatioOfMedians, _) => "medians".to_owned(),
        (Basis::Paired, _) => "paired".to_owned(),
        (Basis::AgainstReference, Some(reference)) => format!("vs {}", reference.as_str()),
        (Basis::AgainstReference, None) => "vs reference".to_owned(),
        (Basis::Raw, _) => "raw".to_owned(),
    }
}

fn percent(fraction: f64) -> String {
    format!("±{:.1} %", fraction * 100.0)
}

/// The smallest detectable difference of a row: `±2.3 %`.
fn mde_cell(row: &Row) -> String {
    match &row.outcome {
        RowResult::Compared { decision, .. } => percent(decision.mde),
        RowResult::NotCompared { .. } => "-".to_owned(),
    }
}

/// The A/A ratios beside a row, `!` marking one that drew a warning: `1.320!`.
fn aa_cell(row: &Row) -> String {
    match &row.outcome {
        RowResult::Compared { aa, .. } if !aa.is_empty() => aa
            .iter()
            .filter_map(|r| {
                let flagged = r.dwarfs_interval || r.test.as_ref().is_some_and(|t| t.significant);
                r.ratio().map(|x| format!("{x:.3}{}", if flagged { "!" } else { "" }))
            })
            .collect::<Vec<_>>()
            .join(", "),
        _ => "-".to_owned(),
    }
}

fn verdict_cell(row: &Row) -> String {
    match &row.outcome {
        RowResult::Compared { .. } if !row.judged => "not judged (raw; --raw judges it)".to_owned(),
        RowResult::Compared { decision, .. } if decision.below_floor => {
            format!("{} (below floor)", decision.verdict.words())
        }
        RowResult::Compared { decision, .. } => decision.verdict.words().to_owned(),
        RowResult::NotCompared { reason } => format!("not compared: {reason}"),
    }
}

fn confidence(report: &CompareReport) -> String {
    let level = report
        .rows
        .iter()
        .find_map(|r| match &r.outcome {
            RowResult::Compared { decision, .. } => Some(decision.ci.confidence),
            RowResult::NotCompared { .. } => None,
        })
        .unwrap_or(1.0 - report.settings.alpha);
    format!("{:.0}% CI", level * 100.0)
}

/// Whether the table has an adapter column: across sessions, and within a session that set
/// more than one adapter beside the reference.
fn shows_adapter(report: &CompareReport) -> bool {
    match report.kind {
        Kind::AcrossSessions => true,
        Kind::WithinSession => report.rows.iter().any(|r| r.adapter != report.rows[0].adapter),
    }
}

/// Within one session: the adapter the ratios are of (`adapter` when there are several) and the
/// reference they are against.
fn within_pair(report: &CompareReport) -> (String, String) {
    let label = |side: fn(&Row) -> &str| match report.rows.first() {
        Some(first) if report.rows.iter().all(|r| side(r) == side(first)) => side(first).to_owned(),
        _ => "adapter".to_owned(),
    };
    (label(|r| &r.numerator.label), label(|r| &r.denominator.label))
}

/// The cells of one row, in header order.
pub(super) fn row_cells(report: &CompareReport, row: &Row) -> Vec<String> {
    let mut cells = vec![row.subject()];
    if shows_adapter(report) {
        cells.push(row.adapter.as_ref().map_or("-", |a| a.as_str()).to_owned());
    }
    cells.push(basis_cell(row));
    let median = |m: Option<f64>| m.map_or("-".to_owned(), human_ns);
    cells.push(median(row.numerator.median_ns));
    cells.push(median(row.denominator.median_ns));
    match &row.outcome {
        RowResult::Compared { decision, .. } => {
            cells.push(format!("{:.3}", decision.ratio));
            cells.push(format!("[{:.3}, {:.3}]", decision.ci.lower, decision.ci.upper));
        }
        RowResult::NotCompared { .. } => cells.extend(["-".to_owned(), "-".to_owned()]),
    }
    cells.push(mde_cell(row));
    cells.push(aa_cell(row));
    cells.push(verdict_cell(row));
    cells
}

pub(super) fn header(report: &CompareReport) -> Vec<String> {
    let (num, den) = match report.kind {
        Kind::WithinSession => within_pair(report),
        Kind::AcrossSessions => ("B".to_owned(), "A".to_owned()),
    };
    let mut h = vec!["cell".to_owned()];
    if shows_adapter(report) {
        h.push("adapter".to_owned());
    }
    h.push("basis".to_owned());
    h.extend([
        num,
        den,
        "ratio".to_owned(),
        confidence(report),
        "MDE".to_owned(),
        "A/A".to_owned(),
        "verdict".to_owned(),
    ]);
    h
}

/// What was compared, in one sentence.
pub(super) fn title(report: &CompareReport) -> String {
    match (&report.kind, &report.b) {
        (Kind::AcrossSessions, Some(b)) => format!(
            "session B {} ({}) against session A {} ({}), per adapter",
            b.session_id,
            serde_word(&b.status),
            report.a.session_id,
            serde_word(&report.a.status)
        ),
        _ => {
            let (num, den) = within_pair(report);
            let num = if num == "adapter" { "each adapter".to_owned() } else { num };
            format!("{num} against {den} in session {} ({})", report.a.session_id, serde_word(&report.a.status))
        }
    }
}

/// The MLX version difference, when it was asked for or is there: e.g. `MLX versions: A mlx
/// 0.32.2, mlx_lm 0.32.2; B mlx 0.32.4, mlx_lm 0.32.2 (--across-versions; differ in mlx_version,
/// lock_sha256, libmlx_sha256)`.
pub(super) fn versions_line(report: &CompareReport) -> Option<String> {
    let v = report.versions.as_ref().filter(|v| v.across_versions || !v.differences.is_empty())?;
    let fields: Vec<&str> = v.differences.iter().map(|m| m.field.as_str()).collect();
    let differ =
        if fields.is_empty() { "the same environment".to_owned() } else { format!("differ in {}", fields.join(", ")) };
    let asked = if v.across_versions { "--across-versions; " } else { "" };
    Some(format!("MLX versions: A {}; B {} ({asked}{differ})", v.a, v.b))
}

/// The backend and device differences asked for with `--across-devices`, e.g. `devices
/// (--across-devices): backend cpu vs cuda; device AMD EPYC 9B14 vs NVIDIA H200, ...`.
pub(super) fn devices_line(report: &CompareReport) -> Option<String> {
    if report.device_differences.is_empty() {
        return None;
    }
    let parts: Vec<String> =
        report.device_differences.iter().map(|m| format!("{} {} vs {}", m.field, m.a, m.b)).collect();
    Some(format!("devices (--across-devices): {}", parts.join("; ")))
}

pub(super) fn ratio_line(report: &CompareReport) -> String {
    match report.kind {
        Kind::WithinSession => {
            let (num, den) = within_pair(report);
            let faster = if num == "adapter" { "the adapter".to_owned() } else { num.clone() };
            format!(
                "ratio = {num} / {den} per-token time, exp of the test's estimate (paired: 20 % trimmed mean of the log \
                 ratios of adjacent request pairs, averaged over A B / B A blocks; medians: of per-request log medians); \
                 below 1: {faster} is faster"
            )
        }
        Kind::AcrossSessions => {
            let reference = report
                .rows
                .iter()
                .find_map(|r| r.against.as_ref())
                .map_or("the reference", decode_baseline_wire::Adapter::as_str);
            format!(
                "ratio = B / A; vs {reference}: the adapter's ratio to {reference} in B over the same in A (holds the \
                 machine constant); raw: the adapter's own per-request log medians; below 1: B is faster"
            )
        }
    }
}

/// The settings of the test in one line, e.g. `test: α 5 % two-sided, Holm across 2 judged rows;
/// no difference only when shown within ±3.0 % (equivalence, TOST); MDE at 80 % power`.
pub fn test_line(report: &CompareReport) -> String {
    let c = &report.settings;
    let judged = |n: usize| if n == 1 { "1 judged row".to_owned() } else { format!("{n} judged rows") };
    let blind =
        report.rows.iter().filter(|r| r.judged && r.decision().is_some_and(|d| !crate::stats::can_decide(d))).count();
    let rows = match blind {
        0 => judged(report.judged_rows),
        _ => format!(
            "{} of {} ({blind} without a run-to-run error take no share)",
            report.judged_rows.saturating_sub(blind),
            judged(report.judged_rows)
        ),
    };
    let floor = c.floor.map_or(String::new(), |f| format!("; practical floor {}", percent(f)));
    format!(
        "test: α {:.0} % two-sided, Holm across {rows}; no difference only when shown within {} (equivalence, \
         TOST); MDE: the smallest difference detectable at {:.0} % power{floor}",
        100.0 * c.alpha,
        percent(c.margin),
        100.0 * c.power
    )
}

/// The rules and errors the rows used, counted, e.g. `rule: paired t on run means (…) for 2
/// rows; error: own, from run means (holds run-to-run effects) for 2 rows`.
pub fn rule_line(report: &CompareReport) -> String {
    let mut rules: BTreeMap<String, usize> = BTreeMap::new();
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    for row in &report.rows {
        let RowResult::Compared { decision, .. } = &row.outcome else { continue };
        *rules.entry(decision.rule.describe().to_owned()).or_default() += 1;
        let error = match (decision.error, decision.profile.is_some(), decision.run_effects_measured) {
            (ErrorSource::Profile, _, _) => "the host noise profile's (larger than the row's own)".to_owned(),
            (ErrorSource::Own, true, _) => "own (larger than the host noise profile's)".to_owned(),
            (ErrorSource::Own, false, true) => "own, from run means (holds run-to-run effects)".to_owned(),
            (ErrorSource::Own, false, false) => format!(
                "own, blind to run-to-run effects (one run per side, no noise profile): no verdict; --repetitions {} \
                 or a noise profile of the design gives one",
                crate::stats::REPETITIONS_FOR_A_VERDICT
            ),
        };
        *errors.entry(error).or_default() += 1;
    }
    let rows = |n: usize| if n == 1 { "1 row".to_owned() } else { format!("{n} rows") };
    let list =
        |m: BTreeMap<String, usize>| m.into_iter().map(|(k, n)| format!("{k} for {}", rows(n))).collect::<Vec<_>>();
    if rules.is_empty() {
        return "rule: none used (no row compared)".to_owned();
    }
    format!("rule: {}; error: {}", list(rules).join("; "), list(errors).join("; "))
}

/// Whose error a row's test used, in the words of the run table and the report page.
pub fn error_words(d: &crate::stats::Decision) -> String {
    match (&d.profile, d.error) {
        (Some(p), ErrorSource::Profile) => format!("error: the noise profile's, sd {:.4} on {:.0} df", p.sd, p.df()),
        (Some(p), ErrorSource::Own) => format!("error: own, larger than the noise profile's sd {:.4}", p.sd),
        (None, _) if d.run_effects_measured => "error holds run-to-run effects".to_owned(),
        (None, _) => format!(
            "no verdict: one run per side cannot show run-to-run effects; rerun with --repetitions {} or \
             with a noise profile of this design (decode-baseline calibrate --job)",
            crate::stats::REPETITIONS_FOR_A_VERDICT
        ),
    }
}

/// One line per noise profile the rows used (each row's own, `noise_profiles`), e.g.
/// `noise profile: p.json (controlled/stock fitted on 10 sessions of 3 runs × 4 units, sized to
/// 3 × 4, on tiny-qwen3.tiny-qwen3-L16.headline): sd 0.0086 on 12 df`.
pub fn profile_lines(rows: &[Row]) -> Vec<String> {
    let mut lines: Vec<String> = rows
        .iter()
        .filter_map(|row| row.decision()?.profile.as_ref())
        .map(|p| format!("noise profile: {}: sd {:.4} on {:.0} df", p.label, p.sd, p.df()))
        .collect();
    lines.sort();
    lines.dedup();
    lines
}

/// One line per row warning, prefixed by the row.
fn warning_lines(report: &CompareReport) -> Vec<String> {
    let mut out = Vec::new();
    for row in &report.rows {
        if let RowResult::Compared { warnings, .. } = &row.outcome {
            let who = row.adapter.as_ref().map_or(row.subject(), |a| format!("{} {}", row.subject(), a.as_str()));
            out.extend(warnings.iter().map(|w| format!("warning: {who}: {w}")));
        }
    }
    out
}

pub(super) fn mismatch_intro(report: &CompareReport) -> String {
    let who = match report.kind {
        Kind::WithinSession => "the controlled and stock workers differ (a: controlled, b: stock)",
        Kind::AcrossSessions => "the sessions differ (a: session A, b: session B)",
    };
    let versions = report.versions.as_ref().is_some_and(|v| !v.across_versions && !v.differences.is_empty());
    if report.refused && versions {
        format!("refused: {who}; --across-versions compares two MLX environments, --allow-mismatch anything")
    } else if report.refused {
        format!("refused: {who}; --allow-mismatch compares anyway")
    } else {
        format!("mismatch allowed (--allow-mismatch): {who}")
    }
}

pub(super) fn verdict_line(report: &CompareReport) -> String {
    match report.verdict {
        Some(v) => format!("verdict: {} (exit {})", v.words(), report.exit_code),
        None => format!("verdict: refused (exit {})", report.exit_code),
    }
}

/// The index of the last leading text column (cell, [adapter,] basis).
pub(super) fn text_columns(report: &CompareReport) -> usize {
    if shows_adapter(report) {
        2
    } else {
        1
    }
}

pub(super) fn extra_cells(report: &CompareReport) -> Vec<String> {
    let mut out = warning_lines(report);
    if !report.only_in_a.is_empty() {
        out.push(format!("only in A (not compared): {}", report.only_in_a.join(", ")));
    }
    if !report.only_in_b.is_empty() {
        out.push(format!("only in B (not compared): {}", report.only_in_b.join(", ")));
    }
    out
}

/// The mismatch list for stderr (CSV keeps stdout to the table).
pub fn mismatch_list(report: &CompareReport) -> String {
    let mut out = mismatch_intro(report);
    out.push('\n');
    for m in &report.mismatches {
        out.push_str(&format!("  - {m}\n"));
    }
    out
}

/// A row's name where rows stand alone (CI outputs): the subject, and what is compared when the
/// subject alone does not say it, e.g. `tiny.L512.headline TTFT controlled/stock` within a
/// session, `tiny.L16.headline controlled vs stock` across sessions.
pub(super) fn row_name(row: &Row) -> String {
    match (&row.adapter, row.basis) {
        (Some(adapter), Basis::Raw) => format!("{} {} raw", row.subject(), adapter.as_str()),
        (Some(adapter), _) if row.numerator.label == "B" => {
            format!("{} {} {}", row.subject(), adapter.as_str(), basis_cell(row))
        }
        _ => format!("{} {}/{}", row.subject(), row.numerator.label, row.denominator.label),
    }
}

/// A compared row's estimate in one phrase: `ratio 1.052 [1.031, 1.074] (95% CI), p = 0.0012,
/// MDE ±2.3 %`.
pub(super) fn estimate_phrase(row: &Row) -> Option<String> {
    let d = row.decision()?;
    Some(format!(
        "ratio {:.3} [{:.3}, {:.3}] ({:.0}% CI), p = {:.2e}, MDE {}",
        d.ratio,
        d.ci.lower,
        d.ci.upper,
        d.ci.confidence * 100.0,
        d.p_value,
        percent(d.mde)
    ))
}

/// The judged rows that decided the overall verdict: those with its verdict (all judged rows
/// when it is `no difference`); none when refused.
pub(super) fn deciding_rows(report: &CompareReport) -> Vec<&Row> {
    let Some(verdict) = report.verdict else { return Vec::new() };
    report.rows.iter().filter(|r| r.judged && r.verdict() == Some(verdict)).collect()
}

/// The smallest and largest detectable difference over the judged, compared rows, e.g.
/// `differences of ±2.3 % to ±8.1 % are detectable at 80 % power`; `None` when no row was
/// compared.
pub(super) fn detectable_line(report: &CompareReport) -> Option<String> {
    let mdes: Vec<f64> = report.rows.iter().filter(|r| r.judged).filter_map(|r| Some(r.decision()?.mde)).collect();
    let low = mdes.iter().copied().reduce(f64::min)?;
    let high = mdes.iter().copied().reduce(f64::max)?;
    let range = if (high - low).abs() < 5e-4 { percent(low) } else { format!("{} to {}", percent(low), percent(high)) };
    Some(format!(
        "detectable size: differences of {range} are detectable at {:.0} % power (α {:.0} %)",
        100.0 * report.settings.power,
        100.0 * report.settings.alpha
    ))
}
