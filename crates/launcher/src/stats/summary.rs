//! `Summary`: the descriptive statistics of one sample (one cell, one adapter), with the
//! bootstrap interval of its median, Tukey outlier counts and pyperf-like stability warnings.
//!
//! Definitions (see `sample` for the quantile and MAD conventions):
//! - `cv = s / mean`, the coefficient of variation with the n - 1 standard deviation; absent when
//!   the mean is zero.
//! - `request_median_cv`: the same over the per-request medians (grouped samples with at least
//!   two requests): how much the figure moves from one request to the next.
//! - `p90`, `p99`: type-7 quantiles.
//! - `median_ci`: percentile bootstrap (`bootstrap`), by request for a `ClusteredSample`.
//!
//! Stability warnings, in the spirit of pyperf's "the benchmark result may be unstable":
//! - `too_few_units`: fewer than `MIN_STABLE_UNITS` independent units (requests for a clustered
//!   sample, observations otherwise);
//! - `high_variation`: the coefficient of variation of the units above `MAX_STABLE_CV` (pyperf
//!   warns when the standard deviation of its values exceeds 10 % of their mean). pyperf's
//!   values are each the mean of many loops, so for a grouped sample the units are the
//!   per-request medians (`request_median_cv`), not single decode steps. A single step's time
//!   has a long tail from the scheduler, so its CV is above 10 % on almost any machine and
//!   says nothing about whether the median holds. For an ungrouped sample the units are the
//!   observations (`cv`);
//! - `wide_median_interval`: the median interval's half-width exceeds `MAX_STABLE_CI_HALF_WIDTH`
//!   of the median.

use super::bootstrap::{median_interval, Source};
use super::error::StatsError;
use super::outliers::tukey_outliers;
use super::sample::{ClusteredSample, Sample};
use decode_baseline_wire::stats::{BootstrapConfig, Interval, Resampling, StabilityWarning, Summary, WarningKind};

/// Fewer independent units than this draws a `too_few_units` warning.
pub const MIN_STABLE_UNITS: usize = 10;
/// A coefficient of variation above this draws a `high_variation` warning.
pub const MAX_STABLE_CV: f64 = 0.10;
/// A median-interval half-width above this fraction of the median draws a
/// `wide_median_interval` warning.
pub const MAX_STABLE_CI_HALF_WIDTH: f64 = 0.05;

/// Summary of ungrouped observations; the median interval resamples observations.
pub fn summarize(sample: &Sample, config: &BootstrapConfig) -> Result<Summary, StatsError> {
    let ci = median_interval(Source::of_sample(sample), config)?;
    Ok(build(sample, None, None, ci))
}

/// Summary of observations grouped by request; the median interval resamples by
/// `resampling` (`Resampling::ByRequest` is the honest choice, see `bootstrap`).
pub fn summarize_requests(
    sample: &ClusteredSample,
    resampling: Resampling,
    config: &BootstrapConfig,
) -> Result<Summary, StatsError> {
    let ci = median_interval(Source::of_clustered(sample, resampling), config)?;
    let medians = Sample::new(sample.cluster_medians()).ok().filter(|m| m.len() >= 2);
    Ok(build(sample.pooled(), Some(sample.clusters()), medians.and_then(|m| cv(&m)), ci))
}

fn build(sample: &Sample, requests: Option<usize>, request_median_cv: Option<f64>, median_ci: Interval) -> Summary {
    let median = sample.median();
    let mean = sample.mean();
    let std_dev = sample.std_dev();
    let mut summary = Summary {
        n: sample.len(),
        requests,
        median,
        mean,
        std_dev,
        mad: sample.mad(),
        cv: cv(sample),
        request_median_cv,
        p90: sample.quantile(0.90),
        p99: sample.quantile(0.99),
        min: sample.min(),
        max: sample.max(),
        median_ci,
        outliers: tukey_outliers(sample),
        warnings: Vec::new(),
    };
    summary.warnings = stability_warnings(&summary);
    summary
}

