//! What a second process buys (`bench MODEL --ranks N`, `req/distributed.md`): the sessions
//! of one model as one process and as a group of `N` ranks, side by side. Per cell and adapter:
//! the per-token and prefill medians at each size, and the per-token time at `N` ranks over
//! one process, tested (Yuen's two-sample test on the per-request log medians of the two
//! sessions, as `compare A B --raw` tests it); per cell, how the adapter's ratio to the
//! reference moves from one process to `N` ranks (the difference of the two sessions' paired
//! estimates); and what each rank reads and sums per step.

use decode_baseline_wire::{decision::DecisionConfig, session::SessionReport, Adapter, Mode};

use crate::{
    compare::rule,
    decomposition::{tested, words},
    duration::human_ns,
    plot::step_bytes::ModelBytes,
    session::{self, CellData},
};

/// The rank table's file in the group session's folder, which its page shows.
pub const RANKS_FILE: &str = "by-ranks.txt";

/// The rank table `bench --ranks` left in `session_dir`; `None` when it left none.
pub fn read_table(session_dir: &std::path::Path) -> anyhow::Result<Option<String>> {
    let path = session_dir.join(RANKS_FILE);
    match std::fs::read_to_string(&path) {
        Ok(table) => Ok(Some(table)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(anyhow::Error::new(err).context(format!("failed to read {}", path.display()))),
    }
}

fn median(report: &SessionReport, cell: &str, adapter: &Adapter, prefill: bool) -> Option<f64> {
    let cells = &report.analysis.as_ref()?.cells;
    let stats = cells.iter().find(|c| c.cell == cell)?.adapters.get(adapter)?;
    if prefill {
        stats.prefill_ns.as_ref().map(|s| s.median)
    } else {
        Some(stats.per_token_ns.median)
    }
}

fn shown(ns: Option<f64>) -> String {
    ns.map_or_else(|| "-".to_owned(), human_ns)
}

/// The table of `one` (one process per worker) beside `group` (the same model as a group of
/// `ranks`); `bytes` is the model's step bytes, when they could be read.
pub fn rank_table(
    one: &SessionReport,
    group: &SessionReport,
    ranks: u32,
    bytes: Option<&ModelBytes>,
    config: &DecisionConfig,
) -> String {
    let backend = group.job.group.as_ref().map_or("ring", |g| g.backend.as_str());
    let mut out = format!("\nby ranks (1 process against {ranks} ranks over {backend}):\n");
    let (cells_one, cells_group) = (session::cells(one), session::cells(group));
    let timed = |c: &&CellData| matches!(c.mode, Mode::Headline | Mode::FixedContinuation);
    for cg in cells_group.iter().filter(timed) {
        let Some(c1) = cells_one.iter().find(|c| c.cell == cg.cell) else { continue };
        for adapter in cg.adapters.keys() {
            let (t1, tn) = (median(one, &cg.cell, adapter, false), median(group, &cg.cell, adapter, false));
            let (p1, pn) = (median(one, &cg.cell, adapter, true), median(group, &cg.cell, adapter, true));
            let per_token = tested(&rule::raw(cg, c1, adapter, config.trim), 2, config);
            out.push_str(&format!(
                "{} {:<11} per token {} → {} ({ranks} ranks / 1: {}), prefill {} → {}\n",
                cg.cell,
                adapter.as_str(),
                shown(t1),
                shown(tn),
                words(&per_token),
                shown(p1),
                shown(pn),
            ));
        }
        for adapter in cg.adapters.keys().filter(|a| **a != cg.reference) {
            let moved = tested(&rule::against_reference(cg, c1, adapter, config.trim), 2, config);
            out.push_str(&format!(
                "{} {}/{} ratio at {ranks} ranks over at 1 process: {}\n",
                cg.cell,
                adapter.as_str(),
                cg.reference.as_str(),
                words(&moved)
            ));
        }
    }
    if let Some(bytes) = bytes {
        let rank = bytes.per_rank(ranks);
        out.push_str(&format!(
            "per step, each rank reads {} of the whole model's {} weight bytes ({:.0} %: its 1/{ranks} of the split projections and all of the rest) and the group sums {} bytes per token over {backend} (2 all_sums per layer of hidden_size activations)\n",
            rank.weight_bytes,
            bytes.weight_bytes,
            100.0 * rank.weight_bytes as f64 / bytes.weight_bytes.max(1) as f64,
            bytes.all_sum_bytes_per_token,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use decode_baseline_wire::group::{GroupBackend, SessionGroup};

    /// The recorded session of the fixture (controlled and stock) as four worker runs per
    /// adapter (`session::fixtures::repeated`), and the same with every step of every adapter
    /// `factor` times as long and a ±1 % spread that repeats every five steps, marked as a group
    /// of two ranks.
    fn sessions(factor: f64) -> (SessionReport, SessionReport) {
        let path = crate::launcher::session_job::repo_root().join("tests/data/sessions/back-to-back-a/session.json");
        let one = session::fixtures::repeated(&session::load_session(&path).unwrap().report, 4);
        let mut group = one.clone();
        group.job.group = Some(SessionGroup { ranks: 2, backend: GroupBackend::Ring, hosts: None });
        for w in &mut group.workers {
            for q in &mut w.report.as_mut().unwrap().requests {
                for (i, step) in q.steps.iter_mut().enumerate() {
                    let spread = 1.0 + 0.005 * ((i + q.index as usize) % 5) as f64 - 0.01;
                    step.dur_ns = (step.dur_ns as f64 * factor * spread) as u64;
                }
            }
        }
        (one, group)
    }

    #[test]
    fn a_group_half_again_as_slow_is_called_slower_for_each_adapter_and_the_ratio_stays() {
        let (one, group) = sessions(1.5);
        let table = rank_table(&one, &group, 2, None, &DecisionConfig::default());
        let lines: Vec<&str> = table.lines().filter(|l| l.contains(".headline ")).collect();
        for adapter in ["controlled ", "stock "] {
            let line = lines.iter().find(|l| l.contains(adapter) && l.contains("per token")).expect(adapter);
            let ratio: f64 = line.split("(2 ranks / 1: ").nth(1).unwrap()[..5].parse().unwrap();
            assert!((ratio - 1.5).abs() < 0.01 && line.contains("slower"), "{line}");
        }
        let moved = lines.iter().find(|l| l.contains("controlled/stock ratio at 2 ranks")).unwrap();
        assert!(!moved.contains("slower") && !moved.contains("faster"), "both adapters slowed alike: {moved}");
    }

    #[test]
    fn an_unchanged_group_is_not_called_slower() {
        let (one, group) = sessions(1.0);
        let table = rank_table(&one, &group, 2, None, &DecisionConfig::default());
        assert!(table.contains("(2 ranks / 1: "), "{table}");
        assert!(!table.contains("slower") && !table.contains("faster"), "{table}");
    }
}
