//! The decisions of one finished session: tested once when it finishes ([`decide`]) and stored
//! in `session.json`, then read by every view of it (the run table, the answer block, the report
//! page, `compare` of the session) through [`session_rows`]. They are [`within_rows`], and for a
//! cell that ran under `run --until-decided`, the sequential decision in place of the
//! fixed-sample one. A fixed-sample test of pairs whose number the looks chose does not hold its
//! level (issue 42: 9.6 % false alarms at a stated 5 %); the sequential decision does, and the
//! fixed-sample verdict is kept as a warning when they differ.

use decode_baseline_wire::{
    row::SessionDecisions, sequential::SequentialRecord, session::SessionReport, stats::Verdict,
};

use super::{
    energy,
    estimate::{finish, session_ref, within_rows},
    identity, CompareError, Quantity, Row, RowResult, Settings,
};
use crate::session::LoadedSession;
use decode_baseline_wire::compare::{CompareReport, Kind, COMPARE_SCHEMA_VERSION};

/// Tests every row of `session` against its reference with `settings`: the record `finish`
/// stores.
pub fn decide(session: &SessionReport, settings: &Settings<'_>) -> SessionDecisions {
    let mut rows = within_rows(&crate::session::judged_cells(session), settings);
    if let Some(record) = &session.sequential {
        follow_the_looks(&mut rows, record);
    }
    SessionDecisions {
        settings: settings.config,
        noise_profile: settings.profiles.map(|p| p.path().display().to_string()),
        rows,
    }
}

/// The settings `session`'s rows were tested with: the stored ones, else the defaults (which
/// every session before version 8 was shown with).
pub fn decided_settings(session: &SessionReport) -> crate::stats::DecisionConfig {
    session.decisions.as_ref().map_or_else(crate::stats::DecisionConfig::default, |d| d.settings)
}

/// The rows of `session` as its views show them: the stored decisions, unless the reader asks
/// for other settings (`retest`: another profile file, level or margin), the session stored
/// none (written before version 8), or it stored them before rows of time to first token
/// existed (it has first tokens to test and no such row), in which case they are tested now
/// with `settings`.
pub fn session_rows(session: &SessionReport, settings: &Settings<'_>, retest: bool) -> Vec<Row> {
    match stored_rows(session) {
        Some(stored) if !retest => stored.to_vec(),
        _ => decide(session, settings).rows,
    }
}

/// The rows of `session` where no reader's settings apply (the history, `bisect`): the stored
/// decisions, else tested now with the default settings and no noise profile.
pub fn default_rows(session: &SessionReport) -> Vec<Row> {
    session_rows(session, &Settings { config: crate::stats::DecisionConfig::default(), profiles: None }, false)
}

/// The rows `session` stored, when they can be shown as they are: `None` when it stored none, or
/// stored them before rows of time to first token existed.
pub fn stored_rows(session: &SessionReport) -> Option<&[Row]> {
    let stored = session.decisions.as_ref()?;
    (!predates_first_token_rows(stored, session)).then_some(stored.rows.as_slice())
}

/// Whether `stored` was decided before rows of time to first token existed: no such row among
/// them, though the session has first tokens to test.
fn predates_first_token_rows(stored: &SessionDecisions, session: &SessionReport) -> bool {
    !stored.rows.iter().any(|r| r.quantity == Quantity::FirstToken)
        && !crate::session::first_token_cells(session).is_empty()
}

/// The rows of `session` tested with the default settings and no profile: what a test of a view
/// gives it, whatever profile file the host running the test has.
#[cfg(test)]
pub fn tested_without_profile(session: &SessionReport) -> Vec<Row> {
    decide(session, &Settings { config: crate::stats::DecisionConfig::default(), profiles: None }).rows
}

/// Every adapter over the session's reference adapter in every cell of one session: the rows it
/// stored, or tested again with `settings` when `retest` (`session_rows`).
pub fn compare_within(
    a: &LoadedSession,
    settings: &Settings<'_>,
    allow_mismatch: bool,
    retest: bool,
) -> Result<CompareReport, CompareError> {
    crate::stats::validate_decision_config(&settings.config).map_err(CompareError::Settings)?;
    let mismatches = identity::within(&a.report);
    let refused = !mismatches.is_empty() && !allow_mismatch;
    let rows = if refused { Vec::new() } else { session_rows(&a.report, settings, retest) };
    finish(CompareReport {
        schema_version: COMPARE_SCHEMA_VERSION,
        kind: Kind::WithinSession,
        a: session_ref(a),
        b: None,
        mismatches,
        refused,
        versions: None,
        device_differences: Vec::new(),
        settings: settings.config,
        judged_rows: 0,
        raw: false,
        rows,
        only_in_a: Vec::new(),
        only_in_b: Vec::new(),
        energy: if refused { Vec::new() } else { energy::within(&a.report, &settings.config) },
        verdict: None,
        exit_code: 0,
    })
}

