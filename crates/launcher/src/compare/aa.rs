//! The A/A results beside each row of a comparison: what the session's A/A runs say about the
//! noise the row's error may not hold, shown next to the ratio they check (issue 28, part 7).
//!
//! A session job with `"aa_pair": true` runs each adapter's headline cells once more; the
//! launcher records the A/A ratio (the extra run's over the others', bootstrap interval), per
//! adapter (`aa_ratios`) and, interleaved, of the paired ratio (`paired_aa`). Both sides of an
//! A/A ratio are the same code on the same machine, so its departure from 1 is noise, run to
//! run. Per row:
//!
//! - the recorded A/A ratios of the row's adapters in its cell (both sessions across two), or,
//!   for a cell without any (the launcher runs A/A pairs for headline cells only), those of the
//!   other cells, labelled with their cell;
//! - interleaved, a test: the A/A group's paired estimate against the main groups'
//!   (`rule::aa_group`, the difference of two paired estimates, Welch t at `α`). Significant
//!   means the ratio moved between two runs of the same code by more than the pair-to-pair
//!   noise explains: a run-to-run effect that a one-run error does not hold;
//! - `dwarfs_interval` when the A/A ratio's distance from 1, `|ln r_AA|`, exceeds the half-width
//!   of the row's interval in log terms, `t_{1−α/2,ν} SE`: the noise one rerun showed is larger
//!   than the uncertainty the verdict admits.
//!
//! Either gives the row a warning; the verdict itself stays the test's (the noise profile,
//! `crates/launcher/src/stats/profile.rs`, is what puts run-to-run noise into the error).

use crate::stats::{t_quantile, Decision};
use decode_baseline_wire::{compare::AaResult, Adapter};

use super::{rule, Settings};
use crate::session::CellData;

/// The A/A result of an interleaved row: the recorded paired A/A ratio and the test of the A/A
/// group against the main groups.
pub fn paired(cell: &CellData, adapter: &Adapter, settings: &Settings<'_>) -> Vec<AaResult> {
    let test = rule::aa_group(cell, adapter, settings.config.trim)
        .and_then(|diff| crate::stats::decide_alone(&diff, None, 1, &settings.config).ok());
    let recorded = cell.paired_aa.get(adapter).copied();
    if test.is_none() && recorded.is_none() {
        return Vec::new();
    }
    vec![AaResult { label: format!("{adapter} against {}", cell.reference), recorded, test, dwarfs_interval: false }]
}

/// The recorded A/A ratios of `adapters` in each labelled cell: the paired ones when `paired`
/// (an interleaved row against the reference), else each adapter's own.
pub fn recorded(cells: &[(&str, &CellData)], adapters: &[&Adapter], paired: bool) -> Vec<AaResult> {
    let mut out = Vec::new();
    for (prefix, cell) in cells {
        for adapter in adapters {
            let found = if paired { cell.paired_aa.get(*adapter) } else { cell.aa_ratios.get(*adapter) };
            if let Some(r) = found {
                let label = if paired {
                    format!("{prefix}{adapter} against {}", cell.reference)
                } else {
                    format!("{prefix}{adapter}")
                };
                out.push(AaResult { label, recorded: Some(*r), test: None, dwarfs_interval: false });
            }
        }
    }
    out
}

/// The recorded A/A ratios of `adapters` in the cells other than the row's cell `of`, of its
/// quantity, of each labelled session (`""` within one, `"A "`, `"B "` across two), each labelled
/// `<prefix><cell> <adapter>`: the launcher runs A/A pairs for headline cells only, and the noise
/// they saw is the best measure there is of the machine during that session for a cell without
/// its own.
pub fn other_cells(
    sessions: &[(&str, &[CellData])],
    of: &CellData,
    adapters: &[&Adapter],
    paired: bool,
) -> Vec<AaResult> {
    let prefixes: Vec<(String, &CellData)> = sessions
        .iter()
        .flat_map(|(prefix, cells)| {
            cells
                .iter()
                .filter(|c| c.cell != of.cell && c.quantity == of.quantity)
                .map(move |c| (format!("{prefix}{} ", c.cell), c))
        })
        .collect();
    let labelled: Vec<(&str, &CellData)> = prefixes.iter().map(|(p, c)| (p.as_str(), *c)).collect();
    recorded(&labelled, adapters, paired)
}

