//! Drift between early and late measured requests: did the machine speed up or slow down
//! while we measured (thermal throttling, a neighbour, a cache warming)?
//!
//! Input: one figure per measured request (its median per-token time), in the order run. The
//! first `⌊n/2⌋` are "early", the last `⌊n/2⌋` are "late"; with odd `n` the middle request is
//! left out so the halves are equal and disjoint.
//!
//! - `relative_change = median(late) / median(early) - 1`.
//! - Two-sided Mann-Whitney U test (Mann & Whitney 1947) of early against late, normal
//!   approximation with tie correction and continuity correction (as SciPy's
//!   `mannwhitneyu(method="asymptotic")`): with midranks, `U = R_early - n1 (n1 + 1) / 2`,
//!   `μ = n1 n2 / 2`, `σ² = n1 n2 / 12 · ((N + 1) - Σ(t³ - t) / (N (N - 1)))` over tie groups of
//!   size `t`, `z = max(0, |U - μ| - 1/2) / σ`, `p = 2 (1 - Φ(z))` (Φ from statrs). With all
//!   values tied, `σ = 0` and `p = 1`.
//! - Drift is flagged when `p < alpha` and `|relative_change| > threshold`: significant and large
//!   enough to matter. Defaults: alpha 0.05, threshold 0.02.

use super::error::StatsError;
use super::sample::median_in_place;
use decode_baseline_wire::stats::{Drift, DriftConfig};
use statrs::distribution::{ContinuousCDF, Normal};

/// At least this many per-request figures (two per half).
pub const MIN_REQUESTS: usize = 4;
/// Compares the early and late halves of `per_request` (positive, finite, in run order).
pub fn drift_between_halves(per_request: &[f64], config: &DriftConfig) -> Result<Drift, StatsError> {
    if !(config.alpha > 0.0 && config.alpha < 1.0) {
        return Err(StatsError::InvalidSetting {
            field: "alpha",
            expected: "strictly between 0 and 1",
            actual: config.alpha.to_string(),
        });
    }
    if !(config.threshold >= 0.0 && config.threshold.is_finite()) {
        return Err(StatsError::InvalidSetting {
            field: "threshold",
            expected: "a finite number >= 0",
            actual: config.threshold.to_string(),
        });
    }
    if let Some((index, &value)) = per_request.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(StatsError::NotFinite { index, value });
    }
    if let Some(&value) = per_request.iter().find(|&&v| v <= 0.0) {
        return Err(StatsError::NotPositive { side: "per-request figures", value });
    }
    if per_request.len() < MIN_REQUESTS {
        return Err(StatsError::TooFew {
            what: "per-request figures",
            expected: MIN_REQUESTS,
            actual: per_request.len(),
        });
    }
    let half = per_request.len() / 2;
    let early = &per_request[..half];
    let late = &per_request[per_request.len() - half..];
    let early_median = median_in_place(&mut early.to_vec());
    let late_median = median_in_place(&mut late.to_vec());
    let relative_change = late_median / early_median - 1.0;
    let (mann_whitney_u, p_value) = mann_whitney(early, late);
    Ok(Drift {
        half,
        early_median,
        late_median,
        relative_change,
        mann_whitney_u,
        p_value,
        config: *config,
        drifting: p_value < config.alpha && relative_change.abs() > config.threshold,
    })
}

