//! Energy judged like time, per cell and domain (a GPU, a CPU package, its DRAM):
//!
//! - **Joules per token** per adapter: one value per measured request, its energy (prefill
//!   included) over its output tokens (the first token and every decode step), summarized with
//!   the bootstrap interval of the median as time is (`stats::summarize`); **net of idle**: the
//!   same after taking off the group's idle power times the request's wall time; **tokens per
//!   joule** = 1 / the median, derived like tokens/s.
//! - **Paired energy ratio** per adapter other than the reference: request k of X against
//!   request k of the reference in the same repetition (they ran back to back), `d = ln` of
//!   their per-token energies, [`paired_energy_ratio`]. A pair during which either side was
//!   throttled is flagged: the ratio is given over every pair and over the unflagged ones, with
//!   the count, and a warning when more than [`MAX_THROTTLED_SHARE`] of the pairs were flagged.
//!   A pair whose either side lost its energy (counter reset, implausible, unreadable, or zero
//!   on a counter too coarse for the request) is left out and counted.
//!
//! Only worker runs that passed validation and ended ok count, A/A runs excluded, like time.

use std::collections::BTreeMap;

use decode_baseline_wire::{
    energy::{AdapterEnergy, CellEnergy, DomainAnalysis, IdleReading, PairedEnergy, RequestEnergy},
    report::{Phase, Status},
    session::WorkerRun,
    stats::BootstrapConfig,
    Adapter,
};

use super::ratio::{energy_ratio, paired_energy_estimate, paired_energy_ratio};
use crate::stats::{summarize, DecisionConfig, LogEstimate, Rule, Sample};

/// The share of throttled pairs above which the analysis warns.
pub const MAX_THROTTLED_SHARE: f64 = 0.10;

/// One measured request of one adapter in one domain.
#[derive(Debug, Clone, Copy)]
struct Observation {
    repetition: u32,
    index: u32,
    /// Joules per token; `None` when its energy was dropped.
    per_token: Option<f64>,
    /// Joules per token net of idle; `None` without an idle reading.
    net_per_token: Option<f64>,
    /// The request's median decode-step time, ns (`None` without steps).
    time_per_token_ns: Option<f64>,
    throttled: bool,
}

/// One measured request as the report page's figure draws it: its time per token beside its
/// energy per token.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestPoint {
    pub adapter: Adapter,
    /// The request's median decode-step time, ns.
    pub time_per_token_ns: f64,
    pub joules_per_token: f64,
    pub throttled: bool,
}

