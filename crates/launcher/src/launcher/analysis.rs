//! From validated reports to numbers: statistics per cell and adapter, each adapter's ratio to
//! the session's reference adapter, the A/A noise, and each adapter's agreement with the
//! reference. Reports that failed validation never enter here.

use std::collections::BTreeMap;

use super::agreement;
use crate::host;
use crate::session::request_pairs;
use crate::stats::{
    drift_between_halves, quantile_sorted, ratio_of_medians, summarize, summarize_requests, BootstrapConfig,
    ClusteredSample, PairedSample, RatioEstimate, Resampling, StatsError,
};
use decode_baseline_wire::row::Quantity;
use decode_baseline_wire::{
    analysis::{pair_label, AdapterStats, Analysis, CellAnalysis, ColdRequests, StreamAgreement},
    manifest::Cell,
    report::{Phase, Status, WorkerReport},
    session::WorkerRun,
    Adapter, Mode,
};

/// The result and the problems it found (disagreement, statistics that could not be computed).
pub struct Outcome {
    pub body: Analysis,
    pub problems: Vec<String>,
}

/// What the host judge says about the runs of `adapter` in `cell`: the warnings of the run
/// whose host was busiest, and how many other runs drew warnings too.
fn host_warnings(workers: &[WorkerRun], cell: &str, adapter: &Adapter) -> Vec<String> {
    let judged: Vec<(f64, Vec<String>)> = workers
        .iter()
        .filter(|w| w.cell == cell && w.adapter == *adapter)
        .filter_map(|w| w.host_activity.as_ref())
        .map(|a| (a.others_cpus.unwrap_or(0.0), host::judge(a, host::MAX_OTHER_CPUS).warnings))
        .filter(|(_, warnings)| !warnings.is_empty())
        .collect();
    let Some((_, worst)) = judged.iter().max_by(|a, b| a.0.total_cmp(&b.0)) else { return Vec::new() };
    let mut out = worst.clone();
    if judged.len() > 1 {
        out.push(format!("{} of this row's worker runs drew host warnings; the worst is shown", judged.len()));
    }
    out
}

fn valid_reports<'a>(workers: &'a [WorkerRun], cell: &str, adapter: &Adapter, aa: bool) -> Vec<&'a WorkerReport> {
    workers
        .iter()
        .filter(|w| w.cell == cell && w.adapter == *adapter && w.validation_errors.is_empty())
        .filter(|w| w.aa == aa)
        .filter_map(|w| w.report.as_ref())
        .filter(|r| r.status == Status::Ok)
        .collect()
}

/// Per-request step durations of the measured requests (the only request for reference-pair).
fn step_clusters(reports: &[&WorkerReport]) -> Vec<Vec<f64>> {
    reports
        .iter()
        .flat_map(|r| &r.requests)
        .filter(|q| matches!(q.phase, Some(Phase::Measured) | None))
        .map(|q| q.steps.iter().map(|s| s.dur_ns as f64).collect())
        .collect()
}

/// The paired ratio of `adapter` against `reference` in an interleaved cell, and its A/A ratio
/// when the session ran an A/A group.
fn paired(
    workers: &[WorkerRun],
    cell: &str,
    adapter: &Adapter,
    reference: &Adapter,
    config: &BootstrapConfig,
) -> Result<(Option<RatioEstimate>, Option<RatioEstimate>), StatsError> {
    let sample = |aa| {
        let pairs = request_pairs(Quantity::PerToken, workers, cell, adapter, reference, aa);
        (!pairs.is_empty()).then(|| PairedSample::from_medians(&pairs)).transpose()
    };
    let Some(main) = sample(false)? else { return Ok((None, None)) };
    let aa = sample(true)?.map(|aa| aa.over(&main, config)).transpose()?;
    Ok((Some(main.estimate(config)?), aa))
}

