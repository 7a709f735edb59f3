//! The verdict of a comparison: faster, slower, or no difference, from a ratio interval held
//! against a noise threshold (in the manner of criterion's `compare_to_threshold`).
//!
//! With the interval `[lo, hi]` of a ratio of times (numerator / denominator) and a threshold
//! `t` (0.02 means ±2 %):
//! - `faster` when the whole interval lies below `1 - t` (`hi < 1 - t`),
//! - `slower` when the whole interval lies above `1 + t` (`lo > 1 + t`),
//! - `no_difference` when the whole interval lies inside the band (`1 - t ≤ lo`, `hi ≤ 1 + t`),
//! - `inconclusive` otherwise: the interval straddles an edge of the band, so the data allow
//!   both a difference beyond the noise and none. An interval that merely reaches 1 is not
//!   evidence of no difference.
//!
//! And whatever the interval: `inconclusive` when the run-to-run noise is not bounded
//! (`NoiseBound::Unbounded`): one worker run per side and no A/A pair, so nothing measured how
//! far two runs of the same code drift apart, and a narrow interval would claim more than the
//! data can say.
//!
//! The threshold is measured, not guessed: run the same adapter twice (an A/A pair) and take the
//! ratio interval of the two runs. Any departure from 1 there is noise, so
//! `t = max(|1 - lo_AA|, |hi_AA - 1|, floor)`. The floor (`MIN_NOISE_THRESHOLD`, 1 %) keeps one
//! lucky A/A pair, whose two runs happened to agree closely, from making the threshold so small
//! that run-to-run variation the pair did not happen to show becomes a verdict. Without an A/A
//! pair the caller uses `DEFAULT_NOISE_THRESHOLD` (2 %) and says so.

use super::error::StatsError;
use decode_baseline_wire::stats::RatioEstimate;
use serde::{Deserialize, Serialize};

/// The smallest threshold derived from an A/A pair.
pub const MIN_NOISE_THRESHOLD: f64 = 0.01;
/// The threshold used when no A/A pair was measured.
pub const DEFAULT_NOISE_THRESHOLD: f64 = 0.02;

/// The outcome of a comparison, for the numerator against the denominator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The numerator takes less time, beyond the noise.
    Faster,
    /// The numerator takes more time, beyond the noise.
    Slower,
    /// The whole interval lies within the noise threshold.
    NoDifference,
    /// The interval straddles an edge of the noise band, or the noise was not bounded.
    Inconclusive,
}

/// Whether the run-to-run noise behind an interval was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NoiseBound {
    /// Bounded: the interval resampled whole worker runs, or an A/A pair measured the threshold.
    Bounded,
    /// One run per side and no A/A pair: the interval shows request-to-request noise only.
    Unbounded,
}

/// Where a noise threshold came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThresholdSource {
    /// Measured from an A/A pair, above the floor.
    AaPair,
    /// Measured from an A/A pair, but below the floor, so the floor is used.
    Floor,
    /// Given (a default or a user's choice), not measured.
    Given,
}

/// The noise threshold `t` of a verdict, and how it was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoiseThreshold {
    /// The threshold used, as a fraction (0.02 = ±2 %).
    pub value: f64,
    /// How it was obtained.
    pub source: ThresholdSource,
    /// The A/A spread `max(|1 - lo|, |hi - 1|)`, when measured.
    pub aa_spread: Option<f64>,
}

impl NoiseThreshold {
    /// A threshold given directly, e.g. `DEFAULT_NOISE_THRESHOLD`; must be finite, in [0, 1).
    pub fn given(value: f64) -> Result<Self, StatsError> {
        if !(0.0..1.0).contains(&value) {
            return Err(StatsError::InvalidSetting {
                field: "threshold",
                expected: "a number in [0, 1)",
                actual: value.to_string(),
            });
        }
        Ok(NoiseThreshold { value, source: ThresholdSource::Given, aa_spread: None })
    }

    /// `max(|1 - lo|, |hi - 1|)` of an A/A ratio interval, floored at `MIN_NOISE_THRESHOLD`.
    pub fn from_aa_pair(aa: &RatioEstimate) -> Self {
        let spread = (1.0 - aa.ci.lower).abs().max((aa.ci.upper - 1.0).abs());
        if spread >= MIN_NOISE_THRESHOLD {
            NoiseThreshold { value: spread, source: ThresholdSource::AaPair, aa_spread: Some(spread) }
        } else {
            NoiseThreshold { value: MIN_NOISE_THRESHOLD, source: ThresholdSource::Floor, aa_spread: Some(spread) }
        }
    }
}