/// `std_dev / |mean|`, absent when the mean is zero.
fn cv(sample: &Sample) -> Option<f64> {
    let mean = sample.mean();
    (mean != 0.0).then(|| sample.std_dev() / mean.abs())
}

fn stability_warnings(s: &Summary) -> Vec<StabilityWarning> {
    let mut warnings = Vec::new();
    let (units, unit_name) = match s.requests {
        Some(r) => (r, "requests"),
        None => (s.n, "observations"),
    };
    if units < MIN_STABLE_UNITS {
        warnings.push(StabilityWarning {
            kind: WarningKind::TooFewUnits,
            value: units as f64,
            limit: MIN_STABLE_UNITS as f64,
            message: format!("only {units} {unit_name}: at least {MIN_STABLE_UNITS} are needed for stable figures"),
        });
    }
    let (unit_cv, what) = match s.requests {
        Some(_) => (s.request_median_cv, "the standard deviation of the request medians"),
        None => (s.cv, "the standard deviation"),
    };
    if let Some(cv) = unit_cv.filter(|&cv| cv > MAX_STABLE_CV) {
        warnings.push(StabilityWarning {
            kind: WarningKind::HighVariation,
            value: cv,
            limit: MAX_STABLE_CV,
            message: format!(
                "the result may be unstable: {what} is {:.1} % of their mean (limit {:.0} %)",
                100.0 * cv,
                100.0 * MAX_STABLE_CV
            ),
        });
    }
    if s.median != 0.0 {
        let relative = s.median_ci.half_width() / s.median.abs();
        if relative > MAX_STABLE_CI_HALF_WIDTH {
            warnings.push(StabilityWarning {
                kind: WarningKind::WideMedianInterval,
                value: relative,
                limit: MAX_STABLE_CI_HALF_WIDTH,
                message: format!(
                    "the median is uncertain: its {:.0} % interval is ±{:.1} % of the median (limit {:.0} %)",
                    100.0 * s.median_ci.bootstrap.confidence,
                    100.0 * relative,
                    100.0 * MAX_STABLE_CI_HALF_WIDTH
                ),
            });
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_one_to_ten() {
        // Hand values for x = 1..=10: median 5.5, mean 5.5, sample variance 82.5 / 9,
        // MAD: |x - 5.5| = 0.5, 0.5, 1.5, 1.5, ..., 4.5, 4.5 → median 2.5;
        // p90 = 9.1, p99 = 9.91 (type 7, see sample.rs).
        let s = Sample::new((1..=10).map(f64::from).collect()).unwrap();
        let sum = summarize(&s, &BootstrapConfig::default()).unwrap();
        assert_eq!(sum.n, 10);
        assert_eq!(sum.requests, None);
        assert_eq!(sum.median, 5.5);
        assert_eq!(sum.mean, 5.5);
        assert!((sum.std_dev - (82.5f64 / 9.0).sqrt()).abs() < 1e-12);
        assert_eq!(sum.mad, 2.5);
        assert!((sum.cv.unwrap() - (82.5f64 / 9.0).sqrt() / 5.5).abs() < 1e-12);
        assert!((sum.p90 - 9.1).abs() < 1e-12);
        assert!((sum.p99 - 9.91).abs() < 1e-12);
        assert_eq!((sum.min, sum.max), (1.0, 10.0));
        assert!(sum.median_ci.contains(5.5));
        assert_eq!(sum.outliers.total(), 0);
        // cv = 0.55 and a wide interval on 10 points: two warnings, not the unit count (10).
        let kinds: Vec<WarningKind> = sum.warnings.iter().map(|w| w.kind).collect();
        assert_eq!(kinds, vec![WarningKind::HighVariation, WarningKind::WideMedianInterval]);
    }

    #[test]
    fn steady_data_draws_no_warning_and_few_requests_draw_one() {
        // 12 requests whose steps are 1000 ± 1 %: stable.
        let requests: Vec<Vec<f64>> =
            (0..12).map(|r| (0..50).map(|s| 1000.0 + f64::from((r * 7 + s * 3) % 21) - 10.0).collect()).collect();
        let c = ClusteredSample::new(requests.clone()).unwrap();
        let sum = summarize_requests(&c, Resampling::ByRequest, &BootstrapConfig::default()).unwrap();
        assert_eq!(sum.requests, Some(12));
        assert!(sum.warnings.is_empty(), "{:?}", sum.warnings);

        let c = ClusteredSample::new(requests[..3].to_vec()).unwrap();
        let sum = summarize_requests(&c, Resampling::ByRequest, &BootstrapConfig::default()).unwrap();
        assert_eq!(sum.warnings.len(), 1);
        assert_eq!(sum.warnings[0].kind, WarningKind::TooFewUnits);
        assert_eq!(sum.warnings[0].message, "only 3 requests: at least 10 are needed for stable figures");
    }

    #[test]
    fn variation_is_judged_on_request_medians_not_single_steps() {
        // Every request: 40 steps at 1000 and 10 at 2000 (a scheduler's tail), so the steps' CV
        // is about 33 % while every request has the same median: stable.
        let tailed: Vec<f64> = (0..50).map(|s| if s % 5 == 0 { 2000.0 } else { 1000.0 }).collect();
        let c = ClusteredSample::new(vec![tailed.clone(); 12]).unwrap();
        let sum = summarize_requests(&c, Resampling::ByRequest, &BootstrapConfig::default()).unwrap();
        assert!(sum.cv.unwrap() > 0.3, "{:?}", sum.cv);
        assert_eq!(sum.request_median_cv, Some(0.0));
        assert!(sum.warnings.is_empty(), "{:?}", sum.warnings);

        // Request medians alternating 800 and 1200 (CV about 20.9 %): unstable, whatever the steps.
        let drifting: Vec<Vec<f64>> = (0..12).map(|r| vec![if r % 2 == 0 { 800.0 } else { 1200.0 }; 50]).collect();
        let c = ClusteredSample::new(drifting).unwrap();
        let sum = summarize_requests(&c, Resampling::ByRequest, &BootstrapConfig::default()).unwrap();
        let high: Vec<&StabilityWarning> =
            sum.warnings.iter().filter(|w| w.kind == WarningKind::HighVariation).collect();
        assert_eq!(high.len(), 1, "{:?}", sum.warnings);
        assert!((high[0].value - sum.request_median_cv.unwrap()).abs() < 1e-15);
        assert!(
            high[0]
                .message
                .starts_with("the result may be unstable: the standard deviation of the request medians is 20.9 %"),
            "{}",
            high[0].message
        );
    }

    #[test]
    fn summary_round_trips_through_json_and_rejects_unknown_fields() {
        let s = Sample::new(vec![1.0, 2.0, 3.0, 4.0]).unwrap();
        let sum = summarize(&s, &BootstrapConfig::default()).unwrap();
        let json = serde_json::to_value(&sum).unwrap();
        assert_eq!(json["median_ci"]["resampling"], "by_point");
        assert_eq!(json["median_ci"]["bootstrap"]["resamples"], 2000);
        let back: Summary = serde_json::from_value(json.clone()).unwrap();
        // Exactly representable fields compare exactly; irrational ones (std_dev, cv) may move by
        // an ulp through serde_json's default float parser, so they are compared with a tolerance.
        assert_eq!((back.n, back.median, back.mad), (sum.n, sum.median, sum.mad));
        assert_eq!((back.median_ci, back.outliers), (sum.median_ci, sum.outliers));
        assert!((back.std_dev - sum.std_dev).abs() <= 1e-15 * sum.std_dev);
        assert_eq!(back.warnings.len(), sum.warnings.len());
        let mut extra = json;
        extra["surprise"] = serde_json::json!(1);
        assert!(serde_json::from_value::<Summary>(extra).is_err());
    }
}
