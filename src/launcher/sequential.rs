//! `run --until-decided [--budget 5m|N]`: each cell's interleaved groups are looks of a
//! group-sequential test. After every group of a cell the launcher tests that cell's rows with
//! the paired test `compare` uses (`src/stats`) and stops the cell at the first look where every
//! row is decided at the Pocock boundary's nominal level (`src/stats/pocock.rs`: "faster" or
//! "slower" when its p-value is below it, "no difference" when its equivalence p-value is), or
//! at its planned last look.
//!
//! The planned number of looks `K` is fixed before the data can move it: with a budget of `N`
//! pairs, `K = ⌈N / pairs per group⌉`; with a time budget, `K` follows from the first group's
//! wall time (`⌊budget / (first group's wall · cells)⌋`, at least 1, at most 50) and the session
//! also stops starting groups once the budget is spent. Each look judges with the error the
//! table uses: the larger of the host noise profile's and the pairs' own, when `--noise-profile`
//! (or this host's profile file) holds the cell's design, else the pairs' own. Limits (stated in
//! the output): each cell is its own sequential test (no Holm across cells); the table below the
//! lines is the ordinary fixed-sample test of the pairs that ran, whose level does not account
//! for the looks.

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use decode_baseline::stats::{pocock, DecisionConfig, PocockBoundary, MAX_LOOKS};
use decode_baseline_wire::session::SessionReport;

use crate::{
    calibrate::profiles,
    compare::{self, RowResult, Settings},
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
}

impl Default for Budget {
    fn default() -> Self {
        Self::Time(Duration::from_secs(300))
    }
}

/// The state of a sequential session.
#[derive(Debug)]
pub struct Sequential {
    budget: Budget,
    /// Pairs one group adds to a cell (the measured requests of one worker).
    pairs_per_look: u32,
    /// `K`: known at once for a pairs budget, after the first group for a time budget.
    looks: Option<usize>,
    boundary: Option<PocockBoundary>,
    alpha: f64,
    cells: usize,
    /// `--noise-profile`, resolved as the table resolves it (`calibrate::profiles::resolve`).
    noise_profile: Option<PathBuf>,
    done_looks: BTreeMap<String, usize>,
    /// Cells stopped, with the line that says why.
    stopped: BTreeMap<String, String>,
    budget_spent: bool,
}

impl Sequential {
    /// The groups to plan for (the session's repetitions) and the state.
    pub fn new(
        budget: Budget,
        pairs_per_look: u32,
        cells: usize,
        noise_profile: Option<PathBuf>,
    ) -> Result<(u32, Self), String> {
        let alpha = DecisionConfig::default().alpha;
        let looks = match budget {
            Budget::Pairs(n) => Some((n.div_ceil(pairs_per_look.max(1)) as usize).clamp(1, MAX_LOOKS)),
            Budget::Time(_) => None,
        };
        let boundary = looks.map(|k| pocock(k, alpha)).transpose().map_err(|e| e.to_string())?;
        let planned = looks.unwrap_or(MAX_LOOKS) as u32;
        let state = Self {
            budget,
            pairs_per_look,
            looks,
            boundary,
            alpha,
            cells,
            noise_profile,
            done_looks: BTreeMap::new(),
            stopped: BTreeMap::new(),
            budget_spent: false,
        };
        Ok((planned, state))
    }

    /// Whether a group of `cell` is not to be started: the cell is decided, at its last look,
    /// or the time budget is spent.
    pub fn skips(&self, cell: &str) -> bool {
        self.budget_spent || self.stopped.contains_key(cell)
    }

