//! The tested rows of one finished session as every view shows them (the run table, the report
//! page): [`within_rows`], and for a cell that ran under `run --until-decided`, the sequential
//! decision in place of the fixed-sample one. A fixed-sample test of pairs whose number the
//! looks chose does not hold its level (issue 42: 9.6 % false alarms at a stated 5 %); the
//! sequential decision does, and the fixed-sample verdict is kept as a warning when they differ.

use decode_baseline_wire::{
    sequential::{SequentialRecord, SequentialVerdict},
    session::SessionReport,
    stats::Verdict,
};

use super::{
    estimate::{within_rows, Settings},
    Row, RowResult,
};

/// The rows of `session` against its reference, each with the verdict the session stands by.
pub fn session_rows(session: &SessionReport, settings: &Settings<'_>) -> Vec<Row> {
    let mut rows = within_rows(&crate::session::cells(session), settings);
    if let Some(record) = &session.sequential {
        follow_the_looks(&mut rows, record);
    }
    rows
}

/// Puts each looked-at row's sequential verdict in place of its fixed-sample one.
fn follow_the_looks(rows: &mut [Row], record: &SequentialRecord) {
    for row in rows {
        let Some(cell) = record.cells.iter().find(|c| c.cell == row.cell) else { continue };
        let Some(looked) = cell.rows.iter().find(|r| row.adapter.as_ref() == Some(&r.adapter)) else { continue };
        let RowResult::Compared { decision, warnings, .. } = &mut row.outcome else { continue };
        let sequential = match looked.verdict {
            SequentialVerdict::Faster => Verdict::Faster,
            SequentialVerdict::Slower => Verdict::Slower,
            SequentialVerdict::NoDifference => Verdict::NoDifference,
            SequentialVerdict::Undecided => Verdict::Inconclusive,
        };
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::session::{CellData, MeasuredRequest};
    use crate::stats::DecisionConfig;
    use decode_baseline_wire::{
        sequential::{SequentialCell, SequentialEnd, SequentialRow},
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
}
