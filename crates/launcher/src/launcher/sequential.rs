//! `run --until-decided [--budget 5m|N] [--decide-on per-token|first-token]`: each cell's
//! interleaved groups are looks of a group-sequential test. After every group of a cell the
//! launcher tests that cell's rows of the quantity decided on (per token by default, or the time
//! to the first token) with
//! the paired test `compare` uses (`crates/launcher/src/stats`) and stops the cell at the first look where every
//! row is decided at the Pocock boundary's nominal level (`crates/launcher/src/stats/pocock.rs`: "faster" or
//! "slower" when its p-value is below it, "no difference" when its equivalence p-value is), or
//! at its planned last look.
//!
//! The planned number of looks `K` is fixed before the data can move it: with a budget of `N`
//! pairs, `K = ⌈N / pairs per group⌉`; with a time budget, `K` follows from the first group's
//! wall time (`⌊budget / (first group's wall · cells)⌋`, at least 1, at most 50) and the session
//! also stops starting groups once the budget is spent. Each look judges with the error the
//! table uses: the larger of the host noise profile's and the pairs' own, when `--noise-profile`
//! (or this host's profile file) holds the cell's design, else the pairs' own. The session's
//! false-alarm rate is split over every row of every cell (Bonferroni: each row's looks at the
//! Pocock level of `α / rows`), so several cells do not multiply it. The decision is recorded in
//! `session.json` (`sequential`) and printed; the table and the page show each looked-at row's
//! sequential verdict (`compare::session_rows`), with the fixed-sample test of the same pairs, whose
//! level does not account for the looks, as a warning where it differs.
//!
//! Every look judges with the one rule of `compare` (`stats::decision`): a look of one run has no
//! run-to-run error and decides nothing without a noise profile, later looks use the run means on
//! `k − 1` degrees of freedom; the simulation checks the whole procedure's false alarms on
//! two-level noise (`stats::simulation`, path `Looks`).

use std::{path::PathBuf, time::Duration};

use crate::stats::{pocock, verdict_of, DecisionConfig, PocockBoundary, MAX_LOOKS};
use decode_baseline_wire::{
    row::Quantity,
    sequential::{SequentialCell, SequentialEnd, SequentialRecord, SequentialRow, SequentialVerdict},
    session::SessionReport,
};

use crate::{
    compare::{self, RowResult, Settings},
    noise_profiles as profiles,
};

/// `--budget`: the most pairs per cell, or the most time for the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    Pairs(u32),
    Time(Duration),
}

impl Budget {
    /// `200` (pairs) or a duration such as `5m`, `90s`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if let Ok(pairs) = text.parse::<u32>() {
            return if pairs == 0 {
                Err("0 pairs; expected a number of pairs (`200`) or a time (`5m`)".into())
            } else {
                Ok(Self::Pairs(pairs))
            };
        }
        humantime::parse_duration(text)
            .ok()
            .filter(|d| !d.is_zero())
            .map(Self::Time)
            .ok_or_else(|| format!("`{text}` is neither a number of pairs (`200`) nor a time (`5m`, `90s`)"))
    }

    /// `200 pairs` or `5m`, for the record.
    pub fn describe(self) -> String {
        match self {
            Self::Pairs(n) => format!("{n} pairs"),
            Self::Time(d) => humantime::format_duration(d).to_string(),
        }
    }
}

impl Default for Budget {
    fn default() -> Self {
        Self::Time(Duration::from_secs(300))
    }
}

/// The state of an `--until-decided` session.
#[derive(Debug)]
pub struct Sequential {
    budget: Budget,
    /// Pairs one group adds to a cell (the measured requests of one worker).
    pairs_per_look: u32,
    /// `K`: known at once for a pairs budget, after the first group for a time budget.
    looks: Option<usize>,
    boundary: Option<PocockBoundary>,
    /// The session's false-alarm rate, split over `rows`.
    alpha: f64,
    /// The rows tested in the whole session (cells × adapters other than the reference).
    rows: u32,
    cells: usize,
    /// `--noise-profile`, resolved as the table resolves it (`noise_profiles::resolve`).
    noise_profile: Option<PathBuf>,
    /// The rows the looks decide (`--decide-on`).
    quantity: Quantity,
    /// Per cell, in the order the cells first ran; `end` is `None` while its looks go on.
    records: Vec<(SequentialCell, Option<SequentialEnd>)>,
    budget_spent: bool,
}

