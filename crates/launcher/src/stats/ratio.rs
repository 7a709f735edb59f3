//! Ratio of medians of two samples (e.g. controlled / stock per-token time) with a seeded
//! percentile-bootstrap interval.
//!
//! `ratio = median(numerator) / median(denominator)`. Each bootstrap round resamples the two
//! sides independently (they were measured by different processes) and takes the ratio of the
//! resampled medians; the interval is the type-7 `α/2`, `1 - α/2` quantiles of the rounds (see
//! `bootstrap`). By default whole requests are resampled (`Resampling::ByRequest`), because the
//! steps of one request are correlated and resampling steps would overstate the precision.
//!
//! Both sides must be strictly positive (they are times), so every ratio is finite. A ratio of
//! times below 1 means the numerator is faster.

use super::bootstrap::{ratio_interval, Source};
use super::error::StatsError;
use super::sample::ClusteredSample;
use decode_baseline_wire::stats::{BootstrapConfig, RatioEstimate, Resampling};

/// Ratio of the medians of `numerator` and `denominator` (both positive).
pub fn ratio_of_medians(
    numerator: &ClusteredSample,
    denominator: &ClusteredSample,
    resampling: Resampling,
    config: &BootstrapConfig,
) -> Result<RatioEstimate, StatsError> {
    for (side, sample) in [("numerator", numerator), ("denominator", denominator)] {
        let min = sample.pooled().min();
        if min <= 0.0 {
            return Err(StatsError::NotPositive { side, value: min });
        }
    }
    let ci = ratio_interval(
        Source::of_clustered(numerator, resampling),
        Source::of_clustered(denominator, resampling),
        config,
    )?;
    let ratio = numerator.pooled().median() / denominator.pooled().median();
    Ok(RatioEstimate { ratio, ci })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requests(level: f64, spread: f64) -> ClusteredSample {
        // 20 requests of 50 steps; request r sits at level · (1 + spread · ((r % 5) - 2) / 2).
        ClusteredSample::new(
            (0..20)
                .map(|r| {
                    let request_level = level * (1.0 + spread * (f64::from(r % 5) - 2.0) / 2.0);
                    (0..50).map(|s| request_level + f64::from(s % 7)).collect()
                })
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn ten_percent_faster_numerator_gives_ratio_near_point_nine() {
        let fast = requests(900.0, 0.01);
        let slow = requests(1000.0, 0.01);
        let r = ratio_of_medians(&fast, &slow, Resampling::default(), &BootstrapConfig::default()).unwrap();
        // Medians: 900 + 3 and 1000 + 3 (steps add 0..6, median 3; request levels symmetric).
        assert!((r.ratio - 903.0 / 1003.0).abs() < 1e-3, "ratio {}", r.ratio);
        assert!(r.ci.upper < 0.95 && r.ci.lower > 0.85, "{r:?}");
        assert_eq!(r.ci.resampling, Resampling::ByRequest);
    }

    #[test]
    fn refuses_non_positive_times() {
        let ok = requests(1000.0, 0.01);
        let zero = ClusteredSample::new(vec![vec![0.0, 1.0], vec![2.0]]).unwrap();
        assert_eq!(
            ratio_of_medians(&ok, &zero, Resampling::default(), &BootstrapConfig::default()),
            Err(StatsError::NotPositive { side: "denominator", value: 0.0 })
        );
    }
}
