//! Every headline ratio taken apart: how much of an adapter's headline ratio against the
//! reference is the synchronous design, how much the CPU placement, and how much is left.
//!
//! For one case and prompt with a headline and a fixed-continuation cell (`bench` runs both by
//! default), with `R_H` and `R_F` the adapter's per-token ratio against the reference in each
//! (each estimated and tested as `compare` does, `compare::rule::within`):
//!
//! `ln R_H = ln R_F + (ln R_H − ln R_F)`.
//!
//! - **`ln R_F`, the same synchronous work.** In fixed-continuation both loops are fed the same
//!   tokens and each step is timed from the start of its forward to its logits evaluated, so no
//!   loop can build step n+1 while step n evaluates: what differs is the graph each builds and
//!   evaluates and the host work around it. This is what is left for the graphs to explain
//!   (`decode-baseline graph`).
//! - **`ln R_H − ln R_F`, the headline-only part.** In headline, stock's `generate_step` builds
//!   step n+1 while step n evaluates (the look-ahead) and the loops also sample, stream and
//!   detokenize; a synchronous loop does not overlap. This term is the synchronous design's share
//!   (with the per-step work outside the forward). Its error is `√(SE_H² + SE_F²)` (two cells,
//!   independent pairs), tested like a row of `compare` (Welch t at `α`, equivalence within the
//!   margin).
//! - **The placement.** The headline-only part depends on how many CPUs the loops get: with one,
//!   stock's look-ahead has no second CPU to build on. `bench --cpus 0 --cpus all` runs a session
//!   per placement and [`placement_effect`] tests the headline ratio of one against the other
//!   (the difference of the two sessions' estimates, as `compare`'s `against_reference` rows).
//!
//! **Time to first token**, taken apart the same way where both cells recorded it:
//! `ln T_H = ln T_F + (ln T_H − ln T_F)`, with `T_H` and `T_F` the adapter's ratio of time to
//! first token in each cell.
//!
//! - **`ln T_F`, the prefill structure.** In fixed-continuation both loops prefill as
//!   `generate_step` does (the prompt in chunks, only the caches evaluated, the last token alone)
//!   and the first token is that prefill's last logits: what differs is the forwards.
//! - **`ln T_H − ln T_F`, around the prefill.** What the headline adds before the first token:
//!   stock's generator set-up, building and dispatching its look-ahead step before it yields,
//!   sampling and streaming.
//!
//! Beside each: the adapter's graph build and evaluation medians and host overhead in the
//! headline cell where its worker records them (the controlled loop does; stock, unmodified
//! mlx_lm, cannot separate its evaluation from its build, so none is shown for it).
//!
//! Each test stands alone at `α` (these are explanations beside the verdict, not the verdict:
//! the family `compare` and `run` judge is the rows of `compare`).

use decode_baseline_wire::{
    analysis::AdapterStats,
    decision::{Decision, DecisionConfig},
    session::SessionReport,
    Adapter, Mode,
};

use crate::{
    compare::rule,
    session,
    stats::{decide_alone, LogEstimate},
};

/// What the parts mean, once, above the lines of the table and under the page's table.
pub const EXPLANATION: &str = "where each headline ratio comes from: headline = same synchronous work \
    (fixed-continuation: no loop overlaps build and evaluation; what is left for the graphs and the host work \
    around them) × headline-only part (stock's look-ahead builds step n+1 while step n evaluates; sampling and \
    streaming too): the synchronous design's share; and TTFT = prefill structure (fixed-continuation's first \
    token: the same prefill forwards alone) × around the prefill (generator set-up, the look-ahead dispatched \
    before the first token, sampling); each part tested alone at α 5 %, ±3 % equivalence";

