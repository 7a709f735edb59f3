//! Property tests of the statistics module (proptest): invariants that must hold for any input,
//! not just the hand-checked examples next to each function.

use super::bootstrap::{median_interval, Source};
use super::*;
use proptest::prelude::*;

/// Bootstrap settings kept small so that hundreds of cases run fast; the properties do not
/// depend on `B`.
fn quick() -> BootstrapConfig {
    BootstrapConfig { resamples: 200, ..BootstrapConfig::default() }
}

/// Positive, time-like values (1 ns .. 1 s).
fn times(max_len: usize) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(1.0f64..1e9, 2..max_len)
}

/// 2..12 requests of 1..20 time-like values.
fn requests() -> impl Strategy<Value = Vec<Vec<f64>>> {
    prop::collection::vec(prop::collection::vec(1.0f64..1e9, 1..20), 2..12)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn sample_never_panics_and_refuses_exactly_the_bad_inputs(
        values in prop::collection::vec(prop::num::f64::ANY, 0..8)
    ) {
        let first_bad = values.iter().position(|v| !v.is_finite());
        match (Sample::new(values.clone()), first_bad) {
            (Err(StatsError::NotFinite { index, .. }), Some(bad)) => prop_assert_eq!(index, bad),
            (Err(StatsError::TooFew { actual, .. }), None) => {
                prop_assert!(values.len() < 2);
                prop_assert_eq!(actual, values.len());
            }
            (Ok(s), None) => {
                prop_assert!(values.len() >= 2);
                prop_assert!(s.sorted().windows(2).all(|w| w[0] <= w[1]));
            }
            (other, bad) => prop_assert!(false, "unexpected {:?} for first bad {:?}", other, bad),
        }
    }

    #[test]
    fn median_and_quantiles_lie_within_min_and_max(
        values in prop::collection::vec(-f64::MAX..f64::MAX, 2..50),
        p in 0.0f64..=1.0,
    ) {
        let s = Sample::new(values).unwrap();
        prop_assert!(s.min() <= s.median() && s.median() <= s.max());
        prop_assert!(s.min() <= s.quantile(p) && s.quantile(p) <= s.max());
    }

    #[test]
    fn quantiles_are_monotone_in_p(values in times(50), p in 0.0f64..=1.0, q in 0.0f64..=1.0) {
        let s = Sample::new(values).unwrap();
        let (lo, hi) = if p <= q { (p, q) } else { (q, p) };
        prop_assert!(s.quantile(lo) <= s.quantile(hi));
    }

    #[test]
    fn scaling_the_data_scales_median_mad_and_quantiles(values in times(50), c in 1e-3f64..1e3) {
        let s = Sample::new(values.clone()).unwrap();
        let scaled = Sample::new(values.iter().map(|v| v * c).collect()).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs());
        prop_assert!(close(scaled.median(), c * s.median()));
        prop_assert!(close(scaled.mad(), c * s.mad()));
        prop_assert!(close(scaled.quantile(0.9), c * s.quantile(0.9)));
    }

    #[test]
    fn percentile_bootstrap_interval_contains_the_sample_median(values in times(40)) {
        let s = Sample::new(values).unwrap();
        let ci = median_interval(Source::of_sample(&s), &quick()).unwrap();
        prop_assert!(ci.lower <= ci.upper);
        prop_assert!(ci.contains(s.median()), "{:?} does not contain {}", ci, s.median());
    }

    #[test]
    fn request_bootstrap_interval_contains_the_pooled_median(groups in requests()) {
        let c = ClusteredSample::new(groups).unwrap();
        let sum = summarize_requests(&c, Resampling::ByRequest, &quick()).unwrap();
        prop_assert!(sum.median_ci.lower <= sum.median_ci.upper);
        prop_assert!(sum.min <= sum.median_ci.lower && sum.median_ci.upper <= sum.max);
        prop_assert!(sum.min <= sum.median && sum.median <= sum.max);
    }

    #[test]
    fn ratio_of_identical_samples_is_one_with_an_interval_containing_one(groups in requests()) {
        let c = ClusteredSample::new(groups).unwrap();
        for resampling in [Resampling::ByRequest, Resampling::ByPoint] {
            let r = ratio_of_medians(&c, &c, resampling, &BootstrapConfig::default()).unwrap();
            prop_assert_eq!(r.ratio, 1.0);
            prop_assert!(r.ci.contains(1.0), "{:?}", r);
        }
    }

    #[test]
    fn identical_sides_are_never_a_difference_and_swapping_them_mirrors_the_test(
        pairs in prop::collection::vec((1.0f64..1e7, 1.0f64..1e7), 4..60)
    ) {
        let config = DecisionConfig::default();
        let same: Vec<(f64, f64)> = pairs.iter().map(|&(x, _)| (x, x)).collect();
        let aa = crate::stats::decide_alone(
            &LogEstimate::paired(&PairBlocks::from_pair_medians(&[same]).unwrap(), config.trim).unwrap(),
            None, 1, &config,
        ).unwrap();
        prop_assert!(!matches!(aa.verdict, Verdict::Faster | Verdict::Slower), "{:?}", aa);
        let swapped: Vec<(f64, f64)> = pairs.iter().map(|&(x, r)| (r, x)).collect();
        let test = |p: Vec<(f64, f64)>| crate::stats::decide_alone(
            &LogEstimate::paired(&PairBlocks::from_pair_medians(&[p]).unwrap(), config.trim).unwrap(),
            None, 1, &config,
        ).unwrap();
        let (a, b) = (test(pairs.clone()), test(swapped));
        prop_assert!((a.log_estimate + b.log_estimate).abs() <= 1e-9 * (1.0 + a.log_estimate.abs()));
        prop_assert!((a.p_value - b.p_value).abs() <= 1e-9);
        let mirrored = match a.verdict {
            Verdict::Faster => Verdict::Slower,
            Verdict::Slower => Verdict::Faster,
            other => other,
        };
        prop_assert_eq!(b.verdict, mirrored);
        prop_assert!(a.ci.lower <= a.ratio && a.ratio <= a.ci.upper);
    }

    #[test]
    fn same_seed_same_interval_and_the_seed_matters(groups in requests()) {
        let c = ClusteredSample::new(groups).unwrap();
        let a = summarize_requests(&c, Resampling::ByRequest, &quick()).unwrap();
        let b = summarize_requests(&c, Resampling::ByRequest, &quick()).unwrap();
        prop_assert_eq!(a.median_ci, b.median_ci);
        let r1 = ratio_of_medians(&c, &c, Resampling::ByRequest, &quick()).unwrap();
        let r2 = ratio_of_medians(&c, &c, Resampling::ByRequest, &quick()).unwrap();
        prop_assert_eq!(r1, r2);
    }

    #[test]
    fn outlier_counts_never_exceed_the_sample(values in times(60)) {
        let s = Sample::new(values).unwrap();
        let o = tukey_outliers(&s);
        prop_assert!(o.total() <= s.len());
        prop_assert!(o.q1 <= s.median() && s.median() <= o.q3);
    }
}