/// The analysis of every cell: each adapter's statistics, and every adapter other than
/// `reference` against the reference (ratio, paired ratio, agreement).
pub fn analyze(workers: &[WorkerRun], cells: &[Cell], interleaved: bool, reference: &Adapter) -> Outcome {
    let config = BootstrapConfig::default();
    let mut problems = Vec::new();
    let mut out = Vec::new();
    for cell in cells {
        let name = cell.name();
        let mut present: Vec<Adapter> = workers.iter().filter(|w| w.cell == name).map(|w| w.adapter.clone()).collect();
        present.sort();
        present.dedup();
        let mut analysis = CellAnalysis {
            cell: name.clone(),
            mode: cell.mode,
            adapters: BTreeMap::new(),
            ratios: BTreeMap::new(),
            aa_ratios: BTreeMap::new(),
            paired: BTreeMap::new(),
            paired_aa: BTreeMap::new(),
            argmax: BTreeMap::new(),
            stream: BTreeMap::new(),
        };
        let mut clusters = BTreeMap::new();
        for adapter in &present {
            let reports = valid_reports(workers, &name, adapter, false);
            if reports.is_empty() {
                continue;
            }
            match adapter_stats(&reports, &config) {
                Ok((mut stats, sample)) => {
                    stats.host_warnings = host_warnings(workers, &name, adapter);
                    analysis.adapters.insert(adapter.clone(), stats);
                    clusters.insert(adapter.clone(), sample);
                }
                Err(err) if cell.mode != Mode::ReferencePair => {
                    problems.push(format!("{name} {adapter}: no statistics: {err}"))
                }
                Err(_) => {}
            }
            let aa = valid_reports(workers, &name, adapter, true);
            if let (Some(main), false) = (clusters.get(adapter), aa.is_empty()) {
                match ClusteredSample::new(step_clusters(&aa))
                    .and_then(|second| ratio_of_medians(&second, main, Resampling::ByRequest, &config))
                {
                    Ok(ratio) => {
                        analysis.aa_ratios.insert(adapter.clone(), ratio);
                    }
                    Err(err) => problems.push(format!("{name} {adapter} A/A: no ratio: {err}")),
                }
            }
        }
        for adapter in present.iter().filter(|a| *a != reference) {
            against_reference(
                workers,
                cell,
                interleaved,
                adapter,
                reference,
                &clusters,
                &config,
                &mut analysis,
                &mut problems,
            );
        }
        out.push(analysis);
    }
    Outcome { body: Analysis { bootstrap: config, cells: out }, problems }
}

/// `adapter` against `reference` in `cell`: the ratio of medians, the paired ratio of an
/// interleaved session, and the agreement of the first valid reports, into `analysis`; what
/// fails to compute or disagrees goes to `problems`.
#[allow(clippy::too_many_arguments)]
fn against_reference(
    workers: &[WorkerRun],
    cell: &Cell,
    interleaved: bool,
    adapter: &Adapter,
    reference: &Adapter,
    clusters: &BTreeMap<Adapter, ClusteredSample>,
    config: &BootstrapConfig,
    analysis: &mut CellAnalysis,
    problems: &mut Vec<String>,
) {
    let name = cell.name();
    if let (Some(a), Some(r)) = (clusters.get(adapter), clusters.get(reference)) {
        match ratio_of_medians(a, r, Resampling::ByRequest, config) {
            Ok(ratio) => {
                analysis.ratios.insert(adapter.clone(), ratio);
            }
            Err(err) => problems.push(format!("{name}: no {} ratio: {err}", pair_label(adapter, reference))),
        }
    }
    if interleaved && cell.mode != Mode::ReferencePair {
        match paired(workers, &name, adapter, reference, config) {
            Ok((main, aa)) => {
                analysis.paired.extend(main.map(|r| (adapter.clone(), r)));
                analysis.paired_aa.extend(aa.map(|r| (adapter.clone(), r)));
            }
            Err(err) => problems.push(format!("{name}: no paired {} ratio: {err}", pair_label(adapter, reference))),
        }
    }
    let first = |a| valid_reports(workers, &name, a, false).into_iter().next();
    let Some((own, theirs)) = first(adapter).zip(first(reference)) else { return };
    match cell.mode {
        Mode::FixedContinuation => {
            let Some(agreement) = agreement::fixed_continuation(own, theirs) else { return };
            for m in &agreement.mismatches {
                problems.push(format!(
                    "{name}: argmax mismatch at position {}: {adapter} {} (margin {:?}), {reference} {} (margin {:?})",
                    m.position, m.adapter_token, m.adapter_margin, m.reference_token, m.reference_margin
                ));
            }
            for r in &agreement.unstable_requests {
                problems.push(format!("{name}: request {r} did not repeat the first request's argmax sequence"));
            }
            analysis.argmax.insert(adapter.clone(), agreement);
        }
        Mode::ReferencePair => {
            let Some(stream) = agreement::reference_pair(own, theirs) else { return };
            if let StreamAgreement { identical: false, first_divergence, diverged_at_tie: false, .. } = &stream {
                problems
                    .push(format!("{name}: {adapter} and {reference} reference streams diverge: {first_divergence:?}"));
            }
            analysis.stream.insert(adapter.clone(), stream);
        }
        Mode::Headline => {}
    }
}

