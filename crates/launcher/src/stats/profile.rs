//! A host noise profile: how far one session's estimate moves from session to session when
//! nothing changed, measured from `K` A/A sessions of one design on one host (the later
//! `calibrate` command runs them and stores this record).
//!
//! With `e_1 … e_K` the log estimates of the `K` A/A sessions (each by the rule the sessions
//! it will judge use), the profile holds `sd = √(Σ (e_i − ē)² / (K − 1))` and `K`. That spread
//! holds everything one session's own error cannot see: run-to-run effects, correlated pairs,
//! order effects. A verdict with a profile uses
//!
//! `SE = max(SE_profile, SE_own)`, `SE_profile = sd · √s`,
//!
//! where `s` is the number of sessions in the estimate (1 within one session, 2 for session B
//! against session A) and `SE_own` is the session's own error before its serial-correlation
//! inflation (the profile's spread holds that correlation already; counting it twice cost up
//! to 5 percentage points of detection at 20 pairs in the simulation: 10 % at σ 0.10 detected
//! 0.88 instead of 0.93), and refers the statistic to Student's t on `K − 1` degrees of freedom
//! whichever error is larger: `|e| / max(a, b) ≤ |e| / a`, and `e / SE_profile` is t on `K − 1`
//! when the session is of the profile's design, so the test keeps its level. An own error far
//! outside the profile (`SE_own > OUTSIDE_PROFILE · SE_profile`) says the session is not like
//! the ones profiled; the output suggests recalibrating.

use super::error::StatsError;
use decode_baseline_wire::profile::NoiseProfile;
use statrs::statistics::Statistics;

/// Fewest A/A sessions a profile is made from (its t reference then has one degree of freedom;
/// `calibrate` should run at least 20).
pub const MIN_PROFILE_SESSIONS: usize = 2;

/// An own error this many times the profile's marks a session unlike the ones profiled.
pub const OUTSIDE_PROFILE: f64 = 3.0;

/// The profile of `estimates`, the log estimates of `K ≥ 2` A/A sessions.
pub fn profile_of(estimates: &[f64], label: impl Into<String>) -> Result<NoiseProfile, StatsError> {
    if estimates.len() < MIN_PROFILE_SESSIONS {
        return Err(StatsError::TooFew {
            what: "A/A sessions for a noise profile",
            expected: MIN_PROFILE_SESSIONS,
            actual: estimates.len(),
        });
    }
    if let Some((index, &value)) = estimates.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(StatsError::NotFinite { index, value });
    }
    Ok(NoiseProfile { sd: estimates.std_dev(), sessions: estimates.len(), label: label.into() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_is_the_sample_sd_of_the_aa_estimates() {
        // 2 4 4 4 5 5 7 9 → s = √(32/7).
        let p = profile_of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0], "host x").unwrap();
        assert!((p.sd - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!((p.sessions, p.df()), (8, 7.0));
        assert!((p.se(2) - p.sd * 2f64.sqrt()).abs() < 1e-15);
        assert_eq!(
            profile_of(&[0.1], "x").unwrap_err().to_string(),
            "too few A/A sessions for a noise profile: expected at least 2, got 1"
        );
    }
}
