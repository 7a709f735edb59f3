//! Tukey's fences (Tukey 1977, "Exploratory Data Analysis"): counts of mild and severe
//! outliers on each side.
//!
//! With the type-7 quartiles `Q1 = Q(0.25)`, `Q3 = Q(0.75)` and `IQR = Q3 - Q1`:
//! - mild: outside `[Q1 - 1.5 IQR, Q3 + 1.5 IQR]` but inside `[Q1 - 3 IQR, Q3 + 3 IQR]`;
//! - severe: outside `[Q1 - 3 IQR, Q3 + 3 IQR]`.
//!
//! A point exactly on a fence is not beyond it. Outliers are counted, never removed: a decode
//! step that took three times as long is a fact about the loop.

use super::sample::Sample;
use decode_baseline_wire::stats::TukeyOutliers;

/// Multiple of the IQR beyond the quartiles for a mild outlier.
pub const MILD_IQR: f64 = 1.5;
/// Multiple of the IQR beyond the quartiles for a severe outlier.
pub const SEVERE_IQR: f64 = 3.0;

/// Counts the outliers of `sample`.
pub fn tukey_outliers(sample: &Sample) -> TukeyOutliers {
    let q1 = sample.quantile(0.25);
    let q3 = sample.quantile(0.75);
    let iqr = q3 - q1;
    let (low_severe_fence, low_mild_fence) = (q1 - SEVERE_IQR * iqr, q1 - MILD_IQR * iqr);
    let (high_mild_fence, high_severe_fence) = (q3 + MILD_IQR * iqr, q3 + SEVERE_IQR * iqr);
    let mut counts = TukeyOutliers { q1, q3, low_severe: 0, low_mild: 0, high_mild: 0, high_severe: 0 };
    for &x in sample.sorted() {
        if x < low_severe_fence {
            counts.low_severe += 1;
        } else if x < low_mild_fence {
            counts.low_mild += 1;
        } else if x > high_severe_fence {
            counts.high_severe += 1;
        } else if x > high_mild_fence {
            counts.high_mild += 1;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_hand_computed_fences() {
        // 1..=9 plus -20, 14, 30 (12 points). Sorted: -20, 1..9, 14, 30.
        // Type 7: h = 11 p. Q1: h = 2.75 → 2 + 0.75 (3 - 2) = 2.75.
        // Q3: h = 8.25 → x[8] = 8, x[9] = 9 → 8.25. IQR = 5.5.
        // Mild fences: 2.75 - 8.25 = -5.5 and 8.25 + 8.25 = 16.5.
        // Severe fences: 2.75 - 16.5 = -13.75 and 8.25 + 16.5 = 24.75.
        // -20 is low severe; 14 is inside; 30 is high severe.
        let mut x: Vec<f64> = (1..=9).map(f64::from).collect();
        x.extend([-20.0, 14.0, 30.0]);
        let o = tukey_outliers(&Sample::new(x).unwrap());
        assert_eq!((o.q1, o.q3), (2.75, 8.25));
        assert_eq!((o.low_severe, o.low_mild, o.high_mild, o.high_severe), (1, 0, 0, 1));

        // Replace 30 by 20: above 16.5, below 24.75 → high mild.
        let mut x: Vec<f64> = (1..=9).map(f64::from).collect();
        x.extend([-20.0, 14.0, 20.0]);
        let o = tukey_outliers(&Sample::new(x).unwrap());
        assert_eq!((o.low_severe, o.low_mild, o.high_mild, o.high_severe), (1, 0, 1, 0));
        assert_eq!(o.total(), 2);
    }

    #[test]
    fn a_point_on_the_fence_is_not_an_outlier() {
        // [0, 0, 0, 1, 1, 1, 2.5]: h = 6 p; Q1 = x[1.5] = 0, Q3 = x[4.5] = 1, IQR 1;
        // the high mild fence is 2.5 exactly.
        let o = tukey_outliers(&Sample::new(vec![0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.5]).unwrap());
        assert_eq!(o.total(), 0);
    }
}