/// Every measured request of `cell` with an energy in `domain` and decode steps, by adapter
/// (valid, non-A/A runs, as the analysis takes them).
pub fn request_points(workers: &[WorkerRun], cell: &str, domain: &str) -> Vec<RequestPoint> {
    let mut adapters: Vec<Adapter> = workers.iter().filter(|w| w.cell == cell).map(|w| w.adapter.clone()).collect();
    adapters.sort();
    adapters.dedup();
    adapters
        .into_iter()
        .flat_map(|adapter| {
            observations(workers, cell, &adapter, domain, &[])
                .into_iter()
                .filter_map(|o| {
                    Some(RequestPoint {
                        adapter: adapter.clone(),
                        time_per_token_ns: o.time_per_token_ns?,
                        joules_per_token: o.per_token?,
                        throttled: o.throttled,
                    })
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The energy analysis of `cells` (names, in order) from the workers' per-request readings
/// and the groups' idle readings; cells and domains without readings are left out.
pub fn analyze(
    workers: &[WorkerRun],
    cells: &[String],
    reference: &Adapter,
    interleaved: bool,
    idle: &[IdleReading],
    config: &BootstrapConfig,
) -> Vec<CellEnergy> {
    let mut out = Vec::new();
    for cell in cells {
        let analysed: Vec<DomainAnalysis> = domains(workers, cell)
            .into_iter()
            .map(|domain| analyze_domain(workers, cell, &domain, reference, interleaved, idle, config))
            .filter(|d| !d.adapters.is_empty())
            .collect();
        if !analysed.is_empty() {
            out.push(CellEnergy { cell: cell.clone(), domains: analysed });
        }
    }
    out
}

/// The energy domains read in `cell`, in the order first seen.
pub fn domains(workers: &[WorkerRun], cell: &str) -> Vec<String> {
    let mut domains: Vec<String> = Vec::new();
    let records = workers.iter().filter(|w| w.cell == cell).flat_map(|w| w.energy.iter().flatten());
    for d in records.flat_map(|r| &r.domains) {
        if !domains.contains(&d.domain) {
            domains.push(d.domain.clone());
        }
    }
    domains
}

/// `adapter`'s joules per token in `domain` against `reference`'s as a log estimate, throttled
/// requests kept: what the energy ratio tests, and what `compare` of two sessions subtracts.
/// Interleaved, the paired estimate of adjacent requests (`paired_energy_estimate`);
/// non-interleaved, where the two adapters' requests ran at different times, Yuen's two-sample
/// estimate of their per-request log joules per token, as time's `request_medians` rule.
pub fn energy_estimate(
    workers: &[WorkerRun],
    cell: &str,
    adapter: &Adapter,
    reference: &Adapter,
    domain: &str,
    interleaved: bool,
    trim: f64,
) -> Result<LogEstimate, String> {
    let (own, theirs) =
        (observations(workers, cell, adapter, domain, &[]), observations(workers, cell, reference, domain, &[]));
    if interleaved {
        let d = by_run(&pairs(&own, &theirs).0, true);
        paired_energy_estimate(&d, trim)
            .map_err(|e| format!("{} pairs with a reading on both sides: {e}", d.iter().map(Vec::len).sum::<usize>()))
    } else {
        let (x, r) = (log_per_token(&own, true), log_per_token(&theirs, true));
        LogEstimate::unpaired(&x, &r, trim, Rule::RequestMedians).map_err(|e| {
            let count = |side: &[Vec<f64>]| side.iter().map(Vec::len).sum::<usize>();
            format!("{} and {} requests with a reading: {e}", count(&x), count(&r))
        })
    }
}

/// Values `(repetition, value, throttled)` grouped by repetition in repetition order, the
/// throttled ones only when `keep_throttled`.
fn by_run(values: &[(u32, f64, bool)], keep_throttled: bool) -> Vec<Vec<f64>> {
    let mut runs: std::collections::BTreeMap<u32, Vec<f64>> = std::collections::BTreeMap::new();
    for &(repetition, value, throttled) in values {
        if keep_throttled || !throttled {
            runs.entry(repetition).or_default().push(value);
        }
    }
    runs.into_values().collect()
}

/// The log joules per token of the requests with a reading, by repetition, the throttled ones
/// only when `keep_throttled`.
fn log_per_token(obs: &[Observation], keep_throttled: bool) -> Vec<Vec<f64>> {
    let values: Vec<(u32, f64, bool)> = obs
        .iter()
        .filter_map(|o| o.per_token.filter(|j| *j > 0.0).map(|j| (o.repetition, j.ln(), o.throttled)))
        .collect();
    by_run(&values, keep_throttled)
}

fn analyze_domain(
    workers: &[WorkerRun],
    cell: &str,
    domain: &str,
    reference: &Adapter,
    interleaved: bool,
    idle: &[IdleReading],
    config: &BootstrapConfig,
) -> DomainAnalysis {
    let mut adapters: Vec<Adapter> = workers.iter().filter(|w| w.cell == cell).map(|w| w.adapter.clone()).collect();
    adapters.sort();
    adapters.dedup();
    let observed: BTreeMap<Adapter, Vec<Observation>> =
        adapters.iter().map(|a| (a.clone(), observations(workers, cell, a, domain, idle))).collect();
    let mut analysis = DomainAnalysis { domain: domain.to_owned(), adapters: BTreeMap::new(), paired: BTreeMap::new() };
    for (adapter, obs) in &observed {
        if let Some(stats) = adapter_energy(obs, config) {
            analysis.adapters.insert(adapter.clone(), stats);
        }
    }
    if let Some(theirs) = observed.get(reference) {
        for (adapter, own) in observed.iter().filter(|(a, _)| *a != reference) {
            let against = if interleaved { paired(own, theirs) } else { unpaired(own, theirs) };
            if let Some(paired) = against {
                analysis.paired.insert(adapter.clone(), paired);
            }
        }
    }
    analysis
}

/// The measured requests of `adapter`'s valid, non-A/A runs of `cell` that have a reading of
/// `domain`.
fn observations(
    workers: &[WorkerRun],
    cell: &str,
    adapter: &Adapter,
    domain: &str,
    idle: &[IdleReading],
) -> Vec<Observation> {
    let mut out = Vec::new();
    let runs =
        workers.iter().filter(|w| w.cell == cell && w.adapter == *adapter && !w.aa && w.validation_errors.is_empty());
    for run in runs {
        let (Some(report), Some(energy)) = (run.report.as_ref(), run.energy.as_ref()) else { continue };
        if report.status != Status::Ok {
            continue;
        }
        let idle_watts = idle_power(idle, cell, run.repetition, domain);
        for q in report.requests.iter().filter(|q| matches!(q.phase, Some(Phase::Measured) | None)) {
            let Some((record, reading)) = find(energy, q.index, domain) else { continue };
            let tokens = q.steps.len() as f64 + 1.0;
            let joules = reading.map(|uj| uj as f64 / 1e6);
            out.push(Observation {
                repetition: run.repetition,
                index: q.index,
                per_token: joules.map(|j| j / tokens),
                net_per_token: joules.zip(idle_watts).map(|(j, w)| (j - w * record.wall_ns as f64 / 1e9) / tokens),
                time_per_token_ns: Sample::new(q.steps.iter().map(|s| s.dur_ns as f64).collect())
                    .ok()
                    .map(|s| s.median()),
                throttled: record.throttled,
            });
        }
    }
    out
}

/// Request `index`'s record and its energy in `domain` (`None` inside when dropped).
fn find<'a>(energy: &'a [RequestEnergy], index: u32, domain: &str) -> Option<(&'a RequestEnergy, Option<u64>)> {
    let record = energy.iter().find(|r| r.index == index)?;
    let d = record.domains.iter().find(|d| d.domain == domain)?;
    Some((record, d.energy_uj))
}

/// The idle power of `domain` in the group of `cell` and `repetition`, watts.
fn idle_power(idle: &[IdleReading], cell: &str, repetition: u32, domain: &str) -> Option<f64> {
    let reading = idle.iter().find(|i| i.cell == cell && i.repetition == repetition && !i.aa)?;
    let uj = reading.domains.iter().find(|d| d.domain == domain)?.energy_uj?;
    (reading.wall_ns > 0).then(|| uj as f64 / 1e6 / (reading.wall_ns as f64 / 1e9))
}

fn adapter_energy(obs: &[Observation], config: &BootstrapConfig) -> Option<AdapterEnergy> {
    let kept: Vec<f64> = obs.iter().filter_map(|o| o.per_token).collect();
    let joules_per_token = summarize(&Sample::new(kept.clone()).ok()?, config).ok()?;
    let net: Option<Vec<f64>> = obs.iter().filter(|o| o.per_token.is_some()).map(|o| o.net_per_token).collect();
    let net_joules_per_token = net.and_then(|v| Sample::new(v).ok()).and_then(|s| summarize(&s, config).ok());
    Some(AdapterEnergy {
        tokens_per_joule: 1.0 / joules_per_token.median,
        joules_per_token,
        net_joules_per_token,
        dropped: obs.len() - kept.len(),
        throttled: obs.iter().filter(|o| o.throttled).count(),
    })
}

/// `own` against `theirs`, request by request within each repetition: each pair's log ratio of
/// joules per token and whether either side was throttled, and how many pairs lacked a reading.
fn pairs(own: &[Observation], theirs: &[Observation]) -> (Vec<(u32, f64, bool)>, usize) {
    let mut kept = Vec::new();
    let mut dropped = 0;
    for o in own {
        let Some(t) = theirs.iter().find(|t| t.repetition == o.repetition && t.index == o.index) else { continue };
        match (o.per_token, t.per_token) {
            (Some(x), Some(r)) if x > 0.0 && r > 0.0 => {
                kept.push((o.repetition, (x / r).ln(), o.throttled || t.throttled))
            }
            _ => dropped += 1,
        }
    }
    (kept, dropped)
}

/// `own` against `theirs`: the paired ratio of all pairs and of the unthrottled ones.
fn paired(own: &[Observation], theirs: &[Observation]) -> Option<PairedEnergy> {
    let (kept, dropped_pairs) = pairs(own, theirs);
    let (all, unthrottled) = (by_run(&kept, true), by_run(&kept, false));
    let count = |runs: &[Vec<f64>]| runs.iter().map(Vec::len).sum::<usize>();
    if kept.is_empty() && dropped_pairs == 0 {
        return None;
    }
    let throttled_pairs = count(&all) - count(&unthrottled);
    let share = if kept.is_empty() { 0.0 } else { throttled_pairs as f64 / kept.len() as f64 };
    let warning = (share > MAX_THROTTLED_SHARE).then(|| {
        format!(
            "{throttled_pairs} of {} request pairs ({:.0} %) were throttled on either side (more than {:.0} %): \
             the energy ratio without them rests on {} pairs",
            kept.len(),
            share * 100.0,
            MAX_THROTTLED_SHARE * 100.0,
            count(&unthrottled)
        )
    });
    Some(PairedEnergy {
        all: paired_energy_ratio(&all, &DecisionConfig::default()).ok(),
        unthrottled: paired_energy_ratio(&unthrottled, &DecisionConfig::default()).ok(),
        pairs: kept.len(),
        throttled_pairs,
        dropped_pairs,
        max_throttled_share: MAX_THROTTLED_SHARE,
        warning,
    })
}

/// `own` against `theirs` in a non-interleaved session: the two-sample ratio of all requests with a
/// reading and of the unthrottled ones. `pairs` counts both sides' requests with a reading,
/// `throttled_pairs` the throttled ones among them, `dropped_pairs` those without a reading
/// (`req/session.md`, "Energy").
fn unpaired(own: &[Observation], theirs: &[Observation]) -> Option<PairedEnergy> {
    if own.is_empty() || theirs.is_empty() {
        return None;
    }
    let config = DecisionConfig::default();
    let ratio = |keep_throttled: bool| {
        let (x, r) = (log_per_token(own, keep_throttled), log_per_token(theirs, keep_throttled));
        LogEstimate::unpaired(&x, &r, config.trim, Rule::RequestMedians)
            .ok()
            .and_then(|e| energy_ratio(&e, &config).ok())
    };
    let with_reading = |o: &&Observation| o.per_token.is_some();
    let requests = own.iter().filter(with_reading).count() + theirs.iter().filter(with_reading).count();
    let throttled = own.iter().chain(theirs).filter(|o| o.per_token.is_some() && o.throttled).count();
    let share = if requests == 0 { 0.0 } else { throttled as f64 / requests as f64 };
    Some(PairedEnergy {
        all: ratio(true),
        unthrottled: ratio(false),
        pairs: requests,
        throttled_pairs: throttled,
        dropped_pairs: own.len() + theirs.len() - requests,
        max_throttled_share: MAX_THROTTLED_SHARE,
        warning: (share > MAX_THROTTLED_SHARE).then(|| {
            format!(
                "{throttled} of {requests} requests ({:.0} %) were throttled (more than {:.0} %): the energy ratio \
                 without them rests on the others",
                share * 100.0,
                MAX_THROTTLED_SHARE * 100.0
            )
        }),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use decode_baseline_wire::{
        energy::{DomainEnergy, Dropped},
        report::{RequestRecord, StepRecord, WorkerReport},
    };

    use super::*;

    /// A valid worker run of `adapter` in cell `c` with one measured request per entry of
    /// `energies` (µJ, `None` dropped; `true` throttled), each of 9 tokens (8 steps), 1 s long.
    pub(crate) fn run(adapter: Adapter, repetition: u32, energies: &[(Option<u64>, bool)]) -> WorkerRun {
        let requests = (0..energies.len() as u32)
            .map(|index| RequestRecord {
                index,
                phase: Some(Phase::Measured),
                prompt_len: 4,
                prefill_dur_ns: 1,
                first_token_ns: 1,
                first_token: 1,
                steps: (0..8)
                    .map(|s| StepRecord {
                        position: 5 + s,
                        argmax: 1,
                        t_ns: 10 + u64::from(s),
                        dur_ns: 1,
                        build_ns: None,
                        eval_ns: None,
                        margin: None,
                        tie: None,
                    })
                    .collect(),
                unused_forwards: 0,
                model_calls: 9,
                peak_memory_bytes: None,
                finish_reason: "length".into(),
            })
            .collect();
        let report: WorkerReport = serde_json::from_value(serde_json::json!({
            "schema_version": decode_baseline_wire::REPORT_SCHEMA_VERSION, "run_id": "r", "adapter": adapter,
            "mode": "headline", "case_id": "c", "prompt_id": "p", "status": "ok", "exit_code": 0, "error": null,
            "pid": 1, "claimed_utc": "x", "finished_utc": "x", "start_to_ready_ns": null, "load_ns": null,
            "identity": null, "test_slowdown_us": null, "requests": []
        }))
        .unwrap();
        let report = WorkerReport { requests, ..report };
        let energy = energies
            .iter()
            .enumerate()
            .map(|(i, &(uj, throttled))| RequestEnergy {
                index: i as u32,
                wall_ns: 1_000_000_000,
                samples: 2,
                domains: vec![DomainEnergy {
                    domain: "fake:0".into(),
                    energy_uj: uj,
                    dropped: uj.is_none().then_some(Dropped::CounterReset),
                    clocks_start: None,
                    clocks_end: None,
                }],
                reasons: Some(if throttled { 0x40 } else { 0 }),
                thermal: None,
                throttled,
            })
            .collect();
        WorkerRun {
            energy: Some(energy),
            report: Some(report),
            ..crate::session::fixtures::worker_run(adapter, repetition)
        }
    }

    /// 20 requests: the reference at 9 J each (1 J/token), X at 9 J × `factor` with ±2 % that
    /// alternates; `throttled_x` throttles X's first requests, `reset_x` drops X's request 3.
    pub(crate) fn pair_of_runs(factor: f64, throttled_x: usize, reset_x: bool) -> Vec<WorkerRun> {
        let reference: Vec<(Option<u64>, bool)> = (0..20).map(|_| (Some(9_000_000), false)).collect();
        let x: Vec<(Option<u64>, bool)> = (0..20)
            .map(|i| {
                let wobble = if i % 2 == 0 { 1.02 } else { 0.98 };
                let uj = (9e6 * factor * wobble) as u64;
                (if reset_x && i == 3 { None } else { Some(uj) }, i < throttled_x)
            })
            .collect();
        vec![run(Adapter::Controlled, 0, &x), run(Adapter::Stock, 0, &reference)]
    }

    fn only(workers: &[WorkerRun], idle: &[IdleReading]) -> DomainAnalysis {
        let mut cells = analyze(workers, &["c".into()], &Adapter::Stock, true, idle, &BootstrapConfig::default());
        assert_eq!(cells.len(), 1);
        assert_eq!(cells[0].domains.len(), 1);
        cells.remove(0).domains.remove(0)
    }

    #[test]
    fn joules_per_token_tokens_per_joule_and_the_paired_ratio() {
        let a = only(&pair_of_runs(1.1, 0, false), &[]);
        let stock = &a.adapters[&Adapter::Stock];
        assert_eq!(stock.joules_per_token.median, 1.0, "9 J over 9 tokens");
        assert_eq!(stock.tokens_per_joule, 1.0);
        assert_eq!(stock.joules_per_token.n, 20);
        assert!(stock.net_joules_per_token.is_none(), "no idle reading");
        let p = &a.paired[&Adapter::Controlled];
        let all = p.all.unwrap();
        assert!((all.ratio - 1.1).abs() < 0.001, "{all:?}");
        assert!(all.lower > 1.08 && all.upper < 1.12, "{all:?}");
        assert_eq!((p.pairs, p.throttled_pairs, p.dropped_pairs, p.warning.as_deref()), (20, 0, 0, None));
        assert_eq!(p.unthrottled, p.all);
    }

    #[test]
    fn a_counter_reset_mid_request_drops_that_request_and_its_pair_and_counts_them() {
        let a = only(&pair_of_runs(1.1, 0, true), &[]);
        let x = &a.adapters[&Adapter::Controlled];
        assert_eq!((x.joules_per_token.n, x.dropped), (19, 1));
        let p = &a.paired[&Adapter::Controlled];
        assert_eq!((p.pairs, p.dropped_pairs), (19, 1));
        // 19 pairs make 9 A B / B A blocks: the test rests on 18, as for time.
        assert_eq!(p.all.unwrap().pairs, 18);
    }

    #[test]
    fn a_throttled_request_flags_its_pair_and_the_ratio_is_given_with_and_without() {
        // One throttled request of 20: flagged, 5 % (no warning).
        let a = only(&pair_of_runs(1.1, 1, false), &[]);
        let p = &a.paired[&Adapter::Controlled];
        assert_eq!((p.pairs, p.throttled_pairs), (20, 1));
        assert_eq!(p.unthrottled.unwrap().pairs, 18, "19 unthrottled pairs, 9 blocks");
        // (The ratios agree here: every block of this fixture is the same, so leaving one out
        // changes the pairs the test rests on, which is what is asserted, not the estimate.)
        assert_eq!(p.all.unwrap().pairs, 20);
        assert!(p.warning.is_none());
        assert_eq!(a.adapters[&Adapter::Controlled].throttled, 1);
        // Three of 20 (15 %): past the 10 % share, a warning naming the counts.
        let p = only(&pair_of_runs(1.1, 3, false), &[]).paired[&Adapter::Controlled].clone();
        assert_eq!(
            p.warning.as_deref(),
            Some(
                "3 of 20 request pairs (15 %) were throttled on either side (more than 10 %): the energy ratio \
                 without them rests on 17 pairs"
            )
        );
    }

    #[test]
    fn a_throttled_reference_request_flags_the_pair_too() {
        let mut workers = pair_of_runs(1.0, 0, false);
        workers[1].energy.as_mut().unwrap()[5].throttled = true;
        let p = only(&workers, &[]).paired[&Adapter::Controlled].clone();
        assert_eq!(p.throttled_pairs, 1);
    }

    #[test]
    fn the_idle_power_comes_off_net_of_idle() {
        // 2 W idle for 1 s requests: 2 J of each 9 J request.
        let idle = IdleReading {
            cell: "c".into(),
            repetition: 0,
            aa: false,
            wall_ns: 500_000_000,
            domains: vec![DomainEnergy {
                domain: "fake:0".into(),
                energy_uj: Some(1_000_000),
                dropped: None,
                clocks_start: None,
                clocks_end: None,
            }],
        };
        let a = only(&pair_of_runs(1.0, 0, false), &[idle]);
        let net = a.adapters[&Adapter::Stock].net_joules_per_token.as_ref().unwrap();
        assert!((net.median - 7.0 / 9.0).abs() < 1e-12, "{}", net.median);
    }

    #[test]
    fn request_points_pair_each_request_s_time_with_its_energy() {
        let points = request_points(&pair_of_runs(1.1, 2, true), "c", "fake:0");
        let x: Vec<&RequestPoint> = points.iter().filter(|p| p.adapter == Adapter::Controlled).collect();
        assert_eq!(x.len(), 19, "the reset request has no energy to draw");
        assert_eq!(points.len(), 39);
        assert!(x.iter().all(|p| p.time_per_token_ns == 1.0), "the steps of `run` take 1 ns");
        assert_eq!(x.iter().filter(|p| p.throttled).count(), 2);
        assert!((x[0].joules_per_token - 1.1 * 1.02).abs() < 1e-9, "{x:?}");
    }

    #[test]
    fn runs_without_readings_give_no_energy_analysis() {
        let mut workers = pair_of_runs(1.0, 0, false);
        workers.iter_mut().for_each(|w| w.energy = None);
        assert!(analyze(&workers, &["c".into()], &Adapter::Stock, true, &[], &BootstrapConfig::default()).is_empty());
    }
}
