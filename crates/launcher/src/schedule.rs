//! The schedule of a session: its worker runs in the order they start, in groups that run at
//! once. It is the one place that decides whether a session interleaves (`order: interleaved`
//! in the job): the plan, the memory check, the gate, the energy reading, the analysis and the
//! readers of a finished session all ask it ([`Schedule::interleaved`], [`Group::interleaved`],
//! [`interleaves`]) instead of looking at the order themselves.

use std::ops::Range;

use decode_baseline_wire::{
    manifest::Cell,
    session::{SessionJob, WorkerOrder},
    Adapter, Mode,
};

/// Whether a job of this order runs its adapters' workers at once, request by request behind the
/// gate (and so has adjacent request pairs): the one rule, for a job being run
/// ([`Schedule::new`]) and for a finished session read back.
pub fn interleaves(job: &SessionJob) -> bool {
    job.order == WorkerOrder::Interleaved
}

/// A session's runs and their groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    runs: Vec<PlannedRun>,
    groups: Vec<Group>,
    interleaved: bool,
}

/// Runs that start together: the members of an interleaved group, or one run alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The members, as an index range into [`Schedule::runs`].
    pub runs: Range<usize>,
    /// Whether its members run at once, their requests granted in turn by the gate.
    pub interleaved: bool,
}

impl Group {
    /// Whether its workers wait at the request gate: an interleaved group always, a lone worker
    /// while an energy source is read (so each request is metered on its own).
    pub fn gated(&self, energy: bool) -> bool {
        self.interleaved || energy
    }
}

impl Schedule {
    /// The schedule of `job` over `cells`.
    pub fn new(job: &SessionJob, cells: &[Cell]) -> Schedule {
        let interleaved = interleaves(job);
        let runs = plan(job, cells);
        let groups = groups(interleaved, &runs)
            .into_iter()
            // A group of one (a job with one adapter) has no one to interleave with.
            .map(|runs| Group { interleaved: interleaved && runs.len() > 1, runs })
            .collect();
        Schedule { runs, groups, interleaved }
    }

    /// Every run, in the order they start.
    pub fn runs(&self) -> &[PlannedRun] {
        &self.runs
    }

    /// The groups, in the order they run.
    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// Whether the session interleaves (its cells' request pairs are adjacent).
    pub fn interleaved(&self) -> bool {
        self.interleaved
    }
}

/// One worker run to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedRun {
    pub cell: Cell,
    pub adapter: Adapter,
    /// 0-based repetition; the A/A pair's second run is `repetitions`.
    pub repetition: u32,
    /// `true` for the extra run of an A/A pair.
    pub aa: bool,
}

impl PlannedRun {
    /// The worker folder's name below the cell's folder, unique within the session.
    pub fn folder_name(&self) -> String {
        let suffix = if self.aa { AA_SUFFIX } else { "" };
        format!("{}-{}{suffix}", self.adapter.as_str(), self.repetition)
    }
}

/// Whether a worker folder is the extra run of an A/A pair, by the name [`PlannedRun::folder_name`]
/// gave it: for folders found on disk without their session's record (recovery), where the
/// folder name is all there is.
pub fn is_aa_folder(worker_dir: &std::path::Path) -> bool {
    worker_dir.file_name().is_some_and(|name| name.to_string_lossy().ends_with(AA_SUFFIX))
}

/// The suffix of an A/A run's folder name.
const AA_SUFFIX: &str = "-aa";

/// Every run, cell by cell. With `alternate` and `interleaved`, repetition r lists the adapters
/// in the job's order when r is even and reversed when odd (A B B A …); an A/A pair adds one more
/// run of each adapter for headline cells, after the others.
fn plan(job: &SessionJob, cells: &[Cell]) -> Vec<PlannedRun> {
    let mut runs = Vec::new();
    for cell in cells {
        // A reference-pair cell checks one full greedy stream per adapter: it runs once.
        let repetitions = if cell.mode == Mode::ReferencePair { 1 } else { job.repetitions };
        for repetition in 0..repetitions {
            let mut adapters = job.adapters.clone();
            if job.order != WorkerOrder::Fixed && repetition % 2 == 1 {
                adapters.reverse();
            }
            runs.extend(adapters.into_iter().map(|adapter| PlannedRun {
                cell: cell.clone(),
                adapter,
                repetition,
                aa: false,
            }));
        }
        if job.aa_pair && cell.mode == Mode::Headline {
            runs.extend(job.adapters.iter().map(|adapter| PlannedRun {
                cell: cell.clone(),
                adapter: adapter.clone(),
                repetition: job.repetitions,
                aa: true,
            }));
        }
    }
    runs
}