impl Sequential {
    /// The groups to plan for (the session's repetitions) and the state. `rows_per_cell` is the
    /// number of adapters tested against the reference in each cell; `quantity` the rows the
    /// looks decide.
    pub fn new(
        budget: Budget,
        pairs_per_look: u32,
        cells: usize,
        rows_per_cell: usize,
        noise_profile: Option<PathBuf>,
        quantity: Quantity,
    ) -> Result<(u32, Self), String> {
        let alpha = DecisionConfig::default().alpha;
        let rows = (cells * rows_per_cell).max(1) as u32;
        let looks = match budget {
            Budget::Pairs(n) => Some((n.div_ceil(pairs_per_look.max(1)) as usize).clamp(1, MAX_LOOKS)),
            Budget::Time(_) => None,
        };
        let boundary = looks.map(|k| pocock(k, alpha / f64::from(rows))).transpose().map_err(|e| e.to_string())?;
        let planned = looks.unwrap_or(MAX_LOOKS) as u32;
        let state = Self {
            budget,
            pairs_per_look,
            looks,
            boundary,
            alpha,
            rows,
            cells,
            noise_profile,
            quantity,
            records: Vec::new(),
            budget_spent: false,
        };
        Ok((planned, state))
    }

    /// Whether a group of `cell` is not to be started: the cell is decided, at its last look,
    /// or the time budget is spent.
    pub fn skips(&self, cell: &str) -> bool {
        self.budget_spent || self.records.iter().any(|(c, end)| c.cell == cell && end.is_some())
    }

    /// After a group of `cell` ran (`wall` its wall time, `elapsed` the session's so far):
    /// fixes `K` at the first group of a time budget, tests the cell's rows in `report` (the
    /// workers so far) and stops the cell when decided or at its last look.
    pub fn after_group(&mut self, cell: &str, report: &SessionReport, wall: Duration, elapsed: Duration) {
        if let (None, Budget::Time(budget)) = (self.looks, self.budget) {
            let per_look = wall.as_secs_f64().max(1e-3) * self.cells as f64;
            let k = ((budget.as_secs_f64() / per_look).floor() as usize).clamp(1, MAX_LOOKS);
            self.looks = Some(k);
            self.boundary = pocock(k, self.alpha / f64::from(self.rows)).ok();
        }
        let index = match self.records.iter().position(|(c, _)| c.cell == cell) {
            Some(i) => i,
            None => {
                self.records.push((
                    SequentialCell {
                        cell: cell.to_owned(),
                        looks_planned: 0,
                        looks_done: 0,
                        pairs: 0,
                        nominal_level: None,
                        profile_sd: None,
                        end: SequentialEnd::BudgetSpent,
                        rows: Vec::new(),
                    },
                    None,
                ));
                self.records.len() - 1
            }
        };
        let out_of_time = matches!(self.budget, Budget::Time(budget) if elapsed >= budget);
        self.budget_spent |= out_of_time;
        let (record, end) = &mut self.records[index];
        record.looks_done += 1;
        record.pairs = record.looks_done * self.pairs_per_look;
        let (Some(k), Some(boundary)) = (self.looks, self.boundary) else { return };
        let level = boundary.nominal_alpha;
        record.looks_planned = k as u32;
        record.nominal_level = Some(level);
        let cells: Vec<_> =
            crate::session::judged_cells_of(report, self.quantity).into_iter().filter(|c| c.cell == cell).collect();
        let designs: Vec<String> = cells.iter().map(|c| c.cell.clone()).collect();
        // A profile file that cannot be read is the table's warning to give; the look uses the
        // pairs' own error then, as the table does.
        let profiles =
            profiles::resolve(self.noise_profile.as_deref(), &[report], &designs).ok().and_then(|(found, _)| found);
        let settings = Settings { config: DecisionConfig::default(), profiles: profiles.as_ref() };
        let rows = compare::within_rows(&cells, &settings);
        record.profile_sd = rows.iter().filter_map(|row| Some(row.decision()?.profile.as_ref()?.sd)).reduce(f64::max);
        record.rows = rows.iter().filter_map(|row| look_row(row, level)).collect();
        let decided = !record.rows.is_empty() && record.rows.iter().all(|r| r.verdict != SequentialVerdict::Undecided);
        *end = if decided {
            Some(SequentialEnd::Decided)
        } else if record.looks_done as usize >= k {
            Some(SequentialEnd::LastLook)
        } else if out_of_time {
            Some(SequentialEnd::BudgetSpent)
        } else {
            None
        };
    }