/// A ratio, the threshold it was held against, and the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Comparison {
    /// The ratio of medians and its interval.
    pub ratio: RatioEstimate,
    /// The noise threshold.
    pub threshold: NoiseThreshold,
    /// Whether the run-to-run noise was bounded.
    pub noise: NoiseBound,
    /// The verdict.
    pub verdict: Verdict,
}

impl Comparison {
    /// Holds `ratio`'s interval against `threshold`; `Inconclusive` whatever the interval when
    /// `noise` is unbounded.
    pub fn new(ratio: RatioEstimate, threshold: NoiseThreshold, noise: NoiseBound) -> Self {
        let t = threshold.value;
        let (lo, hi) = (ratio.ci.lower, ratio.ci.upper);
        let verdict = if noise == NoiseBound::Unbounded {
            Verdict::Inconclusive
        } else if hi < 1.0 - t {
            Verdict::Faster
        } else if lo > 1.0 + t {
            Verdict::Slower
        } else if lo >= 1.0 - t && hi <= 1.0 + t {
            Verdict::NoDifference
        } else {
            Verdict::Inconclusive
        };
        Comparison { ratio, threshold, noise, verdict }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use decode_baseline_wire::stats::{BootstrapConfig, Interval, Resampling};

    fn estimate(lower: f64, upper: f64) -> RatioEstimate {
        RatioEstimate {
            ratio: (lower + upper) / 2.0,
            ci: Interval { lower, upper, bootstrap: BootstrapConfig::default(), resampling: Resampling::ByRequest },
        }
    }

    #[test]
    fn verdicts_at_and_around_the_threshold() {
        let t = NoiseThreshold::given(0.02).unwrap();
        let v = |lo, hi| Comparison::new(estimate(lo, hi), t, NoiseBound::Bounded).verdict;
        assert_eq!(v(0.90, 0.97), Verdict::Faster);
        assert_eq!(v(1.03, 1.10), Verdict::Slower);
        assert_eq!(v(0.985, 1.01), Verdict::NoDifference); // inside the band
        assert_eq!(v(0.985, 0.99), Verdict::NoDifference); // below 1 but within the noise
        assert_eq!(v(0.975, 0.99), Verdict::Inconclusive); // below 1, reaching past 1 - t
        assert_eq!(v(1.01, 1.019), Verdict::NoDifference);
        assert_eq!(v(0.97, 1.01), Verdict::Inconclusive); // reaches 1 but also past 1 - t
        assert_eq!(v(0.95, 1.0 - 0.02), Verdict::Inconclusive); // touching 1 - t is not clear of it
        assert_eq!(v(1.011, 2.04), Verdict::Inconclusive); // straddles 1 + t
        assert_eq!(v(1.021, 1.05), Verdict::Slower);
        let unbounded = Comparison::new(estimate(1.2, 1.3), t, NoiseBound::Unbounded);
        assert_eq!(unbounded.verdict, Verdict::Inconclusive);
    }

    #[test]
    fn threshold_from_aa_pair_takes_the_wider_side_and_the_floor() {
        // Interval [0.985, 1.03]: spread max(0.015, 0.03) = 0.03.
        let t = NoiseThreshold::from_aa_pair(&estimate(0.985, 1.03));
        assert!((t.value - 0.03).abs() < 1e-12);
        assert_eq!(t.source, ThresholdSource::AaPair);
        // Interval [0.998, 1.004]: spread 0.004 < 1 % → floor.
        let t = NoiseThreshold::from_aa_pair(&estimate(0.998, 1.004));
        assert_eq!((t.value, t.source), (MIN_NOISE_THRESHOLD, ThresholdSource::Floor));
        assert!((t.aa_spread.unwrap() - 0.004).abs() < 1e-12);
        assert!(matches!(NoiseThreshold::given(-0.1), Err(StatsError::InvalidSetting { field: "threshold", .. })));
        assert!(NoiseThreshold::given(f64::NAN).is_err());
    }

    #[test]
    fn comparison_serializes_with_snake_case_verdict() {
        let c = Comparison::new(estimate(0.9, 0.95), NoiseThreshold::given(0.02).unwrap(), NoiseBound::Bounded);
        let json = serde_json::to_value(c).unwrap();
        assert_eq!(json["verdict"], "faster");
        assert_eq!(json["threshold"]["source"], "given");
    }
}