/// The runs that run at the same time, as index ranges into `runs`: when `interleaved`, the
/// runs of one cell and repetition (the A/A runs of a cell form one more group); otherwise each
/// run alone.
fn groups(interleaved: bool, runs: &[PlannedRun]) -> Vec<Range<usize>> {
    let mut groups: Vec<Range<usize>> = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let joins = interleaved
            && groups.last().is_some_and(|g| {
                let first = &runs[g.start];
                first.cell == run.cell && first.repetition == run.repetition && first.aa == run.aa
            });
        match groups.last_mut() {
            Some(group) if joins => group.end = i + 1,
            _ => groups.push(i..i + 1),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use decode_baseline_wire::session::SESSION_JOB_SCHEMA_VERSION;

    fn job(order: WorkerOrder, repetitions: u32, aa_pair: bool) -> SessionJob {
        SessionJob {
            schema_version: SESSION_JOB_SCHEMA_VERSION,
            manifest: None,
            cells: None,
            adapters: vec![Adapter::Controlled, Adapter::Stock],
            reference: None,
            output_root: "out".into(),
            repetitions,
            order,
            aa_pair,
            group: None,
            prefill_step_size: None,
        }
    }

    fn cell(mode: Mode) -> Cell {
        Cell { case: "c".into(), prompt: "p".into(), mode }
    }

    #[test]
    fn alternate_order_flips_every_repetition() {
        let runs = plan(&job(WorkerOrder::Alternate, 3, false), &[cell(Mode::Headline)]);
        let order: Vec<_> = runs.iter().map(|r| (r.adapter.clone(), r.repetition)).collect();
        use Adapter::*;
        assert_eq!(order, [(Controlled, 0), (Stock, 0), (Stock, 1), (Controlled, 1), (Controlled, 2), (Stock, 2)]);
    }

    #[test]
    fn interleaved_groups_one_cell_and_repetition_and_flips_the_first_adapter() {
        let cells = [cell(Mode::Headline), Cell { case: "d".into(), prompt: "p".into(), mode: Mode::Headline }];
        let schedule = Schedule::new(&job(WorkerOrder::Interleaved, 2, true), &cells);
        let runs = schedule.runs();
        let grouped: Vec<_> = schedule.groups().iter().map(|g| g.runs.clone()).collect();
        assert_eq!(grouped, [0..2, 2..4, 4..6, 6..8, 8..10, 10..12]);
        assert!(schedule.interleaved() && schedule.groups().iter().all(|g| g.interleaved && g.gated(false)));
        assert_eq!(runs[2].adapter, Adapter::Stock, "repetition 1 starts with the other adapter");
        assert!(runs[4].aa && runs[5].aa && !runs[3].aa);
        let alternate = Schedule::new(&job(WorkerOrder::Alternate, 2, true), &cells);
        assert_eq!(alternate.groups().len(), alternate.runs().len(), "one run at a time");
        assert!(!alternate.interleaved() && alternate.groups().iter().all(|g| !g.interleaved));
        assert!(alternate.groups().iter().all(|g| !g.gated(false) && g.gated(true)), "gated only for energy");
    }

    #[test]
    fn a_reference_pair_cell_runs_once_whatever_the_repetitions() {
        let cells = [cell(Mode::Headline), cell(Mode::FixedContinuation), cell(Mode::ReferencePair)];
        let runs = plan(&job(WorkerOrder::Interleaved, 3, false), &cells);
        let of = |mode: Mode| runs.iter().filter(|r| r.cell.mode == mode).count();
        assert_eq!((of(Mode::Headline), of(Mode::FixedContinuation), of(Mode::ReferencePair)), (6, 6, 2));
    }

    #[test]
    fn aa_pair_adds_one_run_per_adapter_for_headline_only() {
        let runs = plan(&job(WorkerOrder::Fixed, 1, true), &[cell(Mode::Headline), cell(Mode::ReferencePair)]);
        assert_eq!(runs.len(), 2 + 2 + 2);
        assert_eq!(runs.iter().filter(|r| r.aa).count(), 2);
        assert!(runs.iter().filter(|r| r.aa).all(|r| r.cell.mode == Mode::Headline));
        let names: std::collections::BTreeSet<_> = runs.iter().map(|r| (r.cell.name(), r.folder_name())).collect();
        assert_eq!(names.len(), runs.len(), "folder names are unique per cell");
    }
}
