//! The comparisons themselves: one row per cell (one session) or per cell and adapter (two
//! sessions), each a test of the log ratio of per-token times (numerator over denominator) by
//! the rule its design allows (`rule`, `crates/launcher/src/stats/decision.rs`), with the A/A results that
//! check it beside it; Holm across the judged rows; and the overall verdict.
//!
//! One session: each adapter over the reference. Two sessions: B over A, per adapter. A ratio
//! below 1 means the numerator takes less time per token.

use std::collections::BTreeSet;

use crate::stats::{
    against_yardstick, decide_family, ratio_of_medians, BootstrapConfig, Decision, DecisionConfig, LogEstimate,
    NoiseProfile, RatioEstimate, Resampling, SessionRatio, Verdict,
};
use decode_baseline_wire::Adapter;

use super::{aa, energy, identity, rule, CompareError, Settings};
use crate::session::{self as samples, CellData, LoadedSession};
use decode_baseline_wire::compare::{
    AaResult, Basis, CompareReport, Kind, Mismatch, Quantity, Row, RowResult, SessionRef, Side, Versions,
    COMPARE_SCHEMA_VERSION,
};

pub(super) fn session_ref(s: &LoadedSession) -> SessionRef {
    SessionRef { session_id: s.report.session_id.clone(), path: s.path.display().to_string(), status: s.report.status }
}

fn side(label: &str, cell: &CellData, adapter: &Adapter) -> Side {
    let sample = cell.sample(adapter).ok();
    Side {
        label: label.to_owned(),
        median_ns: sample.as_ref().map(|s| s.pooled().median()),
        requests: cell.adapters.get(adapter).map_or(0, Vec::len),
    }
}

/// Tests `estimate` (spanning `sessions` sessions) against `profile` before Holm, and builds
/// the row's outcome with its display ratio and A/A results; `Err` means not compared, with
/// the reason.
fn outcome(
    estimate: Result<LogEstimate, String>,
    sessions: usize,
    median_ratio: Option<RatioEstimate>,
    aa: Vec<AaResult>,
    profile: Option<NoiseProfile>,
    config: &DecisionConfig,
) -> RowResult {
    let decision = estimate
        .and_then(|e| crate::stats::before_holm(&e, profile.as_ref(), sessions, config).map_err(|e| e.to_string()));
    match decision {
        Ok(decision) => RowResult::Compared { decision, median_ratio, aa, warnings: Vec::new() },
        Err(reason) => RowResult::NotCompared { reason },
    }
}

fn of_medians(
    numerator: Result<crate::stats::ClusteredSample, String>,
    denominator: Result<crate::stats::ClusteredSample, String>,
) -> Option<RatioEstimate> {
    let (n, d) = (numerator.ok()?, denominator.ok()?);
    ratio_of_medians(&n, &d, Resampling::ByRequest, &BootstrapConfig::default()).ok()
}

/// The rows of one session, Holm applied across them: also the verdict lines of `run`'s table.
pub fn within_rows(cells: &[CellData], settings: &Settings<'_>) -> Vec<Row> {
    let mut rows = Vec::new();
    for cell in cells {
        for adapter in cell.adapters.keys().filter(|a| **a != cell.reference) {
            rows.push(within_row(cell, cells, adapter, settings));
        }
    }
    holm_over_judged(&mut rows);
    rows
}

/// `adapter` over the reference in one cell of one session.
fn within_row(cell: &CellData, cells: &[CellData], adapter: &Adapter, settings: &Settings<'_>) -> Row {
    let reference = &cell.reference;
    let trim = settings.config.trim;
    let estimate = rule::within(cell, adapter, trim);
    let (basis, median_ratio) = match cell.paired(adapter) {
        Some(pairs) => (Basis::Paired, pairs.ok().and_then(|p| p.estimate(&BootstrapConfig::default()).ok())),
        None => (Basis::RatioOfMedians, of_medians(cell.sample(adapter), cell.sample(reference))),
    };
    let mut aa = match (&basis, &estimate) {
        (Basis::Paired, Ok(_)) => aa::paired(cell, adapter, settings),
        _ => aa::recorded(&[("", cell)], &[adapter, reference], false),
    };
    if aa.is_empty() {
        aa = aa::other_cells(&[("", cells)], cell, &[adapter, reference], basis == Basis::Paired);
    }
    Row {
        cell: cell.cell.clone(),
        mode: cell.mode,
        quantity: cell.quantity,
        adapter: Some(adapter.clone()),
        basis,
        against: Some(reference.clone()),
        judged: true,
        numerator: side(adapter.as_str(), cell, adapter),
        denominator: side(reference.as_str(), cell, reference),
        outcome: outcome(
            estimate,
            1,
            median_ratio,
            aa,
            settings.row_profile(&[cell], adapter, reference),
            &settings.config,
        ),
    }
}

