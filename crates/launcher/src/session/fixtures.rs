//! Test fixtures: a recorded session turned into one of several worker runs per adapter, so
//! that its rows hold run-to-run effects and can be given a verdict (`stats::decision`).

use decode_baseline_wire::{
    session::{SessionReport, WorkerRun},
    Adapter,
};

/// A worker run of `adapter` in cell `c` that exited 0 and passed validation, with nothing
/// recorded (no report, host record or energy): tests set what they look at.
pub fn worker_run(adapter: Adapter, repetition: u32) -> WorkerRun {
    WorkerRun {
        run_id: format!("s/c/{adapter}-{repetition}"),
        cell: "c".into(),
        adapter,
        repetition,
        aa: false,
        sequence: 0,
        command: vec![],
        pid: Some(1),
        exit_code: Some(0),
        signal: None,
        intervention: None,
        wall_ns: 1,
        validation_errors: vec![],
        host_activity: None,
        energy: None,
        report: None,
        ranks: vec![],
    }
}

/// The relative offset of worker run `repetition` of the adapter at position `salt` (in the
/// session's job): `0.2 % × (((7 r + 3 salt) mod 5) − 2)`, so the runs of one adapter differ
/// by a few tenths of a percent, and two adapters' offsets in the same run differ too (a paired
/// estimate does not cancel them).
pub fn run_offset(repetition: u32, salt: usize) -> f64 {
    0.002 * (((repetition as usize * 7 + salt * 3) % 5) as f64 - 2.0)
}

/// `session` with each worker run that is not an A/A run repeated as repetitions `0..runs` of
/// its cell and adapter, in the order an `alternate` session runs them (per cell, repetition by
/// repetition), each copy's step, prefill and first-token times scaled by `1 + run_offset`;
/// the A/A runs follow each cell's repetitions as repetition `runs`, as the launcher numbers
/// them, unchanged. Energy readings, when there are any, are copied as they are.
pub fn repeated(session: &SessionReport, runs: u32) -> SessionReport {
    let mut out = session.clone();
    out.job.repetitions = runs;
    let mut cells: Vec<&str> = Vec::new();
    for w in &session.workers {
        if !cells.contains(&w.cell.as_str()) {
            cells.push(&w.cell);
        }
    }
    let salt = |w: &decode_baseline_wire::session::WorkerRun| {
        session.job.adapters.iter().position(|a| *a == w.adapter).unwrap_or(0)
    };
    let run_id = |w: &decode_baseline_wire::session::WorkerRun, repetition: u32| {
        let folder = w.run_id.rsplit_once('/').map_or("", |(folder, _)| folder);
        format!("{folder}/{}-{repetition}{}", w.adapter.as_str(), if w.aa { "-aa" } else { "" })
    };
    out.workers.clear();
    for cell in cells {
        let in_cell = || session.workers.iter().filter(move |w| w.cell == cell);
        for repetition in 0..runs {
            for w in in_cell().filter(|w| !w.aa) {
                let mut copy = w.clone();
                copy.repetition = repetition;
                copy.run_id = run_id(w, repetition);
                let factor = 1.0 + run_offset(repetition, salt(w));
                let scale = |ns: &mut u64| *ns = (*ns as f64 * factor).round() as u64;
                for q in copy.report.iter_mut().flat_map(|r| r.requests.iter_mut()) {
                    scale(&mut q.prefill_dur_ns);
                    scale(&mut q.first_token_ns);
                    q.steps.iter_mut().for_each(|s| scale(&mut s.dur_ns));
                }
                out.workers.push(copy);
            }
        }
        for w in in_cell().filter(|w| w.aa) {
            out.workers.push(decode_baseline_wire::session::WorkerRun {
                repetition: runs,
                run_id: run_id(w, runs),
                ..w.clone()
            });
        }
    }
    for (sequence, w) in out.workers.iter_mut().enumerate() {
        w.sequence = sequence as u32;
    }
    out
}

/// `session` with every request's time to first token set to 1 ms × `level(run)` × a fixed
/// ±1 % wiggle by request and repetition × its run's offset (`run_offset`, salted by whether the
/// run is stock's, so that two adapters' offsets in one run differ).
pub fn with_first_tokens(mut session: SessionReport, level: impl Fn(&WorkerRun) -> f64) -> SessionReport {
    for w in &mut session.workers {
        let factor = level(w) * (1.0 + run_offset(w.repetition, usize::from(w.adapter == Adapter::Stock)));
        for q in w.report.iter_mut().flat_map(|r| r.requests.iter_mut()) {
            let wiggle = 1.0 + 0.01 * (((q.index as usize * 37 + w.repetition as usize * 11) % 11) as f64 / 5.0 - 1.0);
            q.first_token_ns = (1e6 * factor * wiggle).round() as u64;
        }
    }
    session
}
