//! The paired energy ratio of one adapter against the reference, judged as time is: from the
//! per-pair log ratios `d_k = ln(e_X,k / e_R,k)` of the per-token energies of adjacent requests
//! (interleaved order), A B / B A blocks of two pairs (`stats::PairBlocks`), Yuen's trimmed
//! mean of the blocks with its error (`stats::LogEstimate::paired`) and the test of
//! `stats::decision` (significance at α, equivalence against the margin). The logs make the
//! ratio symmetric (X/R is 1 / (R/X)) and the interval multiplicative.

use decode_baseline_wire::energy::EnergyRatio;

use crate::stats::{DecisionConfig, LogEstimate, PairBlocks, StatsError};

/// The paired estimate of the pair log ratios, by worker run and in request order within each
/// (at least two pairs, one block; a run's last unpaired pair is left out, as for time): what
/// [`paired_energy_ratio`] tests, and what two sessions' comparison subtracts (`compare`).
/// Several runs give the run-means rule, whose error holds run-to-run effects; one run gives
/// no verdict (`stats::decision`).
pub fn paired_energy_estimate(runs: &[Vec<f64>], trim: f64) -> Result<LogEstimate, StatsError> {
    if let Some((index, &value)) = runs.iter().flatten().enumerate().find(|(_, d)| !d.is_finite()) {
        return Err(StatsError::NotFinite { index, value });
    }
    let blocks = PairBlocks::from_blocks(runs.iter().map(|run| PairBlocks::blocks_of(run)).collect())?;
    LogEstimate::paired(&blocks, trim)
}

/// The ratio, its interval and verdict from the pair log ratios by run.
pub fn paired_energy_ratio(runs: &[Vec<f64>], config: &DecisionConfig) -> Result<EnergyRatio, StatsError> {
    energy_ratio(&paired_energy_estimate(runs, config.trim)?, config)
}

/// `estimate` tested (a family of one) and written as an energy ratio.
pub fn energy_ratio(estimate: &LogEstimate, config: &DecisionConfig) -> Result<EnergyRatio, StatsError> {
    let decision = crate::stats::decide_alone(estimate, None, 1, config)?;
    Ok(EnergyRatio {
        ratio: decision.ratio,
        lower: decision.ci.lower,
        upper: decision.ci.upper,
        confidence: 1.0 - config.alpha,
        // A two-sample estimate (a non-interleaved session) has no pairs: its requests count.
        pairs: if estimate.pairs > 0 { estimate.pairs } else { estimate.units },
        verdict: decision.verdict,
        p_value: decision.p_value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Verdict;

    /// Pair log ratios around `ln effect`, the A B / B A order effect `±0.04` cancelling within
    /// each block, plus a small spread between blocks, in three runs whose offsets are
    /// −0.004, 0 and +0.004.
    fn pairs(effect: f64, blocks: usize) -> Vec<Vec<f64>> {
        (0..3)
            .map(|run| {
                let offset = 0.004 * (run as f64 - 1.0);
                (0..blocks)
                    .flat_map(|b| {
                        let spread = 0.005 * (((b + run) * 7 % 5) as f64 - 2.0);
                        [effect.ln() + 0.04 + spread + offset, effect.ln() - 0.04 + spread + offset]
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_clear_difference_is_a_verdict_and_the_interval_holds_the_ratio() {
        let more = paired_energy_ratio(&pairs(1.10, 10), &DecisionConfig::default()).unwrap();
        assert_eq!((more.verdict, more.pairs), (Verdict::Slower, 60), "{more:?}");
        assert!((more.ratio - 1.10).abs() < 0.01 && more.lower < more.ratio && more.ratio < more.upper, "{more:?}");
        let less = paired_energy_ratio(&pairs(0.90, 10), &DecisionConfig::default()).unwrap();
        assert_eq!(less.verdict, Verdict::Faster, "{less:?}");
        let same = paired_energy_ratio(&pairs(1.0, 10), &DecisionConfig::default()).unwrap();
        assert_eq!(same.verdict, Verdict::NoDifference, "{same:?}");
        assert!((same.confidence - 0.95).abs() < 1e-12);
        // One run cannot show run-to-run effects: its figures, and no verdict.
        let one = paired_energy_ratio(&pairs(1.10, 10)[..1], &DecisionConfig::default()).unwrap();
        assert_eq!((one.verdict, one.pairs), (Verdict::Inconclusive, 20), "{one:?}");
        assert!(one.lower > 1.0, "{one:?}");
    }

    #[test]
    fn swapping_the_sides_inverts_the_ratio_and_its_interval() {
        let d = pairs(1.07, 6);
        let neg: Vec<Vec<f64>> = d.iter().map(|run| run.iter().map(|x| -x).collect()).collect();
        let config = DecisionConfig::default();
        let (a, b) = (paired_energy_ratio(&d, &config).unwrap(), paired_energy_ratio(&neg, &config).unwrap());
        assert!((a.ratio * b.ratio - 1.0).abs() < 1e-12);
        assert!((a.lower * b.upper - 1.0).abs() < 1e-12);
    }

    #[test]
    fn fewer_than_one_block_or_a_non_finite_pair_is_refused() {
        let config = DecisionConfig::default();
        assert!(matches!(paired_energy_ratio(&[vec![0.1]], &config), Err(StatsError::TooFew { .. })));
        assert!(matches!(
            paired_energy_ratio(&[vec![0.1, 0.2], vec![0.1, f64::INFINITY]], &config),
            Err(StatsError::NotFinite { index: 3, .. })
        ));
    }
}