fn adapter_stats(
    reports: &[&WorkerReport],
    config: &BootstrapConfig,
) -> Result<(AdapterStats, ClusteredSample), StatsError> {
    let sample = ClusteredSample::new(step_clusters(reports))?;
    let per_token_ns = summarize_requests(&sample, Resampling::ByRequest, config)?;
    let measured: Vec<_> =
        reports.iter().flat_map(|r| &r.requests).filter(|q| matches!(q.phase, Some(Phase::Measured) | None)).collect();
    let per_request = |f: &dyn Fn(&decode_baseline_wire::report::RequestRecord) -> f64| {
        crate::stats::Sample::new(measured.iter().map(|q| f(q)).collect()).ok().and_then(|s| summarize(&s, config).ok())
    };
    let steps: Vec<_> = measured.iter().flat_map(|q| &q.steps).collect();
    let median_of = |values: Vec<f64>| crate::stats::Sample::new(values).ok().map(|s| s.median());
    let build = steps.iter().map(|s| s.build_ns.map(|v| v as f64)).collect::<Option<Vec<_>>>();
    let eval = steps.iter().map(|s| s.eval_ns.map(|v| v as f64)).collect::<Option<Vec<_>>>();
    let total_dur: f64 = steps.iter().map(|s| s.dur_ns as f64).sum();
    let host_overhead =
        eval.as_ref().filter(|_| total_dur > 0.0).map(|eval| (total_dur - eval.iter().sum::<f64>()) / total_dur);
    let request_medians = sample.cluster_medians();
    let drift = drift_between_halves(&request_medians, &Default::default()).ok();
    let first_measured = measured.first();
    let cold = cold_requests(reports);
    let stats = AdapterStats {
        per_token_ns,
        prefill_ns: per_request(&|q| q.prefill_dur_ns as f64),
        first_token_ns: per_request(&|q| q.first_token_ns as f64),
        build_median_ns: build.and_then(median_of),
        eval_median_ns: eval.and_then(median_of),
        host_overhead,
        start_to_ready_ns: median_of(reports.iter().filter_map(|r| r.start_to_ready_ns.map(|v| v as f64)).collect()),
        unused_forwards: first_measured.map_or(0, |q| q.unused_forwards),
        model_calls: first_measured.map_or(0, |q| q.model_calls),
        drift,
        test_slowdown_us: reports.iter().find_map(|r| r.test_slowdown_us),
        host_warnings: Vec::new(),
        cold,
    };
    Ok((stats, sample))
}

