//! One tested row: a ratio of per-token times or of times to the first token, what it rests on, its test and what is read
//! beside it. `compare` prints rows; a session stores its own rows once, with the settings they
//! were tested with ([`SessionDecisions`]), so that every view of the session reads the same
//! decision instead of computing it again.

use serde::{Deserialize, Serialize};

pub use crate::quantity::Quantity;
use crate::{
    decision::{Decision, DecisionConfig},
    stats::{RatioEstimate, Verdict},
    Adapter, Mode,
};

/// What a row's ratio rests on, i.e. what it holds constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// One session, non-interleaved order: ratio of the two adapters' pooled medians. The machine is
    /// held constant only as far as it stayed the same between the two workers' runs.
    RatioOfMedians,
    /// One session, interleaved order: the median ratio of adjacent requests. The machine is
    /// held constant request by request.
    Paired,
    /// Two sessions: the adapter's ratio to the reference adapter in B over the same in A. The
    /// machine is held constant within each session; what moves is the adapter against the
    /// reference.
    AgainstReference,
    /// Two sessions: the adapter's own times, B over A. Holds nothing constant: the machine's
    /// drift between the sessions is part of it, so its verdict is `inconclusive` unless `--raw`.
    Raw,
}

/// One side of a row: its label and per-token median.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Side {
    /// `controlled`, `stock`, `A` or `B`.
    pub label: String,
    /// Median over the measured requests of the row's quantity (per-token time, or time to the
    /// first token), ns; absent without valid data.
    pub median_ns: Option<f64>,
    /// Measured requests behind it.
    pub requests: usize,
}

/// How a row ended.
// A comparison has a handful of rows: boxing the compared variant would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "result", deny_unknown_fields)]
pub enum RowResult {
    Compared {
        /// The test and its verdict.
        decision: Decision,
        /// For display beside it: the median ratio (of pooled medians, of pair ratios, or of
        /// the two sessions' such ratios) with its bootstrap interval, as `session.json`'s
        /// analysis records it; absent when it could not be bootstrapped.
        median_ratio: Option<RatioEstimate>,
        /// The A/A results recorded for this row's adapters in its cell.
        aa: Vec<AaResult>,
        /// Reasons to distrust the verdict (an A/A spread beyond the interval, a session outside
        /// its noise profile).
        warnings: Vec<String>,
    },
    /// No ratio could be estimated (e.g. a reference-pair cell has one request per adapter).
    NotCompared { reason: String },
}

/// One line of the comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Row {
    pub cell: String,
    pub mode: Mode,
    /// What the ratio is a ratio of; `per_token` in rows written before there were two.
    #[serde(default)]
    pub quantity: Quantity,
    /// The adapter compared: across sessions, the one whose times or ratio are compared; within
    /// one session, the one measured against the session's reference.
    pub adapter: Option<Adapter>,
    /// What the ratio rests on.
    pub basis: Basis,
    /// The adapter it is measured against within each session: the reference of
    /// `against_reference` rows and of every row within one session; absent for raw rows.
    pub against: Option<Adapter>,
    /// Whether the row's verdict counts toward the overall verdict: `false` for raw rows across
    /// sessions without `--raw`, which are shown for context only.
    pub judged: bool,
    pub numerator: Side,
    pub denominator: Side,
    pub outcome: RowResult,
}

impl Row {
    /// The cell, and after it the quantity's tag when it is not per token: what every view
    /// names the row by (`tiny.L512.headline TTFT`).
    pub fn subject(&self) -> String {
        match self.quantity.tag() {
            "" => self.cell.clone(),
            tag => format!("{} {tag}", self.cell),
        }
    }

    /// The row's test, when it was compared.
    pub fn decision(&self) -> Option<&Decision> {
        match &self.outcome {
            RowResult::Compared { decision, .. } => Some(decision),
            RowResult::NotCompared { .. } => None,
        }
    }

    pub fn verdict(&self) -> Option<Verdict> {
        self.decision().map(|d| d.verdict)
    }
}

/// One A/A result beside a row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AaResult {
    /// Whose A/A runs, e.g. `controlled`, `A stock`, `controlled-b against controlled`.
    pub label: String,
    /// The launcher's A/A ratio (the A/A run's over the others') with its bootstrap interval;
    /// absent when the session recorded none for this label (the test below still runs).
    pub recorded: Option<RatioEstimate>,
    /// Interleaved: the A/A group's paired estimate against the main groups', tested.
    pub test: Option<Decision>,
    /// `|ln r_AA|` is beyond the half-width of the row's interval.
    pub dwarfs_interval: bool,
}

impl AaResult {
    /// The A/A ratio: the test's when there is one, else the recorded one.
    pub fn ratio(&self) -> Option<f64> {
        self.test.as_ref().map(|t| t.ratio).or(self.recorded.map(|r| r.ratio))
    }
}

/// The decisions of one session, computed once when it finished and stored in `session.json`:
/// every adapter against the session's reference in every cell, Holm across the judged rows,
/// and for a cell that ran under `run --until-decided` the sequential decision in place of a
/// fixed-sample one. The run table, the page, the answer block and `compare` of the session read
/// these rows; they are computed again only when a reader asks for other settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionDecisions {
    /// The settings every row was tested with.
    pub settings: DecisionConfig,
    /// The noise profile file the rows were judged with (`run --noise-profile`, or the default
    /// profile file found for the session's design); `null` when none was used.
    pub noise_profile: Option<String>,
    pub rows: Vec<Row>,
}
