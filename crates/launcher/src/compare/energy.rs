//! Energy in `compare`: per cell, energy domain and adapter, the ratio of joules per token
//! against the session's reference (one session: paired when it interleaved them, two-sample
//! when it ran them one after the other), or session B's ratio over session A's (two sessions:
//! the difference of the two estimates, as time's `against_reference` rows), each tested as
//! time is (`energy::energy_estimate`, `stats::decision`). A raw energy row across sessions is
//! not made: the machine's power draw between sessions is what the reference removes.
//!
//! Energy verdicts are printed and recorded beside the time rows; the overall verdict and the
//! exit code stay time's.

use crate::{
    energy::{domains, energy_estimate, energy_ratio},
    stats::{DecisionConfig, LogEstimate},
};
use decode_baseline_wire::{session::SessionReport, Adapter};

use decode_baseline_wire::compare::{Basis, EnergyRow};

fn fake(session: &SessionReport) -> bool {
    session.energy.as_ref().is_some_and(|e| e.fake.is_some())
}

/// The adapters of `cell` other than the reference, in order.
fn adapters(session: &SessionReport, cell: &str) -> Vec<Adapter> {
    let mut adapters: Vec<Adapter> = session
        .workers
        .iter()
        .filter(|w| w.cell == cell && w.adapter != session.reference)
        .map(|w| w.adapter.clone())
        .collect();
    adapters.sort();
    adapters.dedup();
    adapters
}

/// The cells of `session` with energy readings, in the order they ran.
fn cells(session: &SessionReport) -> Vec<String> {
    let mut cells: Vec<String> = Vec::new();
    for w in session.workers.iter().filter(|w| w.energy.as_ref().is_some_and(|e| !e.is_empty())) {
        if !cells.contains(&w.cell) {
            cells.push(w.cell.clone());
        }
    }
    cells
}

/// `adapter`'s energy estimate against the reference in one session: paired when the session
/// interleaved them, two-sample otherwise (`energy::energy_estimate`).
fn estimate(
    session: &SessionReport,
    cell: &str,
    adapter: &Adapter,
    domain: &str,
    trim: f64,
) -> Result<LogEstimate, String> {
    energy_estimate(&session.workers, cell, adapter, &session.reference, domain, interleaved(session), trim)
}

fn interleaved(session: &SessionReport) -> bool {
    crate::schedule::interleaves(&session.job)
}

/// What a session's energy rows rest on: adjacent pairs when it interleaved the adapters.
fn within_basis(session: &SessionReport) -> Basis {
    if interleaved(session) {
        Basis::Paired
    } else {
        Basis::RatioOfMedians
    }
}

fn row(cell: &str, domain: &str, adapter: &Adapter, against: &Adapter, basis: Basis, fake: bool) -> EnergyRow {
    EnergyRow {
        cell: cell.to_owned(),
        domain: domain.to_owned(),
        adapter: adapter.clone(),
        against: against.clone(),
        basis,
        fake,
        ratio: None,
        reason: None,
    }
}

fn tested(mut row: EnergyRow, estimate: Result<LogEstimate, String>, config: &DecisionConfig) -> EnergyRow {
    match estimate.and_then(|e| energy_ratio(&e, config).map_err(|e| e.to_string())) {
        Ok(ratio) => row.ratio = Some(ratio),
        Err(reason) => row.reason = Some(reason),
    }
    row
}

/// Every adapter's energy against the reference in every cell and domain of one session.
pub fn within(session: &SessionReport, config: &DecisionConfig) -> Vec<EnergyRow> {
    let mut rows = Vec::new();
    for cell in cells(session) {
        for domain in domains(&session.workers, &cell) {
            for adapter in adapters(session, &cell) {
                let r = row(&cell, &domain, &adapter, &session.reference, within_basis(session), fake(session));
                rows.push(tested(r, estimate(session, &cell, &adapter, &domain, config.trim), config));
            }
        }
    }
    rows
}

/// Session B's energy ratio against the reference over session A's, per adapter, in every
/// cell and domain both sessions read.
pub fn across(a: &SessionReport, b: &SessionReport, config: &DecisionConfig) -> Vec<EnergyRow> {
    let (cells_b, fake) = (cells(b), fake(a) || fake(b));
    let mut rows = Vec::new();
    for cell in cells(a).into_iter().filter(|c| cells_b.contains(c)) {
        let (domains_b, adapters_b) = (domains(&b.workers, &cell), adapters(b, &cell));
        for domain in domains(&a.workers, &cell).into_iter().filter(|d| domains_b.contains(d)) {
            for adapter in adapters(a, &cell).into_iter().filter(|x| adapters_b.contains(x)) {
                let difference =
                    estimate(b, &cell, &adapter, &domain, config.trim).map_err(|e| format!("B: {e}")).and_then(|eb| {
                        let ea = estimate(a, &cell, &adapter, &domain, config.trim).map_err(|e| format!("A: {e}"))?;
                        Ok(LogEstimate::difference(&eb, &ea))
                    });
                let r = row(&cell, &domain, &adapter, &a.reference, Basis::AgainstReference, fake);
                rows.push(tested(r, difference, config));
            }
        }
    }
    rows
}