/// `(U of x, two-sided p)`, see the module docs.
fn mann_whitney(x: &[f64], y: &[f64]) -> (f64, f64) {
    let (n1, n2) = (x.len() as f64, y.len() as f64);
    let mut all: Vec<(f64, bool)> = x.iter().map(|&v| (v, true)).chain(y.iter().map(|&v| (v, false))).collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = all.len();
    let (mut rank_sum_x, mut tie_term) = (0.0, 0.0);
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let midrank = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        rank_sum_x += midrank * all[i..=j].iter().filter(|(_, from_x)| *from_x).count() as f64;
        i = j + 1;
    }
    let u = rank_sum_x - n1 * (n1 + 1.0) / 2.0;
    let mu = n1 * n2 / 2.0;
    let big_n = n as f64;
    let variance = n1 * n2 / 12.0 * ((big_n + 1.0) - tie_term / (big_n * (big_n - 1.0)));
    if variance <= 0.0 {
        return (u, 1.0);
    }
    let z = ((u - mu).abs() - 0.5).max(0.0) / variance.sqrt();
    let standard = Normal::new(0.0, 1.0).expect("the standard normal is a valid distribution");
    (u, (2.0 * standard.sf(z)).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mann_whitney_matches_hand_computation() {
        // x = 1..5, y = 6..10: R_x = 15, U = 0, μ = 12.5, σ² = 25/12 · 11,
        // z = 12 / sqrt(22.9166…) = 2.5067182457620487, p = erfc(z / √2) = 0.012185780355344818
        // (Python's math.erfc; SciPy's asymptotic mannwhitneyu gives the same 0.0122).
        let (u, p) = mann_whitney(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]);
        assert_eq!(u, 0.0);
        assert!((p - 0.012185780355344818).abs() < 1e-9, "p = {p}");

        // With ties: x = [1, 2, 2, 3, 5], y = [2, 4, 6, 6, 7]. Midranks: 1→1, 2→3, 3→5, 4→6,
        // 5→7, 6→8.5, 7→10; R_x = 19, U = 4; ties Σ(t³ - t) = 24 + 6 = 30;
        // σ² = 25/12 · (11 - 30/90); z = 8 / σ = 1.697056274847714, p = 0.08968602177036465.
        let (u, p) = mann_whitney(&[1.0, 2.0, 2.0, 3.0, 5.0], &[2.0, 4.0, 6.0, 6.0, 7.0]);
        assert_eq!(u, 4.0);
        assert!((p - 0.08968602177036465).abs() < 1e-9, "p = {p}");

        let (_, p) = mann_whitney(&[3.0, 3.0], &[3.0, 3.0]);
        assert_eq!(p, 1.0);
    }

    #[test]
    fn a_steady_slowdown_is_flagged_and_noise_is_not() {
        // 20 requests: the first ten at ~1000, the last ten at ~1100 (+10 %).
        let slowing: Vec<f64> = (0..20).map(|i| if i < 10 { 1000.0 } else { 1100.0 } + f64::from(i % 3)).collect();
        let d = drift_between_halves(&slowing, &DriftConfig::default()).unwrap();
        assert_eq!(d.half, 10);
        // Early: 1000 + i % 3 for i < 10 → four 1000s, three 1001s, three 1002s → median 1001.
        // Late: 1100 + i % 3 for i ≥ 10 → 1101, 1102, 1100, … → three 1100s, four 1101s,
        // three 1102s → median 1101.
        assert_eq!((d.early_median, d.late_median), (1001.0, 1101.0));
        assert!(d.relative_change > 0.09 && d.relative_change < 0.11);
        assert!(d.p_value < 0.001, "p = {}", d.p_value);
        assert!(d.drifting);
        assert!(d.describe().contains("slower"));

        // Alternating values: no trend.
        let steady: Vec<f64> = (0..20).map(|i| 1000.0 + f64::from(i % 2) * 30.0).collect();
        let d = drift_between_halves(&steady, &DriftConfig::default()).unwrap();
        assert!(!d.drifting, "{d:?}");
        assert_eq!(d.relative_change, 0.0);
    }

    #[test]
    fn significant_but_tiny_change_is_not_drift() {
        // +0.5 %, perfectly separated: significant, but under the 2 % threshold.
        let v: Vec<f64> = (0..20).map(|i| if i < 10 { 1000.0 } else { 1005.0 } + f64::from(i) * 0.01).collect();
        let d = drift_between_halves(&v, &DriftConfig::default()).unwrap();
        assert!(d.p_value < 0.05);
        assert!(!d.drifting);
    }

    #[test]
    fn odd_length_drops_the_middle_request_and_bad_input_is_refused() {
        let d = drift_between_halves(&[1.0, 1.0, 50.0, 2.0, 2.0], &DriftConfig::default()).unwrap();
        assert_eq!((d.half, d.early_median, d.late_median), (2, 1.0, 2.0));
        assert_eq!(
            drift_between_halves(&[1.0, 2.0, 3.0], &DriftConfig::default()),
            Err(StatsError::TooFew { what: "per-request figures", expected: 4, actual: 3 })
        );
        assert!(matches!(
            drift_between_halves(&[1.0, 2.0, 0.0, 3.0], &DriftConfig::default()),
            Err(StatsError::NotPositive { value, .. }) if value == 0.0
        ));
        let bad = DriftConfig { alpha: 0.0, ..DriftConfig::default() };
        assert!(matches!(
            drift_between_halves(&[1.0, 2.0, 3.0, 4.0], &bad),
            Err(StatsError::InvalidSetting { field: "alpha", .. })
        ));
    }
}