/// Puts each looked-at row's sequential verdict in place of its fixed-sample one. The looks
/// test the rows of one quantity (`record.quantity`); a row of the other quantity in a looked-at
/// cell has as many pairs as they chose, which no fixed-sample test holds its level on, so it is
/// shown and left inconclusive.
fn follow_the_looks(rows: &mut [Row], record: &SequentialRecord) {
    for row in rows {
        let Some(cell) = record.cells.iter().find(|c| c.cell == row.cell) else { continue };
        let quantity = row.quantity;
        let RowResult::Compared { decision, warnings, .. } = &mut row.outcome else { continue };
        if quantity != record.quantity {
            if decision.verdict != Verdict::Inconclusive {
                warnings.push(format!(
                    "inconclusive: the number of pairs was chosen by sequential looks at the {} rows; a \
                     fixed-sample test of them would say {}",
                    looked_at(record.quantity),
                    decision.verdict.words()
                ));
                decision.verdict = Verdict::Inconclusive;
            }
            continue;
        }
        let Some(looked) = cell.rows.iter().find(|r| row.adapter.as_ref() == Some(&r.adapter)) else { continue };
        let sequential = Verdict::from(looked.verdict);
        if sequential != decision.verdict {
            let level = cell.nominal_level.map_or("none".to_owned(), |l| format!("{l:.4}"));
            warnings.push(format!(
                "the verdict is the sequential test's (look {} of {}, Pocock level {level}); a fixed-sample test of \
                 the same pairs, which does not account for the looks, would say {}",
                cell.looks_done,
                cell.looks_planned,
                decision.verdict.words()
            ));
            decision.verdict = sequential;
        }
    }
}

