//! The record of a verdict: the test one row of a comparison was decided by, its settings and
//! the rule that produced its estimate. Types and their defaults only; the test itself (the
//! formulas, Holm across rows, the equivalence test against the margin) lives in
//! `crates/launcher/src/stats/decision.rs`, which documents it.

use serde::{Deserialize, Serialize};

use crate::{profile::NoiseProfile, stats::Verdict};

/// The default trimming fraction, 20 % from each end (Wilcox's recommendation for Yuen's test).
pub const DEFAULT_TRIM: f64 = 0.2;
/// Default false-alarm rate of a comparison, two-sided.
pub const DEFAULT_TEST_ALPHA: f64 = 0.05;
/// Default equivalence margin: ±3 %.
pub const DEFAULT_MARGIN: f64 = 0.03;
/// Power at which the smallest detectable difference is stated.
pub const DEFAULT_POWER: f64 = 0.8;

/// The settings of a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionConfig {
    /// False-alarm rate of the whole comparison, two-sided (Holm across its rows).
    pub alpha: f64,
    /// Equivalence margin, a fraction: "no difference" means within `±margin` (in log terms,
    /// `|ln ratio| < ln(1 + margin)`).
    pub margin: f64,
    /// Practical floor, a fraction: significant differences smaller than it do not count.
    pub floor: Option<f64>,
    /// Power at which the smallest detectable difference is stated.
    pub power: f64,
    /// Trimming fraction of the trimmed means.
    pub trim: f64,
}

impl Default for DecisionConfig {
    fn default() -> Self {
        DecisionConfig {
            alpha: DEFAULT_TEST_ALPHA,
            margin: DEFAULT_MARGIN,
            floor: None,
            power: DEFAULT_POWER,
            trim: DEFAULT_TRIM,
        }
    }
}

/// Whose error a verdict used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorSource {
    /// The row's own error, from its data alone.
    Own,
    /// A host noise profile's, larger than the row's own.
    Profile,
}

/// A t-interval of a ratio.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RatioInterval {
    pub lower: f64,
    pub upper: f64,
    /// `1 − α`.
    pub confidence: f64,
}

impl RatioInterval {
    /// Whether `x` lies in the closed interval.
    pub fn contains(&self, x: f64) -> bool {
        self.lower <= x && x <= self.upper
    }
}

/// One row's test and verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// The verdict.
    pub verdict: Verdict,
    /// How the estimate was made.
    pub rule: Rule,
    /// Whose error was used.
    pub error: ErrorSource,
    /// `exp(log_estimate)`: below 1, the numerator is faster.
    pub ratio: f64,
    /// The `1 − α` t-interval of the ratio.
    pub ci: RatioInterval,
    /// The log ratio.
    pub log_estimate: f64,
    /// The error used.
    pub se: f64,
    /// The row's own error.
    pub own_se: f64,
    /// Degrees of freedom of the t reference.
    pub df: f64,
    /// Two-sided p-value of "no difference at all".
    pub p_value: f64,
    /// The level Holm held this row to (`α / (m − i + 1)`).
    pub holm_level: f64,
    /// Significant after Holm.
    pub significant: bool,
    /// TOST p-value against the margin.
    pub equivalence_p_value: f64,
    /// Shown to lie within the margin.
    pub equivalent: bool,
    /// Significant, but smaller than the practical floor.
    pub below_floor: bool,
    /// The smallest difference detectable at the stated power, a fraction.
    pub mde: f64,
    /// The settings.
    pub config: DecisionConfig,
    /// Independent units behind the estimate (blocks, runs, or requests).
    pub units: usize,
    /// Request pairs used (0 without pairs).
    pub pairs: usize,
    /// Lag-1 autocorrelation of the blocks that inflated the error, if any.
    pub serial_correlation: Option<f64>,
    /// Whether the error holds run-to-run effects (several runs, or a noise profile).
    pub run_effects_measured: bool,
    /// The noise profile, if one was given.
    pub profile: Option<NoiseProfile>,
    /// The own error is more than `OUTSIDE_PROFILE` times the profile's: the session is unlike
    /// the ones profiled.
    pub outside_profile: bool,
}

/// Which rule produced an estimate (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// One interleaved run: trimmed mean of the A B / B A blocks, Yuen's error.
    PairedBlocks,
    /// Several interleaved runs: mean of the runs' trimmed means, error from the run means.
    PairedRunMeans,
    /// Non-interleaved session: Yuen's two-sample test on per-request log medians.
    RequestMedians,
    /// Two sessions: the difference of their estimates.
    SessionDifference,
    /// Two sessions, raw times: Yuen's two-sample test on the adapter's per-request log medians
    /// in B against A.
    RawRequestMedians,
    /// Two or more runs a side without pairs (a non-interleaved session, or raw times of two
    /// sessions): Welch's test on the runs' means of per-request log medians.
    RunMeans,
}

impl Rule {
    /// The rule in a few words, for the table.
    pub fn describe(self) -> &'static str {
        match self {
            Rule::PairedBlocks => "paired t on A B / B A blocks (20 % trimmed mean, Yuen's error)",
            Rule::PairedRunMeans => "paired t on run means (each run's 20 % trimmed mean of its blocks)",
            Rule::RequestMedians => "Yuen–Welch t on per-request log medians (non-interleaved: no pairs)",
            Rule::SessionDifference => "difference of the two sessions' estimates, Welch t",
            Rule::RawRequestMedians => "Yuen–Welch t on the adapter's per-request log medians, B against A",
            Rule::RunMeans => "Welch t on run means (each run's 20 % trimmed mean of its per-request log medians)",
        }
    }
}