    /// The record for `session.json`: a cell whose looks were still going on when the session
    /// stopped starting groups ended by the budget.
    pub fn record(&self) -> SequentialRecord {
        SequentialRecord {
            budget: self.budget.describe(),
            alpha: self.alpha,
            rows: self.rows,
            quantity: self.quantity,
            cells: self
                .records
                .iter()
                .map(|(cell, end)| SequentialCell { end: end.unwrap_or(SequentialEnd::BudgetSpent), ..cell.clone() })
                .collect(),
        }
    }
}

/// A row at a look held to `level`; `None` for a row of the reference itself (not tested).
fn look_row(row: &compare::Row, level: f64) -> Option<SequentialRow> {
    let adapter = row.adapter.clone()?;
    Some(match &row.outcome {
        RowResult::Compared { decision, .. } => SequentialRow {
            adapter,
            verdict: verdict_of(decision, decision.p_value < level, decision.equivalence_p_value < level).into(),
            ratio: Some(decision.ratio),
            p_value: Some(decision.p_value),
            equivalence_p_value: Some(decision.equivalence_p_value),
        },
        RowResult::NotCompared { .. } => SequentialRow {
            adapter,
            verdict: SequentialVerdict::Undecided,
            ratio: None,
            p_value: None,
            equivalence_p_value: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use decode_baseline_wire::{profile::NoiseProfileFile, Adapter};

    use super::*;

    const CELL: &str = "tiny-qwen3.tiny-qwen3-L16.headline";
    const SECOND: Duration = Duration::from_secs(1);

    /// The recorded session's headline cell, where the controlled loop's steps take about 0.35
    /// of stock's, as `runs` worker runs per adapter (`fixtures::repeated`), every request's
    /// first token at `first_token(adapter)` ms (`fixtures::with_first_tokens`).
    fn headline(runs: u32, first_token: fn(&Adapter) -> f64) -> SessionReport {
        let path = crate::launcher::session_job::repo_root().join("tests/data/sessions/back-to-back-a/session.json");
        let mut session = crate::session::load_session(&path).unwrap().report;
        session.workers.retain(|w| w.cell == CELL && !w.run_id.ends_with("-aa"));
        let session = crate::session::fixtures::repeated(&session, runs);
        crate::session::fixtures::with_first_tokens(session, |w| first_token(&w.adapter))
    }

    /// A profile file that holds no design: the looks use the pairs' own error whatever this
    /// host's profile file holds.
    fn no_profile(dir: &std::path::Path) -> Option<PathBuf> {
        let path = dir.join("profile.json");
        let file = NoiseProfileFile {
            schema_version: decode_baseline_wire::profile::NOISE_PROFILE_SCHEMA_VERSION,
            written_utc: "now".into(),
            designs: vec![],
        };
        std::fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
        Some(path)
    }

    /// Looks at `CELL` after each group (one more run per adapter each time) until the state
    /// skips it or `groups` ran; returns the state.
    fn look(mut state: Sequential, groups: u32, first_token: fn(&Adapter) -> f64) -> Sequential {
        for runs in 1..=groups {
            if state.skips(CELL) {
                break;
            }
            state.after_group(CELL, &headline(runs, first_token), SECOND, SECOND * runs);
        }
        state
    }

    fn same(_: &Adapter) -> f64 {
        1.0
    }

    /// The controlled loop's first token half as late again as stock's.
    fn controlled_later(adapter: &Adapter) -> f64 {
        if *adapter == Adapter::Controlled {
            1.5
        } else {
            1.0
        }
    }

    /// A cell whose row crosses the boundary stops there: the record says decided, at a look
    /// past the first (one run has no run-to-run error) and before the last, with the pairs of
    /// its looks, the Pocock level of the planned looks and the row's verdict under it; its
    /// later groups are skipped, another cell's are not.
    #[test]
    fn a_cell_stops_at_the_first_look_that_decides_every_row() {
        let tmp = tempfile::tempdir().unwrap();
        let (planned, state) =
            Sequential::new(Budget::Pairs(200), 20, 1, 1, no_profile(tmp.path()), Quantity::PerToken).unwrap();
        assert_eq!(planned, 10);
        let level = state.boundary.unwrap().nominal_alpha;
        let state = look(state, 10, same);
        let record = state.record();
        let [cell] = &record.cells[..] else { panic!("one cell: {record:?}") };
        assert_eq!(cell.end, SequentialEnd::Decided, "{cell:?}");
        assert!((2..10).contains(&cell.looks_done), "{cell:?}");
        assert_eq!((cell.looks_planned, cell.pairs, cell.nominal_level), (10, cell.looks_done * 20, Some(level)));
        let [row] = &cell.rows[..] else { panic!("one row: {cell:?}") };
        assert_eq!((row.adapter.clone(), row.verdict), (Adapter::Controlled, SequentialVerdict::Faster));
        assert!(row.p_value.unwrap() < level && row.ratio.unwrap() < 0.5, "{row:?}");
        assert!(state.skips(CELL) && !state.skips("another.cell"));
        assert_eq!((record.rows, record.quantity, record.budget.as_str()), (1, Quantity::PerToken, "200 pairs"));
    }

    /// The looks test the rows of the quantity decided on: on first tokens, where the controlled
    /// loop is the later, the same sessions give "slower" where per token they gave "faster".
    #[test]
    fn the_looks_test_the_quantity_decided_on() {
        let tmp = tempfile::tempdir().unwrap();
        let verdict = |quantity, first_token| {
            let (_, state) = Sequential::new(Budget::Pairs(200), 20, 1, 1, no_profile(tmp.path()), quantity).unwrap();
            let record = look(state, 10, first_token).record();
            (record.quantity, record.cells[0].end, record.cells[0].rows[0].verdict)
        };
        let decided = SequentialEnd::Decided;
        assert_eq!(
            verdict(Quantity::FirstToken, controlled_later),
            (Quantity::FirstToken, decided, SequentialVerdict::Slower)
        );
        assert_eq!(
            verdict(Quantity::PerToken, controlled_later),
            (Quantity::PerToken, decided, SequentialVerdict::Faster)
        );
    }

    /// Equal first tokens on both sides (a few tenths of a percent apart by run and request):
    /// the looks stop when the equivalence test decides, "no difference", at a look past the
    /// first.
    #[test]
    fn equal_first_tokens_stop_at_no_difference() {
        let tmp = tempfile::tempdir().unwrap();
        let (_, state) =
            Sequential::new(Budget::Pairs(200), 20, 1, 1, no_profile(tmp.path()), Quantity::FirstToken).unwrap();
        let level = state.boundary.unwrap().nominal_alpha;
        let cell = &look(state, 10, same).record().cells[0];
        assert_eq!(cell.end, SequentialEnd::Decided, "{cell:?}");
        assert!((2..10).contains(&cell.looks_done), "{cell:?}");
        let [row] = &cell.rows[..] else { panic!("one row: {cell:?}") };
        assert_eq!(row.verdict, SequentialVerdict::NoDifference, "{row:?}");
        assert!(row.equivalence_p_value.unwrap() < level, "{row:?}");
    }

    /// A row that never crosses the boundary (each look sees one run a side, which has no
    /// run-to-run error) runs every planned look and ends at the last one, undecided.
    #[test]
    fn an_undecided_cell_ends_at_its_last_look() {
        let tmp = tempfile::tempdir().unwrap();
        let (planned, mut state) =
            Sequential::new(Budget::Pairs(60), 20, 1, 1, no_profile(tmp.path()), Quantity::PerToken).unwrap();
        assert_eq!(planned, 3);
        for looks in 1..=3 {
            assert!(!state.skips(CELL), "look {looks}");
            state.after_group(CELL, &headline(1, same), SECOND, SECOND * looks);
        }
        let cell = &state.record().cells[0];
        assert_eq!((cell.end, cell.looks_done, cell.pairs), (SequentialEnd::LastLook, 3, 60), "{cell:?}");
        assert_eq!(cell.rows[0].verdict, SequentialVerdict::Undecided, "{cell:?}");
        assert!(state.skips(CELL));
    }

    /// A time budget fixes `K` from the first group's wall time (`⌊budget / (wall · cells)⌋`),
    /// splits the level over every row of every cell, and once the session's time is spent stops
    /// every cell: the one looked at last ends by the budget, and no cell starts another group.
    #[test]
    fn a_time_budget_plans_from_the_first_group_and_stops_every_cell_when_spent() {
        let tmp = tempfile::tempdir().unwrap();
        let budget = Budget::Time(Duration::from_secs(60));
        let (_, mut state) = Sequential::new(budget, 20, 2, 1, no_profile(tmp.path()), Quantity::FirstToken).unwrap();
        state.after_group(CELL, &headline(1, same), SECOND * 5, SECOND * 5);
        // 60 s / (5 s × 2 cells) = 6 looks, at the Pocock level of α / 2 rows.
        let boundary = state.boundary.unwrap();
        assert_eq!((state.looks, boundary.looks), (Some(6), 6));
        assert_eq!(boundary.alpha, DecisionConfig::default().alpha / 2.0);
        assert!(!state.skips(CELL) && !state.skips("another.cell"));
        state.after_group(CELL, &headline(2, same), SECOND * 5, SECOND * 60);
        assert!(state.skips(CELL) && state.skips("another.cell"), "the budget is spent for every cell");
        let cell = &state.record().cells[0];
        assert_eq!((cell.end, cell.looks_done, cell.looks_planned), (SequentialEnd::BudgetSpent, 2, 6), "{cell:?}");
    }

    /// A cell whose looks were going on when the session stopped is recorded as ended by the
    /// budget.
    #[test]
    fn a_cell_still_looking_at_the_end_is_recorded_as_budget_spent() {
        let tmp = tempfile::tempdir().unwrap();
        let (_, mut state) =
            Sequential::new(Budget::Pairs(200), 20, 1, 1, no_profile(tmp.path()), Quantity::PerToken).unwrap();
        state.after_group(CELL, &headline(1, same), SECOND, SECOND);
        assert!(!state.skips(CELL), "one run decides nothing");
        let cell = &state.record().cells[0];
        assert_eq!((cell.end, cell.looks_done, cell.pairs), (SequentialEnd::BudgetSpent, 1, 20));
    }

    #[test]
    fn budgets_parse_as_pairs_or_time() {
        assert_eq!(Budget::parse("200"), Ok(Budget::Pairs(200)));
        assert_eq!(Budget::parse("5m"), Ok(Budget::Time(Duration::from_secs(300))));
        assert_eq!(Budget::parse("90s"), Ok(Budget::Time(Duration::from_secs(90))));
        for bad in ["0", "x", "-3", "0s"] {
            assert!(Budget::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_pairs_budget_plans_its_looks_at_once() {
        let (planned, s) = Sequential::new(Budget::Pairs(100), 20, 1, 1, None, Quantity::PerToken).unwrap();
        assert_eq!(planned, 5);
        assert_eq!(s.boundary.unwrap().looks, 5);
        let (planned, s) =
            Sequential::new(Budget::Time(Duration::from_secs(60)), 20, 1, 1, None, Quantity::PerToken).unwrap();
        assert_eq!(planned, MAX_LOOKS as u32);
        assert!(s.boundary.is_none());
    }
}