/// The rows sequential looks at `quantity` decided, in words.
fn looked_at(quantity: Quantity) -> &'static str {
    match quantity {
        Quantity::PerToken => "per-token",
        Quantity::FirstToken => "time-to-first-token",
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::session::{CellData, MeasuredRequest};
    use crate::stats::DecisionConfig;
    use decode_baseline_wire::{
        sequential::{SequentialCell, SequentialEnd, SequentialRow, SequentialVerdict},
        Adapter, Mode,
    };

    /// A cell of four interleaved runs with controlled 10 % slower than stock.
    fn cell() -> CellData {
        let run = |r: usize| -> Vec<(f64, f64)> {
            (0..8).map(|k| (1.1e6 * (1.0 + 0.002 * (((k + r) * 7 % 5) as f64 - 2.0)), 1e6)).collect()
        };
        let request = MeasuredRequest { run: 0, positions: vec![17], dur_ns: vec![1_000_000] };
        CellData {
            cell: "c.p.headline".to_owned(),
            mode: Mode::Headline,
            quantity: decode_baseline_wire::row::Quantity::PerToken,
            case_id: "c".to_owned(),
            reference: Adapter::Stock,
            adapters: [Adapter::Controlled, Adapter::Stock].map(|a| (a, vec![request.clone(); 2])).into(),
            aa_ratios: BTreeMap::new(),
            runs: BTreeMap::new(),
            pairs: [(Adapter::Controlled, (0..4).map(run).collect())].into(),
            paired_aa: BTreeMap::new(),
            aa_pairs: BTreeMap::new(),
        }
    }

    fn record(verdict: SequentialVerdict) -> SequentialRecord {
        SequentialRecord {
            budget: "32 pairs".to_owned(),
            alpha: 0.05,
            rows: 1,
            quantity: Quantity::PerToken,
            cells: vec![SequentialCell {
                cell: "c.p.headline".to_owned(),
                looks_planned: 4,
                looks_done: 4,
                pairs: 32,
                nominal_level: Some(0.0182),
                profile_sd: None,
                end: SequentialEnd::LastLook,
                rows: vec![SequentialRow {
                    adapter: Adapter::Controlled,
                    verdict,
                    ratio: Some(1.1),
                    p_value: Some(0.02),
                    equivalence_p_value: Some(0.9),
                }],
            }],
        }
    }

    #[test]
    fn a_looked_at_row_shows_the_sequential_verdict_and_keeps_the_fixed_one_as_a_warning() {
        let settings = Settings { config: DecisionConfig::default(), profiles: None };
        let fixed = within_rows(&[cell()], &settings);
        assert_eq!(fixed[0].verdict(), Some(Verdict::Slower), "{fixed:?}");
        for (looked, shown) in [
            (SequentialVerdict::Undecided, Verdict::Inconclusive),
            (SequentialVerdict::NoDifference, Verdict::NoDifference),
        ] {
            let mut rows = fixed.clone();
            follow_the_looks(&mut rows, &record(looked));
            assert_eq!(rows[0].verdict(), Some(shown));
            let RowResult::Compared { warnings, .. } = &rows[0].outcome else { panic!() };
            assert!(
                warnings.iter().any(|w| w.contains("look 4 of 4") && w.ends_with("would say slower")),
                "{warnings:?}"
            );
        }
        // The same verdict both ways: nothing to add.
        let mut rows = fixed.clone();
        follow_the_looks(&mut rows, &record(SequentialVerdict::Slower));
        assert_eq!(rows, fixed);
    }

    #[test]
    fn decisions_stored_before_first_token_rows_are_tested_again_and_others_are_read_as_stored() {
        let path = crate::launcher::session_job::repo_root().join("tests/data/sessions/back-to-back-a/session.json");
        let session = crate::session::fixtures::repeated(&crate::session::load_session(&path).unwrap().report, 4);
        let settings = Settings { config: DecisionConfig::default(), profiles: None };
        let mut decided = decide(&session, &settings);
        assert!(decided.rows.iter().any(|r| r.quantity == Quantity::FirstToken));
        // As stored now: read back as they are (a verdict changed by hand stays changed).
        let RowResult::Compared { decision, .. } = &mut decided.rows[0].outcome else { panic!() };
        decision.ratio = 1.234;
        let stored = SessionReport { decisions: Some(decided.clone()), ..session.clone() };
        assert_eq!(session_rows(&stored, &settings, false), decided.rows);
        // As a session stored them before: per-token rows only. Tested again, with TTFT.
        let old = SessionDecisions {
            rows: decided.rows.iter().filter(|r| r.quantity == Quantity::PerToken).cloned().collect(),
            ..decided
        };
        let stored = SessionReport { decisions: Some(old), ..session.clone() };
        assert_eq!(session_rows(&stored, &settings, false), decide(&session, &settings).rows);
    }

    #[test]
    fn a_first_token_row_of_a_looked_at_cell_is_inconclusive_whatever_the_looks_said() {
        let settings = Settings { config: DecisionConfig::default(), profiles: None };
        let first_token = CellData { quantity: Quantity::FirstToken, ..cell() };
        let fixed = within_rows(&[first_token], &settings);
        assert_eq!(fixed[0].verdict(), Some(Verdict::Slower), "{fixed:?}");
        for looked in [SequentialVerdict::Slower, SequentialVerdict::Undecided] {
            let mut rows = fixed.clone();
            follow_the_looks(&mut rows, &record(looked));
            assert_eq!(rows[0].verdict(), Some(Verdict::Inconclusive));
            let RowResult::Compared { warnings, .. } = &rows[0].outcome else { panic!() };
            assert!(warnings.iter().any(|w| w.contains("sequential looks at the per-token rows")), "{warnings:?}");
        }
    }

    #[test]
    fn looks_at_the_first_token_decide_its_rows_and_leave_the_per_token_ones_inconclusive() {
        let settings = Settings { config: DecisionConfig::default(), profiles: None };
        let looks = SequentialRecord { quantity: Quantity::FirstToken, ..record(SequentialVerdict::NoDifference) };
        let first_token = CellData { quantity: Quantity::FirstToken, ..cell() };
        let mut rows = within_rows(&[first_token], &settings);
        follow_the_looks(&mut rows, &looks);
        assert_eq!(rows[0].verdict(), Some(Verdict::NoDifference), "the looked-at row takes the looks' verdict");
        let mut rows = within_rows(&[cell()], &settings);
        follow_the_looks(&mut rows, &looks);
        assert_eq!(rows[0].verdict(), Some(Verdict::Inconclusive));
        let RowResult::Compared { warnings, .. } = &rows[0].outcome else { panic!() };
        assert!(warnings.iter().any(|w| w.contains("looks at the time-to-first-token rows")), "{warnings:?}");
    }
}
