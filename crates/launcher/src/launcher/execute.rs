//! Running one group of prepared workers: the one step of a session that starts processes.
//!
//! [`Execution`] is the seam: the launcher's real one ([`Processes`]) spawns each worker under
//! the supervisor, alone or as an interleaved group behind the gate; the launcher's tests put an
//! in-process fake in its place that leaves reports in the folders, so that everything after
//! the workers (validation, analysis, `session.json`, the exit code) runs on them unchanged.

use std::path::PathBuf;

use crate::energy::GroupRecorder;

use decode_baseline_wire::group::SessionGroup;

use super::{
    events::{Event, Observer},
    interleave,
    rank_group::{self, RankPrepared},
    signals::Interrupts,
    supervise::{self, Limits, Outcome},
};

/// A worker run with its folder and job written, ready to start.
pub struct Prepared {
    /// 0-based position in the session's plan.
    pub sequence: u32,
    pub planned: crate::schedule::PlannedRun,
    pub out_dir: PathBuf,
    pub job: decode_baseline_wire::WorkerJob,
    /// The worker command: the adapter's program with `--out-dir <out_dir>`.
    pub command: Vec<String>,
    /// Added to the launcher's environment for each of its processes: the adapter's own MLX
    /// environment, when it declares one ([`super::plan::worker_environment`]).
    pub env: Vec<(String, String)>,
    /// The session's group, when the worker runs as ranks (`req/distributed.md`); this is
    /// rank 0.
    pub group: Option<SessionGroup>,
    /// Ranks 1 and up; empty for a single process.
    pub ranks: Vec<RankPrepared>,
}

impl Prepared {
    /// Its processes, rank 0 first, each with its adapter's environment and the one MLX reads
    /// in a group.
    pub fn processes(&self) -> Vec<supervise::Process<'_>> {
        let env = |rank: u32| {
            let group = match &self.group {
                Some(_) => rank_group::rank_env(rank, &rank_group::hostfile_path(&self.out_dir)),
                None => Vec::new(),
            };
            self.env.iter().cloned().chain(group).collect()
        };
        let first = supervise::Process { argv: &self.command, out_dir: &self.out_dir, env: env(0) };
        let rest =
            self.ranks.iter().map(|r| supervise::Process { argv: &r.command, out_dir: &r.out_dir, env: env(r.rank) });
        std::iter::once(first).chain(rest).collect()
    }

    /// The requests its job runs, for the progress bar.
    pub fn requests(&self) -> u32 {
        self.job.run_policy.requests(self.job.mode)
    }
}

/// Runs one group of workers (one alone, or the members of an interleaved group at once) to
/// their end and returns what the supervisor saw of each, in the members' order. It tells
/// `observer` of each member's requests as they complete, and `energy` of each grant
/// and done request of a gated group (interleaved, or a lone worker while an energy source is
/// active).
pub trait Execution {
    fn run_group(
        &mut self,
        members: &[Prepared],
        limits: Limits,
        interrupts: &Interrupts,
        observer: &dyn Observer,
        energy: &mut GroupRecorder<'_>,
    ) -> anyhow::Result<Vec<Outcome>>;
}

/// The real execution: each worker a child process under [`supervise`], an interleaved group
/// under [`interleave`].
pub struct Processes;

impl Execution for Processes {
    fn run_group(
        &mut self,
        members: &[Prepared],
        limits: Limits,
        interrupts: &Interrupts,
        observer: &dyn Observer,
        energy: &mut GroupRecorder<'_>,
    ) -> anyhow::Result<Vec<Outcome>> {
        // A lone worker without the gate runs on its own; a gated one (energy is being read)
        // goes through the gate as a group of one.
        if let [p] = members {
            if !p.job.gate && p.group.is_none() {
                let outcome = supervise::supervise(&p.command, &p.out_dir, &p.env, limits, interrupts, || {
                    observer.on(Event::Tick)
                })?;
                observer.on(Event::Requests(u64::from(p.requests())));
                return Ok(vec![outcome]);
            }
        }
        // A group's host file is written just before it starts, with ports free then.
        for p in members {
            if let Some(group) = &p.group {
                rank_group::write_hostfile(&rank_group::hostfile_path(&p.out_dir), group)
                    .map_err(|problem| crate::exit::bad_input(format!("{}: {problem}", p.job.run_id)))?;
            }
        }
        let gated: Vec<interleave::Member<'_>> =
            members.iter().map(|p| interleave::Member { processes: p.processes(), requests: p.requests() }).collect();
        let (tick, request) = (|| observer.on(Event::Tick), |_| observer.on(Event::Requests(1)));
        Ok(interleave::supervise_group(&gated, limits, interrupts, tick, request, energy)?)
    }
}
