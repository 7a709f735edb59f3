//! The statistical records of `session.json`'s analysis and of `compare`'s output: summaries
//! with bootstrap intervals, ratios of medians, outlier counts, drift. Types and their defaults
//! only; the estimators that produce them live in `crates/launcher/src/stats`, whose modules
//! document the formulas.

use serde::{Deserialize, Serialize};

/// Number of bootstrap resamples unless configured otherwise.
pub const DEFAULT_RESAMPLES: usize = 2000;
/// Confidence level unless configured otherwise.
pub const DEFAULT_CONFIDENCE: f64 = 0.95;
/// The pinned seed: the ASCII bytes of "decode-b" read as a big-endian u64.
pub const DEFAULT_SEED: u64 = 0x6465_636f_6465_2d62;

/// How a bootstrap is run; recorded next to every interval it produced.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BootstrapConfig {
    /// Number of resamples `B` (at least 100).
    pub resamples: usize,
    /// Confidence level `1 - α`, strictly between 0 and 1.
    pub confidence: f64,
    /// Seed of the ChaCha8 stream.
    pub seed: u64,
}

impl Default for BootstrapConfig {
    fn default() -> Self {
        BootstrapConfig { resamples: DEFAULT_RESAMPLES, confidence: DEFAULT_CONFIDENCE, seed: DEFAULT_SEED }
    }
}

/// What the bootstrap draws.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Resampling {
    /// Whole requests (cluster bootstrap); the default, see `crates/launcher/src/stats/bootstrap.rs`.
    #[default]
    ByRequest,
    /// Individual observations.
    ByPoint,
    /// Pairs of adjacent requests of one worker run each (interleaved order), drawn as points:
    /// each pair is one observation of the ratio.
    ByPair,
    /// Whole worker runs, then pairs within each drawn run (a two-level bootstrap): the interval
    /// carries run-to-run variation as well as pair-to-pair.
    ByRunThenPair,
}

/// A bootstrap confidence interval and how it was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Interval {
    /// Lower bound.
    pub lower: f64,
    /// Upper bound.
    pub upper: f64,
    /// Confidence level, resamples and seed used.
    pub bootstrap: BootstrapConfig,
    /// What was resampled.
    pub resampling: Resampling,
}

impl Interval {
    /// Half the width of the interval.
    pub fn half_width(&self) -> f64 {
        (self.upper - self.lower) / 2.0
    }

    /// Whether `x` lies in the closed interval.
    pub fn contains(&self, x: f64) -> bool {
        self.lower <= x && x <= self.upper
    }
}

/// `median(numerator) / median(denominator)` with its bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RatioEstimate {
    /// The ratio of the two medians.
    pub ratio: f64,
    /// Bootstrap confidence interval of the ratio.
    pub ci: Interval,
}

/// Descriptive statistics of one sample, in the units of the data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// Number of observations.
    pub n: usize,
    /// Number of requests the observations came in; absent for an ungrouped sample.
    pub requests: Option<usize>,
    /// Median (type-7 `Q(0.5)`).
    pub median: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n - 1).
    pub std_dev: f64,
    /// Median absolute deviation, unscaled (no 1.4826 factor).
    pub mad: f64,
    /// Coefficient of variation `std_dev / mean`; absent when the mean is zero.
    pub cv: Option<f64>,
    /// Coefficient of variation of the per-request medians; absent for an ungrouped sample, one
    /// request, or a zero mean.
    pub request_median_cv: Option<f64>,
    /// 90th percentile (type 7).
    pub p90: f64,
    /// 99th percentile (type 7).
    pub p99: f64,
    /// Smallest observation.
    pub min: f64,
    /// Largest observation.
    pub max: f64,
    /// Bootstrap confidence interval of the median.
    pub median_ci: Interval,
    /// Tukey outlier counts.
    pub outliers: TukeyOutliers,
    /// Reasons to distrust the figures; empty when none.
    pub warnings: Vec<StabilityWarning>,
}

/// What made a figure unstable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// Too few independent units (requests, or observations when ungrouped).
    TooFewUnits,
    /// Coefficient of variation above the limit.
    HighVariation,
    /// Median interval half-width, relative to the median, above the limit.
    WideMedianInterval,
}

/// One stability warning: what, the measured value, the limit it crossed, and a sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StabilityWarning {
    /// Which check fired.
    pub kind: WarningKind,
    /// The measured value (a count, or a fraction).
    pub value: f64,
    /// The limit it crossed.
    pub limit: f64,
    /// A human sentence for the terminal.
    pub message: String,
}

/// Default significance level.
pub const DEFAULT_ALPHA: f64 = 0.05;
/// Default relative change that matters.
pub const DEFAULT_DRIFT_THRESHOLD: f64 = 0.02;

/// When drift is flagged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DriftConfig {
    /// Significance level of the Mann-Whitney test, in (0, 1).
    pub alpha: f64,
    /// Smallest |relative change| that counts, ≥ 0.
    pub threshold: f64,
}

impl Default for DriftConfig {
    fn default() -> Self {
        DriftConfig { alpha: DEFAULT_ALPHA, threshold: DEFAULT_DRIFT_THRESHOLD }
    }
}

/// Early against late measured requests.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Drift {
    /// Requests in each half.
    pub half: usize,
    /// Median of the early half.
    pub early_median: f64,
    /// Median of the late half.
    pub late_median: f64,
    /// `late_median / early_median - 1`: positive means the late requests were slower.
    pub relative_change: f64,
    /// Mann-Whitney U of the early half.
    pub mann_whitney_u: f64,
    /// Two-sided p-value (normal approximation).
    pub p_value: f64,
    /// The settings used.
    pub config: DriftConfig,
    /// `p_value < alpha && |relative_change| > threshold`.
    pub drifting: bool,
}

impl Drift {
    /// A sentence for the terminal.
    pub fn describe(&self) -> String {
        let direction = if self.relative_change > 0.0 { "slower" } else { "faster" };
        format!(
            "late requests were {:.1} % {direction} than early ones (p = {:.3}){}",
            100.0 * self.relative_change.abs(),
            self.p_value,
            if self.drifting { ": the machine drifted during measurement" } else { "" }
        )
    }
}

/// Outlier counts by Tukey's fences.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TukeyOutliers {
    /// First quartile (type 7).
    pub q1: f64,
    /// Third quartile (type 7).
    pub q3: f64,
    /// Below `q1 - 3 IQR`.
    pub low_severe: usize,
    /// In `[q1 - 3 IQR, q1 - 1.5 IQR)`.
    pub low_mild: usize,
    /// In `(q3 + 1.5 IQR, q3 + 3 IQR]`.
    pub high_mild: usize,
    /// Above `q3 + 3 IQR`.
    pub high_severe: usize,
}

impl TukeyOutliers {
    /// All outliers, mild and severe, both sides.
    pub fn total(&self) -> usize {
        self.low_severe + self.low_mild + self.high_mild + self.high_severe
    }
}

/// The outcome of a comparison, for the numerator against the denominator: how a row earns one
/// is the test of the launcher's `stats::decision` (faster or slower when the difference is
/// significant, no difference only by an equivalence test against a stated margin,
/// inconclusive otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The numerator takes less: significant, and not below the practical floor.
    Faster,
    /// The numerator takes more: significant, and not below the practical floor.
    Slower,
    /// Shown to lie within the equivalence margin (and not a difference that counts).
    NoDifference,
    /// Neither a difference nor its absence is shown.
    Inconclusive,
}

impl Verdict {
    /// The verdict in words, as tables and pages print it (`no difference`).
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoDifference => "no difference",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}
