//! A host noise profile: how far one row's estimate moves when nothing changed, split by the
//! levels of the design, fitted from `K` sessions of a job on one host (`calibrate --job`) and
//! sized to whatever session it judges.
//!
//! **The model.** A row's units (A B / B A blocks of pair log ratios, or one adapter's
//! per-request log medians) in run `r` of session `k` are `y = μ + c_k + u_kr + ε`, with a
//! session part `c ~ (0, c²)` shared by every run of a session, a run part `u ~ (0, a²)` (what
//! makes one worker process of the same code faster than another) and a unit part `ε` whose
//! variance as a run's trimmed mean sees it is `b²`. A session of `j` runs of `n` units
//! estimates the row by the mean of its run means, of variance
//!
//! `V(j, n) = c² + (a² + b²/n) / j`.
//!
//! **The fit** ([`fit`]), from the calibration sessions' units by run:
//! - `b²`: per run, the squared error of its trimmed mean times its units (Yuen's, so the
//!   trimming is in it), pooled over every run weighted by its degrees of freedom;
//! - `R = a² + b²/n`: the run means' variance about their session's mean, pooled over the
//!   sessions on `Σ (j_k − 1)` degrees of freedom (`run_var`);
//! - `S² = c² + R/j`: the variance of the `K` sessions' estimates, on `K − 1` (`estimate_var`).
//!
//! **Sizing** ([`sized`]), for a session of `j'` runs of `n'` units:
//!
//! `V̂(j', n') = S² + R (1/j' − 1/j) + b² (1/n' − 1/n) / j'`,
//!
//! unbiased for `V(j', n')`, and at the calibration's own size exactly `S²` on `K − 1` degrees
//! of freedom, the t test of a session like those calibrated. It is held to at least its run
//! part `(max(0, R − b²/n) + b²/n') / j'` (a session part cannot be negative), and its degrees
//! of freedom are Welch–Satterthwaite's over the three estimated parts with their coefficients.
//! Subtracting an estimated `R/j` to find `c²` and adding it back at another size would throw
//! away the session part's uncertainty: clamping `c²` at 0 gave 7.6 % false alarms at a stated
//! 5 % across sessions in the simulation, this estimator 5 % or less. More runs or more units
//! shrink the error by the share the fit says they remove, and no further. Sessions of one run
//! each cannot tell the run part from the session part: `R` is then `b²/n` on `b²`'s degrees
//! of freedom, and everything else stays in `S²`, which never shrinks: conservative.
//!
//! **In a verdict** (`decision`): when the row's own error holds run-to-run effects (run
//! means), the two estimate the same variance and are pooled by their degrees of freedom,
//! `SE² = (ν_o SE_o² + ν_p s·V̂) / (ν_o + ν_p)` on `ν_o + ν_p`, so a profile only ever adds
//! degrees of freedom; when it cannot (one run a side), `SE = max(√(s·V̂), SE_own)` on the
//! profile's, `SE_own` taken before its serial-correlation inflation (the fitted variances hold
//! that correlation already). `s` is the sessions the estimate spans (1 within one session, 2
//! for session B against session A). An own error far outside the profile (`SE_own >
//! OUTSIDE_PROFILE · SE_profile`) says the session is not like the ones profiled; the output
//! suggests recalibrating. The simulation (`simulation`) proves the level of every path with a
//! profile fitted at one size and used at others.

use super::error::StatsError;
use super::trimmed::{welch_df, TrimmedMean};
use decode_baseline_wire::profile::{NoiseProfile, TwoLevelFit};

/// Fewest calibration sessions a profile is made from (`calibrate` should run more: the
/// session-level part is on `K − 1` degrees of freedom).
pub const MIN_PROFILE_SESSIONS: usize = 2;

/// An own error this many times the profile's marks a session unlike the ones profiled.
pub const OUTSIDE_PROFILE: f64 = 3.0;