/// The first request of each run (phase `first`), summarized apart from the measured ones.
fn cold_requests(reports: &[&WorkerReport]) -> Option<ColdRequests> {
    let first: Vec<_> = reports
        .iter()
        .flat_map(|r| &r.requests)
        .filter(|q| q.phase == Some(Phase::First) && !q.steps.is_empty())
        .collect();
    let median = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        quantile_sorted(&values, 0.5)
    };
    Some(ColdRequests {
        requests: u32::try_from(first.len()).ok().filter(|n| *n > 0)?,
        prefill_ns: median(first.iter().map(|q| q.prefill_dur_ns as f64).collect()),
        per_token_ns: median(first.iter().map(|q| median(q.steps.iter().map(|s| s.dur_ns as f64).collect())).collect()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{duration::human_ns, report::table};
    use decode_baseline_wire::session::SessionReport;

    /// A session recorded by the launcher (`tests/data/sessions`) as `runs` worker runs per
    /// adapter (`session::fixtures::repeated`; 1: as recorded), its controlled steps given a
    /// build and evaluation split: build a fifth, evaluation three quarters of each step.
    fn recorded_with_split(runs: u32) -> SessionReport {
        let path = crate::launcher::session_job::repo_root().join("tests/data/sessions/back-to-back-a/session.json");
        let recorded = crate::session::load_session(&path).unwrap().report;
        let mut session = if runs == 1 { recorded } else { crate::session::fixtures::repeated(&recorded, runs) };
        for worker in session.workers.iter_mut().filter(|w| w.adapter == Adapter::Controlled) {
            for step in worker.report.as_mut().unwrap().requests.iter_mut().flat_map(|q| q.steps.iter_mut()) {
                step.build_ns = Some(step.dur_ns / 5);
                step.eval_ns = Some(step.dur_ns * 3 / 4);
            }
        }
        session
    }

    #[test]
    fn host_overhead_is_the_step_time_outside_evaluation_and_is_shown_under_controlled() {
        let session = recorded_with_split(1);
        let cell: Cell = serde_json::from_value(serde_json::json!({
            "case": "tiny-qwen3", "prompt": "tiny-qwen3-L16", "mode": "headline"
        }))
        .unwrap();
        let outcome = analyze(&session.workers, &[cell], false, &Adapter::Stock);
        let stats = &outcome.body.cells[0].adapters;
        let (controlled, stock) = (&stats[&Adapter::Controlled], &stats[&Adapter::Stock]);

        let steps: Vec<_> =
            valid_reports(&session.workers, "tiny-qwen3.tiny-qwen3-L16.headline", &Adapter::Controlled, false)
                .into_iter()
                .flat_map(|r| &r.requests)
                .filter(|q| matches!(q.phase, Some(Phase::Measured) | None))
                .flat_map(|q| &q.steps)
                .collect();
        let dur: u64 = steps.iter().map(|s| s.dur_ns).sum();
        let eval: u64 = steps.iter().map(|s| s.dur_ns * 3 / 4).sum();
        let expected = (dur - eval) as f64 / dur as f64;
        assert!(
            (controlled.host_overhead.unwrap() - expected).abs() < 1e-12,
            "{:?} vs {expected}",
            controlled.host_overhead
        );
        assert!((0.25..0.26).contains(&expected), "integer division rounds evaluation down: {expected}");
        assert_eq!(stock.host_overhead, None, "stock records no split");

        let table = table(&session, &outcome.body, &crate::compare::tested_without_profile(&session));
        let lines: Vec<&str> = table.lines().filter(|l| l.contains("host overhead")).collect();
        assert_eq!(lines.len(), 1, "{table}");
        assert!(lines[0].ends_with(&format!("host overhead {:.1} %", 100.0 * expected)), "{}", lines[0]);
        assert!(lines[0].contains(&format!(
            "graph build {} + MLX evaluation {}",
            human_ns(controlled.build_median_ns.unwrap()),
            human_ns(controlled.eval_median_ns.unwrap())
        )));
    }

    #[test]
    fn the_table_gives_each_adapters_verdict_by_compares_test() {
        // The recorded session A (alternate order, loaded host) as four runs per adapter: compare
        // calls controlled faster in the headline cell and slower in the fixed-continuation one;
        // run's table says the same, with the rule, the error used and the A/A warnings under it.
        let cells: Vec<Cell> = ["headline", "fixed_continuation"]
            .iter()
            .map(|mode| {
                serde_json::from_value(
                    serde_json::json!({"case": "tiny-qwen3", "prompt": "tiny-qwen3-L16", "mode": mode}),
                )
                .unwrap()
            })
            .collect();
        let table_of = |session: &SessionReport| {
            table(
                session,
                &analyze(&session.workers, &cells, false, &Adapter::Stock).body,
                &crate::compare::tested_without_profile(session),
            )
        };
        let table = table_of(&recorded_with_split(4));
        let verdicts: Vec<&str> = table.lines().filter(|l| l.contains(" verdict controlled/stock: ")).collect();
        assert_eq!(verdicts.len(), 2, "{table}");
        assert!(
            verdicts[0].starts_with("tiny-qwen3.tiny-qwen3-L16.headline")
                && verdicts[0].contains(": faster (ratio 0.389"),
            "{}",
            verdicts[0]
        );
        assert!(verdicts[1].contains(": slower (ratio 1.670"), "{}", verdicts[1]);
        assert!(verdicts[0].contains("Welch t on run means"), "{}", verdicts[0]);
        assert!(verdicts[0].contains("error holds run-to-run effects"), "{}", verdicts[0]);
        assert!(
            table.contains("warning: A/A controlled: one rerun of the same code moved the ratio by +39.0 %"),
            "{table}"
        );
        assert!(table.contains("a run unlike the runs measured"), "{table}");
        // As recorded, one run per adapter: the same ratios, and no verdict, with the way out.
        let table = table_of(&recorded_with_split(1));
        let verdicts: Vec<&str> = table.lines().filter(|l| l.contains(" verdict controlled/stock: ")).collect();
        assert_eq!(verdicts.len(), 2, "{table}");
        assert!(verdicts[0].contains(": inconclusive (ratio 0.389"), "{}", verdicts[0]);
        assert!(verdicts[1].contains(": inconclusive (ratio 1.672"), "{}", verdicts[1]);
        assert!(verdicts[0].contains("Yuen–Welch t on per-request log medians"), "{}", verdicts[0]);
        assert!(verdicts[0].contains("no verdict: one run per side cannot show run-to-run effects"), "{}", verdicts[0]);
    }

    #[test]
    fn the_table_of_an_unpinned_session_says_so_first() {
        let mut session = recorded_with_split(1);
        let body = analyze(&session.workers, &[], crate::schedule::interleaves(&session.job), &session.reference).body;
        assert!(
            !table(&session, &body, &crate::compare::tested_without_profile(&session)).contains("unpinned"),
            "a pinned session says nothing of it"
        );
        session.replaced_programs.insert(Adapter::Stock, vec!["/x/python".into(), "/x/outside.py".into()]);
        let table = table(&session, &body, &crate::compare::tested_without_profile(&session));
        assert_eq!(
            table.lines().nth(1),
            Some(
                "unpinned: the stock worker program was replaced (DECODE_BASELINE_WORKER_STOCK=/x/python \
                 /x/outside.py): this session is unpinned, and compare refuses to set it beside a pinned one"
            ),
            "{table}"
        );
    }
}