/// The lines the table and the Markdown print, one per row, e.g. `energy fake:0 (FAKE
/// source) tiny.L16.headline controlled/stock paired: 0.912 [0.880, 0.945], n = 40:
/// faster (p = 0.000)`, then what the rows are when there are any.
pub fn lines(rows: &[EnergyRow], config: &DecisionConfig) -> Vec<String> {
    let mut lines: Vec<String> = rows
        .iter()
        .map(|r| {
            let basis = match r.basis {
                Basis::Paired => "paired",
                Basis::RatioOfMedians => "unpaired (non-interleaved order)",
                Basis::AgainstReference => "B over A, each against the reference",
                Basis::Raw => "raw",
            };
            let what = match (&r.ratio, &r.reason) {
                (Some(_), _) => crate::energy::ratio_words(&r.ratio),
                (None, reason) => format!("not tested: {}", reason.as_deref().unwrap_or("no readings")),
            };
            format!(
                "energy {}{} {} {}/{} {basis}: {what}",
                r.domain,
                if r.fake { " (FAKE source)" } else { "" },
                r.cell,
                r.adapter.as_str(),
                r.against.as_str()
            )
        })
        .collect();
    if !lines.is_empty() {
        lines.push(format!(
            "energy: joules per token, below 1 less energy; each row tested as time is (paired on A B / B A blocks in an \
             interleaved session, two-sample in a non-interleaved one; α {:.0} % alone, ±{:.1} % equivalence); the overall \
             verdict and the exit code are time's",
            100.0 * config.alpha,
            100.0 * config.margin
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use crate::stats::Verdict;
    use decode_baseline_wire::energy::{DomainEnergy, RequestEnergy};

    use super::*;

    /// The recorded session A (controlled and stock, two cells) as `runs` worker runs per
    /// adapter (`session::fixtures::repeated`), each measured request given a reading of
    /// `fake:0`: 0.05 J per token, times `controlled_factor` for controlled, with a spread of
    /// ±2 % that repeats every five requests and differs between the adapters, and a run offset
    /// of a few tenths of a percent that differs between the runs and between the adapters.
    fn session_with_energy(controlled_factor: f64, runs: u32) -> SessionReport {
        let path = crate::launcher::session_job::repo_root().join("tests/data/sessions/back-to-back-a/session.json");
        let mut session =
            crate::session::fixtures::repeated(&crate::session::load_session(&path).unwrap().report, runs);
        for w in &mut session.workers {
            let (factor, shift) = if w.adapter == Adapter::Controlled { (controlled_factor, 1) } else { (1.0, 0) };
            let offset = 1.0 + crate::session::fixtures::run_offset(w.repetition, shift);
            let Some(report) = &w.report else { continue };
            let energy = report
                .requests
                .iter()
                .map(|q| {
                    let tokens = q.steps.len() as f64 + 1.0;
                    let spread = 1.0 + 0.01 * (((q.index * 3 + shift as u32) % 5) as f64 - 2.0);
                    RequestEnergy {
                        index: q.index,
                        wall_ns: 1_000_000_000,
                        samples: 2,
                        domains: vec![DomainEnergy {
                            domain: "fake:0".into(),
                            energy_uj: Some((0.05 * tokens * factor * spread * offset * 1e6) as u64),
                            dropped: None,
                            clocks_start: None,
                            clocks_end: None,
                        }],
                        reasons: Some(0),
                        thermal: None,
                        throttled: false,
                    }
                })
                .collect();
            w.energy = Some(energy);
        }
        session
    }

    #[test]
    fn within_a_sequential_session_each_adapter_is_tested_against_the_reference_unpaired() {
        let config = DecisionConfig::default();
        // One run per adapter, as recorded: a reference-pair cell has one request per adapter,
        // too few to test, and it says so; the other rows keep their figures and get no verdict
        // (the requests of one run cannot show run-to-run effects).
        let rows = within(&session_with_energy(0.9, 1), &config);
        let (one_request, one_run): (Vec<_>, Vec<_>) =
            rows.into_iter().partition(|r| r.cell.ends_with("reference_pair"));
        assert!(!one_request.is_empty() && !one_run.is_empty());
        assert!(one_request.iter().all(|r| r.ratio.is_none() && r.reason.is_some()), "{one_request:?}");
        assert!(lines(&one_request, &config)[0].contains("not tested: 1 and 1 requests"), "{one_request:?}");
        for r in &one_run {
            let ratio = r.ratio.unwrap_or_else(|| panic!("{r:?}"));
            assert!((ratio.ratio - 0.9).abs() < 0.01 && ratio.upper < 1.0, "{ratio:?}");
            assert_eq!(ratio.verdict, Verdict::Inconclusive, "{ratio:?}");
        }
        // Four runs per adapter: each side's run means, and a verdict.
        let rows: Vec<EnergyRow> = within(&session_with_energy(0.9, 4), &config)
            .into_iter()
            .filter(|r| !r.cell.ends_with("reference_pair"))
            .collect();
        assert_eq!(rows.len(), one_run.len());
        for r in &rows {
            // The recorded session ran its adapters one after the other: requests, not pairs.
            assert_eq!(
                (r.domain.as_str(), &r.adapter, r.basis),
                ("fake:0", &Adapter::Controlled, Basis::RatioOfMedians)
            );
            let ratio = r.ratio.unwrap_or_else(|| panic!("{r:?}"));
            assert!((ratio.ratio - 0.9).abs() < 0.01, "{ratio:?}");
            assert!(ratio.lower < ratio.ratio && ratio.ratio < ratio.upper);
            assert_eq!(ratio.verdict, Verdict::Faster, "{ratio:?}");
        }
        let text = lines(&rows, &config);
        assert_eq!(text.len(), rows.len() + 1);
        assert!(
            text[0].starts_with("energy fake:0 ")
                && text[0].contains("controlled/stock unpaired (non-interleaved order): 0.9"),
            "{text:?}"
        );
        assert!(text.last().unwrap().contains("the overall verdict and the exit code are time's"));
        // The same readings as an interleaved session: adjacent requests paired, by run.
        let mut interleaved = session_with_energy(0.9, 4);
        interleaved.job.order = decode_baseline_wire::session::WorkerOrder::Interleaved;
        let paired: Vec<EnergyRow> = within(&interleaved, &config).into_iter().filter(|r| r.ratio.is_some()).collect();
        assert!(!paired.is_empty());
        for r in &paired {
            let ratio = r.ratio.unwrap();
            assert_eq!((r.basis, ratio.verdict), (Basis::Paired, Verdict::Faster), "{r:?}");
            assert!((ratio.ratio - 0.9).abs() < 0.01 && ratio.pairs > 0, "{ratio:?}");
        }
    }

    #[test]
    fn across_sessions_b_is_tested_against_a_through_the_reference() {
        let config = DecisionConfig::default();
        let (a, b) = (session_with_energy(0.9, 4), session_with_energy(0.8, 4));
        let tested = |rows: Vec<EnergyRow>| -> Vec<EnergyRow> {
            rows.into_iter().filter(|r| !r.cell.ends_with("reference_pair")).collect()
        };
        let rows = tested(across(&a, &b, &config));
        assert!(!rows.is_empty());
        for r in &rows {
            assert_eq!(r.basis, Basis::AgainstReference);
            let ratio = r.ratio.unwrap_or_else(|| panic!("{r:?}"));
            assert!((ratio.ratio - 0.8 / 0.9).abs() < 0.01, "{ratio:?}");
            assert_eq!(ratio.verdict, Verdict::Faster);
        }
        // The same energy in both sessions: no difference within the margin.
        let same = tested(across(&a, &session_with_energy(0.9, 4), &config));
        assert!(same.iter().all(|r| r.ratio.is_some_and(|x| x.verdict == Verdict::NoDifference)), "{same:?}");
        // Sessions of one run each: the difference keeps its figures and gets no verdict.
        let one_run = tested(across(&session_with_energy(0.9, 1), &session_with_energy(0.8, 1), &config));
        assert!(!one_run.is_empty());
        for r in &one_run {
            let ratio = r.ratio.unwrap_or_else(|| panic!("{r:?}"));
            assert!((ratio.ratio - 0.8 / 0.9).abs() < 0.01 && ratio.verdict == Verdict::Inconclusive, "{ratio:?}");
        }
        // A session without readings gives no rows, not empty ones.
        let mut bare = a.clone();
        bare.workers.iter_mut().for_each(|w| w.energy = None);
        assert!(within(&bare, &config).is_empty() && across(&bare, &b, &config).is_empty());
    }
}
