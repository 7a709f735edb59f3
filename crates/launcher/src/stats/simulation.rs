//! The verdict engine proven apart from the host (issues 28 and 42): synthetic sessions with
//! noise at every level the design has (pairs, runs, sessions), judged by the same functions
//! `compare`, the run table, the looks of `--until-decided`, the decomposition and the energy
//! rows use (`PairBlocks` → `LogEstimate` → `Decision`), with a seeded ChaCha8 stream, so every
//! figure is reproducible:
//!
//! ```sh
//! cargo test --release -p decode-baseline-launcher --lib stats::simulation -- --nocapture --test-threads 1
//! ```
//!
//! A session: `pairs` request pairs in `runs` worker runs; pair `k` of run `r` has
//! `d_k = θ + c + u_r + o_k + ε_k` with `θ = ln(1 + effect)`, a session effect `c ~ N(0, γ²)`
//! shared by every run of the session (`session_sd`), a run effect `u_r ~ N(0, τ²)` (`run_sd`:
//! what makes one worker process of the same code faster than another), an order effect
//! `o_k = ±ORDER_EFFECT` alternating with the A B / B A order (the blocks cancel it), and noise
//! `ε_k` of standard deviation `σ`: normal, Student t₃ scaled to `σ`, or AR(1)
//! `ε_k = ρ ε_{k−1} + √(1 − ρ²) η_k` within a run. "With a profile" means a host noise profile
//! measured from `K = 20` A/A sessions of the same design (`PROFILE_SESSIONS`), a fresh profile
//! for every 20 sessions judged.
//!
//! The levels measured on this project's host (`req/findings.md` §21 and issue 42): pair σ
//! 0.025 at `--cpus first`, a per-process offset of sd 0.007–0.014, and a session-level part
//! of about 0.007 that no number of runs removes.
//!
//! Monte-Carlo error: `N = SESSIONS` sessions (or comparisons) per cell; a rate `p` has
//! standard error `√(p (1 − p) / N)`, and every bound below allows three of them.

use rand_chacha::{rand_core::RngCore, rand_core::SeedableRng, ChaCha8Rng};

use super::blocks::PairBlocks;
use super::log_estimate::{LogEstimate, Rule};
use super::{Decision, DecisionConfig, NoiseProfile, Verdict};
use decode_baseline_wire::profile::TwoLevelFit;

/// Sessions per cell.
const SESSIONS: usize = 2000;

/// `fit` sized to `runs` runs of `judged`'s pairs per run, as `compare` sizes a profile.
fn sized(fit: &TwoLevelFit, judged: &Design, runs: usize) -> NoiseProfile {
    let blocks_per_run = (judged.pairs / judged.runs / 2) as f64;
    crate::stats::profile_of(&[(fit, runs, blocks_per_run)], "simulated")
}

/// How a profile is made: `sessions` A/A sessions of `design`, renewed every
/// `PROFILE_SESSIONS` sessions judged.
#[derive(Debug, Clone, Copy)]
struct Calibration {
    design: Design,
    sessions: usize,
}
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
    /// Pairs in all, `pairs / runs` per run.
    pairs: usize,
    runs: usize,
    run_sd: f64,
    session_sd: f64,
    noise: Noise,
}

impl Design {
    /// One run of `pairs` pairs, one level of noise.
    fn plain(sigma: f64, pairs: usize) -> Self {
        Design { sigma, pairs, runs: 1, run_sd: 0.0, session_sd: 0.0, noise: Noise::Normal }
    }