#[test]
fn a_different_seed_gives_a_different_interval() {
    // Guards against a seed that is silently ignored (e.g. a fixed stream).
    let s = Sample::new((0..200).map(|i| f64::from(i * 37 % 101)).collect()).unwrap();
    let a = median_interval(Source::of_sample(&s), &BootstrapConfig::default()).unwrap();
    let b = median_interval(Source::of_sample(&s), &BootstrapConfig { seed: 1, resamples: 2000, confidence: 0.95 })
        .unwrap();
    let c = median_interval(Source::of_sample(&s), &BootstrapConfig { seed: 2, resamples: 2000, confidence: 0.95 })
        .unwrap();
    assert!(a != b || b != c, "three seeds gave {a:?}, {b:?}, {c:?}");
}

#[test]
fn pinned_seed_gives_the_recorded_interval() {
    // The interval for the default settings on fixed data, recorded once: if this changes, the
    // RNG stream or the index method changed and old session.json intervals are no longer
    // reproducible. Update only deliberately, with a note in the session format's changelog.
    let s = Sample::new((1..=25).map(f64::from).collect()).unwrap();
    let ci = median_interval(Source::of_sample(&s), &BootstrapConfig::default()).unwrap();
    assert_eq!((ci.lower, ci.upper), (RECORDED_LOWER, RECORDED_UPPER));
}

const RECORDED_LOWER: f64 = 9.0;
const RECORDED_UPPER: f64 = 18.0;
