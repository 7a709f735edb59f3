//! `Sample`, `ClusteredSample` and `PairedSample`: validated sets of observations, and the
//! order statistics every other statistic is built on.
//!
//! A `Sample` holds at least two finite `f64` observations (for us: per-token decode times in
//! nanoseconds); fewer points or a NaN/infinity is a typed error, never a panic. The order of the
//! input is not kept: everything here is a function of the sorted values.
//!
//! A `ClusteredSample` is a sample whose observations come in groups: the decode-step times of
//! one request are one group. Steps within a request share the request's conditions (cache
//! state, what else the machine was doing), so they are correlated and the request, not the
//! step, is the independent unit; the bootstrap resamples whole requests (see `bootstrap`).
//!
//! A `PairedSample` holds the pair ratios of an interleaved session, grouped by worker run, all
//! positive (what a pair ratio is, and its estimators, are in `paired`); the bootstrap draws
//! whole runs and then pairs within them.
//!
//! Quantiles use linear interpolation between order statistics, Hyndman & Fan (1996) type 7,
//! the default of R's `quantile` and NumPy's `percentile`: for sorted `x[0..n]` and `p` in
//! [0, 1], `h = (n - 1) p`, `Q(p) = x[⌊h⌋] + (h - ⌊h⌋) (x[⌊h⌋ + 1] - x[⌊h⌋])`. The median is
//! `Q(0.5)`: the middle value, or the mean of the two middle values.
//!
//! Mean and standard deviation come from `statrs` (`Statistics::mean`, `Statistics::std_dev`,
//! the sample standard deviation with the n - 1 denominator). Values near `f64::MAX` can overflow
//! the mean; decode times are nowhere near.

use super::error::StatsError;
use statrs::statistics::Statistics;

/// At least this many observations make a `Sample`.
pub const MIN_OBSERVATIONS: usize = 2;

/// A validated set of at least two finite observations, kept sorted.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    sorted: Vec<f64>,
}

impl Sample {
    /// Validates and sorts `values`. Refuses fewer than two points and any NaN or infinity.
    pub fn new(values: Vec<f64>) -> Result<Self, StatsError> {
        if let Some((index, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(StatsError::NotFinite { index, value });
        }
        if values.len() < MIN_OBSERVATIONS {
            return Err(StatsError::TooFew { what: "observations", expected: MIN_OBSERVATIONS, actual: values.len() });
        }
        let mut sorted = values;
        sorted.sort_by(f64::total_cmp);
        Ok(Sample { sorted })
    }

    /// The observations in ascending order.
    pub fn sorted(&self) -> &[f64] {
        &self.sorted
    }

    /// Number of observations (at least two).
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// Always false: a `Sample` has at least two observations. Present for clippy's sake.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Smallest observation.
    pub fn min(&self) -> f64 {
        self.sorted[0]
    }

    /// Largest observation.
    pub fn max(&self) -> f64 {
        self.sorted[self.sorted.len() - 1]
    }

    /// Type-7 quantile, `p` clamped to [0, 1].
    pub fn quantile(&self, p: f64) -> f64 {
        quantile_sorted(&self.sorted, p)
    }

    /// Median, `Q(0.5)`.
    pub fn median(&self) -> f64 {
        self.quantile(0.5)
    }

    /// Arithmetic mean (statrs).
    pub fn mean(&self) -> f64 {
        self.sorted.iter().mean()
    }

    /// Sample standard deviation, denominator n - 1 (statrs).
    pub fn std_dev(&self) -> f64 {
        self.sorted.iter().std_dev()
    }

    /// Median absolute deviation, unscaled: `median(|x_i - median(x)|)`, in the units of the
    /// data. Multiply by 1.4826 for a consistent estimator of σ under normality; we report the
    /// raw value so that it reads as "half the observations lie within this of the median".
    pub fn mad(&self) -> f64 {
        let median = self.median();
        let mut deviations: Vec<f64> = self.sorted.iter().map(|x| (x - median).abs()).collect();
        median_in_place(&mut deviations)
    }
}

/// Observations grouped by request (cluster), at least two requests, each with at least one
/// observation, all finite.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusteredSample {
    /// All observations, request after request, in input order.
    flat: Vec<f64>,
    /// `flat[starts[i]..starts[i + 1]]` is request i; `starts` ends with `flat.len()`.
    starts: Vec<usize>,
    pooled: Sample,
}

/// At least this many requests make a `ClusteredSample` (the bootstrap resamples requests).
pub const MIN_CLUSTERS: usize = 2;

impl ClusteredSample {
    /// Validates `requests` (each the observations of one request, e.g. its decode-step times).
    pub fn new(requests: Vec<Vec<f64>>) -> Result<Self, StatsError> {
        let mut flat = Vec::with_capacity(requests.iter().map(Vec::len).sum());
        let mut starts = Vec::with_capacity(requests.len() + 1);
        for (index, request) in requests.iter().enumerate() {
            if request.is_empty() {
                return Err(StatsError::EmptyRequest { index });
            }
            starts.push(flat.len());
            flat.extend_from_slice(request);
        }
        starts.push(flat.len());
        let pooled = Sample::new(flat.clone())?;
        if requests.len() < MIN_CLUSTERS {
            return Err(StatsError::TooFew { what: "requests", expected: MIN_CLUSTERS, actual: requests.len() });
        }
        Ok(ClusteredSample { flat, starts, pooled })
    }

