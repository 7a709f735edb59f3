//! The verdict of one row of a comparison, as a test: faster or slower when the difference is
//! significant, no difference only when an equivalence test shows it, inconclusive otherwise
//! with the smallest difference the data could have detected.
//!
//! With `e` the log ratio (`log_estimate`), `SE` its error and `ν` its degrees of freedom (the
//! row's own, or with a host noise profile `max(SE_profile, SE_own)` on the profile's, see
//! `profile`, where `SE_own` is taken before its serial-correlation inflation: the profile's
//! fitted variances hold that correlation already),
//! `T_ν` Student's t distribution (statrs), and the settings of [`DecisionConfig`]:
//!
//! - **Difference.** `p = 2 (1 − T_ν(|e| / SE))`. The rows of one comparison are one family:
//!   Holm's step-down (`holm`) at `α` (default 5 %, two-sided) decides which are significant,
//!   so the chance of any false alarm in the comparison is at most `α`.
//! - **Equivalence** (two one-sided tests, Schuirmann 1987) against a fixed margin `δ =
//!   ln(1 + margin)` the user states (default 3 %, never estimated from the data):
//!   `p_eq = max(1 − T_ν((e + δ) / SE), T_ν((e − δ) / SE))`, equivalent when `p_eq < α`, i.e.
//!   when the `1 − 2α` interval lies inside `(−δ, δ)`. "No difference" in every row is an
//!   intersection–union test, so no multiplicity correction is needed for it.
//! - **Practical floor** (optional, a fraction `f`): a significant difference with
//!   `|e| < ln(1 + f)` is reported as significant but below the floor and judged as if it were
//!   not significant (equivalence or inconclusive). The floor moves the estimate's bar only,
//!   never the interval or the error.
//! - **Verdict**: `faster` (`e < 0`) or `slower` (`e > 0`) when significant and not below the
//!   floor; else `no_difference` when equivalent; else `inconclusive`.
//! - **No verdict without a run-to-run error.** A row whose error cannot see run-to-run effects
//!   (one worker run per side, a two-sample test of the requests of one run per side, and no
//!   noise profile of its design) is `inconclusive` whatever its p-values, and takes no share of
//!   `α` in Holm's family. One worker process of the same code is faster than another by an
//!   offset the requests of that process all share; an error built from those requests alone
//!   calls that offset a difference: with a per-process offset of sd 0.007–0.014 on the log
//!   scale and a pair σ of 0.025, 14–26 % false alarms in one session at a stated 5 %
//!   (`simulation`, the negative control). Its figures (ratio, interval, p-value) are kept for the reader; the way
//!   out is several runs per side (`--repetitions`, [`REPETITIONS_FOR_A_VERDICT`]) or a noise
//!   profile (`calibrate`).
//! - **Interval**: `exp(e ± t_{1−α/2, ν} SE)`, the `1 − α` t-interval of the ratio (not Holm
//!   adjusted: a row's interval can exclude 1 while Holm leaves it not significant).
//! - **Smallest detectable difference** at power `1 − β` (default 80 %):
//!   `MDE = exp((t_{1−α/2, ν} + t_{1−β, ν}) SE) − 1`, the difference a session like this one
//!   would call significant four times in five.
//!
//! With `SE = 0` (identical data) the tests are decided by the estimate alone: significant when
//! `e ≠ 0`, equivalent when `|e| < δ`.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::error::StatsError;
use super::holm::holm;
use super::log_estimate::LogEstimate;
use super::profile::OUTSIDE_PROFILE;
use decode_baseline_wire::{
    decision::{Decision, DecisionConfig, ErrorSource, RatioInterval},
    profile::NoiseProfile,
    stats::Verdict,
};

/// Checks every setting of `config`, naming the field.
pub fn validate(config: &DecisionConfig) -> Result<(), StatsError> {
    let bad =
        |field, expected, actual: f64| Err(StatsError::InvalidSetting { field, expected, actual: actual.to_string() });
    if !(config.alpha > 0.0 && config.alpha < 0.5) {
        return bad("alpha", "a fraction strictly between 0 and 0.5", config.alpha);
    }
    if !(config.margin > 0.0 && config.margin < 1.0) {
        return bad("margin", "a fraction strictly between 0 and 1", config.margin);
    }
    if let Some(floor) = config.floor {
        if !(0.0..1.0).contains(&floor) {
            return bad("floor", "a fraction in [0, 1)", floor);
        }
    }
    if !(config.power > 0.5 && config.power < 1.0) {
        return bad("power", "a fraction strictly between 0.5 and 1", config.power);
    }
    if !(0.0..0.5).contains(&config.trim) {
        return bad("trim", "a fraction in [0, 0.5)", config.trim);
    }
    Ok(())
}

