//! The quantity a verdict tests: a log ratio of times with its own standard error and degrees
//! of freedom, and the rule that produced it. `exp(estimate)` is the ratio (below 1: the
//! numerator is faster). Four rules, one per design:
//!
//! - **`paired_blocks`**, one interleaved worker run per adapter: the blocks `b_j` of
//!   `blocks` (A B / B A means of `d_k = ln X_k − ln R_k`); estimate the 20 % trimmed mean of the
//!   blocks, error Yuen's on `h − 1` degrees of freedom (`trimmed`), inflated by the serial
//!   correlation of neighbouring blocks when it is positive. Run-to-run effects (whatever makes
//!   one worker process of the same code faster than another) are not measured: one run per
//!   side cannot show them; a host noise profile (`profile`) or repetitions can.
//! - **`paired_run_means`**, `R ≥ 2` interleaved runs: each run's trimmed mean of its blocks
//!   `m_r`; estimate `m̄ = (1/R) Σ m_r`, error `s_m / √R` with `s_m` the standard deviation of the
//!   `m_r`, on `R − 1` degrees of freedom. One level of resampling per level of replication: the
//!   run means carry the pair-to-pair noise and the run-to-run effects once each (a two-level
//!   bootstrap of runs and then of pairs in each run counts the pair noise twice). With two runs
//!   that is one degree of freedom: calibrated, but a large detectable difference.
//! - **`request_medians`**, a non-interleaved (`alternate`) session, which has no pairs: per request
//!   the log of its median step time, one sample per adapter; Yuen's two-sample test (trimmed
//!   means, Welch–Satterthwaite degrees of freedom) of the adapter against the reference. The
//!   machine's drift between the two workers' runs is in it, and run-to-run effects are not
//!   measured (the requests of one run share them).
//! - **`run_means`**, a non-interleaved session (or the raw times of two sessions) with `R_x, R_r ≥ 2`
//!   worker runs a side: per run the trimmed mean of its requests' log median step times; Welch's
//!   test of the run means of one side against the other's (no trimming: a handful of values),
//!   on Welch–Satterthwaite degrees of freedom. The run is the unit, so its error holds the
//!   run-to-run effects the request medians of one run share.
//! - **`session_difference`**, two sessions: `e_B − e_A` of the two sessions' estimates (each by
//!   one of the rules above), error `√(SE_A² + SE_B²)`, Welch–Satterthwaite degrees of freedom.

use super::blocks::PairBlocks;
use super::error::StatsError;
use super::trimmed::{serial_inflation, welch_df, yuen_welch, TrimmedMean};
pub use decode_baseline_wire::decision::Rule;

/// A log ratio with its own error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogEstimate {
    pub rule: Rule,
    /// `ln` of the ratio.
    pub estimate: f64,
    /// Its standard error, from the data alone.
    pub se: f64,
    /// The error before the serial-correlation inflation (equal to `se` when none applied): what
    /// a noise profile's error is held against, since the profile's spread already holds the
    /// correlation of neighbouring pairs and must not be counted twice.
    pub se_uncorrelated: f64,
    /// Degrees of freedom of the t reference.
    pub df: f64,
    /// Independent units behind it: blocks, runs, or requests of both sides.
    pub units: usize,
    /// Request pairs used (0 for non-interleaved sessions).
    pub pairs: usize,
    /// The lag-1 autocorrelation of the blocks used to inflate the error, when positive.
    pub serial_correlation: Option<f64>,
    /// Whether the error holds run-to-run effects (several runs per side).
    pub run_effects_measured: bool,
}