/// One adapter's headline ratio against the reference in one case and prompt, taken apart.
#[derive(Debug, Clone, PartialEq)]
pub struct Decomposition {
    /// `<case>.<prompt>`, the name of the cells without their mode.
    pub cells: String,
    pub adapter: Adapter,
    pub reference: Adapter,
    /// `R_H` tested, or why it could not be.
    pub headline: Result<Decision, String>,
    /// `R_F` tested: the same synchronous work.
    pub fixed: Result<Decision, String>,
    /// `R_H / R_F` tested: the headline-only part (look-ahead, sampling, streaming).
    pub headline_only: Result<Decision, String>,
    /// The adapter's graph build and evaluation in the headline cell, where recorded.
    pub split: Option<Split>,
    /// Its time to first token taken apart, where both cells recorded it.
    pub first_token: Option<FirstToken>,
}

/// An adapter's time-to-first-token ratio against the reference in one case and prompt, taken
/// apart: `T_H = T_F × (T_H / T_F)`.
#[derive(Debug, Clone, PartialEq)]
pub struct FirstToken {
    /// `T_H` tested: the headline cell's (stock's `stream_generate`).
    pub headline: Result<Decision, String>,
    /// `T_F` tested: the prefill structure (fixed-continuation: the same prefill forwards alone).
    pub prefill: Result<Decision, String>,
    /// `T_H / T_F` tested: what the headline adds around the prefill.
    pub around: Result<Decision, String>,
}

/// Where an adapter's headline step goes, from its own records.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split {
    pub build_median_ns: f64,
    pub eval_median_ns: f64,
    /// The step's share outside MLX evaluation.
    pub host_overhead: f64,
}

impl Split {
    fn of(stats: &AdapterStats) -> Option<Split> {
        Some(Split {
            build_median_ns: stats.build_median_ns?,
            eval_median_ns: stats.eval_median_ns?,
            host_overhead: stats.host_overhead?,
        })
    }
}

/// `<case>.<prompt>` of a cell named `<case>.<prompt>.<mode>`.
fn stem(cell: &str) -> &str {
    cell.rsplit_once('.').map_or(cell, |(stem, _)| stem)
}

/// `estimate` decided alone, its error from `sessions` sessions; the reason when it could not
/// be estimated.
pub(crate) fn tested(
    estimate: &Result<LogEstimate, String>,
    sessions: usize,
    config: &DecisionConfig,
) -> Result<Decision, String> {
    let estimate = estimate.as_ref().map_err(Clone::clone)?;
    decide_alone(estimate, None, sessions, config).map_err(|e| e.to_string())
}

/// `adapter`'s ratio in `headline` and in `fixed` (one quantity), and the first over the
/// second, each tested alone.
fn apart(
    headline: &session::CellData,
    fixed: &session::CellData,
    adapter: &Adapter,
    config: &DecisionConfig,
) -> [Result<Decision, String>; 3] {
    let h = rule::within(headline, adapter, config.trim);
    let f = rule::within(fixed, adapter, config.trim);
    let rest = match (&h, &f) {
        (Ok(h), Ok(f)) => Ok(LogEstimate::difference(h, f)),
        (Err(e), _) | (_, Err(e)) => Err(e.clone()),
    };
    [tested(&h, 1, config), tested(&f, 1, config), tested(&rest, 1, config)]
}

/// The decompositions of `session`: per case and prompt with a headline and a fixed-continuation
/// cell (without the latter there is nothing to take apart), per adapter other than the
/// reference, in the order the cells ran.
pub fn of_session(session: &SessionReport, config: &DecisionConfig) -> Vec<Decomposition> {
    let (cells, first_tokens) = (session::cells(session), session::first_token_times(session));
    let find = |among: &'_ [session::CellData], stem_of: &str, mode: Mode| {
        among.iter().find(|c| c.mode == mode && stem(&c.cell) == stem_of).cloned()
    };
    let mut out = Vec::new();
    for headline in cells.iter().filter(|c| c.mode == Mode::Headline) {
        let name = stem(&headline.cell);
        let Some(fixed) = find(&cells, name, Mode::FixedContinuation) else { continue };
        let ttft = find(&first_tokens, name, Mode::Headline).zip(find(&first_tokens, name, Mode::FixedContinuation));
        let stats = session.analysis.as_ref().and_then(|a| a.cells.iter().find(|c| c.cell == headline.cell));
        for adapter in headline.adapters.keys().filter(|a| **a != headline.reference) {
            let [headline_ratio, fixed_ratio, headline_only] = apart(headline, &fixed, adapter, config);
            let first_token = ttft.as_ref().filter(|(h, _)| h.adapters.contains_key(adapter)).map(|(h, f)| {
                let [headline, prefill, around] = apart(h, f, adapter, config);
                FirstToken { headline, prefill, around }
            });
            out.push(Decomposition {
                cells: name.to_owned(),
                adapter: adapter.clone(),
                reference: headline.reference.clone(),
                headline: headline_ratio,
                fixed: fixed_ratio,
                headline_only,
                split: stats.and_then(|c| c.adapters.get(adapter)).and_then(Split::of),
                first_token,
            });
        }
    }
    out
}

