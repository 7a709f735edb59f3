//! Agreement between the adapters: fixed-continuation argmax step by step (zero mismatches
//! required, exact ties listed), and reference-pair stream identity or first divergence.

use decode_baseline_protocol::report::{RequestRecord, WorkerReport};
use serde::Serialize;

/// Fixed-continuation agreement of one cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArgmaxAgreement {
    pub steps_compared: usize,
    /// Positions where the adapters' argmax differ.
    pub mismatches: Vec<Mismatch>,
    /// Positions where either adapter saw top-1 and top-2 exactly equal (lowest index won).
    pub tie_positions: Vec<u32>,
    /// Requests within one adapter whose argmax sequence differs from its first request.
    pub unstable_requests: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mismatch {
    pub position: u32,
    pub controlled: u32,
    pub stock: u32,
    pub controlled_margin: Option<f64>,
    pub stock_margin: Option<f64>,
}

/// Reference-pair agreement of one cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamAgreement {
    pub tokens_compared: usize,
    pub identical: bool,
    /// Position of the first differing token, with both tokens and margins there.
    pub first_divergence: Option<Mismatch>,
}

fn argmaxes(request: &RequestRecord) -> Vec<(u32, u32, Option<f64>, Option<bool>)> {
    request.steps.iter().map(|s| (s.position, s.argmax, s.margin, s.tie)).collect()
}

/// Compares the first request of each adapter step by step, and checks that every request of an
/// adapter repeats its first one (the inputs are identical, so the outputs must be).
pub fn fixed_continuation(controlled: &WorkerReport, stock: &WorkerReport) -> Option<ArgmaxAgreement> {
    let (c0, s0) = (controlled.requests.first()?, stock.requests.first()?);
    let (c, s) = (argmaxes(c0), argmaxes(s0));
    let mismatches = c
        .iter()
        .zip(&s)
        .filter(|(a, b)| a.1 != b.1 || a.0 != b.0)
        .map(|(a, b)| Mismatch { position: a.0, controlled: a.1, stock: b.1, controlled_margin: a.2, stock_margin: b.2 })
        .collect();
    let mut tie_positions: Vec<u32> =
        c.iter().chain(&s).filter(|step| step.3 == Some(true)).map(|step| step.0).collect();
    tie_positions.sort_unstable();
    tie_positions.dedup();
    let unstable_requests = [controlled, stock]
        .into_iter()
        .flat_map(|report| {
            let first: Vec<u32> = report.requests[0].steps.iter().map(|s| s.argmax).collect();
            report.requests.iter().filter_map(move |r| {
                let this: Vec<u32> = r.steps.iter().map(|s| s.argmax).collect();
                (this != first).then(|| format!("{}[{}]", report.adapter.as_str(), r.index))
            })
        })
        .collect();
    Some(ArgmaxAgreement { steps_compared: c.len().min(s.len()), mismatches, tie_positions, unstable_requests })
}

/// Pairs the two full greedy streams (first token, then every step).
pub fn reference_pair(controlled: &WorkerReport, stock: &WorkerReport) -> Option<StreamAgreement> {
    let (c, s) = (controlled.requests.first()?, stock.requests.first()?);
    let stream = |r: &RequestRecord| {
        std::iter::once((r.prompt_len, r.first_token, None))
            .chain(r.steps.iter().map(|st| (st.position, st.argmax, st.margin)))
            .collect::<Vec<_>>()
    };
    let (cs, ss) = (stream(c), stream(s));
    let first_divergence = cs
        .iter()
        .zip(&ss)
        .find(|(a, b)| a.1 != b.1)
        .map(|(a, b)| Mismatch { position: a.0, controlled: a.1, stock: b.1, controlled_margin: a.2, stock_margin: b.2 });
    let identical = first_divergence.is_none() && cs.len() == ss.len();
    Some(StreamAgreement { tokens_compared: cs.len().min(ss.len()), identical, first_divergence })
}
