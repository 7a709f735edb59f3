//! Which estimate a row of a comparison tests, taken from a session's cells; the one place both
//! `compare` and the summary table of `run` get them from (`crates/launcher/src/stats/log_estimate.rs` has the
//! formulas):
//!
//! - one session, interleaved: the adapter's request pairs with the reference, as A B / B A
//!   blocks, by run (`paired_blocks` for one run, `paired_run_means` for several). The A/A
//!   group is one more interleaved run of the same programs and counts as a run;
//! - one session, non-interleaved (no pairs): with at least two runs per side, Welch's test on the
//!   runs' means of per-request log medians (`run_means`); with one, Yuen's two-sample test on
//!   the per-request log medians (`request_medians`, blind to run-to-run effects: no verdict);
//! - two sessions, against the reference: the difference of the two sessions' estimates above
//!   (`session_difference`);
//! - two sessions, raw: the adapter's own times in B against A, by run means with two runs a
//!   side or more (`run_means`), else Yuen's test on per-request log medians
//!   (`raw_request_medians`, no verdict);
//! - the A/A check of an interleaved row: the A/A group's paired estimate against the main
//!   groups' (`session_difference` of the two): a significant difference is a run-to-run effect
//!   that a one-run error does not hold.

use crate::stats::{LogEstimate, PairBlocks, Rule, StatsError};
use decode_baseline_wire::Adapter;

use crate::session::CellData;

/// `adapter`'s request pairs with the reference by run, the A/A group's as one more run; `None`
/// when the session did not pair them.
fn pair_runs(cell: &CellData, adapter: &Adapter) -> Option<Vec<Vec<(f64, f64)>>> {
    let pairs = cell.pairs.get(adapter)?;
    Some(pairs.iter().chain(cell.aa_pairs.get(adapter).into_iter().flatten()).cloned().collect())
}

/// The units a row's estimate is the mean of run means of, by run: with `reference`, the A B /
/// B A blocks of `adapter`'s pairs with it (`None` when the session did not pair them); without,
/// `adapter`'s own per-request log medians. What a noise profile is fitted on and sized by
/// (`crate::stats::profile`).
pub fn units_by_run(cell: &CellData, adapter: &Adapter, reference: Option<&Adapter>) -> Option<Vec<Vec<f64>>> {
    match reference {
        Some(_) => Some(PairBlocks::from_pair_medians(&pair_runs(cell, adapter)?).ok()?.runs().to_vec()),
        None => cell.log_request_medians_by_run(adapter).ok(),
    }
}

/// `adapter` against the cell's reference within one session.
pub fn within(cell: &CellData, adapter: &Adapter, trim: f64) -> Result<LogEstimate, String> {
    let reference = &cell.reference;
    match pair_runs(cell, adapter) {
        Some(runs) => paired(&runs, trim).map_err(|e| format!("{adapter} against {reference}: {e}")),
        None => unpaired((cell, adapter), (cell, reference), trim, Rule::RequestMedians)
            .map_err(|e| format!("{adapter} against {reference}: {e}")),
    }
}

/// Two sides without pairs (`LogEstimate::unpaired`): run means from two runs a side, else the
/// requests under `one_run_rule`.
fn unpaired(
    (x_cell, x): (&CellData, &Adapter),
    (r_cell, r): (&CellData, &Adapter),
    trim: f64,
    one_run_rule: Rule,
) -> Result<LogEstimate, String> {
    LogEstimate::unpaired(
        &x_cell.log_request_medians_by_run(x)?,
        &r_cell.log_request_medians_by_run(r)?,
        trim,
        one_run_rule,
    )
    .map_err(|e| e.to_string())
}

fn paired(pairs: &[Vec<(f64, f64)>], trim: f64) -> Result<LogEstimate, StatsError> {
    LogEstimate::paired(&PairBlocks::from_pair_medians(pairs)?, trim)
}

/// `adapter` against the reference in session B over the same in session A.
pub fn against_reference(cb: &CellData, ca: &CellData, adapter: &Adapter, trim: f64) -> Result<LogEstimate, String> {
    let (b, a) = (within(cb, adapter, trim)?, within(ca, adapter, trim)?);
    Ok(LogEstimate::difference(&b, &a))
}

/// `adapter`'s own times, session B over session A.
pub fn raw(cb: &CellData, ca: &CellData, adapter: &Adapter, trim: f64) -> Result<LogEstimate, String> {
    unpaired((cb, adapter), (ca, adapter), trim, Rule::RawRequestMedians)
        .map_err(|e| format!("{adapter}, B against A: {e}"))
}

/// The A/A group's paired estimate of `adapter` against the reference, minus the main groups':
/// `None` without an A/A group of pairs. It asks whether a run-to-run effect exists at all;
/// under that null there is none, and the pairs' own error is the whole error, so the test is
/// decided on it.
pub fn aa_group(cell: &CellData, adapter: &Adapter, trim: f64) -> Option<LogEstimate> {
    let main = paired(cell.pairs.get(adapter)?, trim).ok()?;
    let aa = paired(cell.aa_pairs.get(adapter)?, trim).ok()?;
    Some(LogEstimate { run_effects_measured: true, ..LogEstimate::difference(&aa, &main) })
}
