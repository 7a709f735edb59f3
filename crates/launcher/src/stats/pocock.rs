//! Group-sequential boundaries (Pocock 1977): look at the data after each of `K` equal groups
//! and stop at the first significant look, keeping the overall false-alarm rate at `α`. For a
//! later `run --until-decided`: after group `k` of `K`, call the row significant when its
//! two-sided p-value is below the boundary's `nominal_alpha` (the same at every look).
//!
//! With `S_k` the sum of `k` independent standard normal increments and `Z_k = S_k / √k`, the
//! Pocock constant `c = c_P(K, α)` solves `P(max_{k ≤ K} |Z_k| ≥ c) = α`. It is computed here,
//! not tabulated, by the recursive numerical integration of Armitage, McPherson & Rowe (1969):
//! the sub-density of `S_k` on the continuation region `|s| < c √k`,
//!
//! `f_1(s) = φ(s)`, `f_k(s) = ∫_{|u| < c √(k−1)} f_{k−1}(u) φ(s − u) du`,
//!
//! on a grid of step `GRID_STEP` with Simpson's rule, `P(continue to the end) = ∫ f_K`, and `c`
//! by bisection. Deterministic (no random numbers); the tests hold it to Jennison & Turnbull
//! (2000), Table 2.1, and to a seeded simulation of the looks. The nominal level
//! `α' = 2 (1 − Φ(c))` assumes normal statistics; applied to t statistics' p-values it is the
//! usual repeated-significance approximation (slightly liberal for few degrees of freedom).

use statrs::distribution::{ContinuousCDF, Normal};

use super::error::StatsError;

/// Grid step of the integration, in units of one group's standard deviation.
pub const GRID_STEP: f64 = 0.05;
/// The most looks a boundary is computed for.
pub const MAX_LOOKS: usize = 50;

/// A Pocock boundary for `looks` equally spaced looks at overall level `alpha`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PocockBoundary {
    pub looks: usize,
    /// Overall two-sided false-alarm rate.
    pub alpha: f64,
    /// `c_P(K, α)`: reject at a look when `|Z| ≥ c`.
    pub critical: f64,
    /// The two-sided p-value a look must fall below, `2 (1 − Φ(c))`.
    pub nominal_alpha: f64,
}

/// The Pocock boundary for `looks` looks at overall two-sided level `alpha`.
pub fn pocock(looks: usize, alpha: f64) -> Result<PocockBoundary, StatsError> {
    if !(1..=MAX_LOOKS).contains(&looks) {
        return Err(StatsError::InvalidSetting {
            field: "looks",
            expected: "a whole number from 1 to 50",
            actual: looks.to_string(),
        });
    }
    if !(alpha > 0.0 && alpha < 0.5) {
        return Err(StatsError::InvalidSetting {
            field: "alpha",
            expected: "a fraction strictly between 0 and 0.5",
            actual: alpha.to_string(),
        });
    }
    let (mut lo, mut hi) = (1.0, 6.0);
    while hi - lo > 1e-5 {
        let mid = (lo + hi) / 2.0;
        if crossing_probability(mid, looks) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let critical = (lo + hi) / 2.0;
    let normal = Normal::standard();
    Ok(PocockBoundary { looks, alpha, critical, nominal_alpha: 2.0 * normal.sf(critical) })
}

/// `P(max_{k ≤ K} |S_k / √k| ≥ c)` by the recursion in the module docs.
pub fn crossing_probability(c: f64, looks: usize) -> f64 {
    let phi = |x: f64| (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
    // Grid of look k: 2m + 1 points spanning [−c√k, c√k], m chosen so the step is ≤ GRID_STEP.
    let grid = |k: usize| {
        let bound = c * (k as f64).sqrt();
        let m = (bound / GRID_STEP).ceil().max(1.0) as usize;
        let h = bound / m as f64;
        let points: Vec<f64> = (0..=2 * m).map(|i| -bound + h * i as f64).collect();
        // Simpson weights over 2m intervals: h/3 · (1, 4, 2, 4, …, 4, 1).
        let weights: Vec<f64> = (0..=2 * m)
            .map(|i| {
                let w = if i == 0 || i == 2 * m {
                    1.0
                } else if i % 2 == 1 {
                    4.0
                } else {
                    2.0
                };
                w * h / 3.0
            })
            .collect();
        (points, weights)
    };
    let (mut points, mut weights) = grid(1);
    let mut density: Vec<f64> = points.iter().map(|&s| phi(s)).collect();
    for k in 2..=looks {
        let (next_points, next_weights) = grid(k);
        let weighted: Vec<f64> = density.iter().zip(&weights).map(|(f, w)| f * w).collect();
        density =
            next_points.iter().map(|&s| points.iter().zip(&weighted).map(|(&u, &fw)| fw * phi(s - u)).sum()).collect();
        points = next_points;
        weights = next_weights;
    }
    let continuing: f64 = density.iter().zip(&weights).map(|(f, w)| f * w).sum();
    (1.0 - continuing).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::{rand_core::RngCore, rand_core::SeedableRng, ChaCha8Rng};

    #[test]
    fn constants_match_jennison_and_turnbull_table_2_1() {
        // c_P(K, 0.05) and c_P(K, 0.01), Jennison & Turnbull (2000), Table 2.1 (3 decimals).
        for (looks, alpha, table) in [
            (1, 0.05, 1.960),
            (2, 0.05, 2.178),
            (3, 0.05, 2.289),
            (4, 0.05, 2.361),
            (5, 0.05, 2.413),
            (10, 0.05, 2.555),
            (1, 0.01, 2.576),
            (2, 0.01, 2.772),
            (5, 0.01, 2.986),
        ] {
            let b = pocock(looks, alpha).unwrap();
            assert!((b.critical - table).abs() < 2e-3, "K = {looks}, α = {alpha}: {} vs {table}", b.critical);
        }
        let b = pocock(5, 0.05).unwrap();
        // 2 (1 − Φ(2.413)) = 0.0158.
        assert!((b.nominal_alpha - 0.0158).abs() < 2e-4, "{b:?}");
    }

    #[test]
    fn a_seeded_simulation_of_the_looks_crosses_at_the_stated_rate() {
        // 40 000 paths of 5 looks; Monte-Carlo SE of 0.05 is 0.0011.
        let b = pocock(5, 0.05).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(28);
        let normal = Normal::standard();
        let mut u = || ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let trials = 40_000;
        let mut crossed = 0;
        for _ in 0..trials {
            let mut s = 0.0;
            for k in 1..=5 {
                s += normal.inverse_cdf(u());
                if s.abs() / (k as f64).sqrt() >= b.critical {
                    crossed += 1;
                    break;
                }
            }
        }
        let rate = f64::from(crossed) / f64::from(trials);
        assert!((rate - 0.05).abs() < 0.0035, "crossed {rate}");
    }

    #[test]
    fn settings_are_checked_by_name() {
        assert!(matches!(pocock(0, 0.05), Err(StatsError::InvalidSetting { field: "looks", .. })));
        assert!(matches!(pocock(3, 0.7), Err(StatsError::InvalidSetting { field: "alpha", .. })));
    }
}
