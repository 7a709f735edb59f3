//! Ratios from pairs of adjacent requests (the interleaved order), and the ratio of two such
//! ratios (one session against another, each measured against the same yardstick).
//!
//! In an interleaved session request `k` of adapter X and request `k` of the reference adapter
//! ran back to back, one right after the other, so whatever the machine was doing then (another
//! program, a frequency step, heat) weighed on both. The pair's ratio
//! `r_k = median(steps of X's request k) / median(steps of the reference's request k)` cancels
//! it, where a ratio of pooled medians would not.
//!
//! - **Paired ratio** `R = median_k r_k`. Interval: percentile bootstrap (see `bootstrap`),
//!   drawing pairs with replacement when the session has one worker run per adapter
//!   (`Resampling::ByPair`), or whole runs and then pairs within each drawn run when it has
//!   several (`Resampling::ByRunThenPair`), so that the interval carries the run-to-run
//!   variation of the ratio as well as the pair-to-pair.
//! - **Ratio of paired ratios** `R_B / R_A`: how X moved against the yardstick from session A to
//!   session B. Both sessions are resampled independently in each round. A machine that is 20 %
//!   slower during B slows X and the yardstick alike and leaves it at 1, which a plain B/A ratio
//!   of X's times cannot do.
//!
//! The median of the pair ratios rather than their mean keeps one disturbed pair (a hog that
//! started between the two requests of a pair) from moving the estimate.

use super::bootstrap::{median_interval, ratio_interval, Source};
use super::error::StatsError;
use super::sample::PairedSample;
use decode_baseline_wire::stats::BootstrapConfig;
use decode_baseline_wire::stats::RatioEstimate;

/// The estimators of a [`PairedSample`]; the type itself, validated like the other samples and
/// drawn from by the bootstrap, is in `sample`.
impl PairedSample {
    /// The paired ratio with its interval.
    pub fn estimate(&self, config: &BootstrapConfig) -> Result<RatioEstimate, StatsError> {
        Ok(RatioEstimate { ratio: self.median(), ci: median_interval(Source::Pairs(self), config)? })
    }

    /// `self`'s paired ratio over `baseline`'s (session B over session A), with its interval.
    pub fn over(&self, baseline: &PairedSample, config: &BootstrapConfig) -> Result<RatioEstimate, StatsError> {
        Ok(RatioEstimate {
            ratio: self.median() / baseline.median(),
            ci: ratio_interval(Source::Pairs(self), Source::Pairs(baseline), config)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Resampling;

    /// 20 pairs whose two sides share a load factor that varies by ±30 % from pair to pair,
    /// the numerator `effect` times the denominator with ±1 % of its own noise.
    fn pairs(effect: f64, phase: usize) -> Vec<(f64, f64)> {
        (0..20)
            .map(|k| {
                let load = 1.0 + 0.3 * (((k * 7 + phase) % 11) as f64 / 5.0 - 1.0);
                let own = 1.0 + 0.01 * (((k * 3 + phase) % 5) as f64 / 2.0 - 1.0);
                (effect * own * load * 1000.0, load * 1000.0)
            })
            .collect()
    }

    #[test]
    fn a_shared_load_cancels_and_the_effect_remains() {
        let sample = PairedSample::from_medians(&[pairs(1.03, 0)]).unwrap();
        let estimate = sample.estimate(&BootstrapConfig::default()).unwrap();
        assert!((estimate.ratio - 1.03).abs() < 0.011, "{estimate:?}");
        assert!(estimate.ci.contains(estimate.ratio));
        assert!(estimate.ci.lower > 1.0, "the ±30 % load does not hide a 3 % effect: {estimate:?}");
        assert_eq!(estimate.ci.resampling, Resampling::ByPair);
    }

    #[test]
    fn the_ratio_of_two_sessions_sees_the_effect_and_not_the_machine() {
        let a = PairedSample::from_medians(&[pairs(1.0, 0)]).unwrap();
        // Session B: the whole machine 25 % slower (both sides), and the numerator 3 % slower.
        let slow: Vec<(f64, f64)> = pairs(1.03, 3).into_iter().map(|(n, d)| (n * 1.25, d * 1.25)).collect();
        let b = PairedSample::from_medians(&[slow]).unwrap();
        let moved = b.over(&a, &BootstrapConfig::default()).unwrap();
        assert!((moved.ratio - 1.03).abs() < 0.015, "{moved:?}");
        assert!(moved.ci.lower > 1.0, "{moved:?}");
        let same = PairedSample::from_medians(&[pairs(1.0, 5)]).unwrap().over(&a, &BootstrapConfig::default()).unwrap();
        assert!(same.ci.contains(1.0), "{same:?}");
    }

    #[test]
    fn several_runs_resample_runs_then_pairs_and_widen_for_run_to_run_spread() {
        let run = |effect| pairs(effect, 1);
        let tight = PairedSample::from_medians(&[run(1.0), run(1.0)]).unwrap();
        let spread = PairedSample::from_medians(&[run(0.95), run(1.05)]).unwrap();
        let config = BootstrapConfig::default();
        let (tight, spread) = (tight.estimate(&config).unwrap(), spread.estimate(&config).unwrap());
        assert_eq!(spread.ci.resampling, Resampling::ByRunThenPair);
        assert!(spread.ci.half_width() > 2.0 * tight.ci.half_width(), "{tight:?} {spread:?}");
    }
}