/// How the headline ratio of `adapter` in the cells `cells` moves from session `a` to session
/// `b` (two placements of the same case): `ln R_H(b) − ln R_H(a)`, tested.
pub fn placement_effect(
    a: &SessionReport,
    b: &SessionReport,
    cells: &str,
    adapter: &Adapter,
    config: &DecisionConfig,
) -> Result<Decision, String> {
    let headline = |s: &SessionReport| {
        session::cells(s)
            .into_iter()
            .find(|c| c.mode == Mode::Headline && stem(&c.cell) == cells)
            .ok_or_else(|| format!("session {} has no headline cell {cells}", s.session_id))
    };
    let (ca, cb) = (headline(a)?, headline(b)?);
    tested(&rule::against_reference(&cb, &ca, adapter, config.trim), 2, config)
}

/// A tested ratio in a few words: `1.087 [1.076, 1.102] slower`.
pub fn words(decision: &Result<Decision, String>) -> String {
    match decision {
        Ok(d) => format!("{:.3} [{:.3}, {:.3}] {}", d.ratio, d.ci.lower, d.ci.upper, d.verdict.words()),
        Err(reason) => format!("not tested: {reason}"),
    }
}

/// The lines of the table: per decomposition, the headline ratio as the product of its two
/// parts (the split of each step is on the adapter's own line of the table), then its time to
/// first token as the product of its two.
pub fn lines(parts: &[Decomposition]) -> Vec<String> {
    let mut out = Vec::new();
    for p in parts {
        let pair = format!("{} {}/{}", p.cells, p.adapter.as_str(), p.reference.as_str());
        out.push(format!(
            "{pair} headline {} = same synchronous work (fixed-continuation) {} × headline-only part (look-ahead, \
             sampling, streaming) {}",
            words(&p.headline),
            words(&p.fixed),
            words(&p.headline_only)
        ));
        if let Some(t) = &p.first_token {
            out.push(format!(
                "{pair} TTFT {} = prefill structure (fixed-continuation) {} × around the prefill (set-up, look-ahead \
                 dispatch, sampling) {}",
                words(&t.headline),
                words(&t.prefill),
                words(&t.around)
            ));
        }
    }
    out
}

