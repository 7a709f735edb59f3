//! From request pairs to the units of the paired test: A B / B A blocks of log differences.
//!
//! In an interleaved session the launcher grants round `k` to the adapters in their order when
//! `k` is even and in reverse when odd (`launcher::interleave::grant_order`), so neighbouring
//! pairs ran in opposite orders. Per pair `k`, with `X_k` and `R_k` the median step times of the
//! adapter's and the reference's request `k`,
//!
//! `d_k = ln X_k − ln R_k`,
//!
//! and per block `j` (pairs `2j` and `2j + 1` of one worker run, in run order)
//!
//! `b_j = (d_{2j} + d_{2j+1}) / 2`.
//!
//! An order effect (the second request of a round is faster: a warmer cache) enters `d_{2j}`
//! with one sign and `d_{2j+1}` with the other and cancels in `b_j`; so does a drift linear over
//! the two pairs. A run with an odd number of pairs leaves its last pair out (it has no partner
//! of the other order); a pair missing in the middle of a run (a request that failed
//! validation) would shift the parity of the pairs after it, which the order effect then adds
//! to those blocks' noise rather than their mean.

use super::error::StatsError;

/// Block log differences `b_j`, grouped by worker run, in run order; at least one block in all.
#[derive(Debug, Clone, PartialEq)]
pub struct PairBlocks {
    runs: Vec<Vec<f64>>,
    pairs: usize,
}

impl PairBlocks {
    /// The blocks of pairs given as `(adapter median, reference median)` per pair, grouped by
    /// worker run. Every median must be finite and positive. Runs with fewer than two pairs
    /// give no block and are left out.
    pub fn from_pair_medians(runs: &[Vec<(f64, f64)>]) -> Result<Self, StatsError> {
        let mut out = Vec::new();
        let mut pairs = 0;
        for run in runs {
            let mut d = Vec::with_capacity(run.len());
            for &(x, r) in run {
                for (side, v) in [("numerator", x), ("denominator", r)] {
                    if !v.is_finite() || v <= 0.0 {
                        return Err(StatsError::NotPositive { side, value: v });
                    }
                }
                d.push(x.ln() - r.ln());
            }
            let blocks = Self::blocks_of(&d);
            pairs += 2 * blocks.len();
            if !blocks.is_empty() {
                out.push(blocks);
            }
        }
        if out.is_empty() {
            return Err(StatsError::TooFew { what: "A B / B A blocks (two pairs each)", expected: 1, actual: 0 });
        }
        Ok(PairBlocks { runs: out, pairs })
    }

    /// Blocks of log differences `d_k` already computed, one run.
    pub fn blocks_of(d: &[f64]) -> Vec<f64> {
        d.chunks_exact(2).map(|p| (p[0] + p[1]) / 2.0).collect()
    }

    /// Blocks given directly, by run (the simulation's synthetic sessions).
    pub fn from_blocks(runs: Vec<Vec<f64>>) -> Result<Self, StatsError> {
        let runs: Vec<Vec<f64>> = runs.into_iter().filter(|r| !r.is_empty()).collect();
        if runs.is_empty() {
            return Err(StatsError::TooFew { what: "A B / B A blocks (two pairs each)", expected: 1, actual: 0 });
        }
        let pairs = 2 * runs.iter().map(Vec::len).sum::<usize>();
        Ok(PairBlocks { runs, pairs })
    }

    /// The blocks of each run.
    pub fn runs(&self) -> &[Vec<f64>] {
        &self.runs
    }

    /// Pairs used (twice the number of blocks).
    pub fn pairs(&self) -> usize {
        self.pairs
    }

    /// Blocks in all.
    pub fn blocks(&self) -> usize {
        self.pairs / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cancel_an_order_effect_and_drop_an_unpaired_last_pair() {
        // True ratio 1.1; the first request of each round gains 5 % on the second: pairs in
        // order A B have X 5 % faster, pairs in order B A have X 5 % slower.
        let pairs: Vec<(f64, f64)> =
            (0..5).map(|k| if k % 2 == 0 { (1.1 / 1.05, 1.0) } else { (1.1 * 1.05, 1.0) }).collect();
        let blocks = PairBlocks::from_pair_medians(&[pairs]).unwrap();
        assert_eq!((blocks.blocks(), blocks.pairs()), (2, 4));
        for b in &blocks.runs()[0] {
            assert!((b - 1.1f64.ln()).abs() < 1e-12, "{b}");
        }
    }

    #[test]
    fn a_run_of_one_pair_gives_no_block_and_bad_medians_are_refused() {
        let err = PairBlocks::from_pair_medians(&[vec![(1.0, 1.0)]]).unwrap_err();
        assert_eq!(err.to_string(), "too few A B / B A blocks (two pairs each): expected at least 1, got 0");
        assert_eq!(
            PairBlocks::from_pair_medians(&[vec![(1.0, 0.0), (1.0, 1.0)]]),
            Err(StatsError::NotPositive { side: "denominator", value: 0.0 })
        );
        let two_runs = PairBlocks::from_pair_medians(&[vec![(1.0, 1.0)], vec![(2.0, 1.0), (2.0, 1.0)]]).unwrap();
        assert_eq!(two_runs.runs().len(), 1);
    }
}