fn t_dist(df: f64) -> StudentsT {
    StudentsT::new(0.0, 1.0, df.max(f64::MIN_POSITIVE)).expect("df is positive")
}

/// `t_{p, ν}`.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    t_dist(df).inverse_cdf(p)
}

/// Tests `estimate` alone (a family of one). `sessions` is how many sessions the estimate spans
/// (1 or 2), for the profile's error.
pub fn decide_alone(
    estimate: &LogEstimate,
    profile: Option<&NoiseProfile>,
    sessions: usize,
    config: &DecisionConfig,
) -> Result<Decision, StatsError> {
    let mut one = [before_holm(estimate, profile, sessions, config)?];
    decide_family(&mut one);
    let [d] = one;
    Ok(d)
}

/// Everything but the Holm step: call [`decide_family`] over the comparison's rows.
pub fn before_holm(
    estimate: &LogEstimate,
    profile: Option<&NoiseProfile>,
    sessions: usize,
    config: &DecisionConfig,
) -> Result<Decision, StatsError> {
    validate(config)?;
    // NaN fails every comparison, so it is refused too.
    let valid = estimate.estimate.is_finite() && estimate.se >= 0.0 && estimate.df > 0.0;
    if !valid {
        return Err(StatsError::InvalidSetting {
            field: "estimate",
            expected: "a finite log ratio with a non-negative error on positive degrees of freedom",
            actual: format!("{} ± {} on {}", estimate.estimate, estimate.se, estimate.df),
        });
    }
    let (se, df, error, outside) = match profile {
        Some(p) => {
            // The profile's spread holds the serial correlation already: the own error it is
            // held against is the one before that inflation.
            let (pse, own) = (p.se(sessions), estimate.se_uncorrelated);
            let error = if pse >= own { ErrorSource::Profile } else { ErrorSource::Own };
            (pse.max(own), p.df(), error, own > OUTSIDE_PROFILE * pse)
        }
        None => (estimate.se, estimate.df, ErrorSource::Own, false),
    };
    let e = estimate.estimate;
    let t = t_dist(df);
    let delta = (1.0 + config.margin).ln();
    let (p_value, equivalence_p_value) = if se > 0.0 {
        let p = 2.0 * t.sf(e.abs() / se);
        let eq = t.sf((e + delta) / se).max(t.cdf((e - delta) / se));
        (p.min(1.0), eq)
    } else {
        (if e == 0.0 { 1.0 } else { 0.0 }, if e.abs() < delta { 0.0 } else { 1.0 })
    };
    let crit = t.inverse_cdf(1.0 - config.alpha / 2.0);
    let mde = ((crit + t.inverse_cdf(config.power)) * se).exp() - 1.0;
    Ok(Decision {
        verdict: Verdict::Inconclusive,
        rule: estimate.rule,
        error,
        ratio: e.exp(),
        ci: RatioInterval {
            lower: (e - crit * se).exp(),
            upper: (e + crit * se).exp(),
            confidence: 1.0 - config.alpha,
        },
        log_estimate: e,
        se,
        own_se: if profile.is_some() { estimate.se_uncorrelated } else { estimate.se },
        df,
        p_value,
        holm_level: config.alpha,
        significant: false,
        equivalence_p_value,
        equivalent: equivalence_p_value < config.alpha,
        below_floor: false,
        mde,
        config: *config,
        units: estimate.units,
        pairs: estimate.pairs,
        serial_correlation: estimate.serial_correlation,
        run_effects_measured: estimate.run_effects_measured || profile.is_some(),
        profile: profile.cloned(),
        outside_profile: outside,
    })
}

/// Worker runs per side the run table suggests for a row that has no run-to-run error: with a
/// pair σ of 0.025 and a per-run offset of sd 0.007–0.014, four runs of 8 pairs see 3 % in
/// 65–92 % of sessions and three runs in 39–68 %, at 5 % false alarms (`simulation`).
pub const REPETITIONS_FOR_A_VERDICT: u32 = 4;

/// Whether `decision` may be given a verdict at all: its error holds run-to-run effects (see
/// the module docs).
pub fn can_decide(decision: &Decision) -> bool {
    decision.run_effects_measured
}

/// The verdict of `decision` when its difference test rejected (`significant`) or not, its
/// equivalence test held (`equivalent`) or not: the one mapping every view and every look uses.
pub fn verdict_of(decision: &Decision, significant: bool, equivalent: bool) -> Verdict {
    if !can_decide(decision) {
        Verdict::Inconclusive
    } else if significant && !below_floor(decision, significant) {
        if decision.log_estimate < 0.0 {
            Verdict::Faster
        } else {
            Verdict::Slower
        }
    } else if equivalent {
        Verdict::NoDifference
    } else {
        Verdict::Inconclusive
    }
}

