//! Change points in a history: where, in a series of like sessions, the level of one row's
//! estimate moved, with its size and interval (issue 45; `decode-baseline history`).
//!
//! Each point `i` is one session's estimate `y_i` (the log ratio of the row, `ln(adapter /
//! reference)`) with its own standard error `s_i` (the row's test error, which holds the pairs'
//! and the runs' noise, or the host noise profile's when that is larger). Between sessions there
//! is a third level no run count removes (`req/findings.md` §21: about 0.007 on the log scale
//! here), so a point varies by more than its own error says. The sessions of one series are
//! alike by construction (`history`'s series key), so one variance serves every point:
//!
//! * from the series, robust to the steps it looks for: successive differences `d_i = y_{i+1} −
//!   y_i` have variance `2v` where the level holds, and a step touches one of them only; so `v̂ =
//!   median(d²) / (2 · 0.4549)` (the median of χ²₁);
//! * never below what the sessions themselves showed: `v = max(v̂, median(s_i²))`; the part
//!   above the own errors is the between-session variance `γ² = v − median(s_i²)`.
//!
//! Weighting each point by its own `s_i` was tried first and measured on the simulation below:
//! an own error rests on a handful of runs (5 df at 6 runs), the points whose error came out
//! small drew the means, and a series without a change raised one 3.7 % (6 runs) to 9 % (3
//! runs) of the time at a stated 1 %.
//!
//! The test is a windowed one, as Apache Otava's and Perfherder's are: for every split `k` of a
//! segment that leaves at least `min_segment` points on each side, the means of up to `window`
//! points before and after it differ by `Δ_k`, with `t_k = Δ_k / √(v/n_before + v/n_after)`.
//! The largest `|t_k|` is a change point when it passes the two-sided Student t quantile at `α /
//! K` (Bonferroni over the segment's `K` candidate splits) on `0.3 (n − 1)` degrees of freedom
//! (the median estimate of `v` has about a third of the efficiency of a variance), so a series
//! without a change raises a false alarm at most about `α` of the time; binary segmentation
//! then looks again on each side of a change found. Two guards keep a single spike from making a
//! change point (the complaint of otava#150): a minimum segment length, and each window's points
//! winsorized at [`CLIP_SD`] standard deviations from the window's median before they are
//! averaged (a spike among the last few points would otherwise move their mean alone). The
//! false-alarm rate and the detection of a 5 % step are measured on simulated two-level sessions
//! in `stats::simulation`.

use statrs::distribution::{ContinuousCDF, Normal};

use super::sample::median_in_place;

/// The median of χ²₁: `median(d²) / MEDIAN_CHI2_1` estimates `Var d` for a normal `d`.
const MEDIAN_CHI2_1: f64 = 0.454_936_423_119_572_8;

/// Defaults of [`ChangeSettings`].
pub const DEFAULT_CHANGE_ALPHA: f64 = 0.01;
pub const DEFAULT_MIN_SEGMENT: usize = 4;
pub const DEFAULT_WINDOW: usize = 30;

/// One session's estimate of a row: `ln` of its ratio, and the standard error of that.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeriesPoint {
    pub log_estimate: f64,
    pub se: f64,
}

/// How change points are looked for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangeSettings {
    /// False-alarm rate of one series without a change, two-sided.
    pub alpha: f64,
    /// Fewest points on each side of a change.
    pub min_segment: usize,
    /// Most points on each side that a split's means use.
    pub window: usize,
}

impl Default for ChangeSettings {
    fn default() -> Self {
        ChangeSettings { alpha: DEFAULT_CHANGE_ALPHA, min_segment: DEFAULT_MIN_SEGMENT, window: DEFAULT_WINDOW }
    }
}

/// A change found: the first point after it, its size and the test that found it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangePoint {
    /// The index of the first point of the new level.
    pub index: usize,
    /// `ln` of the ratio of the level after to the level before.
    pub log_change: f64,
    /// The standard error of `log_change`.
    pub se: f64,
    /// `log_change / se`, a t statistic.
    pub z: f64,
    /// The `|z|` it had to pass.
    pub threshold: f64,
    /// Points the two means used, before and after.
    pub before: usize,
    pub after: usize,
}

