//! The verdict engine proven apart from the host (issue 28, part 6): synthetic interleaved
//! sessions of known per-pair σ, effect, serial correlation, run effects and tails, judged by
//! the same functions `compare` uses (`PairBlocks` → `LogEstimate::paired` → `Decision`), with
//! a seeded ChaCha8 stream, so every figure is reproducible:
//!
//! ```sh
//! cargo test --release -p decode-baseline-launcher --lib stats::simulation -- --nocapture --test-threads 1
//! ```
//!
//! A session: `pairs` request pairs in `runs` worker runs; pair `k` has
//! `d_k = θ + u_r + o_k + ε_k` with `θ = ln(1 + effect)`, a run effect `u_r ~ N(0, τ²)`, an
//! order effect `o_k = ±ORDER_EFFECT` alternating with the A B / B A order (the blocks cancel
//! it), and noise `ε_k` of standard deviation `σ`: normal, Student t₃ scaled to `σ`, or AR(1)
//! `ε_k = ρ ε_{k−1} + √(1 − ρ²) η_k` within a run. "With a profile" means a host noise profile
//! measured from `K = 20` A/A sessions of the same design (`PROFILE_SESSIONS`), a fresh profile
//! for every 20 sessions judged.
//!
//! Monte-Carlo error: `N = SESSIONS` sessions per cell; a rate `p` has standard error
//! `√(p (1 − p) / N)`, and every bound below allows three of them.

use rand_chacha::{rand_core::RngCore, rand_core::SeedableRng, ChaCha8Rng};

use super::blocks::PairBlocks;
use super::log_estimate::LogEstimate;
use super::{Decision, DecisionConfig, NoiseProfile, Verdict};

/// Sessions per cell.
const SESSIONS: usize = 2000;
/// A/A sessions per noise profile.
const PROFILE_SESSIONS: usize = 20;
/// The order effect every synthetic session carries (2 %, cancelled by the blocks).
const ORDER_EFFECT: f64 = 0.02;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Noise {
    Normal,
    StudentT3,
    Ar1(f64),
}

#[derive(Debug, Clone, Copy)]
struct Design {
    sigma: f64,
    pairs: usize,
    runs: usize,
    run_sd: f64,
    noise: Noise,
}

impl Design {
    fn plain(sigma: f64, pairs: usize) -> Self {
        Design { sigma, pairs, runs: 1, run_sd: 0.0, noise: Noise::Normal }
    }

    fn seed(&self, effect: f64, salt: u64) -> u64 {
        let noise = match self.noise {
            Noise::Normal => 1,
            Noise::StudentT3 => 2,
            Noise::Ar1(rho) => 3 + (rho * 100.0) as u64,
        };
        ((self.sigma * 1e4) as u64 * 1_000_003)
            ^ ((self.pairs as u64) << 20)
            ^ ((self.runs as u64) << 32)
            ^ (((self.run_sd * 1e4) as u64) << 40)
            ^ (noise << 52)
            ^ (((effect * 1e4) as u64) << 8)
            ^ salt
    }
}

struct Gen {
    rng: ChaCha8Rng,
    spare: Option<f64>,
}

impl Gen {
    fn new(seed: u64) -> Self {
        Gen { rng: ChaCha8Rng::seed_from_u64(seed), spare: None }
    }