/// Marks the A/A results that dwarf the row's interval and words the row's warnings.
pub fn warnings(decision: &Decision, aa: &mut [AaResult]) -> Vec<String> {
    let half_width = t_quantile(1.0 - decision.config.alpha / 2.0, decision.df) * decision.se;
    let mut out = Vec::new();
    for result in aa.iter_mut() {
        let Some(ratio) = result.ratio() else { continue };
        result.dwarfs_interval = ratio.ln().abs() > half_width;
        let moved = format!("{:+.1} %", 100.0 * (ratio - 1.0));
        // A row decided on run means holds run-to-run effects in its error: a significant A/A
        // group then shows their size, and a rerun far outside the interval is a run unlike the
        // others rather than noise the error misses.
        let held = decision.run_effects_measured;
        if let Some(test) = result.test.as_ref().filter(|t| t.significant) {
            let consequence = if held {
                "a run-to-run effect, which this row's error holds (its units are runs)"
            } else {
                "a run-to-run effect this row's error does not hold (a host noise profile or 2+ repetitions would)"
            };
            out.push(format!(
                "A/A {}: the A/A group moved the ratio by {moved} (p = {:.3}), beyond the pair-to-pair noise: \
                 {consequence}",
                result.label, test.p_value
            ));
        } else if result.dwarfs_interval {
            let consequence = if held {
                "a run unlike the runs measured (rerun, or look at the host's activity)"
            } else {
                "the verdict's error may not hold run-to-run noise"
            };
            out.push(format!(
                "A/A {}: one rerun of the same code moved the ratio by {moved}, more than this row's interval \
                 admits (±{:.1} %): {consequence}",
                result.label,
                100.0 * (half_width.exp() - 1.0)
            ));
        }
    }
    if decision.outside_profile {
        out.push(format!(
            "the row's own error ({:.2} % in log terms) is more than {} times its noise profile's: this session is unlike \
             the ones profiled; recalibrate",
            100.0 * decision.own_se,
            crate::stats::OUTSIDE_PROFILE
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::stats::{DecisionConfig, Rule, Verdict};
    use decode_baseline_wire::Mode;

    use super::*;
    use crate::compare::{estimate::within_rows, RowResult};

    fn pairs(ratio: f64) -> Vec<Vec<(f64, f64)>> {
        let noise = [1.0, 1.01, 0.99, 1.005, 0.995, 1.008, 0.992, 1.003, 0.997, 1.0];
        vec![(0..20).map(|k| (1e6 * ratio * noise[(k * 3) % 10], 1e6)).collect()]
    }

    fn cell(main: f64, aa: f64) -> CellData {
        CellData {
            cell: "c".to_owned(),
            mode: Mode::Headline,
            quantity: decode_baseline_wire::row::Quantity::PerToken,
            case_id: "tiny".to_owned(),
            reference: Adapter::Stock,
            adapters: [Adapter::Controlled, Adapter::Stock]
                .into_iter()
                .map(|a| {
                    let r = crate::session::MeasuredRequest { run: 0, positions: vec![17], dur_ns: vec![1_000_000] };
                    (a, vec![r.clone(), r])
                })
                .collect(),
            aa_ratios: BTreeMap::new(),
            runs: BTreeMap::new(),
            pairs: [(Adapter::Controlled, pairs(main))].into(),
            paired_aa: BTreeMap::new(),
            aa_pairs: [(Adapter::Controlled, pairs(aa))].into(),
        }
    }

    fn row_of(c: &CellData) -> (Decision, Vec<AaResult>, Vec<String>) {
        let settings = Settings { config: DecisionConfig::default(), profiles: None };
        match within_rows(std::slice::from_ref(c), &settings).remove(0).outcome {
            RowResult::Compared { decision, aa, warnings, .. } => (decision, aa, warnings),
            RowResult::NotCompared { reason } => panic!("{reason}"),
        }
    }

    #[test]
    fn an_aa_group_that_moved_the_ratio_is_tested_and_warned_about() {
        // The main groups say controlled is 35 % faster, tightly; its A/A group ran 32 % slower
        // than that (issue 28's "0.651 … while its own A/A group moved that ratio by 32 %").
        let (decision, aa, warnings) = row_of(&cell(0.651, 0.651 * 1.32));
        // The A/A group is a second run of the row: two runs 32 % apart leave it undecided.
        assert_eq!((decision.rule, decision.verdict), (Rule::PairedRunMeans, Verdict::Inconclusive), "{decision:?}");
        let test = aa[0].test.as_ref().expect("the A/A group is tested");
        assert!(test.significant && (test.ratio - 1.32).abs() < 1e-9, "{test:?}");
        // The row's error now holds that run, so its interval is wider than the move.
        assert!(!aa[0].dwarfs_interval);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].starts_with("A/A controlled against stock: the A/A group moved the ratio by +32.0 %"));
        assert!(warnings[0].ends_with("which this row's error holds (its units are runs)"), "{warnings:?}");

        // An A/A group that agrees: tested, not significant, no warning.
        let (_, aa, warnings) = row_of(&cell(0.651, 0.651));
        assert!(!aa[0].test.as_ref().unwrap().significant && !aa[0].dwarfs_interval);
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn other_cells_stand_in_only_for_a_row_of_their_own_quantity() {
        use decode_baseline_wire::row::Quantity;
        let estimate = crate::stats::RatioEstimate {
            ratio: 1.02,
            ci: decode_baseline_wire::stats::Interval {
                lower: 1.0,
                upper: 1.04,
                bootstrap: crate::stats::BootstrapConfig::default(),
                resampling: crate::stats::Resampling::ByRequest,
            },
        };
        let recorded = CellData {
            cell: "other".to_owned(),
            aa_ratios: [(Adapter::Controlled, estimate)].into(),
            ..cell(1.0, 1.0)
        };
        let per_token = cell(1.0, 1.0);
        let first_token = CellData { quantity: Quantity::FirstToken, ..cell(1.0, 1.0) };
        let of =
            |row: &CellData| other_cells(&[("", std::slice::from_ref(&recorded))], row, &[&Adapter::Controlled], false);
        let stand_in = of(&per_token);
        assert_eq!(stand_in.len(), 1, "{stand_in:?}");
        assert_eq!(stand_in[0].label, "other controlled");
        // Per-token A/A noise says nothing of the first token's.
        assert_eq!(of(&first_token), Vec::new());
    }
}