/// One session's ratio of `adapter` to the reference, paired when the session interleaved them
/// (for the display ratio's bootstrap).
enum Yardstick {
    Paired(crate::stats::PairedSample),
    Medians(crate::stats::ClusteredSample, crate::stats::ClusteredSample),
}

impl Yardstick {
    fn of(cell: &CellData, adapter: &Adapter) -> Result<Self, String> {
        match cell.paired(adapter) {
            Some(pairs) => pairs.map(Yardstick::Paired),
            None => Ok(Yardstick::Medians(cell.sample(adapter)?, cell.sample(&cell.reference)?)),
        }
    }

    fn ratio(&self) -> SessionRatio<'_> {
        match self {
            Yardstick::Paired(pairs) => SessionRatio::Paired(pairs),
            Yardstick::Medians(adapter, reference) => SessionRatio::Medians { adapter, reference },
        }
    }
}

/// Session B against session A, cell by cell: for every adapter other than the reference, its
/// ratio to the reference in B over the same in A (`against_reference`); and for every adapter,
/// its own times B over A (`raw`), not judged unless `raw` is set.
#[allow(clippy::too_many_arguments)]
pub fn compare_across(
    a: &LoadedSession,
    b: &LoadedSession,
    settings: &Settings<'_>,
    allow_mismatch: bool,
    across_versions: bool,
    across_devices: bool,
    across_placements: bool,
    raw: bool,
) -> Result<CompareReport, CompareError> {
    crate::stats::validate_decision_config(&settings.config).map_err(CompareError::Settings)?;
    let cells_a = samples::cells(&a.report);
    let cells_b = samples::cells(&b.report);
    let names_b: BTreeSet<&str> = cells_b.iter().map(|c| c.cell.as_str()).collect();
    let names_a: BTreeSet<&str> = cells_a.iter().map(|c| c.cell.as_str()).collect();
    let shared_cases: BTreeSet<String> =
        cells_a.iter().filter(|c| cells_b.iter().any(|d| d.case_id == c.case_id)).map(|c| c.case_id.clone()).collect();
    let mut mismatches = identity::across(&a.report, &b.report, &shared_cases);
    let versions = Versions {
        a: identity::versions(&a.report),
        b: identity::versions(&b.report),
        across_versions,
        differences: mismatches.iter().filter(|m| identity::is_environment(m)).cloned().collect(),
    };
    if across_versions {
        mismatches.retain(|m| !identity::is_environment(m));
    }
    let device_differences: Vec<Mismatch> = mismatches.iter().filter(|m| identity::is_device(m)).cloned().collect();
    if across_devices {
        mismatches.retain(|m| !identity::is_device(m));
    }
    // Asked for, the placement difference is told on stderr, not kept as a mismatch.
    if across_placements {
        for m in mismatches.iter().filter(|m| identity::is_placement(m)) {
            eprintln!("decode-baseline: note: placement differs (--across-placements): {} vs {}", m.a, m.b);
        }
        mismatches.retain(|m| !identity::is_placement(m));
    }
    let refused = !mismatches.is_empty() && !allow_mismatch;
    let mut rows = Vec::new();
    if !refused {
        let (judged_a, judged_b) = (samples::judged_cells(&a.report), samples::judged_cells(&b.report));
        let steps = (a.report.job.prefill_step_size(), b.report.job.prefill_step_size());
        let all = (&judged_a[..], &judged_b[..]);
        for ca in &judged_a {
            let Some(cb) = judged_b.iter().find(|c| c.cell == ca.cell && c.quantity == ca.quantity) else { continue };
            let reference = &ca.reference;
            let mut adapters: Vec<&Adapter> = ca.adapters.keys().chain(cb.adapters.keys()).collect();
            adapters.sort();
            adapters.dedup();
            for adapter in adapters {
                let in_both = ca.adapters.contains_key(adapter) && cb.adapters.contains_key(adapter);
                let with_reference = in_both
                    && cb.reference == *reference
                    && ca.adapters.contains_key(reference)
                    && cb.adapters.contains_key(reference);
                let mut pushed = Vec::new();
                if adapter != reference && with_reference {
                    pushed.push(yardstick_row(ca, cb, all, adapter, settings));
                }
                pushed.push(raw_row(ca, cb, all, adapter, settings, raw));
                if ca.quantity == Quantity::FirstToken && steps.0 != steps.1 {
                    // The prompt's chunks are part of what the first token costs.
                    let reason = format!("the prefill step sizes differ (A {}, B {})", steps.0, steps.1);
                    pushed.iter_mut().for_each(|row| row.outcome = RowResult::NotCompared { reason: reason.clone() });
                }
                rows.extend(pushed);
            }
        }
        holm_over_judged(&mut rows);
    }
    finish(CompareReport {
        schema_version: COMPARE_SCHEMA_VERSION,
        kind: Kind::AcrossSessions,
        a: session_ref(a),
        b: Some(session_ref(b)),
        mismatches,
        refused,
        versions: Some(versions),
        device_differences: if across_devices { device_differences } else { Vec::new() },
        settings: settings.config,
        judged_rows: 0,
        raw,
        rows,
        only_in_a: names_a.difference(&names_b).map(|s| (*s).to_owned()).collect(),
        only_in_b: names_b.difference(&names_a).map(|s| (*s).to_owned()).collect(),
        energy: if refused { Vec::new() } else { energy::across(&a.report, &b.report, &settings.config) },
        verdict: None,
        exit_code: 0,
    })
}