impl LogEstimate {
    /// The paired estimate of `blocks`: `paired_blocks` for one run, `paired_run_means` for
    /// several.
    pub fn paired(blocks: &PairBlocks, trim: f64) -> Result<Self, StatsError> {
        let runs = blocks.runs();
        if runs.len() == 1 {
            let t = TrimmedMean::of(&runs[0], trim)?;
            let (factor, r) = serial_inflation(&runs[0], trim)?;
            return Ok(LogEstimate {
                rule: Rule::PairedBlocks,
                estimate: t.mean,
                se: t.se * factor.sqrt(),
                se_uncorrelated: t.se,
                df: (t.df / factor).max(1.0),
                units: t.n,
                pairs: blocks.pairs(),
                serial_correlation: r,
                run_effects_measured: false,
            });
        }
        let means: Vec<f64> = runs.iter().map(|run| run_mean(run, trim)).collect::<Result<_, _>>()?;
        let t = TrimmedMean::of(&means, 0.0)?;
        Ok(LogEstimate {
            rule: Rule::PairedRunMeans,
            estimate: t.mean,
            se: t.se,
            se_uncorrelated: t.se,
            df: t.df,
            units: means.len(),
            pairs: blocks.pairs(),
            serial_correlation: None,
            run_effects_measured: true,
        })
    }

    /// Yuen's two-sample estimate `mean_t(x) − mean_t(reference)` of per-request log medians
    /// (`rule` is `request_medians` or `raw_request_medians`; [`Self::run_means`] uses it
    /// untrimmed on run means).
    pub fn two_sample(x: &[f64], reference: &[f64], trim: f64, rule: Rule) -> Result<Self, StatsError> {
        let (a, b) = (TrimmedMean::of(x, trim)?, TrimmedMean::of(reference, trim)?);
        let (estimate, se, df) = yuen_welch(&a, &b);
        Ok(LogEstimate {
            rule,
            estimate,
            se,
            se_uncorrelated: se,
            df,
            units: a.n + b.n,
            pairs: 0,
            serial_correlation: None,
            run_effects_measured: false,
        })
    }

    /// Two sides without pairs, each side's values (per-request logs) grouped by worker run:
    /// Welch's test of the runs' `trim` trimmed means when each side has two runs or more
    /// (`run_means`), else Yuen's two-sample test of all values under `one_run_rule`, whose
    /// error is blind to run-to-run effects (no verdict, `decision`). At least two values a side.
    pub fn unpaired(x: &[Vec<f64>], reference: &[Vec<f64>], trim: f64, one_run_rule: Rule) -> Result<Self, StatsError> {
        let runs = |side: &[Vec<f64>]| -> Vec<Vec<f64>> { side.iter().filter(|r| !r.is_empty()).cloned().collect() };
        let (x, reference) = (runs(x), runs(reference));
        if x.len() >= 2 && reference.len() >= 2 {
            let means = |side: &[Vec<f64>]| side.iter().map(|run| run_mean(run, trim)).collect::<Result<Vec<f64>, _>>();
            return Self::run_means(&means(&x)?, &means(&reference)?);
        }
        let (x, reference) = (x.concat(), reference.concat());
        for side in [&x, &reference] {
            if side.len() < 2 {
                return Err(StatsError::TooFew { what: "requests", expected: 2, actual: side.len() });
            }
        }
        Self::two_sample(&x, &reference, trim, one_run_rule)
    }

    /// Welch's test of run means `x` against `reference` (`run_means`, at least two a side):
    /// Yuen's untrimmed; the run is the unit, so the error holds run-to-run effects.
    pub fn run_means(x: &[f64], reference: &[f64]) -> Result<Self, StatsError> {
        Ok(LogEstimate { run_effects_measured: true, ..Self::two_sample(x, reference, 0.0, Rule::RunMeans)? })
    }

    /// `b − a` of two sessions' estimates.
    pub fn difference(b: &LogEstimate, a: &LogEstimate) -> Self {
        let (db, da) = (b.se.powi(2), a.se.powi(2));
        LogEstimate {
            rule: Rule::SessionDifference,
            estimate: b.estimate - a.estimate,
            se: (db + da).sqrt(),
            se_uncorrelated: (b.se_uncorrelated.powi(2) + a.se_uncorrelated.powi(2)).sqrt(),
            df: welch_df(&[(db, b.df), (da, a.df)]),
            units: b.units + a.units,
            pairs: b.pairs + a.pairs,
            serial_correlation: None,
            run_effects_measured: b.run_effects_measured && a.run_effects_measured,
        }
    }

    /// The ratio, `exp(estimate)`.
    pub fn ratio(&self) -> f64 {
        self.estimate.exp()
    }
}