    /// Number of requests.
    pub fn clusters(&self) -> usize {
        self.starts.len() - 1
    }

    /// The observations of request `i`.
    pub fn cluster(&self, i: usize) -> &[f64] {
        &self.flat[self.starts[i]..self.starts[i + 1]]
    }

    /// All observations pooled into one sample.
    pub fn pooled(&self) -> &Sample {
        &self.pooled
    }

    /// The median of each request, in input order (a one-observation request is its own
    /// median): the per-request figures that `drift_between_halves` takes.
    pub fn cluster_medians(&self) -> Vec<f64> {
        (0..self.clusters()).map(|i| median_in_place(&mut self.cluster(i).to_vec())).collect()
    }
}

/// Pair ratios `r_k`, grouped by worker run; at least two pairs in all, every one finite and
/// positive, no run empty.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedSample {
    runs: Vec<Vec<f64>>,
}

/// At least this many pairs make a [`PairedSample`].
pub const MIN_PAIRS: usize = 2;

impl PairedSample {
    /// Validates the pair ratios of each run.
    pub fn new(runs: Vec<Vec<f64>>) -> Result<Self, StatsError> {
        let mut seen = 0;
        for (run, ratios) in runs.iter().enumerate() {
            if ratios.is_empty() {
                return Err(StatsError::EmptyRequest { index: run });
            }
            for &r in ratios {
                if !r.is_finite() {
                    return Err(StatsError::NotFinite { index: seen, value: r });
                }
                if r <= 0.0 {
                    return Err(StatsError::NotPositive { side: "pair ratio", value: r });
                }
                seen += 1;
            }
        }
        if seen < MIN_PAIRS {
            return Err(StatsError::TooFew { what: "pairs", expected: MIN_PAIRS, actual: seen });
        }
        Ok(PairedSample { runs })
    }

    /// The pair ratios of each pair of request medians, `(numerator, denominator)` per pair,
    /// grouped by run.
    pub fn from_medians(runs: &[Vec<(f64, f64)>]) -> Result<Self, StatsError> {
        for run in runs {
            for &(num, den) in run {
                for (side, v) in [("numerator", num), ("denominator", den)] {
                    if !v.is_finite() || v <= 0.0 {
                        return Err(StatsError::NotPositive { side, value: v });
                    }
                }
            }
        }
        Self::new(runs.iter().map(|run| run.iter().map(|&(n, d)| n / d).collect()).collect())
    }

    /// Number of worker runs.
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// The pair ratios of run `i`.
    pub fn run(&self, i: usize) -> &[f64] {
        &self.runs[i]
    }

    /// Number of pairs.
    pub fn pairs(&self) -> usize {
        self.runs.iter().map(Vec::len).sum()
    }

    /// The median pair ratio.
    pub fn median(&self) -> f64 {
        median_in_place(&mut self.runs.concat())
    }
}

/// Type-7 quantile of already sorted data; `p` clamped to [0, 1]; NaN for no data. The one
/// quantile of the suite: statistics and figures alike.
pub fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let frac = h - lo as f64;
    if lo + 1 >= sorted.len() {
        return sorted[sorted.len() - 1];
    }
    lerp(sorted[lo], sorted[lo + 1], frac)
}

/// `a + t (b - a)` for `a <= b`, written so that it cannot overflow for finite inputs and
/// never leaves [a, b] through rounding.
fn lerp(a: f64, b: f64, t: f64) -> f64 {
    if t == 0.0 {
        return a;
    }
    ((1.0 - t) * a + t * b).clamp(a, b)
}

