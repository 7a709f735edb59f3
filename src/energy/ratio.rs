//! The paired energy ratio of one adapter against the reference, from per-pair log ratios
//! `d_k = ln(e_X,k / e_R,k)` of the per-token energies of adjacent requests (interleaved order):
//! `ratio = exp(mean d)`, and a Student t interval `exp(mean d ± t_{n-1, 1-α/2} s / √n)` with
//! `s` the n - 1 standard deviation of the `d_k`. The logs make the ratio symmetric (X/R is
//! 1 / (R/X)) and the interval multiplicative.
//!
//! One small function on purpose: the paired verdict engine of `src/stats` (median pair ratio,
//! its bootstrap, the noise threshold and the verdict) can take its place at merge.

use decode_baseline_wire::energy::EnergyRatio;
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::stats::{Sample, StatsError};

/// The ratio and its `confidence` t-interval from the pair log ratios (at least two, finite).
pub fn paired_energy_ratio(log_ratios: &[f64], confidence: f64) -> Result<EnergyRatio, StatsError> {
    let sample = Sample::new(log_ratios.to_vec())?;
    let n = sample.len() as f64;
    let mean = sample.mean();
    let t = StudentsT::new(0.0, 1.0, n - 1.0).expect("n ≥ 2 gives a positive degree of freedom");
    let half = t.inverse_cdf(1.0 - (1.0 - confidence) / 2.0) * sample.std_dev() / n.sqrt();
    Ok(EnergyRatio {
        ratio: mean.exp(),
        lower: (mean - half).exp(),
        upper: (mean + half).exp(),
        confidence,
        pairs: sample.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ratio_is_the_geometric_mean_with_a_t_interval() {
        // d = ln 1.1 ± 0.05: mean ln 1.1, s = sqrt(4 · 0.0025 / 3) = 0.057735, n = 4,
        // t_{3, 0.975} = 3.182446: half width 0.091868.
        let d: Vec<f64> = [0.05, -0.05, 0.05, -0.05].iter().map(|e| 1.1f64.ln() + e).collect();
        let r = paired_energy_ratio(&d, 0.95).unwrap();
        assert!((r.ratio - 1.1).abs() < 1e-12, "{r:?}");
        let half = 3.182446 * (0.01f64 / 3.0).sqrt() / 2.0;
        assert!((r.lower - (1.1f64.ln() - half).exp()).abs() < 1e-5, "{r:?}");
        assert!((r.upper - (1.1f64.ln() + half).exp()).abs() < 1e-5, "{r:?}");
        assert_eq!((r.pairs, r.confidence), (4, 0.95));
    }

    #[test]
    fn swapping_the_sides_inverts_the_ratio_and_its_interval() {
        let d = [0.1, 0.02, 0.07, 0.12, 0.03];
        let neg: Vec<f64> = d.iter().map(|x| -x).collect();
        let (a, b) = (paired_energy_ratio(&d, 0.95).unwrap(), paired_energy_ratio(&neg, 0.95).unwrap());
        assert!((a.ratio * b.ratio - 1.0).abs() < 1e-12);
        assert!((a.lower * b.upper - 1.0).abs() < 1e-12);
    }

    #[test]
    fn fewer_than_two_pairs_or_a_non_finite_one_is_refused() {
        assert!(matches!(paired_energy_ratio(&[0.1], 0.95), Err(StatsError::TooFew { .. })));
        assert!(matches!(paired_energy_ratio(&[0.1, f64::INFINITY], 0.95), Err(StatsError::NotFinite { .. })));
    }
}