impl ChangePoint {
    /// The level after over the level before (1.05: 5 % slower after).
    pub fn ratio(&self) -> f64 {
        self.log_change.exp()
    }

    /// The interval of [`Self::ratio`] at `confidence` (two-sided, normal).
    pub fn interval(&self, confidence: f64) -> (f64, f64) {
        let z = normal_quantile(0.5 + confidence / 2.0);
        ((self.log_change - z * self.se).exp(), (self.log_change + z * self.se).exp())
    }
}

fn normal_quantile(p: f64) -> f64 {
    Normal::standard().inverse_cdf(p)
}

/// The median of `values` (`stats::sample`'s), `None` for none.
fn median(mut values: Vec<f64>) -> Option<f64> {
    (!values.is_empty()).then(|| median_in_place(&mut values))
}

/// The variance of one point of `points` and the degrees of freedom it rests on (see the module
/// docs); `None` with fewer than three points.
pub fn point_variance(points: &[SeriesPoint]) -> Option<(f64, f64)> {
    if points.len() < 3 {
        return None;
    }
    let squares: Vec<f64> = points.windows(2).map(|w| (w[1].log_estimate - w[0].log_estimate).powi(2)).collect();
    let from_series = median(squares)? / MEDIAN_CHI2_1 / 2.0;
    let own = median(points.iter().map(|p| p.se.powi(2)).collect())?;
    let df = (DF_PER_POINT * (points.len() - 1) as f64).max(1.0);
    Some((from_series.max(own).max(f64::MIN_POSITIVE), df))
}

/// The between-session variance `γ²`: the part of a point's variance above its own error.
pub fn between_session_variance(points: &[SeriesPoint]) -> f64 {
    let own = median(points.iter().map(|p| p.se.powi(2)).collect()).unwrap_or(0.0);
    point_variance(points).map_or(0.0, |(v, _)| (v - own).max(0.0))
}

/// Degrees of freedom per difference of the median estimate of the point variance.
const DF_PER_POINT: f64 = 0.3;

/// How far from its window's median a point counts, in standard deviations: a point farther out
/// counts as if it were this far (winsorized).
pub const CLIP_SD: f64 = 2.5;

/// The mean of `points`, each first pulled to within [`CLIP_SD`] standard deviations `sd` of the
/// window's median.
fn clipped_mean(points: &[SeriesPoint], sd: f64) -> f64 {
    let center = median(points.iter().map(|p| p.log_estimate).collect()).unwrap_or(0.0);
    let reach = CLIP_SD * sd;
    points.iter().map(|p| center + (p.log_estimate - center).clamp(-reach, reach)).sum::<f64>() / points.len() as f64
}

/// The best split of `points[lo..hi]`, tested: `Some` when it passes the threshold.
fn best_split(
    points: &[SeriesPoint],
    (lo, hi): (usize, usize),
    (variance, df): (f64, f64),
    s: &ChangeSettings,
) -> Option<ChangePoint> {
    let m = s.min_segment.max(1);
    if hi - lo < 2 * m {
        return None;
    }
    let candidates = (lo + m..=hi - m).count();
    let threshold = super::t_quantile(1.0 - s.alpha / (2.0 * candidates as f64), df);
    let window = s.window.max(m);
    let sd = variance.sqrt();
    (lo + m..=hi - m)
        .map(|k| {
            let before = &points[k.saturating_sub(window).max(lo)..k];
            let after = &points[k..(k + window).min(hi)];
            let se = (variance / before.len() as f64 + variance / after.len() as f64).sqrt();
            let log_change = clipped_mean(after, sd) - clipped_mean(before, sd);
            ChangePoint {
                index: k,
                log_change,
                se,
                z: log_change / se,
                threshold,
                before: before.len(),
                after: after.len(),
            }
        })
        .max_by(|a, b| a.z.abs().total_cmp(&b.z.abs()))
        .filter(|c| c.z.abs() > threshold)
}

