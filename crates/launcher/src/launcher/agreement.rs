//! Agreement of an adapter with the reference adapter: fixed-continuation argmax step by step
//! (zero mismatches required, exact ties listed), and reference-pair stream identity or first
//! divergence.

use decode_baseline_wire::analysis::{ArgmaxAgreement, Mismatch, StreamAgreement};
use decode_baseline_wire::report::{RequestRecord, WorkerReport};

fn argmaxes(request: &RequestRecord) -> Vec<(u32, u32, Option<f64>, Option<bool>)> {
    request.steps.iter().map(|s| (s.position, s.argmax, s.margin, s.tie)).collect()
}

/// Compares the first request of each adapter step by step, and checks that every request of an
/// adapter repeats its first one (the inputs are identical, so the outputs must be).
pub fn fixed_continuation(adapter: &WorkerReport, reference: &WorkerReport) -> Option<ArgmaxAgreement> {
    let (c0, s0) = (adapter.requests.first()?, reference.requests.first()?);
    let (c, s) = (argmaxes(c0), argmaxes(s0));
    let mismatches = c
        .iter()
        .zip(&s)
        .filter(|(a, b)| a.1 != b.1 || a.0 != b.0)
        .map(|(a, b)| Mismatch {
            position: a.0,
            adapter_token: a.1,
            reference_token: b.1,
            adapter_margin: a.2,
            reference_margin: b.2,
        })
        .collect();
    let mut tie_positions: Vec<u32> =
        c.iter().chain(&s).filter(|step| step.3 == Some(true)).map(|step| step.0).collect();
    tie_positions.sort_unstable();
    tie_positions.dedup();
    let unstable_requests = [adapter, reference]
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
pub fn reference_pair(adapter: &WorkerReport, reference: &WorkerReport) -> Option<StreamAgreement> {
    let (c, s) = (adapter.requests.first()?, reference.requests.first()?);
    let stream = |r: &RequestRecord| {
        std::iter::once((r.prompt_len, r.first_token, None, None))
            .chain(r.steps.iter().map(|st| (st.position, st.argmax, st.margin, st.tie)))
            .collect::<Vec<_>>()
    };
    let (cs, ss) = (stream(c), stream(s));
    let divergence = cs.iter().zip(&ss).find(|(a, b)| a.1 != b.1);
    let diverged_at_tie = divergence.is_some_and(|(a, b)| a.3 == Some(true) || b.3 == Some(true));
    let first_divergence = divergence.map(|(a, b)| Mismatch {
        position: a.0,
        adapter_token: a.1,
        reference_token: b.1,
        adapter_margin: a.2,
        reference_margin: b.2,
    });
    let identical = first_divergence.is_none() && cs.len() == ss.len();
    Some(StreamAgreement { tokens_compared: cs.len().min(ss.len()), identical, first_divergence, diverged_at_tie })
}

#[cfg(test)]
mod tests {
    use super::*;
    use decode_baseline_wire::{report::StepRecord, Adapter, Mode, Status};

    /// A reference-pair report whose stream is `first` then `steps` (argmax, tie).
    fn report(adapter: Adapter, first: u32, steps: &[(u32, bool)]) -> WorkerReport {
        let steps = steps
            .iter()
            .enumerate()
            .map(|(k, &(argmax, tie))| StepRecord {
                position: 13 + k as u32,
                argmax,
                t_ns: 0,
                dur_ns: 1,
                build_ns: None,
                eval_ns: None,
                margin: Some(if tie { 0.0 } else { 0.5 }),
                tie: Some(tie),
            })
            .collect();
        WorkerReport {
            schema_version: decode_baseline_wire::REPORT_SCHEMA_VERSION,
            run_id: "s/c/x-0".into(),
            adapter,
            mode: Mode::ReferencePair,
            case_id: "tiny".into(),
            prompt_id: "p".into(),
            status: Status::Ok,
            exit_code: 0,
            error: None,
            pid: 1,
            claimed_utc: "1970-01-01T00:00:00.000000Z".into(),
            finished_utc: "1970-01-01T00:00:00.000000Z".into(),
            start_to_ready_ns: None,
            load_ns: None,
            identity: None,
            test_slowdown_us: None,
            group: None,
            requests: vec![RequestRecord {
                index: 0,
                phase: None,
                prompt_len: 12,
                prefill_dur_ns: 1,
                first_token_ns: 1,
                first_token: first,
                steps,
                unused_forwards: 0,
                model_calls: 1,
                peak_memory_bytes: None,
                finish_reason: "length".into(),
            }],
        }
    }

    #[test]
    fn a_divergence_is_listed_at_a_tie_and_a_problem_elsewhere() {
        let c = report(Adapter::Controlled, 7, &[(3, false), (499, false), (1, false)]);
        let same = reference_pair(&c, &report(Adapter::Stock, 7, &[(3, false), (499, false), (1, false)])).unwrap();
        assert!(same.identical && !same.diverged_at_tie && same.first_divergence.is_none());

        // Stock saw its top two equal at position 14 and took the lower index.
        let tied = reference_pair(&c, &report(Adapter::Stock, 7, &[(3, false), (39, true), (2, false)])).unwrap();
        assert!(!tied.identical && tied.diverged_at_tie);
        assert_eq!(
            tied.first_divergence.as_ref().map(|m| (m.position, m.adapter_token, m.reference_token)),
            Some((14, 499, 39))
        );

        // The same divergence without a tie there is a real difference; a tie later does not excuse it.
        let real = reference_pair(&c, &report(Adapter::Stock, 7, &[(3, false), (39, false), (2, true)])).unwrap();
        assert!(!real.identical && !real.diverged_at_tie);
        let first = reference_pair(&c, &report(Adapter::Stock, 8, &[(3, true), (499, false), (1, false)])).unwrap();
        assert!(!first.diverged_at_tie, "the first token has no margin: a divergence there is never a tie");
    }
}
