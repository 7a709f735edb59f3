//! The answer first: per case (model), each adapter against the reference in each cell as one
//! short line (ratio, interval, verdict, the smallest difference the session could detect) and
//! the case's agreement (argmax, reference streams), worded once here for the end of `run`'s terminal output
//! and the top of the report page, from the rows the verdicts were tested in
//! (`compare::session_rows`).

use std::collections::BTreeMap;

use decode_baseline_wire::{analysis::Analysis, session::SessionReport, Adapter, Mode};

use crate::compare::{Row, RowResult};

/// One case's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseAnswer {
    pub case: String,
    /// Per judged row: the cell under its case (`session::within_case`), the pair, and the words.
    pub rows: Vec<(String, String, String)>,
    /// Argmax and reference-stream agreement over the case's cells, one entry per kind and
    /// pair.
    pub agreement: Vec<String>,
}

/// The answers of `report`'s cases, from its tested `rows`.
pub fn of(report: &SessionReport, analysis: &Analysis, rows: &[Row]) -> Vec<CaseAnswer> {
    let cells = crate::session::cells(report);
    let case_of = |cell: &str| cells.iter().find(|c| c.cell == cell).map(|c| (c.case_id.clone(), c.mode));
    let mut cases: BTreeMap<String, CaseAnswer> = BTreeMap::new();
    for row in rows {
        let Some((case, mode)) = case_of(&row.cell) else { continue };
        if mode == Mode::ReferencePair {
            continue;
        }
        let what = crate::session::within_case(&row.cell).1.to_owned();
        let pair = format!("{}/{}", row.adapter.as_ref().map_or("", Adapter::as_str), report.reference.as_str());
        let words = match &row.outcome {
            RowResult::Compared { decision: d, .. } => format!(
                "{} [{}, {}]  {:<13} {}",
                ratio(d.ratio),
                ratio(d.ci.lower),
                ratio(d.ci.upper),
                d.verdict.words(),
                detectable(d.mde)
            ),
            RowResult::NotCompared { reason } => format!("not tested: {reason}"),
        };
        let answer =
            cases.entry(case.clone()).or_insert_with(|| CaseAnswer { case, rows: Vec::new(), agreement: Vec::new() });
        answer.rows.push((what, pair, words));
    }
    // Agreement, summed over each case's cells per adapter.
    let mut argmax: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
    let mut streams: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
    for cell in &analysis.cells {
        let Some((case, _)) = case_of(&cell.cell) else { continue };
        let pair = |a: &Adapter| format!("{}/{}", a.as_str(), report.reference.as_str());
        for (adapter, g) in &cell.argmax {
            let e = argmax.entry((case.clone(), pair(adapter))).or_default();
            *e = (e.0 + g.mismatches.len(), e.1 + g.steps_compared);
        }
        for (adapter, s) in &cell.stream {
            let e = streams.entry((case.clone(), pair(adapter))).or_default();
            *e = (e.0 + usize::from(s.identical), e.1 + 1);
        }
    }
    for answer in cases.values_mut() {
        let mine = |m: &BTreeMap<(String, String), (usize, usize)>| -> Vec<(String, (usize, usize))> {
            m.iter().filter(|((c, _), _)| *c == answer.case).map(|((_, p), v)| (p.clone(), *v)).collect()
        };
        let mut parts: Vec<String> = mine(&argmax)
            .into_iter()
            .map(|(pair, (bad, steps))| format!("argmax {pair}: {bad} of {steps} steps differ"))
            .collect();
        parts.extend(
            mine(&streams)
                .into_iter()
                .map(|(pair, (same, all))| format!("reference streams {pair}: {same} of {all} identical")),
        );
        answer.agreement = if parts.is_empty() { vec!["agreement: not measured".to_owned()] } else { parts };
    }
    cases.into_values().filter(|c| !c.rows.is_empty()).collect()
}

/// A ratio in a short, fixed number of characters: three decimals below 10, one above (a
/// session that can tell nothing has intervals like `[0.014, 21.2]`).
fn ratio(value: f64) -> String {
    if value.abs() < 10.0 {
        format!("{value:.3}")
    } else {
        format!("{value:.1}")
    }
}

/// The smallest difference the session would see 4 times in 5; beyond 100 % it could see none
/// worth naming.
fn detectable(mde: f64) -> String {
    if mde > 1.0 {
        "detectable >100 %".to_owned()
    } else {
        format!("detectable ±{:.1} %", 100.0 * mde)
    }
}

/// The answers as terminal lines: a heading, then per case its name, a line per row and its
/// agreement, a line each.
pub fn lines(answers: &[CaseAnswer]) -> Vec<String> {
    if answers.is_empty() {
        return Vec::new();
    }
    let what = answers.iter().flat_map(|a| a.rows.iter().map(|r| r.0.len())).max().unwrap_or(0);
    let pair = answers.iter().flat_map(|a| a.rows.iter().map(|r| r.1.len())).max().unwrap_or(0);
    let mut out =
        vec!["answer: time per token, adapter over reference (below 1: faster), 95 % interval, verdict".to_owned()];
    for answer in answers {
        out.push(answer.case.clone());
        for (w, p, words) in &answer.rows {
            out.push(format!("  {w:<what$}  {p:<pair$}  {words}"));
        }
        out.extend(answer.agreement.iter().map(|a| format!("  {a}")));
    }
    out
}

/// The answers as a Markdown table, one line per row with its case's agreement (the Markdown
/// view's first part).
pub fn markdown(answers: &[CaseAnswer]) -> String {
    if answers.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "Answer: time per token, adapter over reference (below 1: faster), 95 % interval, verdict\n\n\
         | case | cell | pair | ratio [95 % CI], verdict, detectable | agreement |\n|---|---|---|---|---|\n",
    );
    for answer in answers {
        for (what, pair, words) in &answer.rows {
            let words = words.split_whitespace().collect::<Vec<_>>().join(" ");
            out.push_str(&format!(
                "| {} | {what} | {pair} | {words} | {} |\n",
                answer.case,
                answer.agreement.join("; ")
            ));
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_case_gets_its_rows_under_its_name_and_one_agreement_line() {
        let answers = vec![CaseAnswer {
            case: "tiny-qwen3".into(),
            rows: vec![
                ("tiny-qwen3-L16.headline".into(), "controlled/stock".into(), "0.950 [0.930, 0.970]  faster".into()),
                ("tiny-qwen3-L512.fixed_continuation".into(), "controlled/stock".into(), "1.000".into()),
            ],
            agreement: vec!["argmax controlled/stock: 0 of 254 steps differ".into()],
        }];
        let lines = lines(&answers);
        assert_eq!(lines.len(), 5, "{lines:#?}");
        assert!(lines[0].starts_with("answer: "));
        assert_eq!(lines[1], "tiny-qwen3");
        assert_eq!(lines[2], "  tiny-qwen3-L16.headline             controlled/stock  0.950 [0.930, 0.970]  faster");
        assert_eq!(lines[4], "  argmax controlled/stock: 0 of 254 steps differ");
        assert!(super::lines(&[]).is_empty());
    }

    #[test]
    fn a_session_that_can_tell_nothing_still_fits_its_line() {
        assert_eq!((ratio(0.5404), ratio(21.235), ratio(-0.5)), ("0.540".into(), "21.2".into(), "-0.500".into()));
        assert_eq!(detectable(57.577), "detectable >100 %");
        assert_eq!(detectable(0.059), "detectable ±5.9 %");
    }
}