    /// After a group of `cell` ran (`wall` its wall time, `elapsed` the session's so far):
    /// fixes `K` at the first group of a time budget, tests the cell's rows in `report` (the
    /// workers so far) and stops the cell when decided or at its last look.
    pub fn after_group(&mut self, cell: &str, report: &SessionReport, wall: Duration, elapsed: Duration) {
        let look = {
            let n = self.done_looks.entry(cell.to_owned()).or_default();
            *n += 1;
            *n
        };
        if let (None, Budget::Time(budget)) = (self.looks, self.budget) {
            let per_look = wall.as_secs_f64().max(1e-3) * self.cells as f64;
            let k = ((budget.as_secs_f64() / per_look).floor() as usize).clamp(1, MAX_LOOKS);
            self.looks = Some(k);
            self.boundary = pocock(k, self.alpha).ok();
        }
        let (Some(k), Some(boundary)) = (self.looks, self.boundary) else { return };
        let level = boundary.nominal_alpha;
        let cells: Vec<_> = compare::cells(report).into_iter().filter(|c| c.cell == cell).collect();
        let designs: Vec<(String, String)> = cells.iter().map(|c| (c.cell.clone(), c.case_id.clone())).collect();
        // A profile file that cannot be read is the table's warning to give; the look uses the
        // pairs' own error then, as the table does.
        let profile =
            profiles::resolve(self.noise_profile.as_deref(), &[report], &designs).ok().and_then(|(profile, _)| profile);
        let error = profile.as_ref().map_or("own error".to_owned(), |p| format!("noise profile sd {:.4}", p.sd));
        let settings = Settings { config: DecisionConfig::default(), profile: profile.as_ref() };
        let rows = compare::within_rows(&cells, &settings);
        let verdicts: Vec<Option<String>> = rows
            .iter()
            .map(|row| match &row.outcome {
                RowResult::Compared { decision, .. } if decision.p_value < level => Some(format!(
                    "{} {} (ratio {:.3}, p = {:.4})",
                    row.adapter.as_ref().map_or("?", |a| a.as_str()),
                    if decision.log_estimate > 0.0 { "slower" } else { "faster" },
                    decision.ratio,
                    decision.p_value
                )),
                RowResult::Compared { decision, .. } if decision.equivalence_p_value < level => Some(format!(
                    "{} no difference (ratio {:.3}, within ±{:.1} %)",
                    row.adapter.as_ref().map_or("?", |a| a.as_str()),
                    decision.ratio,
                    100.0 * decision.config.margin
                )),
                _ => None,
            })
            .collect();
        let pairs = look as u32 * self.pairs_per_look;
        let decided = !verdicts.is_empty() && verdicts.iter().all(Option::is_some);
        let out_of_time = matches!(self.budget, Budget::Time(budget) if elapsed >= budget);
        let line = if decided {
            let said: Vec<String> = verdicts.into_iter().flatten().collect();
            Some(format!(
                "until-decided: {cell}: decided after look {look} of {k} ({pairs} pairs; Pocock level {level:.4} per look, \
                 overall {}, {error}): {}",
                self.alpha,
                said.join("; ")
            ))
        } else if look >= k || out_of_time {
            Some(format!(
                "until-decided: {cell}: not decided after look {look} of {k} ({pairs} pairs; {}, {error}): no row \
                 crossed the Pocock level {level:.4}",
                if out_of_time { "time budget spent" } else { "the planned last look" }
            ))
        } else {
            None
        };
        if let Some(line) = line {
            self.stopped.insert(cell.to_owned(), line);
        }
        self.budget_spent |= out_of_time;
    }

    /// One line per cell that ran, in cell order, and the limits.
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.stopped.values().cloned().collect();
        for (cell, looks) in &self.done_looks {
            if !self.stopped.contains_key(cell) {
                lines.push(format!("until-decided: {cell}: stopped after {looks} look(s), undecided (budget spent)"));
            }
        }
        lines.push(
            "until-decided: each cell is its own sequential test (no Holm across cells); the table's verdicts are the \
             fixed-sample test of the pairs that ran"
                .to_owned(),
        );
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let (planned, s) = Sequential::new(Budget::Pairs(100), 20, 1, None).unwrap();
        assert_eq!(planned, 5);
        assert_eq!(s.boundary.unwrap().looks, 5);
        let (planned, s) = Sequential::new(Budget::Time(Duration::from_secs(60)), 20, 1, None).unwrap();
        assert_eq!(planned, MAX_LOOKS as u32);
        assert!(s.boundary.is_none());
    }
}
