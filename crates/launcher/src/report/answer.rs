//! The answer first: per case (model), each adapter against the reference in each cell as one
//! short line (ratio, interval, verdict, the smallest difference the session could detect) and
//! the case's agreement (argmax, reference streams), worded once here for the end of `run`'s terminal output
//! and the top of the report page, from the rows the verdicts were tested in
//! (`compare::session_rows`).

use std::collections::BTreeMap;

use decode_baseline_wire::{
    analysis::Analysis, decision::DecisionConfig, session::SessionReport, stats::Verdict, Adapter, Mode,
};

use crate::compare::{Row, RowResult};

/// One case's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseAnswer {
    pub case: String,
    pub rows: Vec<AnswerRow>,
    /// Argmax and reference-stream agreement over the case's cells, one entry per kind and
    /// pair.
    pub agreement: Vec<String>,
    /// The warnings of its verdicts that change their reading (an A/A group that moved the
    /// ratio, a verdict whose error may not hold run-to-run noise), each led by its row.
    pub warnings: Vec<String>,
}

/// One judged row of a case: the cell under its case (`session::within_case`), the pair, and
/// what its test found.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerRow {
    pub what: String,
    pub pair: String,
    pub found: Found,
}

/// What a row's test found.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    Tested { ratio: f64, lower: f64, upper: f64, verdict: Verdict, mde: f64 },
    NotTested { reason: String },
}

impl Found {
    /// The verdict's word, or `not tested`.
    pub fn verdict(&self) -> &str {
        match self {
            Found::Tested { verdict, .. } => verdict.words(),
            Found::NotTested { .. } => "not tested",
        }
    }

    /// The ratio and its interval, `0.950 [0.930, 0.970]`, or why it was not tested.
    pub fn figures(&self) -> String {
        match self {
            Found::Tested { ratio: r, lower, upper, .. } => {
                format!("{} [{}, {}]", ratio(*r), ratio(*lower), ratio(*upper))
            }
            Found::NotTested { reason } => format!("not tested: {reason}"),
        }
    }

    /// What the session could detect, or nothing for a row not tested.
    pub fn detectable(&self) -> String {
        match self {
            Found::Tested { .. } => format!("detectable {}", self.detectable_amount()),
            Found::NotTested { .. } => String::new(),
        }
    }

    /// The smallest difference the session could detect (`±5.9 %`, `>100 %`), for a column
    /// headed "detectable"; nothing for a row not tested.
    pub fn detectable_amount(&self) -> String {
        match self {
            Found::Tested { mde, .. } => amount(*mde),
            Found::NotTested { .. } => String::new(),
        }
    }

    /// The row's words on one line: figures, verdict, what it could detect.
    pub fn words(&self) -> String {
        match self {
            Found::Tested { .. } => format!("{}  {:<13} {}", self.figures(), self.verdict(), self.detectable()),
            Found::NotTested { .. } => self.figures(),
        }
    }
}

/// The settings the rows were tested at: those of the first tested row (one comparison holds one
/// setting); the defaults when none was tested.
pub fn tested_config(rows: &[Row]) -> DecisionConfig {
    rows.iter().find_map(|r| r.decision().map(|d| d.config)).unwrap_or_default()
}

/// What the answer's figures mean, with the level the rows were tested at.
pub fn heading(rows: &[Row]) -> String {
    let DecisionConfig { alpha, .. } = tested_config(rows);
    format!(
        "per token or TTFT, adapter/reference (below 1: faster), {} % interval, verdict at α {} %",
        percent(1.0 - alpha),
        percent(alpha)
    )
}