/// The change points of `points`, in order (binary segmentation; see the module docs).
pub fn change_points(points: &[SeriesPoint], settings: &ChangeSettings) -> Vec<ChangePoint> {
    let Some(variance) = point_variance(points) else { return Vec::new() };
    let mut found = Vec::new();
    let mut segments = vec![(0, points.len())];
    while let Some(segment) = segments.pop() {
        if let Some(change) = best_split(points, segment, variance, settings) {
            found.push(change);
            segments.push((segment.0, change.index));
            segments.push((change.index, segment.1));
        }
    }
    found.sort_by_key(|c| c.index);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(levels: &[(usize, f64)], se: f64) -> Vec<SeriesPoint> {
        // A fixed, small zig-zag instead of noise: the arithmetic is what is checked here; the
        // rates on noise are `stats::simulation`'s.
        let mut out = Vec::new();
        for &(n, level) in levels {
            for i in 0..n {
                let wiggle = if i % 2 == 0 { 0.002 } else { -0.002 };
                out.push(SeriesPoint { log_estimate: level + wiggle, se });
            }
        }
        out
    }

    #[test]
    fn a_step_is_found_at_its_first_point_with_its_size() {
        let points = series(&[(20, 0.0), (12, 0.05f64.ln_1p())], 0.01);
        let found = change_points(&points, &ChangeSettings::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].index, 20);
        assert!((found[0].ratio() - 1.05).abs() < 0.002, "{found:?}");
        let (lower, upper) = found[0].interval(0.95);
        assert!(lower < 1.05 && 1.05 < upper && lower > 1.0, "{lower} {upper}");
    }

    #[test]
    fn a_flat_series_and_a_lone_spike_have_none() {
        assert!(change_points(&series(&[(40, 0.0)], 0.01), &ChangeSettings::default()).is_empty());
        for at in [20, 36, 39] {
            let mut spiked = series(&[(40, 0.0)], 0.01);
            spiked[at].log_estimate = 0.10;
            assert!(change_points(&spiked, &ChangeSettings::default()).is_empty(), "one spike at {at} is not a change");
        }
    }

    #[test]
    fn two_steps_are_both_found_and_short_series_are_not_split() {
        let points = series(&[(12, 0.0), (12, 0.06), (12, 0.0)], 0.01);
        let found: Vec<usize> = change_points(&points, &ChangeSettings::default()).iter().map(|c| c.index).collect();
        assert_eq!(found, vec![12, 24]);
        let short = series(&[(3, 0.0), (4, 0.2)], 0.01);
        assert!(change_points(&short, &ChangeSettings::default()).is_empty(), "fewer than 2 × 4 points");
    }

    #[test]
    fn the_point_variance_ignores_a_step_and_never_falls_below_the_own_errors() {
        // Alternating ±0.01 around the level: successive differences of 0.02, so v̂ = 0.02² /
        // (2 × 0.4549); the median ignores the one step.
        let mut points: Vec<SeriesPoint> =
            (0..30).map(|i| SeriesPoint { log_estimate: if i % 2 == 0 { 0.01 } else { -0.01 }, se: 0.005 }).collect();
        let (flat, df) = point_variance(&points).unwrap();
        let expected = 0.02f64.powi(2) / MEDIAN_CHI2_1 / 2.0;
        assert!((flat - expected).abs() < 1e-15, "{flat} {expected}");
        assert!((df - 0.3 * 29.0).abs() < 1e-12);
        assert!((between_session_variance(&points) - (expected - 0.005f64.powi(2))).abs() < 1e-15);
        for p in &mut points[15..] {
            p.log_estimate += 0.05;
        }
        assert!((point_variance(&points).unwrap().0 - flat).abs() < 1e-15);
        for p in &mut points {
            p.se = 0.05;
        }
        assert_eq!(point_variance(&points).unwrap().0, 0.05f64.powi(2), "the own errors are a floor");
        assert_eq!(between_session_variance(&points), 0.0);
    }
}