/// Both sessions' cells, for the A/A results of other cells.
type Sessions<'a> = (&'a [CellData], &'a [CellData]);

fn yardstick_row(ca: &CellData, cb: &CellData, all: Sessions<'_>, adapter: &Adapter, settings: &Settings<'_>) -> Row {
    let estimate = rule::against_reference(cb, ca, adapter, settings.config.trim);
    let median_ratio = Yardstick::of(cb, adapter)
        .and_then(|yb| Yardstick::of(ca, adapter).map(|ya| (yb, ya)))
        .ok()
        .and_then(|(yb, ya)| against_yardstick(yb.ratio(), ya.ratio(), &BootstrapConfig::default()).ok());
    let paired = ca.pairs.contains_key(adapter);
    let labels: Vec<&Adapter> = if paired { vec![adapter] } else { vec![adapter, &ca.reference] };
    let mut aa = aa::recorded(&[("A ", ca), ("B ", cb)], &labels, paired);
    if aa.is_empty() {
        aa = aa::other_cells(&[("A ", all.0), ("B ", all.1)], ca, &labels, paired);
    }
    Row {
        cell: ca.cell.clone(),
        mode: ca.mode,
        quantity: ca.quantity,
        adapter: Some(adapter.clone()),
        basis: Basis::AgainstReference,
        against: Some(ca.reference.clone()),
        judged: true,
        numerator: side("B", cb, adapter),
        denominator: side("A", ca, adapter),
        outcome: outcome(
            estimate,
            2,
            median_ratio,
            aa,
            settings.row_profile(&[ca, cb], adapter, &ca.reference),
            &settings.config,
        ),
    }
}

fn raw_row(
    ca: &CellData,
    cb: &CellData,
    all: Sessions<'_>,
    adapter: &Adapter,
    settings: &Settings<'_>,
    raw: bool,
) -> Row {
    let estimate = rule::raw(cb, ca, adapter, settings.config.trim);
    let median_ratio = of_medians(cb.sample(adapter), ca.sample(adapter));
    let mut aa = aa::recorded(&[("A ", ca), ("B ", cb)], &[adapter], false);
    if aa.is_empty() {
        aa = aa::other_cells(&[("A ", all.0), ("B ", all.1)], ca, &[adapter], false);
    }
    Row {
        cell: ca.cell.clone(),
        mode: ca.mode,
        quantity: ca.quantity,
        adapter: Some(adapter.clone()),
        basis: Basis::Raw,
        against: None,
        judged: raw,
        numerator: side("B", cb, adapter),
        denominator: side("A", ca, adapter),
        outcome: outcome(
            estimate,
            2,
            median_ratio,
            aa,
            settings.row_profile(&[ca, cb], adapter, adapter),
            &settings.config,
        ),
    }
}

