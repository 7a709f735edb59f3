//! One adapter against a yardstick, from one session to another.
//!
//! Two sessions run minutes or days apart on a machine whose speed moves by tens of percent from
//! run to run; a plain B/A ratio of an adapter's times carries all of that. But within each
//! session the adapter ran beside the reference adapter (stock), on the same machine at the
//! same time, so the adapter's ratio to the reference holds the machine constant. The
//! comparison that survives the machine's drift is the ratio of those ratios:
//!
//! `(X_B / ref_B) / (X_A / ref_A)`,
//!
//! where each session's ratio is the paired ratio of an interleaved session (`paired`) or the
//! ratio of medians of a non-interleaved one (`ratio`). The interval redraws both sessions
//! independently in every bootstrap round. What it cannot tell apart: X slower by 3 %, or the
//! reference faster by 3 %. A verdict on it says "X against the reference".

use super::bootstrap::{quotient_interval, Source, Statistic};
use super::error::StatsError;
use super::sample::{ClusteredSample, PairedSample};
use decode_baseline_wire::stats::BootstrapConfig;
use decode_baseline_wire::stats::RatioEstimate;

/// An adapter's ratio to the reference within one session, in a form the bootstrap redraws.
#[derive(Debug, Clone, Copy)]
pub enum SessionRatio<'a> {
    /// Interleaved: the pair ratios.
    Paired(&'a PairedSample),
    /// Non-interleaved: the adapter's and the reference's steps, by request.
    Medians { adapter: &'a ClusteredSample, reference: &'a ClusteredSample },
}

impl SessionRatio<'_> {
    /// The session's ratio.
    pub fn point(&self) -> f64 {
        match self {
            SessionRatio::Paired(pairs) => pairs.median(),
            SessionRatio::Medians { adapter, reference } => adapter.pooled().median() / reference.pooled().median(),
        }
    }

    fn statistic(&self) -> Result<Statistic<'_>, StatsError> {
        Ok(match self {
            SessionRatio::Paired(pairs) => Statistic::Median(Source::Pairs(pairs)),
            SessionRatio::Medians { adapter, reference } => {
                for (side, sample) in [("numerator", adapter), ("denominator", reference)] {
                    let min = sample.pooled().min();
                    if min <= 0.0 {
                        return Err(StatsError::NotPositive { side, value: min });
                    }
                }
                Statistic::RatioOfMedians(Source::Requests(adapter), Source::Requests(reference))
            }
        })
    }
}

/// `b.point() / a.point()` with its bootstrap interval.
pub fn against_yardstick(
    b: SessionRatio<'_>,
    a: SessionRatio<'_>,
    config: &BootstrapConfig,
) -> Result<RatioEstimate, StatsError> {
    let ci = quotient_interval(b.statistic()?, a.statistic()?, config)?;
    Ok(RatioEstimate { ratio: b.point() / a.point(), ci })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requests(level: f64) -> ClusteredSample {
        ClusteredSample::new(
            (0..20).map(|r| (0..10).map(|s| level * (1.0 + 0.01 * ((r + s) % 3) as f64)).collect()).collect(),
        )
        .unwrap()
    }

    #[test]
    fn a_machine_twice_as_slow_leaves_the_yardstick_ratio_at_one() {
        let config = BootstrapConfig::default();
        let a = (requests(700.0), requests(1000.0));
        let b = (requests(1400.0), requests(2000.0));
        let moved = against_yardstick(
            SessionRatio::Medians { adapter: &b.0, reference: &b.1 },
            SessionRatio::Medians { adapter: &a.0, reference: &a.1 },
            &config,
        )
        .unwrap();
        assert!((moved.ratio - 1.0).abs() < 1e-12, "{moved:?}");
        assert!(moved.ci.contains(1.0));

        let pairs_a = PairedSample::from_medians(&[(0..20).map(|k| (700.0 + k as f64, 1000.0)).collect()]).unwrap();
        let pairs_b =
            PairedSample::from_medians(&[(0..20).map(|k| (1.1 * (700.0 + k as f64), 1000.0)).collect()]).unwrap();
        let slower =
            against_yardstick(SessionRatio::Paired(&pairs_b), SessionRatio::Paired(&pairs_a), &config).unwrap();
        assert!((slower.ratio - 1.1).abs() < 1e-9 && slower.ci.lower > 1.05, "{slower:?}");
    }
}
