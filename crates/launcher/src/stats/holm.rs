//! Holm's step-down procedure (Holm 1979): `m` tests of one comparison (its rows) at a
//! family-wise false-alarm rate `α`.
//!
//! Sort the p-values `p_(1) ≤ … ≤ p_(m)`; reject `H_(1) … H_(k)` for the largest `k` such that
//! `p_(i) ≤ α / (m − i + 1)` for every `i ≤ k`, and none after the first that fails. The chance
//! that any true null is rejected is at most `α`, whatever the dependence between the rows.

/// Per test, in input order: the level it was held to, `α / (m − i + 1)` at its rank `i`, and
/// whether it is rejected. Ties keep input order; NaN p-values are never rejected.
pub fn holm(p_values: &[f64], alpha: f64) -> Vec<(f64, bool)> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let mut out = vec![(alpha, false); m];
    let mut rejecting = true;
    for (rank, &i) in order.iter().enumerate() {
        let level = alpha / (m - rank) as f64;
        rejecting = rejecting && p_values[i] <= level;
        out[i] = (level, rejecting);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_down_stops_at_the_first_failure() {
        // m = 4, α = 0.05: levels 0.0125, 0.01667, 0.025, 0.05 by rank.
        // Sorted p: 0.01 (≤ 0.0125 reject), 0.02 (> 0.01667 stop), 0.03, 0.04 (would pass 0.05
        // alone, but the procedure has stopped).
        let r = holm(&[0.04, 0.01, 0.03, 0.02], 0.05);
        assert_eq!(r.iter().map(|x| x.1).collect::<Vec<_>>(), [false, true, false, false]);
        assert!((r[1].0 - 0.0125).abs() < 1e-15 && (r[0].0 - 0.05).abs() < 1e-15);
        // One test: the plain level.
        assert_eq!(holm(&[0.049], 0.05), vec![(0.05, true)]);
        assert_eq!(holm(&[f64::NAN, 0.001], 0.05), vec![(0.05, false), (0.025, true)]);
    }
}
