//! Which estimate a row of a comparison tests, taken from a session's cells; the one place both
//! `compare` and the summary table of `run` get them from (`crates/launcher/src/stats/log_estimate.rs` has the
//! formulas):
//!
//! - one session, interleaved: the adapter's request pairs with the reference, as A B / B A
//!   blocks (`paired_blocks` for one repetition, `paired_run_means` for several);
//! - one session, sequential (no pairs): Yuen's two-sample test on the per-request log medians
//!   of the adapter and the reference (`request_medians`);
//! - two sessions, against the reference: the difference of the two sessions' estimates above
//!   (`session_difference`);
//! - two sessions, raw: Yuen's two-sample test on the adapter's per-request log medians in B
//!   and in A (`raw_request_medians`);
//! - the A/A check of an interleaved row: the A/A group's paired estimate against the main
//!   groups' (`session_difference` of the two): a significant difference is a run-to-run effect
//!   that a one-run error does not hold.

use crate::stats::{LogEstimate, PairBlocks, Rule, StatsError};
use decode_baseline_wire::Adapter;

use crate::session::CellData;

/// `adapter` against the cell's reference within one session.
pub fn within(cell: &CellData, adapter: &Adapter, trim: f64) -> Result<LogEstimate, String> {
    match cell.pairs.get(adapter) {
        Some(pairs) => paired(pairs, trim).map_err(|e| format!("{adapter} against {}: {e}", cell.reference)),
        None => two_sample(
            &cell.log_request_medians(adapter)?,
            &cell.log_request_medians(&cell.reference)?,
            trim,
            Rule::RequestMedians,
        )
        .map_err(|e| format!("{adapter} against {}: {e}", cell.reference)),
    }
}

/// Yuen's two-sample estimate, refusing a side of fewer than two requests in those words.
fn two_sample(x: &[f64], reference: &[f64], trim: f64, rule: Rule) -> Result<LogEstimate, StatsError> {
    for side in [x, reference] {
        if side.len() < 2 {
            return Err(StatsError::TooFew { what: "requests", expected: 2, actual: side.len() });
        }
    }
    LogEstimate::two_sample(x, reference, trim, rule)
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
    two_sample(&cb.log_request_medians(adapter)?, &ca.log_request_medians(adapter)?, trim, Rule::RawRequestMedians)
        .map_err(|e| format!("{adapter}, B against A: {e}"))
}

/// The A/A group's paired estimate of `adapter` against the reference, minus the main groups':
/// `None` without an A/A group of pairs.
pub fn aa_group(cell: &CellData, adapter: &Adapter, main: &LogEstimate, trim: f64) -> Option<LogEstimate> {
    let aa = paired(cell.aa_pairs.get(adapter)?, trim).ok()?;
    Some(LogEstimate::difference(&aa, main))
}