/// A fraction as a percentage with no more decimals than it needs (`5`, `2.5`).
fn percent(fraction: f64) -> String {
    let p = (fraction * 1000.0).round() / 10.0;
    if p.fract() == 0.0 {
        format!("{p:.0}")
    } else {
        format!("{p}")
    }
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
        let subject = row.subject();
        let what = crate::session::within_case(&subject).1.to_owned();
        let pair = format!("{}/{}", row.adapter.as_ref().map_or("", Adapter::as_str), report.reference.as_str());
        let warnings = match &row.outcome {
            RowResult::Compared { warnings, .. } => warnings.iter().map(|w| format!("{what} {pair}: {w}")).collect(),
            RowResult::NotCompared { .. } => Vec::new(),
        };
        let found = match &row.outcome {
            RowResult::Compared { decision: d, .. } => {
                Found::Tested { ratio: d.ratio, lower: d.ci.lower, upper: d.ci.upper, verdict: d.verdict, mde: d.mde }
            }
            RowResult::NotCompared { reason } => Found::NotTested { reason: reason.clone() },
        };
        let answer = cases.entry(case.clone()).or_insert_with(|| CaseAnswer {
            case,
            rows: Vec::new(),
            agreement: Vec::new(),
            warnings: Vec::new(),
        });
        answer.rows.push(AnswerRow { what, pair, found });
        answer.warnings.extend(warnings);
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
fn amount(mde: f64) -> String {
    if mde > 1.0 {
        ">100 %".to_owned()
    } else {
        format!("±{:.1} %", 100.0 * mde)
    }
}

/// The answers as terminal lines: the `heading`, then per case its name, a line per row and its
/// agreement, a line each.
pub fn lines(heading: &str, answers: &[CaseAnswer]) -> Vec<String> {
    if answers.is_empty() {
        return Vec::new();
    }
    let what = answers.iter().flat_map(|a| a.rows.iter().map(|r| r.what.len())).max().unwrap_or(0);
    let pair = answers.iter().flat_map(|a| a.rows.iter().map(|r| r.pair.len())).max().unwrap_or(0);
    let mut out = vec![format!("answer: {heading}")];
    for answer in answers {
        out.push(answer.case.clone());
        for row in &answer.rows {
            out.push(format!("  {:<what$}  {:<pair$}  {}", row.what, row.pair, row.found.words()));
        }
        out.extend(answer.agreement.iter().map(|a| format!("  {a}")));
        if !answer.warnings.is_empty() {
            out.push(format!("  {}", warned(answer.warnings.len())));
        }
    }
    out
}

/// The line that stands, in a view too narrow for them, for a case's `n` verdict warnings.
fn warned(n: usize) -> String {
    let what = if n == 1 {
        "a warning changes the reading of a verdict".to_owned()
    } else {
        format!("{n} warnings change the reading of these verdicts")
    };
    format!("{what}: `run --verbose` or the page says which")
}

/// The session's own notes that change the reading of every verdict: a worker program replaced
/// (the session is unpinned), its problems, a slowdown injected for a test; worded as the
/// terminal words them.
pub fn session_notes(report: &SessionReport, analysis: &Analysis) -> Vec<String> {
    let mut out: Vec<String> = crate::session::replaced_lines(report).collect();
    match report.problems.as_slice() {
        [] => {}
        [one] => out.push(format!("problem: {one}")),
        [first, rest @ ..] => out.push(format!("{} problems, the first: {first}", rest.len() + 1)),
    }
    let slowed: std::collections::BTreeSet<&str> = analysis
        .cells
        .iter()
        .flat_map(|c| c.adapters.iter().filter(|(_, s)| s.test_slowdown_us.is_some()).map(|(a, _)| a.as_str()))
        .collect();
    out.extend(slowed.iter().map(|a| format!("test slowdown injected into {a}: not a real measurement")));
    out
}

/// The answers as a Markdown table, one line per row with its case's agreement (the Markdown
/// view's first part).
pub fn markdown(heading: &str, answers: &[CaseAnswer]) -> String {
    if answers.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "Answer: {heading}\n\n\
         | case | cell | pair | ratio [interval] | verdict | detectable | agreement |\n|---|---|---|---|---|---|---|\n"
    );
    for answer in answers {
        for row in &answer.rows {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                answer.case,
                row.what,
                row.pair,
                row.found.figures(),
                row.found.verdict(),
                row.found.detectable(),
                answer.agreement.join("; ")
            ));
        }
    }
    let warnings: Vec<&String> = answers.iter().flat_map(|a| &a.warnings).collect();
    if !warnings.is_empty() {
        out.push('\n');
        for warning in warnings {
            out.push_str(&format!("- warning: {warning}\n"));
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
        let tested = Found::Tested { ratio: 0.95, lower: 0.93, upper: 0.97, verdict: Verdict::Faster, mde: 0.031 };
        let answers = vec![CaseAnswer {
            case: "tiny-qwen3".into(),
            rows: vec![
                AnswerRow { what: "tiny-qwen3-L16.headline".into(), pair: "controlled/stock".into(), found: tested },
                AnswerRow {
                    what: "tiny-qwen3-L512.fixed_continuation".into(),
                    pair: "controlled/stock".into(),
                    found: Found::NotTested { reason: "no pairs".into() },
                },
            ],
            agreement: vec!["argmax controlled/stock: 0 of 254 steps differ".into()],
            warnings: Vec::new(),
        }];
        let lines = lines("HEADING", &answers);
        assert_eq!(lines.len(), 5, "{lines:#?}");
        assert_eq!(lines[0], "answer: HEADING");
        assert_eq!(lines[1], "tiny-qwen3");
        assert_eq!(
            lines[2],
            "  tiny-qwen3-L16.headline             controlled/stock  0.950 [0.930, 0.970]  faster        detectable ±3.1 %"
        );
        assert_eq!(lines[3], "  tiny-qwen3-L512.fixed_continuation  controlled/stock  not tested: no pairs");
        assert_eq!(lines[4], "  argmax controlled/stock: 0 of 254 steps differ");
        assert!(super::lines("HEADING", &[]).is_empty());
        let md = markdown("HEADING", &answers);
        assert!(
            md.contains("| tiny-qwen3 | tiny-qwen3-L16.headline | controlled/stock | 0.950 [0.930, 0.970] | faster | detectable ±3.1 % |"),
            "{md}"
        );
    }

    /// A verdict's warning is counted in one short line in the terminal (which fits 100
    /// columns) and named in full in the Markdown (and on the page's card).
    #[test]
    fn a_verdicts_warning_is_counted_in_the_terminal_and_named_in_full_in_the_markdown() {
        let answers = vec![CaseAnswer {
            case: "tiny".into(),
            rows: vec![AnswerRow {
                what: "L16.headline".into(),
                pair: "controlled/stock".into(),
                found: Found::NotTested { reason: "no pairs".into() },
            }],
            agreement: vec!["agreement: not measured".into()],
            warnings: vec!["L16.headline controlled/stock: A/A moved the ratio".into()],
        }];
        let lines = lines("HEADING", &answers);
        assert_eq!(
            lines.last().unwrap(),
            "  a warning changes the reading of a verdict: `run --verbose` or the page says which"
        );
        assert!(warned(3).starts_with("3 warnings change the reading of these verdicts: "));
        assert!(
            markdown("HEADING", &answers).contains("\n- warning: L16.headline controlled/stock: A/A moved the ratio\n")
        );
    }

    /// What changes the reading of every verdict of a session: a replaced worker program, its
    /// problems, a slowdown injected for a test; none for a plain recorded session.
    #[test]
    fn the_sessions_own_notes_name_a_replaced_program_its_problems_and_an_injected_slowdown() {
        let path = crate::launcher::session_job::repo_root().join("tests/data/sessions/back-to-back-a/session.json");
        let mut report = crate::session::load_session(&path).unwrap().report;
        let mut analysis = report.analysis.clone().unwrap();
        assert_eq!(session_notes(&report, &analysis), Vec::<String>::new());
        report.problems = vec!["first problem".into(), "second problem".into()];
        report.replaced_programs.insert(Adapter::Stock, vec!["/opt/my-loop".into()]);
        analysis.cells[0].adapters.get_mut(&Adapter::Controlled).unwrap().test_slowdown_us = Some(50);
        let notes = session_notes(&report, &analysis);
        assert_eq!(notes.len(), 3, "{notes:#?}");
        assert_eq!(notes[0], crate::session::replaced_line(&Adapter::Stock, &["/opt/my-loop".to_owned()]));
        assert_eq!(notes[1], "2 problems, the first: first problem");
        assert_eq!(notes[2], "test slowdown injected into controlled: not a real measurement");
    }

    /// The heading states the level the rows were tested at, not a constant.
    #[test]
    fn the_heading_states_the_level_the_rows_were_tested_at() {
        assert!(heading(&[]).ends_with("95 % interval, verdict at α 5 %"), "{}", heading(&[]));
        assert_eq!((percent(0.01), percent(0.975), percent(0.1)), ("1".into(), "97.5".into(), "10".into()));
        let path = crate::launcher::session_job::repo_root().join("tests/data/sessions/back-to-back-a/session.json");
        let session = crate::session::fixtures::repeated(&crate::session::load_session(&path).unwrap().report, 4);
        let config = DecisionConfig { alpha: 0.01, ..DecisionConfig::default() };
        let rows = crate::compare::decide(&session, &crate::compare::Settings { config, profiles: None }).rows;
        assert!(rows.iter().any(|r| r.decision().is_some()));
        assert!(heading(&rows).ends_with("99 % interval, verdict at α 1 %"), "{}", heading(&rows));
    }

    #[test]
    fn a_session_that_can_tell_nothing_still_fits_its_line() {
        assert_eq!((ratio(0.5404), ratio(21.235), ratio(-0.5)), ("0.540".into(), "21.2".into(), "-0.500".into()));
        let tested = |mde| Found::Tested { ratio: 1.0, lower: 0.5, upper: 2.0, verdict: Verdict::Inconclusive, mde };
        assert_eq!(
            (tested(57.577).detectable(), tested(57.577).detectable_amount()),
            ("detectable >100 %".into(), ">100 %".into())
        );
        assert_eq!(
            (tested(0.059).detectable(), tested(0.059).detectable_amount()),
            ("detectable ±5.9 %".into(), "±5.9 %".into())
        );
    }
}
