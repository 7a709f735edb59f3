//! The record of a `run --until-decided` session: per cell, the looks planned and
//! taken, the level each look was held to, whose error it used, how the cell ended and each
//! row's last look. Written into `session.json` (`sequential`), so that a reader (`compare`, the
//! report page, a benchmark) takes the decision from the record instead of from the launcher's
//! standard error.

use serde::{Deserialize, Serialize};

use crate::Adapter;

/// The sequential test of every cell of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SequentialRecord {
    /// `--budget` (`200 pairs`, or a time such as `5m`), or its default.
    pub budget: String,
    /// The false-alarm rate of the whole session, over every row of every cell.
    pub alpha: f64,
    /// The rows tested (every adapter but the reference, in every cell): each row's sequential
    /// test runs at `alpha / rows` (Bonferroni across the rows), so the session keeps `alpha`.
    pub rows: u32,
    /// Per cell, in the order the cells first ran.
    pub cells: Vec<SequentialCell>,
    /// The rows the looks decided (`run --decide-on`): each cell's rows of this quantity; the
    /// other quantity's rows are shown and left inconclusive. Absent in sessions written before
    /// it existed, which looked at the per-token rows.
    #[serde(default)]
    pub quantity: crate::row::Quantity,
}

/// One cell's sequential test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SequentialCell {
    /// `<case>.<prompt>.<mode>`.
    pub cell: String,
    /// `K`, the looks planned (fixed by the budget before the data could move it).
    pub looks_planned: u32,
    /// The looks taken.
    pub looks_done: u32,
    /// Request pairs per row after the last look taken.
    pub pairs: u32,
    /// The Pocock boundary's nominal level each look held every row to; `null` when no look
    /// was tested (a time budget spent before the first group ended).
    pub nominal_level: Option<f64>,
    /// The noise profile's standard deviation, sized to the runs of the last look, when the
    /// profile held the cell's design (that look then used the larger of its error and the
    /// pairs' own; the largest of the rows' when their pairs' profiles differ); `null`: the
    /// pairs' own error.
    pub profile_sd: Option<f64>,
    /// How the cell ended.
    pub end: SequentialEnd,
    /// Each row at the last look taken.
    pub rows: Vec<SequentialRow>,
}

/// Why a cell's looks stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SequentialEnd {
    /// Every row crossed the boundary.
    Decided,
    /// The planned last look came without a decision.
    LastLook,
    /// The time budget was spent first.
    BudgetSpent,
}

/// One row (an adapter against the reference) at the last look.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SequentialRow {
    /// The adapter measured against the session's reference.
    pub adapter: Adapter,
    /// What the look said of it.
    pub verdict: SequentialVerdict,
    /// The estimate, adapter over reference; `null` when the row could not be tested.
    pub ratio: Option<f64>,
    /// Two-sided p-value of "no difference at all"; `null` when not tested.
    pub p_value: Option<f64>,
    /// TOST p-value against the equivalence margin; `null` when not tested.
    pub equivalence_p_value: Option<f64>,
}

/// A row's sequential verdict: decided one way, or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SequentialVerdict {
    Faster,
    Slower,
    NoDifference,
    /// Crossed neither boundary (or could not be tested: too few pairs).
    Undecided,
}

/// A test's verdict as a look records it: `inconclusive` is `undecided`.
impl From<crate::stats::Verdict> for SequentialVerdict {
    fn from(verdict: crate::stats::Verdict) -> Self {
        use crate::stats::Verdict;
        match verdict {
            Verdict::Faster => Self::Faster,
            Verdict::Slower => Self::Slower,
            Verdict::NoDifference => Self::NoDifference,
            Verdict::Inconclusive => Self::Undecided,
        }
    }
}

/// A look's verdict as every view shows a test's: `undecided` is `inconclusive`.
impl From<SequentialVerdict> for crate::stats::Verdict {
    fn from(verdict: SequentialVerdict) -> Self {
        match verdict {
            SequentialVerdict::Faster => Self::Faster,
            SequentialVerdict::Slower => Self::Slower,
            SequentialVerdict::NoDifference => Self::NoDifference,
            SequentialVerdict::Undecided => Self::Inconclusive,
        }
    }
}

impl SequentialVerdict {
    /// The words the table uses.
    pub fn words(self) -> &'static str {
        match self {
            Self::Faster => "faster",
            Self::Slower => "slower",
            Self::NoDifference => "no difference",
            Self::Undecided => "undecided",
        }
    }
}