/// The sessions of one case at several placements (`bench --cpus A --cpus B …`, each with the
/// placement as given), side by side: per case and prompt and adapter, each placement's
/// headline ratio and its two parts, then the headline ratio at each later placement against the
/// first, tested ([`placement_effect`]).
pub fn placement_table(sessions: &[(String, SessionReport)], config: &DecisionConfig) -> String {
    let Some((first_cpus, first)) = sessions.first() else { return String::new() };
    let mut out = format!(
        "\nby placement ({}):\n",
        sessions.iter().map(|(c, _)| format!("--cpus {c}")).collect::<Vec<_>>().join(", ")
    );
    let parts: Vec<(&str, Vec<Decomposition>)> =
        sessions.iter().map(|(cpus, s)| (cpus.as_str(), of_session(s, config))).collect();
    // Every case, prompt and adapter any placement took apart, in the order first seen.
    let mut keys: Vec<(&str, &Adapter, &Adapter)> = Vec::new();
    for p in parts.iter().flat_map(|(_, of)| of) {
        if !keys.contains(&(p.cells.as_str(), &p.adapter, &p.reference)) {
            keys.push((p.cells.as_str(), &p.adapter, &p.reference));
        }
    }
    if keys.is_empty() {
        out.push_str("  nothing to take apart: no placement has valid headline and fixed-continuation runs of an adapter and the reference\n");
    }
    for (cells, adapter, reference) in keys {
        out.push_str(&format!("{cells} {}/{}\n", adapter.as_str(), reference.as_str()));
        for (cpus, of_placement) in &parts {
            match of_placement.iter().find(|q| q.cells == cells && q.adapter == *adapter) {
                Some(q) => out.push_str(&format!(
                    "  --cpus {cpus:<6} headline {} = same synchronous work {} × headline-only part {}\n",
                    words(&q.headline),
                    words(&q.fixed),
                    words(&q.headline_only)
                )),
                None => out.push_str(&format!(
                    "  --cpus {cpus:<6} no valid runs to take apart (see its session's problems)\n"
                )),
            }
        }
        for (cpus, session) in &sessions[1..] {
            out.push_str(&format!(
                "  placement: headline ratio at --cpus {cpus} over --cpus {first_cpus}: {}\n",
                words(&placement_effect(first, session, cells, adapter, config))
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Rule;
    use decode_baseline_wire::{session::WorkerOrder, stats::Verdict};

    /// The recorded session (controlled and stock, headline, fixed-continuation and
    /// reference-pair cells of the fixture) as four worker runs per adapter
    /// (`session::fixtures::repeated`) made interleaved, each controlled step given the stock
    /// step of the same run, request and index times `headline` or `fixed`, with a ±1.5 %
    /// spread that repeats every seven steps and a run offset of a few tenths of a percent.
    fn session(headline: f64, fixed: f64) -> SessionReport {
        let path = crate::launcher::session_job::repo_root().join("tests/data/sessions/back-to-back-a/session.json");
        let mut s = session::fixtures::repeated(&session::load_session(&path).unwrap().report, 4);
        s.job.order = WorkerOrder::Interleaved;
        // Each stock run's step times by request, keyed by its cell, repetition and A/A mark.
        let mut stock = std::collections::BTreeMap::new();
        for w in s.workers.iter().filter(|w| w.adapter == Adapter::Stock) {
            let steps = w.report.as_ref().unwrap().requests.iter();
            let durs: Vec<Vec<u64>> = steps.map(|q| q.steps.iter().map(|st| st.dur_ns).collect()).collect();
            stock.insert((w.cell.clone(), w.repetition, w.aa), durs);
        }
        for w in s.workers.iter_mut().filter(|w| w.adapter == Adapter::Controlled) {
            let factor = if w.cell.ends_with(".headline") { headline } else { fixed };
            let offset = 1.0 + session::fixtures::run_offset(w.repetition, 1);
            let reference = &stock[&(w.cell.clone(), w.repetition, w.aa)];
            for (q, durs) in w.report.as_mut().unwrap().requests.iter_mut().zip(reference) {
                for (i, (step, d)) in q.steps.iter_mut().zip(durs).enumerate() {
                    let spread = 1.0 + 0.005 * ((i * 5 + q.index as usize) % 7) as f64 - 0.015;
                    step.dur_ns = (*d as f64 * factor * spread * offset) as u64;
                }
            }
        }
        // The recorded analysis predates the host overhead: give the controlled worker a split,
        // another one in each cell.
        for (i, cell) in s.analysis.as_mut().unwrap().cells.iter_mut().enumerate() {
            let Some(stats) = cell.adapters.get_mut(&Adapter::Controlled) else { continue };
            let k = if cell.mode == Mode::Headline { 1.0 } else { 2.0 + i as f64 };
            (stats.build_median_ns, stats.eval_median_ns) = (Some(150_000.0 * k), Some(3_000_000.0 * k));
            stats.host_overhead = Some(0.05 * k);
        }
        s
    }

    #[test]
    fn a_headline_ratio_splits_into_the_fixed_continuation_ratio_and_the_headline_only_part() {
        let config = DecisionConfig::default();
        let parts = of_session(&session(1.10, 1.0), &config);
        assert_eq!(parts.len(), 1, "one case and prompt, one adapter besides the reference: {parts:?}");
        let p = &parts[0];
        assert_eq!(
            (p.cells.as_str(), &p.adapter, &p.reference),
            ("tiny-qwen3.tiny-qwen3-L16", &Adapter::Controlled, &Adapter::Stock)
        );
        let (h, f, only) = (p.headline.as_ref().unwrap(), p.fixed.as_ref().unwrap(), p.headline_only.as_ref().unwrap());
        // Four interleaved runs and the A/A group, one unit each: the errors hold run-to-run effects.
        assert_eq!(
            (h.rule, h.units, f.rule, f.units),
            (Rule::PairedRunMeans, 5, Rule::PairedRunMeans, 4),
            "{h:?} {f:?}"
        );
        assert!((h.ratio - 1.10).abs() < 0.01 && h.verdict == Verdict::Slower, "{h:?}");
        assert!((f.ratio - 1.0).abs() < 0.01 && f.verdict == Verdict::NoDifference, "{f:?}");
        // The identity holds on the estimates, and the part is tested with both errors.
        assert!((only.log_estimate - (h.log_estimate - f.log_estimate)).abs() < 1e-12, "{only:?}");
        assert!((only.se - (h.se.powi(2) + f.se.powi(2)).sqrt()).abs() < 1e-12, "{only:?}");
        assert_eq!(only.verdict, Verdict::Slower);
        let text = lines(&parts);
        assert!(text[0].starts_with("tiny-qwen3.tiny-qwen3-L16 controlled/stock headline 1.1"), "{text:?}");
        assert!(text[0].contains(&format!("same synchronous work (fixed-continuation) {:.3}", f.ratio)), "{text:?}");
        assert!(text[0].contains("no difference × headline-only part"), "{text:?}");
        assert_eq!(text.len(), 2, "{text:?}");
        assert!(text[1].starts_with("tiny-qwen3.tiny-qwen3-L16 controlled/stock TTFT "), "{text:?}");
        // The split is the headline cell's, as the launcher's analysis recorded it.
        assert_eq!(
            p.split,
            Some(Split { build_median_ns: 150_000.0, eval_median_ns: 3_000_000.0, host_overhead: 0.05 })
        );
    }

    /// `s` with every request's time to first token about 1 ms (controlled: `headline` or
    /// `fixed` ms by the cell, `session::fixtures::with_first_tokens`).
    fn first_tokens(s: SessionReport, headline: f64, fixed: f64) -> SessionReport {
        session::fixtures::with_first_tokens(s, |w| {
            match (w.adapter == Adapter::Controlled, w.cell.ends_with(".headline")) {
                (false, _) => 1.0,
                (true, true) => headline,
                (true, false) => fixed,
            }
        })
    }

    #[test]
    fn a_first_token_ratio_splits_into_the_prefill_structure_and_what_is_around_it() {
        let config = DecisionConfig::default();
        // Controlled's first token 20 % later in headline, its prefill forwards as stock's.
        let parts = of_session(&first_tokens(session(1.0, 1.0), 1.2, 1.0), &config);
        let t = parts[0].first_token.as_ref().expect("both cells recorded first tokens");
        let (h, prefill, around) =
            (t.headline.as_ref().unwrap(), t.prefill.as_ref().unwrap(), t.around.as_ref().unwrap());
        assert!((h.ratio - 1.2).abs() < 0.01 && h.verdict == Verdict::Slower, "{h:?}");
        assert!((prefill.ratio - 1.0).abs() < 0.01 && prefill.verdict == Verdict::NoDifference, "{prefill:?}");
        assert!((around.log_estimate - (h.log_estimate - prefill.log_estimate)).abs() < 1e-12, "{around:?}");
        assert_eq!(around.verdict, Verdict::Slower, "{around:?}");
        // A slower prefill structure shows in its own part, and nothing is left around it.
        let parts = of_session(&first_tokens(session(1.0, 1.0), 1.1, 1.1), &config);
        let t = parts[0].first_token.as_ref().unwrap();
        assert_eq!(t.prefill.as_ref().unwrap().verdict, Verdict::Slower);
        assert_eq!(t.around.as_ref().unwrap().verdict, Verdict::NoDifference);
        // No first token recorded in the fixed-continuation cell: nothing to take apart there.
        let mut s = first_tokens(session(1.0, 1.0), 1.2, 1.0);
        for w in s.workers.iter_mut().filter(|w| w.cell.ends_with(".fixed_continuation")) {
            w.report.iter_mut().flat_map(|r| r.requests.iter_mut()).for_each(|q| q.first_token_ns = 0);
        }
        assert_eq!(of_session(&s, &config)[0].first_token, None);
    }

    #[test]
    fn a_ratio_that_is_all_synchronous_work_leaves_no_headline_only_part() {
        let parts = of_session(&session(0.9, 0.9), &DecisionConfig::default());
        let only = parts[0].headline_only.as_ref().unwrap();
        assert!((only.ratio - 1.0).abs() < 0.005, "{only:?}");
        assert_eq!(only.verdict, Verdict::NoDifference, "{only:?}");
        assert_eq!(parts[0].fixed.as_ref().unwrap().verdict, Verdict::Faster);
    }

    #[test]
    fn without_a_fixed_continuation_cell_there_is_nothing_to_take_apart() {
        let mut s = session(1.1, 1.0);
        assert_eq!(of_session(&s, &DecisionConfig::default()).len(), 1);
        s.workers.retain(|w| !w.cell.ends_with(".fixed_continuation"));
        assert_eq!(of_session(&s, &DecisionConfig::default()), Vec::new());
    }

    fn failed_only() -> SessionReport {
        let mut s = session(1.0, 1.0);
        s.workers.clear();
        s
    }

    #[test]
    fn the_placement_effect_is_the_difference_of_two_sessions_headline_ratios() {
        let config = DecisionConfig::default();
        let (one, all) = (session(0.92, 1.0), session(1.07, 1.0));
        let cells = "tiny-qwen3.tiny-qwen3-L16";
        let effect = placement_effect(&one, &all, cells, &Adapter::Controlled, &config).unwrap();
        assert!((effect.ratio - 1.07 / 0.92).abs() < 0.01, "{effect:?}");
        assert_eq!(effect.verdict, Verdict::Slower);
        let same = placement_effect(&one, &one, cells, &Adapter::Controlled, &config).unwrap();
        assert_eq!((same.ratio, same.verdict), (1.0, Verdict::NoDifference));
        assert!(placement_effect(&one, &all, "nope", &Adapter::Controlled, &config)
            .unwrap_err()
            .contains("no headline cell nope"));
        // Bench's table: each placement's parts, then the effect.
        let mut failed = one.clone();
        failed.workers.clear();
        let table = placement_table(&[("0".into(), one), ("all".into(), all), ("1".into(), failed)], &config);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[1], "by placement (--cpus 0, --cpus all, --cpus 1):", "{table}");
        assert_eq!(lines[2], format!("{cells} controlled/stock"), "{table}");
        assert!(
            lines[3].starts_with("  --cpus 0      headline 0.92")
                && lines[4].starts_with("  --cpus all    headline 1.07"),
            "{table}"
        );
        assert_eq!(lines[5], "  --cpus 1      no valid runs to take apart (see its session's problems)", "{table}");
        assert!(lines[6].starts_with("  placement: headline ratio at --cpus all over --cpus 0: 1.16"), "{table}");
        assert!(lines[6].ends_with("slower"), "{table}");
        assert!(
            lines[7].starts_with("  placement: headline ratio at --cpus 1 over --cpus 0: not tested: session"),
            "{table}"
        );
        assert!(
            placement_table(&[], &config).is_empty()
                && placement_table(&[("1".into(), failed_only())], &config).contains("nothing to take apart"),
        );
    }
}