/// The two-level fit of one row from `sessions`, each its units grouped by run (empty runs
/// left out), and the sessions' estimates (the mean of their runs' `trim` trimmed means, as the
/// rules estimate a row).
pub fn fit(sessions: &[Vec<Vec<f64>>], trim: f64) -> Result<(TwoLevelFit, Vec<f64>), StatsError> {
    let sessions: Vec<Vec<&Vec<f64>>> = sessions
        .iter()
        .map(|s| s.iter().filter(|r| !r.is_empty()).collect::<Vec<_>>())
        .filter(|s| !s.is_empty())
        .collect();
    if sessions.len() < MIN_PROFILE_SESSIONS {
        return Err(StatsError::TooFew {
            what: "sessions with units for a noise profile",
            expected: MIN_PROFILE_SESSIONS,
            actual: sessions.len(),
        });
    }
    let (mut unit_ss, mut unit_df, mut units, mut runs) = (0.0, 0.0, 0usize, 0usize);
    let (mut run_ss, mut run_df) = (0.0, 0.0);
    let mut estimates = Vec::with_capacity(sessions.len());
    let mut means_of = Vec::with_capacity(sessions.len());
    for session in &sessions {
        let mut means = Vec::with_capacity(session.len());
        for run in session {
            units += run.len();
            runs += 1;
            if run.len() == 1 {
                means.push(run[0]);
                continue;
            }
            let t = TrimmedMean::of(run, trim)?;
            unit_ss += t.se.powi(2) * run.len() as f64 * t.df;
            unit_df += t.df;
            means.push(t.mean);
        }
        let mean = means.iter().sum::<f64>() / means.len() as f64;
        run_ss += means.iter().map(|m| (m - mean).powi(2)).sum::<f64>();
        run_df += (means.len() - 1) as f64;
        estimates.push(mean);
        means_of.push(means.len());
    }
    if unit_df == 0.0 {
        return Err(StatsError::TooFew { what: "units in a run (for the unit-level part)", expected: 2, actual: 1 });
    }
    let unit_var = unit_ss / unit_df;
    let units_per_run = units as f64 / runs as f64;
    let run_var = if run_df > 0.0 { run_ss / run_df } else { unit_var / units_per_run };
    let k = estimates.len() as f64;
    let mean = estimates.iter().sum::<f64>() / k;
    let between = estimates.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / (k - 1.0);
    let inverse_runs = means_of.iter().map(|&j| 1.0 / j as f64).sum::<f64>() / k;
    Ok((
        TwoLevelFit {
            sessions: estimates.len(),
            runs_per_session: 1.0 / inverse_runs,
            units_per_run,
            unit_var,
            unit_df,
            run_var,
            run_df,
            estimate_var: between,
            estimate_df: k - 1.0,
        },
        estimates,
    ))
}

/// The fit's three levels as variances: the session part `c² = max(0, S² − R/j₀)`, the run
/// part `a² = max(0, R − b²/n₀)` and one run's units `b²/n₀` (what `calibrate` prints).
pub fn levels(fit: &TwoLevelFit) -> (f64, f64, f64) {
    let (j0, n0) = (fit.runs_per_session, fit.units_per_run);
    ((fit.estimate_var - fit.run_var / j0).max(0.0), (fit.run_var - fit.unit_var / n0).max(0.0), fit.unit_var / n0)
}

/// The variance of one session's estimate of `runs` runs of `units` units each under `fit`, and
/// its degrees of freedom (see the module docs).
pub fn sized(fit: &TwoLevelFit, runs: usize, units: f64) -> (f64, f64) {
    let (j, n) = (runs.max(1) as f64, units.max(1.0));
    let (j0, n0) = (fit.runs_per_session, fit.units_per_run);
    let run_df = if fit.run_df > 0.0 { fit.run_df } else { fit.unit_df };
    // (estimate, coefficient, degrees of freedom) of each estimated part.
    let parts = [
        (fit.estimate_var, 1.0, fit.estimate_df),
        (fit.run_var, 1.0 / j - 1.0 / j0, run_df),
        (fit.unit_var, (1.0 / n - 1.0 / n0) / j, fit.unit_df),
    ];
    let variance: f64 = parts.iter().map(|(v, c, _)| c * v).sum();
    let (_, a2, _) = levels(fit);
    let run_part = [(a2 / j, run_df), (fit.unit_var / (n * j), fit.unit_df)];
    let floor = run_part.iter().map(|(v, _)| v).sum::<f64>();
    if variance <= floor {
        return (floor, welch_df(&run_part));
    }
    let denominator: f64 = parts.iter().filter(|(_, _, df)| *df > 0.0).map(|(v, c, df)| (c * v).powi(2) / df).sum();
    let df = if denominator > 0.0 { variance * variance / denominator } else { fit.estimate_df };
    (variance, df.max(1.0))
}