/// Whether a significant `decision` is smaller than the practical floor.
fn below_floor(decision: &Decision, significant: bool) -> bool {
    let floor = decision.config.floor.map_or(0.0, |f| (1.0 + f).ln());
    significant && decision.log_estimate.abs() < floor
}

/// Holm across the rows of `rows` that can be decided (one comparison's judged rows, all with
/// the same settings), then each row's verdict; a row that cannot be decided is `inconclusive`
/// and left out of the family, so it costs the others no power.
pub fn decide_family(rows: &mut [Decision]) {
    let Some(alpha) = rows.first().map(|r| r.config.alpha) else { return };
    let family: Vec<usize> = (0..rows.len()).filter(|&i| can_decide(&rows[i])).collect();
    let p: Vec<f64> = family.iter().map(|&i| rows[i].p_value).collect();
    let mut outcome = vec![(alpha, false); rows.len()];
    for (&i, decided) in family.iter().zip(holm(&p, alpha)) {
        outcome[i] = decided;
    }
    for (row, (level, rejected)) in rows.iter_mut().zip(outcome) {
        row.holm_level = level;
        row.significant = rejected;
        row.below_floor = below_floor(row, rejected);
        row.verdict = verdict_of(row, rejected, row.equivalent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use decode_baseline_wire::decision::Rule;

    fn estimate(e: f64, se: f64, df: f64) -> LogEstimate {
        LogEstimate {
            rule: Rule::PairedBlocks,
            estimate: e,
            se,
            se_uncorrelated: se,
            df,
            units: 10,
            pairs: 20,
            serial_correlation: None,
            run_effects_measured: true,
        }
    }

    fn verdict(e: f64, se: f64, config: &DecisionConfig) -> Decision {
        decide_alone(&estimate(e, se, 1e6), None, 1, config).unwrap()
    }

    #[test]
    fn each_verdict_at_its_edge() {
        let c = DecisionConfig::default();
        // df huge: t ≈ z. 1.96 SE is the two-sided 5 % edge.
        assert_eq!(verdict(0.05, 0.05 / 1.95, &c).verdict, Verdict::Inconclusive);
        assert_eq!(verdict(0.05, 0.05 / 1.97, &c).verdict, Verdict::Slower);
        assert_eq!(verdict(-0.05, 0.05 / 1.97, &c).verdict, Verdict::Faster);
        // Equivalence: δ = ln 1.03 = 0.02956; with e = 0, equivalent when 1.645 SE < δ.
        let delta = 1.03f64.ln();
        assert_eq!(verdict(0.0, delta / 1.66, &c).verdict, Verdict::NoDifference);
        assert_eq!(verdict(0.0, delta / 1.63, &c).verdict, Verdict::Inconclusive);
        // A 1 % difference with a tiny error is real: slower, and also within the margin.
        let small = verdict(0.01, 0.001, &c);
        assert_eq!((small.verdict, small.equivalent), (Verdict::Slower, true));
        // With a 2 % floor it is below the floor and the equivalence test decides.
        let floored = verdict(0.01, 0.001, &DecisionConfig { floor: Some(0.02), ..c });
        assert_eq!((floored.verdict, floored.below_floor, floored.significant), (Verdict::NoDifference, true, true));
        // The floor never widens the interval.
        assert_eq!(floored.ci, small.ci);
    }

    #[test]
    fn interval_p_value_and_mde_by_hand() {
        // e = 0.1, SE = 0.04, ν = 10: t_{0.975,10} = 2.228139, t_{0.8,10} = 0.879058, found
        // independently by Simpson integration of the t₁₀ density and bisection.
        let d = decide_alone(&estimate(0.1, 0.04, 10.0), None, 1, &DecisionConfig::default()).unwrap();
        let crit = 2.228_138_851_986_27;
        assert!((d.ci.lower - (0.1 - crit * 0.04f64).exp()).abs() < 1e-9, "{:?}", d.ci);
        assert!((d.mde - ((crit + 0.879_057_828_6) * 0.04f64).exp() + 1.0).abs() < 1e-8, "{}", d.mde);
        // p = 2 (1 − T_10(2.5)) = 0.0314468 (the same integration from 2.5 to 400).
        assert!((d.p_value - 0.031_446_84).abs() < 1e-6, "{}", d.p_value);
        assert_eq!(d.verdict, Verdict::Slower);
    }

    #[test]
    fn holm_across_rows_can_withhold_a_verdict_a_single_test_gives() {
        let c = DecisionConfig::default();
        // Two rows at p ≈ 0.04 each: alone each is significant, together Holm asks p ≤ 0.025.
        let se = 0.05 / 2.054; // z = 2.054 → p = 0.04
        let mut rows = [
            before_holm(&estimate(0.05, se, 1e6), None, 1, &c).unwrap(),
            before_holm(&estimate(0.05, se, 1e6), None, 1, &c).unwrap(),
        ];
        decide_family(&mut rows);
        assert!(rows.iter().all(|r| r.verdict == Verdict::Inconclusive && !r.significant), "{rows:?}");
        assert_eq!(verdict(0.05, se, &c).verdict, Verdict::Slower);
    }

    #[test]
    fn a_row_blind_to_run_effects_gets_no_verdict_and_no_share_of_alpha() {
        let c = DecisionConfig::default();
        let blind = LogEstimate { run_effects_measured: false, ..estimate(0.05, 0.001, 1e6) };
        // Far past any boundary, and still no verdict: its error cannot see a process's offset.
        let alone = decide_alone(&blind, None, 1, &c).unwrap();
        assert_eq!((alone.verdict, alone.significant), (Verdict::Inconclusive, false), "{alone:?}");
        assert!(alone.p_value < 1e-12 && !can_decide(&alone));
        // Identical to the reference within the margin: not "no difference" either.
        let same = decide_alone(&LogEstimate { run_effects_measured: false, ..estimate(0.0, 0.001, 1e6) }, None, 1, &c)
            .unwrap();
        assert_eq!(same.verdict, Verdict::Inconclusive);
        // A profile of the design gives it the run-to-run error, and so a verdict.
        let p = NoiseProfile { sd: 0.002, df: 19.0, sessions: 20, label: "test".into() };
        assert_eq!(decide_alone(&blind, Some(&p), 1, &c).unwrap().verdict, Verdict::Slower);
        // Beside a decidable row at p ≈ 0.04, the blind row takes no share of α: Holm holds the
        // decidable row to α itself, not α / 2.
        let se = 0.05 / 2.054;
        let mut rows =
            [before_holm(&blind, None, 1, &c).unwrap(), before_holm(&estimate(0.05, se, 1e6), None, 1, &c).unwrap()];
        decide_family(&mut rows);
        assert_eq!((rows[0].verdict, rows[1].verdict), (Verdict::Inconclusive, Verdict::Slower), "{rows:?}");
        assert_eq!(rows[1].holm_level, c.alpha);
    }

    #[test]
    fn a_profile_larger_than_the_own_error_is_used_on_k_minus_1_df() {
        let p = NoiseProfile { sd: 0.02, df: 19.0, sessions: 20, label: "test".into() };
        let c = DecisionConfig::default();
        let d = decide_alone(&estimate(0.05, 0.01, 100.0), Some(&p), 1, &c).unwrap();
        assert_eq!((d.error, d.se, d.df, d.own_se), (ErrorSource::Profile, 0.02, 19.0, 0.01));
        // Across two sessions the profile error is √2 larger.
        let d2 = decide_alone(&estimate(0.05, 0.01, 100.0), Some(&p), 2, &c).unwrap();
        assert!((d2.se - 0.02 * 2f64.sqrt()).abs() < 1e-15);
        // Own error larger: it is used, still on K − 1 df; far outside the profile is flagged.
        let own = decide_alone(&estimate(0.05, 0.07, 100.0), Some(&p), 1, &c).unwrap();
        assert_eq!((own.error, own.se, own.df, own.outside_profile), (ErrorSource::Own, 0.07, 19.0, true));
    }

    #[test]
    fn settings_are_checked_by_name() {
        let e = estimate(0.0, 0.01, 10.0);
        for (config, field) in [
            (DecisionConfig { alpha: 0.0, ..Default::default() }, "alpha"),
            (DecisionConfig { margin: -0.01, ..Default::default() }, "margin"),
            (DecisionConfig { floor: Some(1.5), ..Default::default() }, "floor"),
            (DecisionConfig { power: 0.3, ..Default::default() }, "power"),
        ] {
            let err = decide_alone(&e, None, 1, &config).unwrap_err();
            assert!(matches!(err, StatsError::InvalidSetting { field: f, .. } if f == field), "{err}");
        }
        let identical = decide_alone(&estimate(0.0, 0.0, 5.0), None, 1, &DecisionConfig::default()).unwrap();
        assert_eq!((identical.verdict, identical.p_value), (Verdict::NoDifference, 1.0));
    }
}
