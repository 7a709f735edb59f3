//! Which noise threshold a row of a comparison is held against, and where it came from.
//!
//! In order: `--threshold` when given; else the widest threshold any A/A pair recorded for that
//! cell implies (`NoiseThreshold::from_aa_pair`, floored at 1 %), over the A/A pairs of both
//! adapters (one session) or of that adapter in both sessions (two sessions); else the widest over
//! the A/A pairs of the other cells of the session(s) (the launcher runs A/A pairs for headline
//! cells only, and the noise they saw is the best measure there is of the machine during that
//! session); else the default, `DEFAULT_NOISE_THRESHOLD` (2 %). The derivation is in
//! `req/compare.md`.

use decode_baseline::stats::{NoiseThreshold, RatioEstimate, DEFAULT_NOISE_THRESHOLD};
use serde::Serialize;

/// Where a row's threshold came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThresholdOrigin {
    /// `--threshold` on the command line.
    Flag,
    /// The A/A pairs recorded in the session(s) for this cell.
    AaPair,
    /// No A/A pair for this cell: the A/A pairs of the other cells of the session(s).
    AaPairOtherCells,
    /// No A/A pair for this cell: `DEFAULT_NOISE_THRESHOLD`.
    Default,
}

/// A row's threshold, its origin, and which A/A pairs were considered.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RowThreshold {
    pub threshold: NoiseThreshold,
    pub origin: ThresholdOrigin,
    /// The A/A pairs considered (e.g. `stock`, or `B controlled`); the widest one decided.
    pub aa_pairs: Vec<String>,
}

fn widest(aa: &[(String, RatioEstimate)], origin: ThresholdOrigin) -> Option<RowThreshold> {
    let threshold =
        aa.iter().map(|(_, ratio)| NoiseThreshold::from_aa_pair(ratio)).max_by(|a, b| a.value.total_cmp(&b.value))?;
    Some(RowThreshold { threshold, origin, aa_pairs: aa.iter().map(|(label, _)| label.clone()).collect() })
}

/// Picks the threshold for one row from the flag, the labelled A/A ratios of the row's cell
/// (`own`) and those of the other cells (`others`).
pub fn choose(
    flag: Option<NoiseThreshold>,
    own: &[(String, RatioEstimate)],
    others: &[(String, RatioEstimate)],
) -> RowThreshold {
    if let Some(threshold) = flag {
        return RowThreshold { threshold, origin: ThresholdOrigin::Flag, aa_pairs: Vec::new() };
    }
    match widest(own, ThresholdOrigin::AaPair).or_else(|| widest(others, ThresholdOrigin::AaPairOtherCells)) {
        Some(row) => row,
        None => RowThreshold {
            threshold: NoiseThreshold::given(DEFAULT_NOISE_THRESHOLD).expect("the default threshold is valid"),
            origin: ThresholdOrigin::Default,
            aa_pairs: Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use decode_baseline::stats::{BootstrapConfig, Interval, Resampling, ThresholdSource};

    fn aa(lower: f64, upper: f64) -> RatioEstimate {
        RatioEstimate {
            ratio: 1.0,
            ci: Interval { lower, upper, bootstrap: BootstrapConfig::default(), resampling: Resampling::ByRequest },
        }
    }

    #[test]
    fn flag_wins_then_the_cells_aa_pairs_then_other_cells_then_default() {
        let pairs = vec![("controlled".to_owned(), aa(0.99, 1.015)), ("stock".to_owned(), aa(0.96, 1.01))];
        let flag = choose(Some(NoiseThreshold::given(0.05).unwrap()), &pairs, &[]);
        assert_eq!((flag.origin, flag.threshold.value), (ThresholdOrigin::Flag, 0.05));

        let measured = choose(None, &pairs, &[("x stock".to_owned(), aa(0.5, 1.5))]);
        assert_eq!(measured.origin, ThresholdOrigin::AaPair);
        assert!((measured.threshold.value - 0.04).abs() < 1e-12, "{measured:?}");
        assert_eq!(measured.aa_pairs, vec!["controlled", "stock"]);

        let floored = choose(None, &[("stock".to_owned(), aa(0.999, 1.002))], &[]);
        assert_eq!((floored.threshold.value, floored.threshold.source), (0.01, ThresholdSource::Floor));

        let other = choose(None, &[], &pairs);
        assert_eq!(other.origin, ThresholdOrigin::AaPairOtherCells);
        assert!((other.threshold.value - 0.04).abs() < 1e-12, "{other:?}");

        let default = choose(None, &[], &[]);
        assert_eq!((default.origin, default.threshold.value), (ThresholdOrigin::Default, DEFAULT_NOISE_THRESHOLD));
    }
}