/// Median of `buf` (type 7), reordering it; `buf` must be non-empty. Linear time
/// (`select_nth_unstable`), for the inner loop of the bootstrap.
pub(crate) fn median_in_place(buf: &mut [f64]) -> f64 {
    debug_assert!(!buf.is_empty());
    let n = buf.len();
    let (left, upper_mid, _) = buf.select_nth_unstable_by(n / 2, f64::total_cmp);
    let upper_mid = *upper_mid;
    if n % 2 == 1 {
        return upper_mid;
    }
    let lower_mid = left.iter().copied().max_by(f64::total_cmp).unwrap_or(upper_mid);
    lerp(lower_mid, upper_mid, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values below are computed by hand (shown) and agree with
    // `numpy.percentile(x, 100 p)` (linear, type 7), numpy 2.4.6 in the project's .venv.

    #[test]
    fn quantiles_of_one_to_ten_match_type_7() {
        let s = Sample::new((1..=10).map(f64::from).collect()).unwrap();
        // h = 9 p: p=0.5 → 4.5 → 5 + 0.5 (6 - 5) = 5.5
        assert_eq!(s.median(), 5.5);
        // p=0.9 → h=8.1 → 9 + 0.1 (10 - 9) = 9.1
        assert!((s.quantile(0.9) - 9.1).abs() < 1e-12);
        // p=0.99 → h=8.91 → 9.91
        assert!((s.quantile(0.99) - 9.91).abs() < 1e-12);
        // p=0.25 → h=2.25 → 3.25
        assert!((s.quantile(0.25) - 3.25).abs() < 1e-12);
        assert_eq!(s.quantile(0.0), 1.0);
        assert_eq!(s.quantile(1.0), 10.0);
    }

    #[test]
    fn median_and_mad_of_small_odd_array() {
        // x = [1, 1, 2, 2, 4, 6, 9] (unsorted below); median 2;
        // |x - 2| = [1, 1, 0, 0, 2, 4, 7] → sorted [0, 0, 1, 1, 2, 4, 7] → MAD 1.
        let s = Sample::new(vec![9.0, 1.0, 2.0, 6.0, 1.0, 4.0, 2.0]).unwrap();
        assert_eq!(s.median(), 2.0);
        assert_eq!(s.mad(), 1.0);
        assert_eq!(s.min(), 1.0);
        assert_eq!(s.max(), 9.0);
    }

    #[test]
    fn mean_and_std_dev_agree_with_hand_computation_and_statrs_median() {
        // x = [2, 4, 4, 4, 5, 5, 7, 9]: mean 5, squared deviations sum 32,
        // sample variance 32 / 7, std dev sqrt(32/7) = 2.138089935299395.
        let x = vec![2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let s = Sample::new(x.clone()).unwrap();
        assert_eq!(s.mean(), 5.0);
        assert!((s.std_dev() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        // statrs' own median (an independent implementation) agrees with ours.
        let statrs_median = statrs::statistics::Median::median(&statrs::statistics::Data::new(x));
        assert_eq!(s.median(), statrs_median);
        assert_eq!(s.median(), 4.5);
    }

    #[test]
    fn median_in_place_matches_sorted_median_for_even_and_odd() {
        let mut even = vec![3.0, 1.0, 4.0, 1.5];
        assert_eq!(median_in_place(&mut even), 2.25);
        let mut odd = vec![3.0, 1.0, 4.0];
        assert_eq!(median_in_place(&mut odd), 3.0);
    }

    #[test]
    fn refuses_short_and_non_finite_input_with_typed_errors() {
        assert_eq!(Sample::new(vec![1.0]), Err(StatsError::TooFew { what: "observations", expected: 2, actual: 1 }));
        assert!(matches!(
            Sample::new(vec![1.0, f64::NAN, 2.0]),
            Err(StatsError::NotFinite { index: 1, value }) if value.is_nan()
        ));
        assert_eq!(
            Sample::new(vec![1.0, 2.0, f64::NEG_INFINITY]),
            Err(StatsError::NotFinite { index: 2, value: f64::NEG_INFINITY })
        );
        let err = Sample::new(vec![]).unwrap_err().to_string();
        assert_eq!(err, "too few observations: expected at least 2, got 0");
    }

    #[test]
    fn clustered_sample_keeps_requests_and_refuses_bad_shapes() {
        let c = ClusteredSample::new(vec![vec![1.0, 2.0], vec![3.0], vec![4.0, 5.0, 6.0]]).unwrap();
        assert_eq!(c.clusters(), 3);
        assert_eq!(c.cluster(1), &[3.0]);
        assert_eq!(c.cluster(2), &[4.0, 5.0, 6.0]);
        assert_eq!(c.pooled().len(), 6);
        assert_eq!(c.cluster_medians(), vec![1.5, 3.0, 5.0]);
        assert_eq!(
            ClusteredSample::new(vec![vec![1.0, 2.0]]),
            Err(StatsError::TooFew { what: "requests", expected: 2, actual: 1 })
        );
        assert_eq!(ClusteredSample::new(vec![vec![1.0], vec![]]), Err(StatsError::EmptyRequest { index: 1 }));
        assert_eq!(
            ClusteredSample::new(vec![vec![1.0], vec![2.0, f64::INFINITY]]),
            Err(StatsError::NotFinite { index: 2, value: f64::INFINITY })
        );
    }

    #[test]
    fn refuses_too_few_pairs_and_bad_values() {
        assert!(matches!(PairedSample::new(vec![vec![1.0]]), Err(StatsError::TooFew { .. })));
        assert!(matches!(PairedSample::new(vec![vec![1.0, f64::NAN]]), Err(StatsError::NotFinite { .. })));
        assert!(matches!(PairedSample::new(vec![vec![1.0, 0.0]]), Err(StatsError::NotPositive { .. })));
        assert!(matches!(PairedSample::new(vec![vec![1.0, 2.0], vec![]]), Err(StatsError::EmptyRequest { .. })));
        assert!(matches!(
            PairedSample::from_medians(&[vec![(1.0, 0.0), (1.0, 1.0)]]),
            Err(StatsError::NotPositive { .. })
        ));
    }
}