    fn uniform(&mut self) -> f64 {
        ((self.rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal, Box–Muller.
    fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        let (u, v) = (self.uniform(), self.uniform());
        let r = (-2.0 * u.ln()).sqrt();
        let t = 2.0 * std::f64::consts::PI * v;
        self.spare = Some(r * t.sin());
        r * t.cos()
    }

    /// Student t₃ scaled to unit variance (t₃ has variance 3).
    fn t3(&mut self) -> f64 {
        let z = self.normal();
        let chi2: f64 = (0..3).map(|_| self.normal().powi(2)).sum();
        z / (chi2 / 3.0).sqrt() / 3f64.sqrt()
    }

    /// The block log differences of one synthetic session, by run.
    fn session(&mut self, d: &Design, theta: f64) -> Vec<Vec<f64>> {
        let per_run = d.pairs / d.runs;
        (0..d.runs)
            .map(|_| {
                let u = d.run_sd * self.normal();
                let mut eps = 0.0;
                let diffs: Vec<f64> = (0..per_run)
                    .map(|k| {
                        eps = match d.noise {
                            Noise::Normal => self.normal(),
                            Noise::StudentT3 => self.t3(),
                            Noise::Ar1(rho) if k == 0 => {
                                let _ = rho;
                                self.normal()
                            }
                            Noise::Ar1(rho) => rho * eps + (1.0 - rho * rho).sqrt() * self.normal(),
                        };
                        let order = if k % 2 == 0 { ORDER_EFFECT } else { -ORDER_EFFECT };
                        theta + u + order + d.sigma * eps
                    })
                    .collect();
                PairBlocks::blocks_of(&diffs)
            })
            .collect()
    }

    fn estimate(&mut self, d: &Design, theta: f64, config: &DecisionConfig) -> LogEstimate {
        let blocks = PairBlocks::from_blocks(self.session(d, theta)).unwrap();
        LogEstimate::paired(&blocks, config.trim).unwrap()
    }
}

/// Rates over `SESSIONS` sessions of one design and effect.
#[derive(Debug, Clone, Copy, Default)]
struct Rates {
    slower: f64,
    faster: f64,
    no_difference: f64,
    covered: f64,
    mde_median: f64,
}

impl Rates {
    /// The rates of `decisions`, one per synthetic session, of a true ratio `1 + effect`.
    fn of(decisions: &[Decision], effect: f64) -> Rates {
        let n = decisions.len() as f64;
        let share = |keep: &dyn Fn(&Decision) -> bool| decisions.iter().filter(|d| keep(d)).count() as f64 / n;
        let mut mdes: Vec<f64> = decisions.iter().map(|d| d.mde).collect();
        mdes.sort_by(f64::total_cmp);
        Rates {
            slower: share(&|d| d.verdict == Verdict::Slower),
            faster: share(&|d| d.verdict == Verdict::Faster),
            no_difference: share(&|d| d.verdict == Verdict::NoDifference),
            covered: share(&|d| d.ci.contains(1.0 + effect)),
            mde_median: mdes[mdes.len() / 2],
        }
    }

    fn alarms(&self) -> f64 {
        self.slower + self.faster
    }
}

fn run_cell(design: &Design, effect: f64, with_profile: bool) -> Rates {
    let config = DecisionConfig::default();
    let theta = (1.0 + effect).ln();
    let mut sessions = Gen::new(design.seed(effect, u64::from(with_profile)));
    let mut aa = Gen::new(design.seed(effect, 0xA_A000 + u64::from(with_profile)));
    let mut profile: Option<NoiseProfile> = None;
    let mut decisions = Vec::with_capacity(SESSIONS);
    for i in 0..SESSIONS {
        if with_profile && i % PROFILE_SESSIONS == 0 {
            let estimates: Vec<f64> =
                (0..PROFILE_SESSIONS).map(|_| aa.estimate(design, 0.0, &config).estimate).collect();
            profile = Some(crate::stats::profile_of(&estimates, "simulated").unwrap());
        }
        let estimate = sessions.estimate(design, theta, &config);
        decisions.push(crate::stats::decide_alone(&estimate, profile.as_ref(), 1, &config).unwrap());
    }
    Rates::of(&decisions, effect)
}

/// Three Monte-Carlo standard errors of a rate near `p`.
fn slack(p: f64) -> f64 {
    3.0 * (p * (1.0 - p) / SESSIONS as f64).sqrt()
}

const ALPHA: f64 = 0.05;

#[test]
fn the_paired_test_holds_its_false_alarm_rate_and_reaches_the_issues_detection_rates() {
    // (σ, pairs, detection of 3 %, detection of 10 %): issue 28's "paired test" column.
    let targets: [(f64, usize, f64, f64); 5] = [
        (0.25, 20, 0.04, 0.25),
        (0.25, 200, 0.29, 1.00),
        (0.10, 20, 0.16, 0.92),
        (0.10, 200, 0.95, 1.00),
        (0.03, 20, 0.95, 1.00),
    ];
    println!("\nσ per pair | pairs | error   | false alarms | no diff. at 3 % | detect 3 % | detect 10 % | MDE (median) | coverage at 0");
    let mut failures = Vec::new();
    for (sigma, pairs, want3, want10) in targets {
        let design = Design::plain(sigma, pairs);
        for with_profile in [false, true] {
            let (zero, three, ten) = (
                run_cell(&design, 0.0, with_profile),
                run_cell(&design, 0.03, with_profile),
                run_cell(&design, 0.10, with_profile),
            );
            let error = if with_profile { "profile" } else { "own" };
            println!(
                "{sigma:>10} | {pairs:>5} | {error:<7} | {:>12.3} | {:>15.3} | {:>10.3} | {:>11.3} | {:>11.1} % | {:>.3}",
                zero.alarms(),
                three.no_difference,
                three.slower,
                ten.slower,
                100.0 * zero.mde_median,
                zero.covered
            );
            if zero.alarms() > ALPHA + slack(ALPHA) {
                failures.push(format!("σ {sigma}, {pairs} pairs, {error}: false alarms {}", zero.alarms()));
            }
            if three.no_difference > ALPHA + slack(ALPHA) {
                failures
                    .push(format!("σ {sigma}, {pairs} pairs, {error}: no difference at 3 % {}", three.no_difference));
            }
            if with_profile {
                for (got, want, what) in [(three.slower, want3, "3 %"), (ten.slower, want10, "10 %")] {
                    if got < want - slack(want.min(0.99)) {
                        failures.push(format!("σ {sigma}, {pairs} pairs: detection of {what} {got} < {want}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn intervals_cover_at_their_nominal_level_with_independent_and_correlated_pairs() {
    // The own error corrects for serial correlation from the blocks' lag-1 autocorrelation,
    // which 10 blocks (20 pairs) cannot estimate: there a noise profile, whose spread holds the
    // correlation, is what keeps the interval honest. Printed both ways; asserted where each is
    // the rule that applies.
    println!("\nnoise | σ | pairs | error | coverage of a nominal 95 % interval (true effect 3 %) | false alarms at 0");
    let mut failures = Vec::new();
    for (noise, pairs, asserted_with_profile) in [
        (Noise::Normal, 20, false),
        (Noise::Normal, 200, false),
        (Noise::Ar1(0.5), 20, true),
        (Noise::Ar1(0.5), 200, false),
    ] {
        let design = Design { noise, ..Design::plain(0.10, pairs) };
        for with_profile in [false, true] {
            let (cover, zero) = (run_cell(&design, 0.03, with_profile), run_cell(&design, 0.0, with_profile));
            let error = if with_profile { "profile" } else { "own" };
            println!("{noise:?} | 0.10 | {pairs} | {error} | {:.3} | {:.3}", cover.covered, zero.alarms());
            if with_profile == asserted_with_profile || !with_profile {
                let own_at_short_ar = !with_profile && asserted_with_profile;
                if !own_at_short_ar && !(0.93..=0.97).contains(&cover.covered) {
                    failures.push(format!("{noise:?}, {pairs} pairs, {error}: coverage {}", cover.covered));
                }
                if !own_at_short_ar && zero.alarms() > ALPHA + slack(ALPHA) {
                    failures.push(format!("{noise:?}, {pairs} pairs, {error}: false alarms {}", zero.alarms()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn heavy_tails_and_run_effects_keep_the_false_alarm_rate() {
    println!("\nscenario | error | false alarms | detect 10 % | coverage");
    let mut failures = Vec::new();
    let scenarios = [
        ("t3 tails, σ 0.10, 200 pairs", Design { noise: Noise::StudentT3, ..Design::plain(0.10, 200) }, false),
        ("t3 tails, σ 0.25, 20 pairs", Design { noise: Noise::StudentT3, ..Design::plain(0.25, 20) }, false),
        ("4 runs, run SD 0.05, σ 0.10, 200 pairs", Design { runs: 4, run_sd: 0.05, ..Design::plain(0.10, 200) }, false),
        ("1 run, run SD 0.05, σ 0.10, 200 pairs", Design { run_sd: 0.05, ..Design::plain(0.10, 200) }, true),
    ];
    for (name, design, with_profile) in scenarios {
        let (zero, ten) = (run_cell(&design, 0.0, with_profile), run_cell(&design, 0.10, with_profile));
        let error = if with_profile { "profile" } else { "own" };
        println!("{name} | {error} | {:.3} | {:.3} | {:.3}", zero.alarms(), ten.slower, zero.covered);
        if zero.alarms() > ALPHA + slack(ALPHA) {
            failures.push(format!("{name}, {error}: false alarms {}", zero.alarms()));
        }
    }
    // Why a profile: one run per side cannot see a run effect, and its own error calls it a
    // difference far more often than α.
    let blind = run_cell(&Design { run_sd: 0.05, ..Design::plain(0.10, 200) }, 0.0, false);
    println!("1 run, run SD 0.05, σ 0.10, 200 pairs | own | {:.3} | - | {:.3}", blind.alarms(), blind.covered);
    if blind.alarms() <= ALPHA + slack(ALPHA) {
        failures.push(format!("a run effect of 0.05 went unseen by the own error: false alarms {}", blind.alarms()));
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// One cell of the two-sample rule (`request_medians`, a sequential session's time rows and its
/// energy rows): `requests` per-request log values per side, the numerator shifted by
/// `ln(1 + effect)`, noise of standard deviation `sigma` (normal or t₃), one run per side.
fn two_sample_cell(sigma: f64, requests: usize, noise: Noise, effect: f64) -> Rates {
    use super::log_estimate::Rule;
    let config = DecisionConfig::default();
    let theta = (1.0 + effect).ln();
    let seed = Design { sigma, pairs: requests, runs: 1, run_sd: 0.0, noise }.seed(effect, 0x2_5A);
    let mut g = Gen::new(seed);
    let draw = |g: &mut Gen| sigma * if noise == Noise::StudentT3 { g.t3() } else { g.normal() };
    let decisions: Vec<Decision> = (0..SESSIONS)
        .map(|_| {
            let x: Vec<f64> = (0..requests).map(|_| theta + draw(&mut g)).collect();
            let r: Vec<f64> = (0..requests).map(|_| draw(&mut g)).collect();
            let estimate = LogEstimate::two_sample(&x, &r, config.trim, Rule::RequestMedians).unwrap();
            crate::stats::decide_alone(&estimate, None, 1, &config).unwrap()
        })
        .collect();
    Rates::of(&decisions, effect)
}

#[test]
fn the_two_sample_rule_of_sequential_sessions_holds_its_false_alarm_rate() {
    // Independent requests, one run per side: what the rule assumes. Run-to-run effects are
    // outside it, as the output says ("run-to-run effects not measured").
    println!("\nnoise | σ per request | requests | false alarms | coverage at 0 | no diff. at 3 % | detect 10 %");
    let mut failures = Vec::new();
    for noise in [Noise::Normal, Noise::StudentT3] {
        for (sigma, requests) in [(0.05, 20), (0.10, 20), (0.10, 40)] {
            let (zero, three, ten) = (
                two_sample_cell(sigma, requests, noise, 0.0),
                two_sample_cell(sigma, requests, noise, 0.03),
                two_sample_cell(sigma, requests, noise, 0.10),
            );
            println!(
                "{noise:?} | {sigma} | {requests} | {:.3} | {:.3} | {:.3} | {:.3}",
                zero.alarms(),
                zero.covered,
                three.no_difference,
                ten.slower
            );
            if zero.alarms() > ALPHA + slack(ALPHA) {
                failures.push(format!("{noise:?} σ {sigma}, {requests}: false alarms {}", zero.alarms()));
            }
            if zero.covered < 1.0 - ALPHA - slack(ALPHA) {
                failures.push(format!("{noise:?} σ {sigma}, {requests}: coverage {}", zero.covered));
            }
            if three.no_difference > ALPHA + slack(ALPHA) {
                failures.push(format!("{noise:?} σ {sigma}, {requests}: no difference at 3 % {}", three.no_difference));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The difference of two cells' paired estimates, as `decomposition` tests the headline-only
/// part (headline over fixed-continuation) and the placement effect (one session's headline over
/// another's): two independent synthetic sessions per draw, the second at `base` and the first at
/// `base · (1 + effect)`, `LogEstimate::difference` of the two, decided alone.
fn difference_cell(design: &Design, base: f64, effect: f64) -> Rates {
    let config = DecisionConfig::default();
    let (first, second) = ((base * (1.0 + effect)).ln(), base.ln());
    let mut a = Gen::new(design.seed(effect, 0xD1F_0001));
    let mut b = Gen::new(design.seed(effect, 0xD1F_0002));
    let decisions: Vec<Decision> = (0..SESSIONS)
        .map(|_| {
            let d = LogEstimate::difference(&a.estimate(design, first, &config), &b.estimate(design, second, &config));
            crate::stats::decide_alone(&d, None, 1, &config).unwrap()
        })
        .collect();
    Rates::of(&decisions, effect)
}

#[test]
fn the_difference_of_two_cells_holds_its_false_alarm_rate_and_detects_a_tenth() {
    let mut failures = Vec::new();
    // (σ, pairs, the least detection of a 10 % difference), both cells at a ratio of 0.8. Found
    // (2026-12-03): false alarms 0.036, 0.049, 0.032; coverage 0.964, 0.952, 0.968; 10 % detected
    // 0.517, 1.000, 0.939.
    for (sigma, pairs, detect) in [(0.10, 20, 0.45), (0.10, 200, 0.99), (0.25, 200, 0.85)] {
        let design = Design::plain(sigma, pairs);
        let null = difference_cell(&design, 0.8, 0.0);
        let tenth = difference_cell(&design, 0.8, 0.10);
        println!(
            "σ {sigma}, {pairs} pairs: false alarms {:.3}, coverage {:.3}, 10 % detected {:.3}",
            null.alarms(),
            null.covered,
            tenth.slower
        );
        if null.alarms() > ALPHA + slack(ALPHA) {
            failures.push(format!("σ {sigma}, {pairs} pairs: false alarms {}", null.alarms()));
        }
        if null.covered < 1.0 - ALPHA - slack(ALPHA) {
            failures.push(format!("σ {sigma}, {pairs} pairs: coverage {}", null.covered));
        }
        if tenth.slower < detect {
            failures.push(format!("σ {sigma}, {pairs} pairs: 10 % detected {} < {detect}", tenth.slower));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