    /// `runs` runs of `per_run` pairs with pair σ `sigma` and run sd `run_sd`.
    fn two_level(sigma: f64, run_sd: f64, runs: usize, per_run: usize) -> Self {
        Design { sigma, pairs: runs * per_run, runs, run_sd, session_sd: 0.0, noise: Noise::Normal }
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
            ^ (((self.session_sd * 1e4) as u64) << 56)
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

    /// The pair log differences `d_k` of one synthetic session, by run.
    fn diffs(&mut self, d: &Design, theta: f64) -> Vec<Vec<f64>> {
        let per_run = d.pairs / d.runs;
        // Drawn only when asked for, so that designs without it keep the stream they had.
        let session = if d.session_sd > 0.0 { d.session_sd * self.normal() } else { 0.0 };
        (0..d.runs)
            .map(|_| {
                let u = d.run_sd * self.normal();
                let mut eps = 0.0;
                (0..per_run)
                    .map(|k| {
                        eps = match d.noise {
                            Noise::Normal => self.normal(),
                            Noise::StudentT3 => self.t3(),
                            Noise::Ar1(_) if k == 0 => self.normal(),
                            Noise::Ar1(rho) => rho * eps + (1.0 - rho * rho).sqrt() * self.normal(),
                        };
                        let order = if k % 2 == 0 { ORDER_EFFECT } else { -ORDER_EFFECT };
                        theta + session + u + order + d.sigma * eps
                    })
                    .collect()
            })
            .collect()
    }

    /// The block log differences of one synthetic session, by run.
    fn session(&mut self, d: &Design, theta: f64) -> Vec<Vec<f64>> {
        self.diffs(d, theta).iter().map(|run| PairBlocks::blocks_of(run)).collect()
    }

    /// The paired estimate of one synthetic session, as `compare` makes it.
    fn estimate(&mut self, d: &Design, theta: f64, config: &DecisionConfig) -> LogEstimate {
        let blocks = PairBlocks::from_blocks(self.session(d, theta)).unwrap();
        LogEstimate::paired(&blocks, config.trim).unwrap()
    }

    /// The negative control: every run's blocks pooled as if one run, and judged as if that error
    /// held run-to-run effects; what a rule that ignores the run level would do.
    fn pooled_estimate(&mut self, d: &Design, theta: f64, config: &DecisionConfig) -> LogEstimate {
        let blocks = PairBlocks::from_blocks(vec![self.session(d, theta).concat()]).unwrap();
        LogEstimate { run_effects_measured: true, ..LogEstimate::paired(&blocks, config.trim).unwrap() }
    }

    /// A profile fitted from `calibration.sessions` A/A sessions of `calibration.design`
    /// (`stats::profile::fit`, as `calibrate` fits one).
    fn fit(&mut self, calibration: &Calibration, config: &DecisionConfig) -> TwoLevelFit {
        let sessions: Vec<Vec<Vec<f64>>> =
            (0..calibration.sessions).map(|_| self.session(&calibration.design, 0.0)).collect();
        crate::stats::fit_profile(&sessions, config.trim).unwrap().0
    }

    /// [`Self::fit`] sized to sessions of `judged`.
    fn profile(&mut self, calibration: &Calibration, judged: &Design, config: &DecisionConfig) -> NoiseProfile {
        sized(&self.fit(calibration, config), judged, judged.runs)
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
    let calibration = Calibration { design: *design, sessions: PROFILE_SESSIONS };
    for i in 0..SESSIONS {
        if with_profile && i % PROFILE_SESSIONS == 0 {
            profile = Some(aa.profile(&calibration, design, &config));
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
    // One run of pairs, one level of noise: with a profile of its design (issue 28's "paired
    // test" column), and without one, where the row's error cannot see run-to-run effects and
    // no verdict is given at all.
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
            } else if ten.slower + ten.faster + zero.no_difference > 0.0 {
                failures.push(format!("σ {sigma}, {pairs} pairs: a one-run row without a profile got a verdict"));
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
        (
            "t3 tails, 4 runs × 50, run SD 0.01, σ 0.10",
            Design { noise: Noise::StudentT3, ..Design::two_level(0.10, 0.01, 4, 50) },
            false,
        ),
        (
            "t3 tails, 6 runs × 8, run SD 0.014, σ 0.025",
            Design { noise: Noise::StudentT3, ..Design::two_level(0.025, 0.014, 6, 8) },
            false,
        ),
        ("4 runs × 50, run SD 0.05, σ 0.10", Design::two_level(0.10, 0.05, 4, 50), false),
        ("1 run × 200, run SD 0.05, σ 0.10", Design::two_level(0.10, 0.05, 1, 200), true),
    ];
    for (name, design, with_profile) in scenarios {
        let (zero, ten) = (run_cell(&design, 0.0, with_profile), run_cell(&design, 0.10, with_profile));
        let error = if with_profile { "profile" } else { "own" };
        println!("{name} | {error} | {:.3} | {:.3} | {:.3}", zero.alarms(), ten.slower, zero.covered);
        if zero.alarms() > ALPHA + slack(ALPHA) {
            failures.push(format!("{name}, {error}: false alarms {}", zero.alarms()));
        }
        if zero.covered < 1.0 - ALPHA - slack(ALPHA) {
            failures.push(format!("{name}, {error}: coverage {}", zero.covered));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The per-request log values of one non-interleaved session (no pairs): per side `runs` runs of
/// `per_run` requests, each run offset by `u_r ~ N(0, run_sd²)`, the numerator's shifted by
/// `theta`, noise of standard deviation `sigma` (normal or t₃); the session term shared by both
/// sides cancels in their difference and is left out.
fn unpaired_session(g: &mut Gen, d: &Design, theta: f64) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let per_run = d.pairs / d.runs;
    let mut side = |shift: f64| -> Vec<Vec<f64>> {
        (0..d.runs)
            .map(|_| {
                let u = d.run_sd * g.normal();
                (0..per_run)
                    .map(|_| shift + u + d.sigma * if d.noise == Noise::StudentT3 { g.t3() } else { g.normal() })
                    .collect()
            })
            .collect()
    };
    (side(theta), side(0.0))
}

/// One cell of the unpaired rule (a non-interleaved session's time and energy rows, `run_means`
/// from two runs a side, `request_medians` below).
fn two_sample_cell(design: &Design, effect: f64) -> Rates {
    let config = DecisionConfig::default();
    let theta = (1.0 + effect).ln();
    let mut g = Gen::new(design.seed(effect, 0x2_5A));
    let decisions: Vec<Decision> = (0..SESSIONS)
        .map(|_| {
            let (x, r) = unpaired_session(&mut g, design, theta);
            let estimate = LogEstimate::unpaired(&x, &r, config.trim, Rule::RequestMedians).unwrap();
            crate::stats::decide_alone(&estimate, None, 1, &config).unwrap()
        })
        .collect();
    Rates::of(&decisions, effect)
}

#[test]
fn the_unpaired_rule_of_sequential_sessions_holds_its_false_alarm_rate_on_two_level_noise() {
    // Per-request σ 0.05–0.10 and a per-run offset: the run is the unit from two runs a side;
    // one run a side gives no verdict (its requests share the run's offset).
    println!("\nnoise | σ per request | run SD | runs × requests | false alarms | coverage at 0 | no diff. at 3 % | detect 10 %");
    let mut failures = Vec::new();
    for noise in [Noise::Normal, Noise::StudentT3] {
        for (sigma, run_sd, runs, per_run) in
            [(0.05, 0.014, 3, 8), (0.10, 0.014, 4, 8), (0.05, 0.03, 6, 8), (0.05, 0.014, 1, 20)]
        {
            let design = Design { noise, ..Design::two_level(sigma, run_sd, runs, per_run) };
            let (zero, three, ten) =
                (two_sample_cell(&design, 0.0), two_sample_cell(&design, 0.03), two_sample_cell(&design, 0.10));
            println!(
                "{noise:?} | {sigma} | {run_sd} | {runs} × {per_run} | {:.3} | {:.3} | {:.3} | {:.3}",
                zero.alarms(),
                zero.covered,
                three.no_difference,
                ten.slower
            );
            if zero.alarms() > ALPHA + slack(ALPHA) {
                failures.push(format!("{noise:?} {design:?}: false alarms {}", zero.alarms()));
            }
            if runs >= 2 && zero.covered < 1.0 - ALPHA - slack(ALPHA) {
                failures.push(format!("{noise:?} {design:?}: coverage {}", zero.covered));
            }
            if three.no_difference > ALPHA + slack(ALPHA) {
                failures.push(format!("{noise:?} {design:?}: no difference at 3 % {}", three.no_difference));
            }
            if runs == 1 && ten.slower > 0.0 {
                failures.push(format!("{noise:?} {design:?}: one run a side got a verdict"));
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
    // (design, the least detection of a 10 % difference), both cells at a ratio of 0.8.
    for (design, detect) in [
        (Design::two_level(0.025, 0.007, 3, 8), 0.60),
        (Design::two_level(0.025, 0.014, 4, 8), 0.80),
        (Design::two_level(0.10, 0.014, 6, 8), 0.80),
    ] {
        let null = difference_cell(&design, 0.8, 0.0);
        let tenth = difference_cell(&design, 0.8, 0.10);
        println!(
            "σ {}, run SD {}, {} runs × {}: false alarms {:.3}, coverage {:.3}, 10 % detected {:.3}",
            design.sigma,
            design.run_sd,
            design.runs,
            design.pairs / design.runs,
            null.alarms(),
            null.covered,
            tenth.slower
        );
        if null.alarms() > ALPHA + slack(ALPHA) {
            failures.push(format!("{design:?}: false alarms {}", null.alarms()));
        }
        if null.covered < 1.0 - ALPHA - slack(ALPHA) {
            failures.push(format!("{design:?}: coverage {}", null.covered));
        }
        if tenth.slower < detect {
            failures.push(format!("{design:?}: 10 % detected {} < {detect}", tenth.slower));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// What one rule path made of `SESSIONS` draws at one effect: the share of draws with any
/// row faster or slower, the share of rows called slower, and the share of rows whose interval
/// held the true ratio.
#[derive(Debug, Clone, Copy, Default)]
struct PathRates {
    any_alarm: f64,
    slower_rows: f64,
    covered_rows: f64,
    mde_median: f64,
    /// The pairs the decided rows rested on, median (the looks stop early).
    pairs_median: usize,
}

impl PathRates {
    /// `draws`: the decided rows of each draw.
    fn of(draws: &[Vec<Decision>], effect: f64) -> PathRates {
        let n = draws.len() as f64;
        let rows: Vec<&Decision> = draws.iter().flatten().collect();
        let m = rows.len().max(1) as f64;
        let mut mdes: Vec<f64> = rows.iter().map(|d| d.mde).collect();
        mdes.sort_by(f64::total_cmp);
        let mut pairs: Vec<usize> = rows.iter().map(|d| d.pairs).collect();
        pairs.sort_unstable();
        PathRates {
            any_alarm: draws
                .iter()
                .filter(|rows| rows.iter().any(|d| matches!(d.verdict, Verdict::Faster | Verdict::Slower)))
                .count() as f64
                / n,
            slower_rows: rows.iter().filter(|d| d.verdict == Verdict::Slower).count() as f64 / m,
            covered_rows: rows.iter().filter(|d| d.ci.contains(1.0 + effect)).count() as f64 / m,
            mde_median: mdes.get(mdes.len() / 2).copied().unwrap_or(f64::NAN),
            pairs_median: pairs.get(pairs.len() / 2).copied().unwrap_or(0),
        }
    }
}

/// The rule paths, each judged as its command judges it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Path {
    /// One session's row (the run table, `compare A`): the paired estimate, decided alone.
    Within,
    /// `compare A B` over ten rows, each the difference of two sessions' paired estimates,
    /// Holm across the ten (the main job's judged rows).
    Across,
    /// An energy row: the pair log ratios by run through `energy::paired_energy_estimate`.
    Energy,
    /// `--until-decided`: one run per look, Pocock's boundary for the planned looks; the
    /// decision at the first look that decides, or none.
    Looks,
}

const ACROSS_ROWS: usize = 10;

/// `SESSIONS` draws of `path` on `design` at `effect` (sessions B of `Across` carry it, A not),
/// with a profile of the design (`K = 20` A/A sessions, renewed every 20 draws) when asked.
fn path_cell(path: Path, design: &Design, effect: f64, with_profile: bool) -> PathRates {
    let calibration = with_profile.then_some(Calibration { design: *design, sessions: PROFILE_SESSIONS });
    calibrated_path_cell(path, design, effect, calibration)
}

/// [`path_cell`] with a profile made as `calibration` says (of another size, or of fewer
/// sessions), or none.
fn calibrated_path_cell(path: Path, design: &Design, effect: f64, calibration: Option<Calibration>) -> PathRates {
    let config = DecisionConfig::default();
    let theta = (1.0 + effect).ln();
    let salt = calibration.map_or(0, |c| 1 + ((c.sessions as u64) << 4) + ((c.design.runs as u64) << 10));
    let mut g = Gen::new(design.seed(effect, 0x9A7_0000 + path as u64 * 16 + salt));
    let mut aa = Gen::new(design.seed(effect, 0xAA_0000 + path as u64 * 16 + (salt << 16)));
    let mut fit: Option<TwoLevelFit> = None;
    // Computed once: the boundary's numerical integration grows with the square of the looks.
    let looks_level = match path {
        Path::Looks => crate::stats::pocock(design.runs, config.alpha).unwrap().nominal_alpha,
        _ => f64::NAN,
    };
    let draws: Vec<Vec<Decision>> = (0..SESSIONS)
        .map(|i| {
            if let Some(calibration) = calibration.filter(|_| i % PROFILE_SESSIONS == 0) {
                fit = Some(aa.fit(&calibration, &config));
            }
            // Each look is sized to the runs it has, as `run --until-decided` sizes it.
            let at = |runs| fit.as_ref().map(|f| sized(f, design, runs));
            let whole = at(design.runs);
            let profile = whole.as_ref();
            let decide = |e: &LogEstimate, sessions| crate::stats::decide_alone(e, profile, sessions, &config).unwrap();
            match path {
                Path::Within => vec![decide(&g.estimate(design, theta, &config), 1)],
                Path::Energy => {
                    let runs = g.diffs(design, theta);
                    vec![decide(&crate::energy::paired_energy_estimate(&runs, config.trim).unwrap(), 1)]
                }
                Path::Across => {
                    let mut rows: Vec<Decision> = (0..ACROSS_ROWS)
                        .map(|_| {
                            let (b, a) = (g.estimate(design, theta, &config), g.estimate(design, 0.0, &config));
                            crate::stats::before_holm(&LogEstimate::difference(&b, &a), profile, 2, &config).unwrap()
                        })
                        .collect();
                    crate::stats::decide_family(&mut rows);
                    rows
                }
                Path::Looks => {
                    let level = looks_level;
                    let blocks = g.session(design, theta);
                    let mut last = None;
                    for k in 1..=design.runs {
                        let e =
                            LogEstimate::paired(&PairBlocks::from_blocks(blocks[..k].to_vec()).unwrap(), config.trim)
                                .unwrap();
                        let mut d = crate::stats::decide_alone(&e, at(k).as_ref(), 1, &config).unwrap();
                        d.verdict = crate::stats::verdict_of(&d, d.p_value < level, d.equivalence_p_value < level);
                        let decided = d.verdict != Verdict::Inconclusive;
                        last = Some(d);
                        if decided {
                            break;
                        }
                    }
                    last.into_iter().collect()
                }
            }
        })
        .collect();
    PathRates::of(&draws, effect)
}

#[test]
fn every_rule_path_holds_its_false_alarm_rate_and_coverage_on_two_level_noise() {
    // The host's levels (σ 0.025 a pair, a run offset of 0.007 or 0.014), 8 pairs a run (the
    // frozen policy), 3 runs (the main job) or 4; `req/compare.md` has 6 runs too. Asserted for every path: false alarms (any row of a draw)
    // at most α + 3 SE, and intervals covering the true ratio at least 1 − α − 3 SE (not for the
    // looks, whose interval is the fixed-sample one of the last look).
    println!(
        "\npath | σ | run SD | runs × pairs | false alarms (any row) | coverage | 3 % seen (rows) | 10 % seen (rows) | MDE (median)"
    );
    let mut failures = Vec::new();
    for path in [Path::Within, Path::Across, Path::Energy, Path::Looks] {
        for (run_sd, runs) in [(0.007, 3), (0.014, 3), (0.014, 4)] {
            let design = Design::two_level(0.025, run_sd, runs, 8);
            let (zero, three, ten) = (
                path_cell(path, &design, 0.0, false),
                path_cell(path, &design, 0.03, false),
                path_cell(path, &design, 0.10, false),
            );
            println!(
                "{path:?} | 0.025 | {run_sd} | {runs} × 8 | {:.3} | {:.3} | {:.3} | {:.3} | {:.1} %",
                zero.any_alarm,
                zero.covered_rows,
                three.slower_rows,
                ten.slower_rows,
                100.0 * zero.mde_median
            );
            if zero.any_alarm > ALPHA + slack(ALPHA) {
                failures.push(format!("{path:?} {design:?}: false alarms {}", zero.any_alarm));
            }
            if path != Path::Looks && zero.covered_rows < 1.0 - ALPHA - slack(ALPHA) {
                failures.push(format!("{path:?} {design:?}: coverage {}", zero.covered_rows));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn a_rule_blind_to_the_run_level_fails_the_same_check_and_one_run_gives_no_verdict() {
    // The negative control: the same sessions, every run's blocks pooled as one run and judged
    // as if that error held run-to-run effects (the rule before issue 42). It must fail the
    // check the real rule passes; otherwise the check could not tell them apart.
    let config = DecisionConfig::default();
    println!("\nrule | σ | run SD | runs × pairs | false alarms | coverage");
    let mut failures = Vec::new();
    // 20 pairs a run, as the issue's review measured: the more pairs, the smaller the pairs'
    // error and the more the run offset dominates what the pooled rule cannot see.
    for (run_sd, runs) in [(0.007, 4), (0.014, 4), (0.014, 1)] {
        let design = Design::two_level(0.025, run_sd, runs, 20);
        let mut g = Gen::new(design.seed(0.0, 0xB11D));
        let blind: Vec<Decision> = (0..SESSIONS)
            .map(|_| crate::stats::decide_alone(&g.pooled_estimate(&design, 0.0, &config), None, 1, &config).unwrap())
            .collect();
        let blind = Rates::of(&blind, 0.0);
        let real = run_cell(&design, 0.0, false);
        println!("pooled as one run | 0.025 | {run_sd} | {runs} × 20 | {:.3} | {:.3}", blind.alarms(), blind.covered);
        println!("the rule | 0.025 | {run_sd} | {runs} × 20 | {:.3} | {:.3}", real.alarms(), real.covered);
        if blind.alarms() <= ALPHA + slack(ALPHA) {
            failures.push(format!("{design:?}: the pooled rule's false alarms {} pass the check", blind.alarms()));
        }
        if real.alarms() > ALPHA + slack(ALPHA) {
            failures.push(format!("{design:?}: the rule's false alarms {}", real.alarms()));
        }
        if runs == 1 && real.alarms() + real.no_difference > 0.0 {
            failures.push(format!("{design:?}: one run got a verdict"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn a_session_level_term_needs_a_profile_of_the_design() {
    // A session-level part (about 0.007 measured here, findings §21) is shared by every run of a
    // session: within one session it is part of the ratio the session measures, but between two
    // sessions it is noise that no run-level error sees. A profile of K A/A sessions of the same
    // design holds it, and `compare A B` with the profile keeps its level; without one, the
    // table below shows the cost, which the rule cannot remove without sessions to learn from.
    println!("\npath | session SD | error | false alarms (any row) | coverage");
    let mut failures = Vec::new();
    for session_sd in [0.0, 0.0072] {
        let design = Design { session_sd, ..Design::two_level(0.025, 0.014, 4, 8) };
        for with_profile in [false, true] {
            let zero = path_cell(Path::Across, &design, 0.0, with_profile);
            let error = if with_profile { "profile" } else { "run means" };
            println!("Across | {session_sd} | {error} | {:.3} | {:.3}", zero.any_alarm, zero.covered_rows);
            if (with_profile || session_sd == 0.0) && zero.any_alarm > ALPHA + slack(ALPHA) {
                failures.push(format!("session SD {session_sd}, {error}: false alarms {}", zero.any_alarm));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn a_profile_fitted_at_one_size_holds_its_level_at_others_and_adds_power() {
    // `calibrate --job`: K sessions of one size fitted by the two-level model, then sessions of
    // other sizes judged with it, on the host's three levels (pair σ 0.025, run SD 0.014 or
    // 0.007, session SD 0.0072), 8 pairs a run (the frozen policy). Asserted on every path: false
    // alarms at most α + 3 SE, coverage at least 1 − α − 3 SE (not for the looks). The last
    // column is the run means alone, blind to the session part (their false alarms across
    // sessions are `a_session_level_term_needs_a_profile_of_the_design`'s).
    println!(
        "\npath | run SD | calibrated on K × runs | judged runs | false alarms (any row) | coverage | 3 % seen (rows) | 10 % seen (rows) | without a profile: 10 % seen"
    );
    let mut failures = Vec::new();
    let design = |run_sd, runs| Design { session_sd: 0.0072, ..Design::two_level(0.025, run_sd, runs, 8) };
    let cases = [
        (Path::Within, 0.014, (10, 3), 3),
        (Path::Within, 0.014, (10, 3), 1),
        (Path::Across, 0.014, (10, 3), 3),
        (Path::Across, 0.007, (10, 3), 3),
        (Path::Across, 0.014, (10, 3), 6),
        (Path::Across, 0.014, (6, 2), 4),
        (Path::Looks, 0.014, (10, 3), 6),
    ];
    for (path, run_sd, (k, calibration_runs), runs) in cases {
        let judged = design(run_sd, runs);
        let calibration = Calibration { design: design(run_sd, calibration_runs), sessions: k };
        let rates = |effect| calibrated_path_cell(path, &judged, effect, Some(calibration));
        let (zero, three, ten) = (rates(0.0), rates(0.03), rates(0.10));
        let bare = calibrated_path_cell(path, &judged, 0.10, None);
        println!(
            "{path:?} | {run_sd} | {k} × {calibration_runs} | {runs} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3}",
            zero.any_alarm, zero.covered_rows, three.slower_rows, ten.slower_rows, bare.slower_rows
        );
        if zero.any_alarm > ALPHA + slack(ALPHA) {
            failures.push(format!(
                "{path:?} {judged:?} calibrated {k} × {calibration_runs}: false alarms {}",
                zero.any_alarm
            ));
        }
        if path != Path::Looks && zero.covered_rows < 1.0 - ALPHA - slack(ALPHA) {
            failures.push(format!("{path:?} {judged:?}: coverage {}", zero.covered_rows));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// `run --until-decided --decide-on first-token` (issue 48): the looks test the time-to-first-
/// token rows, one value a request paired by request (8 pairs a run), here without a noise
/// profile (a TTFT row has one only where `calibrate` fitted its design's first tokens), so
/// look 1 decides nothing and look `k`
/// judges the run means on `k − 1` degrees of freedom against a Pocock boundary computed for
/// normal statistics. The first token's noise is eight times a decode step's (`req/findings.md`
/// §38 measured the fixture's L512 TTFT pairs in sessions of 24 runs: σ about 0.20 a pair, run
/// means with no part beyond what σ gives them), and a time budget plans up to 50 looks, so the
/// boundary is checked here with many looks of few degrees of freedom: false alarms at most
/// α + 3 SE with normal and t₃ noise, and the power at a 5 % slowdown printed.
#[test]
fn the_first_token_looks_hold_their_level_without_a_profile_on_heavy_tailed_noise() {
    println!("\npath | σ | run SD | noise | looks × pairs | false alarms | 5 % seen | pairs at a decision (median)");
    let mut failures = Vec::new();
    for (sigma, run_sd, noise, looks) in [
        (0.04, 0.015, Noise::Normal, 12),
        (0.20, 0.01, Noise::Normal, 24),
        (0.20, 0.01, Noise::StudentT3, 24),
        (0.20, 0.01, Noise::StudentT3, 40),
    ] {
        let design = Design { noise, ..Design::two_level(sigma, run_sd, looks, 8) };
        let (zero, five) = (path_cell(Path::Looks, &design, 0.0, false), path_cell(Path::Looks, &design, 0.05, false));
        println!(
            "Looks, first token | {sigma} | {run_sd} | {noise:?} | {looks} × 8 | {:.3} | {:.3} | {}",
            zero.any_alarm, five.slower_rows, five.pairs_median
        );
        if zero.any_alarm > ALPHA + slack(ALPHA) {
            failures.push(format!("{design:?}: false alarms {}", zero.any_alarm));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Time to first token across sessions (issue 48: `compare B A` on the TTFT rows, a CI job's
/// stored baseline), with a profile `calibrate` fitted on the first tokens of ten sessions of
/// the same design: the fixture's L512 TTFT noise (σ 0.10 a pair with t₃ tails, a run part of
/// 0.02, 8 pairs a run, 32 runs a side; `req/findings.md` §44), and a session part of 0 or
/// 0.007 (§43's ten sessions spread by 1.4 %, their own errors 1.2 %). Asserted with the
/// profile: false alarms (any of the ten rows) at most α + 3 SE and coverage at least
/// 1 − α − 3 SE at both session parts. Printed: the share of rows that see a 5 % slowdown, and
/// the run means alone, which the session part makes overconfident.
#[test]
fn first_token_rows_across_sessions_hold_their_level_with_a_profile_of_their_own() {
    println!("\nTTFT across sessions | session SD | error | false alarms (any row) | coverage | 5 % seen (rows) | MDE (median)");
    let mut failures = Vec::new();
    for session_sd in [0.0, 0.007] {
        let design = Design { session_sd, noise: Noise::StudentT3, ..Design::two_level(0.10, 0.02, 32, 8) };
        let calibration = Some(Calibration { design, sessions: 10 });
        let rates = |effect, calibration| calibrated_path_cell(Path::Across, &design, effect, calibration);
        let (zero, five, bare) = (rates(0.0, calibration), rates(0.05, calibration), rates(0.0, None));
        println!(
            "Across | {session_sd} | profile of 10 sessions | {:.3} | {:.3} | {:.3} | {:.1} %",
            zero.any_alarm,
            zero.covered_rows,
            five.slower_rows,
            100.0 * zero.mde_median
        );
        println!(
            "Across | {session_sd} | run means | {:.3} | {:.3} | | {:.1} %",
            bare.any_alarm,
            bare.covered_rows,
            100.0 * bare.mde_median
        );
        if zero.any_alarm > ALPHA + slack(ALPHA) {
            failures.push(format!("session SD {session_sd}: false alarms {}", zero.any_alarm));
        }
        if zero.covered_rows < 1.0 - ALPHA - slack(ALPHA) {
            failures.push(format!("session SD {session_sd}: coverage {}", zero.covered_rows));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Issue 45: change points over a history of like sessions. Each point is one synthetic
/// session's paired estimate and its own error (the rule `compare` uses), with every level of
/// noise (pair σ, a run effect, a session effect that no run count removes); a series is 40
/// sessions, or 20 then 16 after a step. A series without a change must raise no change point
/// more than `α` (1 %) of the time; a 5 % step must be found, at its session (±1), in at least
/// 90 % of the series where the sessions are this project's main-job size.
#[test]
fn change_points_hold_their_false_alarm_rate_and_find_a_five_percent_step() {
    const SERIES: usize = 400;
    let settings = crate::stats::ChangeSettings::default();
    let config = DecisionConfig::default();
    let design = |runs: usize, session_sd: f64, noise: Noise| Design {
        sigma: 0.025,
        pairs: runs * 8,
        runs,
        run_sd: 0.010,
        session_sd,
        noise,
    };
    let history = |gen: &mut Gen, d: &Design, levels: &[(usize, f64)]| -> Vec<crate::stats::SeriesPoint> {
        levels
            .iter()
            .flat_map(|&(n, effect)| std::iter::repeat_n(effect, n))
            .map(|effect| {
                let e = gen.estimate(d, (1.0f64 + effect).ln(), &config);
                crate::stats::SeriesPoint { log_estimate: e.estimate, se: e.se }
            })
            .collect()
    };
    let slack = |p: f64| 3.0 * (p * (1.0 - p) / SERIES as f64).sqrt();
    println!("\nruns | session sd | noise | false alarms (40 A/A) | 5 % step found at ±1 | 3 % step found at ±1");
    let mut failures = Vec::new();
    for (runs, session_sd, noise, must_detect) in [
        (6, 0.007, Noise::Normal, true),
        (6, 0.014, Noise::Normal, false),
        (6, 0.007, Noise::StudentT3, true),
        (3, 0.007, Noise::Normal, false),
    ] {
        let d = design(runs, session_sd, noise);
        let mut gen = Gen::new(d.seed(0.0, 0x45_C4A6));
        let alarms = (0..SERIES)
            .filter(|_| !crate::stats::change_points(&history(&mut gen, &d, &[(40, 0.0)]), &settings).is_empty())
            .count() as f64
            / SERIES as f64;
        let found = |gen: &mut Gen, step: f64| {
            (0..SERIES)
                .filter(|_| {
                    let changes = crate::stats::change_points(&history(gen, &d, &[(20, 0.0), (16, step)]), &settings);
                    changes.len() == 1 && changes[0].index.abs_diff(20) <= 1
                })
                .count() as f64
                / SERIES as f64
        };
        let (five, three) = (found(&mut gen, 0.05), found(&mut gen, 0.03));
        println!("{runs} | {session_sd} | {noise:?} | {alarms:.3} | {five:.3} | {three:.3}");
        if alarms > settings.alpha + slack(settings.alpha) {
            failures.push(format!("{d:?}: false alarms {alarms}"));
        }
        if must_detect && five < 0.90 {
            failures.push(format!("{d:?}: 5 % step found {five}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