/// The profile of one or more fitted parts (a row's own entry, or one entry per side of a row
/// without pairs, whose variances add), each sized to its runs and units.
pub fn profile_of(parts: &[(&TwoLevelFit, usize, f64)], label: impl Into<String>) -> NoiseProfile {
    let sized: Vec<(f64, f64)> = parts.iter().map(|(fit, runs, units)| sized(fit, *runs, *units)).collect();
    NoiseProfile {
        sd: sized.iter().map(|(v, _)| v).sum::<f64>().sqrt(),
        df: welch_df(&sized),
        sessions: parts.iter().map(|(fit, _, _)| fit.sessions).min().unwrap_or(0),
        label: label.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_splits_units_runs_and_sessions_and_sizes_from_them() {
        // Two sessions of two runs of two units: units ±0.01 about the run mean; runs ±0.02
        // about the session mean; sessions at 0.1 and 0.3.
        let s = |mu: f64| vec![vec![mu - 0.02 - 0.01, mu - 0.02 + 0.01], vec![mu + 0.02 - 0.01, mu + 0.02 + 0.01]];
        let (f, estimates) = fit(&[s(0.1), s(0.3)], 0.0).unwrap();
        assert!((estimates[0] - 0.1).abs() < 1e-12 && (estimates[1] - 0.3).abs() < 1e-12, "{estimates:?}");
        // A run of ±0.01: variance 0.0002, its mean's squared error 0.0001, times 2 units.
        assert!((f.unit_var - 0.0002).abs() < 1e-12 && f.unit_df == 4.0, "{f:?}");
        // Run means ±0.02 about the session's: (4 × 0.0004) / 2.
        assert!((f.run_var - 0.0008).abs() < 1e-12 && f.run_df == 2.0, "{f:?}");
        assert!((f.estimate_var - 0.02).abs() < 1e-12 && f.estimate_df == 1.0, "{f:?}");
        assert_eq!((f.sessions, f.runs_per_session, f.units_per_run), (2, 2.0, 2.0));
        // At the calibration's size: S² on K − 1.
        let (v, df) = sized(&f, 2, 2.0);
        assert!((v - 0.02).abs() < 1e-15 && df == 1.0, "{v} {df}");
        // Four runs of eight units: S² + R (1/4 − 1/2) + b² (1/8 − 1/2) / 4.
        let (v, df) = sized(&f, 4, 8.0);
        let parts = [(0.02, 1.0), (-0.0008 / 4.0, 2.0), (0.0002 * (0.125 - 0.5) / 4.0, 4.0)];
        let want: f64 = parts.iter().map(|p| p.0).sum();
        assert!((v - want).abs() < 1e-12, "{v}");
        let den: f64 = parts.iter().map(|(v, df)| v * v / df).sum();
        assert!((df - (want * want / den).max(1.0)).abs() < 1e-9, "{df}");
    }

    #[test]
    fn one_run_a_session_counts_the_run_part_as_session_level_and_the_floor_holds() {
        let (f, _) = fit(&[vec![vec![0.0, 0.02]], vec![vec![0.1, 0.12]], vec![vec![0.2, 0.22]]], 0.0).unwrap();
        assert_eq!(f.run_df, 0.0);
        // b² = 0.0002, R = b²/2; S² = 0.01.
        assert!((f.run_var - 0.0001).abs() < 1e-12 && (f.estimate_var - 0.01).abs() < 1e-12, "{f:?}");
        // Four runs: S² − R · 3/4 (only what the units give shrinks).
        let (v, _) = sized(&f, 4, 2.0);
        assert!((v - (0.01 - 0.0001 * 0.75)).abs() < 1e-12, "{v}");
        // Two parts add, on the smaller K.
        let p = profile_of(&[(&f, 1, 2.0), (&f, 1, 2.0)], "x");
        assert!((p.sd - 0.02f64.sqrt()).abs() < 1e-12 && p.sessions == 3, "{p:?}");
        // Sessions that agree better than their runs do: held to the run part.
        let (f, _) =
            fit(&[vec![vec![0.0, 0.02], vec![0.1, 0.12]], vec![vec![0.0, 0.02], vec![0.1, 0.12]]], 0.0).unwrap();
        assert_eq!(f.estimate_var, 0.0);
        let (v, _) = sized(&f, 2, 2.0);
        assert!((v - f.run_var / 2.0).abs() < 1e-12, "{v} {f:?}");
    }

    #[test]
    fn too_few_sessions_or_units_are_refused() {
        assert_eq!(
            fit(&[vec![vec![0.1, 0.2]]], 0.2).unwrap_err().to_string(),
            "too few sessions with units for a noise profile: expected at least 2, got 1"
        );
        assert!(fit(&[vec![vec![0.1]], vec![vec![0.2]]], 0.2).is_err());
    }
}