/// Holm across the judged rows (one family); each row not judged is tested alone, its figures
/// kept, and its verdict `inconclusive`: nothing holds the machine constant between two
/// sessions' raw times (`--raw` judges them). Then each compared row's warnings.
fn holm_over_judged(rows: &mut [Row]) {
    let mut judged: Vec<Decision> = Vec::new();
    for row in rows.iter_mut() {
        if let RowResult::Compared { decision, .. } = &mut row.outcome {
            if row.judged {
                judged.push(decision.clone());
            } else {
                decide_family(std::slice::from_mut(decision));
                decision.verdict = Verdict::Inconclusive;
            }
        }
    }
    decide_family(&mut judged);
    let mut decided = judged.into_iter();
    for row in rows.iter_mut() {
        if let RowResult::Compared { decision, aa, warnings, .. } = &mut row.outcome {
            if row.judged {
                *decision = decided.next().expect("one decision per judged row");
            }
            *warnings = aa::warnings(decision, aa);
        }
    }
}

/// Sets the overall verdict and exit code; a comparison with no row compared is bad input.
pub(super) fn finish(mut report: CompareReport) -> Result<CompareReport, CompareError> {
    if report.refused {
        report.exit_code = report.exit().code();
        return Ok(report);
    }
    report.judged_rows = report.rows.iter().filter(|r| r.judged && r.verdict().is_some()).count();
    let mut verdicts: Vec<Verdict> = report.rows.iter().filter(|r| r.judged).filter_map(Row::verdict).collect();
    if verdicts.is_empty() && report.rows.iter().any(|r| r.verdict().is_some()) {
        // Only raw rows could be compared (e.g. stock-only sessions): nothing holds the machine
        // constant, so nothing is shown either way.
        verdicts.push(Verdict::Inconclusive);
    }
    if verdicts.is_empty() {
        let reasons: Vec<String> = report
            .rows
            .iter()
            .filter_map(|r| match &r.outcome {
                RowResult::NotCompared { reason } => Some(format!("{}: {reason}", r.cell)),
                RowResult::Compared { .. } => None,
            })
            .collect();
        let detail = if reasons.is_empty() {
            "no cell with valid runs on both sides".to_owned()
        } else {
            format!("no cell could be compared ({})", reasons.join("; "))
        };
        return Err(CompareError::NothingToCompare { detail });
    }
    let verdict = if verdicts.contains(&Verdict::Slower) {
        Verdict::Slower
    } else if verdicts.contains(&Verdict::Faster) {
        Verdict::Faster
    } else if verdicts.contains(&Verdict::Inconclusive) {
        Verdict::Inconclusive
    } else {
        Verdict::NoDifference
    };
    report.verdict = Some(verdict);
    report.exit_code = report.exit().code();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::stats::{ErrorSource, Rule};

    use super::*;
    use crate::session::MeasuredRequest;

    /// `n` request pairs of `adapter` against stock at `ratio`, each pair's noise a fixed
    /// pseudo-random ±3 % (the same for every call), in `runs` runs.
    fn pairs(ratio: f64, n: usize, runs: usize) -> Vec<Vec<(f64, f64)>> {
        let noise = |k: usize| 1.0 + 0.03 * (((k * 7919) % 101) as f64 / 50.0 - 1.0);
        (0..runs).map(|r| (0..n / runs).map(|k| (1e6 * ratio * noise(k + 31 * r), 1e6)).collect()).collect()
    }

    /// Request `k` of run `run` at `level` ns per step, with a fixed pseudo-random ±2 % wiggle.
    fn request(level: f64, k: usize, run: usize) -> MeasuredRequest {
        let wiggle = 1.0 + 0.02 * (((k * 37) % 11) as f64 / 5.0 - 1.0);
        MeasuredRequest { run, positions: vec![17, 18, 19], dur_ns: vec![(level * wiggle) as u64; 3] }
    }

    /// Forty requests of `ratio` × 1 ms per step in `runs` runs of ten, run `r` offset by
    /// `0.2 % × (((7 r + 3 salt) mod 5) − 2)`; one run for `runs` 0 or 1.
    fn requests(ratio: f64, runs: usize, salt: usize) -> Vec<MeasuredRequest> {
        let per_run = 40 / runs.max(1);
        (0..40)
            .map(|k| {
                let run = k / per_run;
                let offset = 1.0 + 0.002 * (((run * 7 + salt * 3) % 5) as f64 - 2.0);
                request(1e6 * ratio * offset, k + 3 * salt, run)
            })
            .collect()
    }

    /// A cell with controlled at `ratio` × stock: interleaved with `runs` runs of pairs, or
    /// non-interleaved with one run a side (`runs` 0).
    fn cell(ratio: f64, runs: usize) -> CellData {
        let mut adapters = BTreeMap::new();
        adapters.insert(Adapter::Controlled, requests(ratio, 1, 0));
        adapters.insert(Adapter::Stock, requests(1.0, 1, 1));
        let mut c = CellData {
            cell: "tiny.L16.headline".to_owned(),
            mode: decode_baseline_wire::Mode::Headline,
            quantity: decode_baseline_wire::row::Quantity::PerToken,
            case_id: "tiny".to_owned(),
            reference: Adapter::Stock,
            adapters,
            aa_ratios: BTreeMap::new(),
            runs: BTreeMap::new(),
            pairs: BTreeMap::new(),
            paired_aa: BTreeMap::new(),
            aa_pairs: BTreeMap::new(),
        };
        if runs > 0 {
            c.pairs.insert(Adapter::Controlled, pairs(ratio, 40, runs));
        }
        c
    }

    /// A non-interleaved cell (no pairs) with controlled at `ratio` × stock, `runs` runs a side.
    fn unpaired(ratio: f64, runs: usize) -> CellData {
        let mut c = cell(ratio, 0);
        c.adapters.insert(Adapter::Controlled, requests(ratio, runs, 0));
        c.adapters.insert(Adapter::Stock, requests(1.0, runs, 1));
        c.runs = [(Adapter::Controlled, runs), (Adapter::Stock, runs)].into_iter().collect();
        c
    }

    fn settings() -> Settings<'static> {
        Settings { config: DecisionConfig::default(), profiles: None }
    }

    fn decision(row: &Row) -> &Decision {
        match &row.outcome {
            RowResult::Compared { decision, .. } => decision,
            RowResult::NotCompared { reason } => panic!("not compared: {reason}"),
        }
    }

    #[test]
    fn each_design_gets_its_rule_and_the_verdict_follows_the_effect() {
        for (ratio, verdict) in [(1.0, Verdict::NoDifference), (1.10, Verdict::Slower), (0.90, Verdict::Faster)] {
            let designs = [
                ("interleaved, 1 run", cell(ratio, 1), Rule::PairedBlocks),
                ("interleaved, 4 runs", cell(ratio, 4), Rule::PairedRunMeans),
                ("non-interleaved, 1 run a side", unpaired(ratio, 1), Rule::RequestMedians),
                ("non-interleaved, 4 runs a side", unpaired(ratio, 4), Rule::RunMeans),
            ];
            for (design, cell, rule) in designs {
                let rows = within_rows(&[cell], &settings());
                let d = decision(&rows[0]);
                let several = matches!(rule, Rule::PairedRunMeans | Rule::RunMeans);
                // One run per side cannot show run-to-run effects: no verdict, whatever the effect.
                let expected = if several { verdict } else { Verdict::Inconclusive };
                assert_eq!((d.rule, d.verdict), (rule, expected), "ratio {ratio}, {design}: {d:?}");
                assert_eq!(d.run_effects_measured, several, "{design}: {d:?}");
                // The estimate follows the effect either way, and so does its interval.
                assert!((d.ratio / ratio - 1.0).abs() < 0.01, "{design}: {d:?}");
                assert!(d.ci.lower < ratio && ratio < d.ci.upper, "{design}: {d:?}");
                // Away from 1 the interval excludes 1, on the effect's side, one run or several.
                assert!(
                    ratio == 1.0 || (d.ci.lower > 1.0) == (ratio > 1.0) && (d.ci.upper < 1.0) == (ratio < 1.0),
                    "{design}: {d:?}"
                );
                assert_eq!(d.error, ErrorSource::Own);
                if rule == Rule::RunMeans {
                    assert_eq!((d.units, d.pairs), (8, 0), "one unit per run: {d:?}");
                }
            }
        }
    }

    /// The recorded session as four interleaved runs a side, each measured request's time to
    /// first token about 1 ms (controlled: `ratio` ms, `fixtures::with_first_tokens`); the
    /// decode steps as recorded.
    fn first_tokens(ratio: f64) -> decode_baseline_wire::session::SessionReport {
        let path = crate::launcher::session_job::repo_root().join("tests/data/sessions/back-to-back-a/session.json");
        let mut session = crate::session::fixtures::repeated(&crate::session::load_session(&path).unwrap().report, 4);
        session.job.order = decode_baseline_wire::session::WorkerOrder::Interleaved;
        crate::session::fixtures::with_first_tokens(
            session,
            |w| if w.adapter == Adapter::Controlled { ratio } else { 1.0 },
        )
    }

    fn loaded(report: decode_baseline_wire::session::SessionReport) -> LoadedSession {
        LoadedSession { path: std::path::PathBuf::from("session.json"), report }
    }

    #[test]
    fn time_to_first_token_is_judged_in_headline_cells_by_the_same_rule_and_family() {
        let session = first_tokens(1.10);
        let cells = crate::session::first_token_cells(&session);
        assert_eq!(cells.len(), 1, "headline cells only: {:?}", cells.iter().map(|c| &c.cell).collect::<Vec<_>>());
        let cell = &cells[0];
        assert_eq!((cell.mode, cell.quantity), (decode_baseline_wire::Mode::Headline, Quantity::FirstToken));
        // One value a request, its time to first token, paired with stock's request by request.
        let stock: Vec<u64> = session
            .workers
            .iter()
            .filter(|w| w.cell == cell.cell && w.adapter == Adapter::Stock && !w.aa)
            .flat_map(|w| &w.report.as_ref().unwrap().requests)
            .filter(|q| q.phase == Some(decode_baseline_wire::Phase::Measured))
            .map(|q| q.first_token_ns)
            .collect();
        let recorded: Vec<u64> = cell.adapters[&Adapter::Stock].iter().flat_map(|q| q.dur_ns.clone()).collect();
        assert_eq!(recorded, stock);
        assert_eq!(cell.pairs[&Adapter::Controlled].len(), 4, "four runs of pairs");

        let rows = crate::compare::decide(&session, &settings()).rows;
        let ttft: Vec<&Row> = rows.iter().filter(|r| r.quantity == Quantity::FirstToken).collect();
        assert_eq!(ttft.len(), 1, "{rows:?}");
        let d = decision(ttft[0]);
        assert_eq!((ttft[0].basis, d.rule, d.verdict), (Basis::Paired, Rule::PairedRunMeans, Verdict::Slower), "{d:?}");
        assert!((d.ratio / 1.10 - 1.0).abs() < 0.01 && d.ci.contains(1.10), "{d:?}");
        assert_eq!(ttft[0].subject(), format!("{} TTFT", cell.cell));
        // One Holm family: the TTFT row's level is set among all the session's judged rows.
        let family: Vec<&Decision> =
            rows.iter().filter_map(Row::decision).filter(|d| crate::stats::can_decide(d)).collect();
        let smallest = family.iter().map(|d| d.holm_level).fold(1.0, f64::min);
        assert_eq!(family.len(), 3, "headline, fixed continuation and the TTFT row: {rows:?}");
        assert!((smallest - d.config.alpha / 3.0).abs() < 1e-12, "{family:?}");
        // The per-token rows are the decode steps', whatever the first tokens did.
        let per_token = rows.iter().find(|r| r.cell == cell.cell && r.quantity == Quantity::PerToken).unwrap();
        let unchanged = crate::compare::decide(&first_tokens(1.0), &settings()).rows;
        let before = unchanged.iter().find(|r| r.cell == cell.cell && r.quantity == Quantity::PerToken).unwrap();
        assert_eq!(decision(per_token).ratio, decision(before).ratio);
        let same = unchanged.iter().find(|r| r.quantity == Quantity::FirstToken).unwrap();
        assert_eq!(decision(same).verdict, Verdict::NoDifference, "{:?}", decision(same));
    }

    #[test]
    fn two_sessions_compare_time_to_first_token_only_at_one_prefill_step_size() {
        let (a, b) = (loaded(first_tokens(1.0)), loaded(first_tokens(1.06)));
        let across = |a: &LoadedSession, b: &LoadedSession| {
            compare_across(a, b, &settings(), false, false, false, false, false).unwrap()
        };
        let report = across(&a, &b);
        let ttft: Vec<&Row> = report.rows.iter().filter(|r| r.quantity == Quantity::FirstToken && r.judged).collect();
        assert_eq!(ttft.len(), 1, "{:?}", report.rows);
        let d = decision(ttft[0]);
        assert_eq!((ttft[0].basis, d.verdict), (Basis::AgainstReference, Verdict::Slower), "{d:?}");
        assert!((d.ratio / 1.06 - 1.0).abs() < 0.01, "{d:?}");
        assert_eq!(report.verdict, Some(Verdict::Slower));
        // Nothing moved in the decode steps: no per-token row says slower or faster.
        assert!(report
            .rows
            .iter()
            .filter(|r| r.quantity == Quantity::PerToken && r.judged)
            .all(|r| !matches!(r.verdict(), Some(Verdict::Slower | Verdict::Faster))));

        // At another prefill step size the first token costs something else: not compared.
        let mut chunked = b.report.clone();
        chunked.job.prefill_step_size = Some(256);
        let report = across(&a, &loaded(chunked));
        for row in report.rows.iter().filter(|r| r.quantity == Quantity::FirstToken) {
            match &row.outcome {
                RowResult::NotCompared { reason } => {
                    assert!(reason.contains("prefill step sizes differ (A 2048, B 256)"), "{reason}")
                }
                RowResult::Compared { .. } => panic!("compared across step sizes: {row:?}"),
            }
        }
        assert!(report.rows.iter().any(|r| r.quantity == Quantity::PerToken && r.decision().is_some()));
    }

    #[test]
    fn holm_runs_over_the_judged_rows_of_a_comparison() {
        // Two cells, each alone significant at p just under 5 %; together Holm withholds both.
        // Four interleaved runs of ten pairs, the runs offset by a few tenths of a percent: the
        // run means are the units.
        let mut a = cell(1.0, 4);
        let noise = [1.0, 1.05, 0.97, 1.02, 0.99, 1.04, 0.96, 1.03, 1.01, 0.98];
        let shifted = |shift: f64| -> Vec<Vec<(f64, f64)>> {
            (0..4)
                .map(|r: usize| {
                    let offset = 1.0 + 0.002 * (((r * 7) % 5) as f64 - 2.0);
                    (0..10).map(|k| (1e6 * (1.0 + shift) * offset * noise[(k + 3 * r) % 10], 1e6)).collect()
                })
                .collect()
        };
        // Find the shift whose single-row p-value lies in (0.025, 0.05).
        let shift = (1..400)
            .map(|i| f64::from(i) * 0.00025)
            .find(|&s| {
                a.pairs.insert(Adapter::Controlled, shifted(s));
                let p = decision(&within_rows(&[a.clone()], &settings())[0]).p_value;
                (0.025..0.05).contains(&p)
            })
            .expect("some shift gives p in (0.025, 0.05)");
        a.pairs.insert(Adapter::Controlled, shifted(shift));
        let alone = within_rows(&[a.clone()], &settings());
        let d = decision(&alone[0]);
        assert_eq!((d.rule, d.units, d.verdict), (Rule::PairedRunMeans, 4, Verdict::Slower), "{d:?}");
        let mut b = a.clone();
        b.cell = "tiny.L512.headline".to_owned();
        let both = within_rows(&[a, b], &settings());
        for row in &both {
            let d = decision(row);
            assert!(d.run_effects_measured, "{d:?}");
            assert!(!d.significant && d.verdict != Verdict::Slower, "{d:?}");
            assert!((0.025..0.05).contains(&d.p_value) && d.holm_level <= 0.05, "{d:?}");
        }
    }
}