/// A run's `trim` trimmed mean (a run of one value: that value): the unit of the run-means rules.
fn run_mean(run: &[f64], trim: f64) -> Result<f64, StatsError> {
    match run {
        [one] => Ok(*one),
        _ => TrimmedMean::of(run, trim).map(|t| t.mean),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_run_is_a_trimmed_mean_of_blocks_and_several_runs_use_run_means() {
        // Blocks 0.1 ± 0.01 alternating: serial correlation negative, no inflation.
        let run: Vec<f64> = (0..10).map(|i| 0.1 + if i % 2 == 0 { 0.01 } else { -0.01 }).collect();
        let one = LogEstimate::paired(&PairBlocks::from_blocks(vec![run.clone()]).unwrap(), 0.2).unwrap();
        assert_eq!((one.rule, one.units, one.pairs, one.serial_correlation), (Rule::PairedBlocks, 10, 20, None));
        assert!((one.estimate - 0.1).abs() < 1e-12 && (one.df - 5.0).abs() < 1e-12, "{one:?}");

        // Three runs whose means are 0.1, 0.2, 0.3: estimate 0.2, SE = 0.1 / √3 on 2 df.
        let runs: Vec<Vec<f64>> = [0.1, 0.2, 0.3].iter().map(|m| run.iter().map(|b| b - 0.1 + m).collect()).collect();
        let several = LogEstimate::paired(&PairBlocks::from_blocks(runs).unwrap(), 0.2).unwrap();
        assert_eq!((several.rule, several.units, several.df), (Rule::PairedRunMeans, 3, 2.0));
        assert!((several.estimate - 0.2).abs() < 1e-12);
        assert!((several.se - 0.1 / 3f64.sqrt()).abs() < 1e-12, "{several:?}");
        assert!(several.run_effects_measured && !one.run_effects_measured);
    }

    #[test]
    fn unpaired_sides_use_run_means_from_two_runs_a_side_and_requests_below() {
        // Runs of requests whose means are 0.1, 0.3 (x) and 0.0, 0.2 (reference): run means
        // 0.2 against 0.1; each side's sd is 0.1 √2, its mean's error 0.1, so SE = 0.1 √2 on
        // Welch's 2 df.
        let run = |m: f64| vec![m - 0.01, m, m + 0.01];
        let x = [run(0.1), run(0.3)];
        let r = [run(0.0), run(0.2)];
        let e = LogEstimate::unpaired(&x, &r, 0.2, Rule::RequestMedians).unwrap();
        assert_eq!((e.rule, e.units, e.run_effects_measured), (Rule::RunMeans, 4, true));
        assert!((e.estimate - 0.1).abs() < 1e-12 && (e.se - 0.1 * 2f64.sqrt()).abs() < 1e-12, "{e:?}");
        assert!((e.df - 2.0).abs() < 1e-9, "{e:?}");
        // One run a side: the requests, under the rule named, blind to run effects.
        let one = LogEstimate::unpaired(&x[..1], &r, 0.2, Rule::RawRequestMedians).unwrap();
        assert_eq!((one.rule, one.units, one.run_effects_measured), (Rule::RawRequestMedians, 9, false));
        let err = LogEstimate::unpaired(&[vec![0.1]], &r, 0.2, Rule::RequestMedians).unwrap_err();
        assert_eq!(err.to_string(), "too few requests: expected at least 2, got 1");
    }

    #[test]
    fn difference_adds_squared_errors() {
        let a =
            LogEstimate::two_sample(&[0.0, 0.1, 0.2, 0.3], &[0.0, 0.1, 0.2, 0.3], 0.0, Rule::RequestMedians).unwrap();
        assert_eq!(a.estimate, 0.0);
        let mut b = a;
        b.estimate = 0.05;
        let d = LogEstimate::difference(&b, &a);
        assert!((d.estimate - 0.05).abs() < 1e-15);
        assert!((d.se - a.se * 2f64.sqrt()).abs() < 1e-15);
        // Two equal parts of 6 df each (two samples of 4, Welch) → 12.
        assert!((a.df - 6.0).abs() < 1e-12 && (d.df - 12.0).abs() < 1e-9, "{a:?} {d:?}");
    }
}
