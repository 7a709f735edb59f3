//! Supervising the processes of one member of a gated group as one (`req/distributed.md`): a
//! lone worker, or every rank of a worker's group. The ranks are started together, are ready
//! when every rank is, and end together: once any rank ends failed, killed or stopped, the
//! launcher stops the others (SIGTERM, the grace, SIGKILL), so that no rank is left waiting in
//! a collective for a peer that is gone.

use super::{
    signals::Interrupts,
    supervise::{Limits, Outcome, Process, SuperviseError, Supervised},
};

/// The running processes of one member, rank 0 first.
#[derive(Debug)]
pub struct RankGroup {
    ranks: Vec<Supervised>,
    outcomes: Vec<Option<Outcome>>,
}

impl RankGroup {
    /// Starts every process; if one cannot be started, those already started are killed and
    /// reaped before the error is returned.
    pub fn spawn(processes: &[Process<'_>], limits: Limits) -> Result<Self, SuperviseError> {
        let mut ranks = Vec::with_capacity(processes.len());
        let n = processes.len() as u32;
        for (rank, p) in (0..).zip(processes) {
            let limits = Limits { placement: limits.placement.for_rank(rank, n), ..limits };
            match Supervised::spawn(p.argv, p.out_dir, &p.env, limits) {
                Ok(rank) => ranks.push(rank),
                Err(err) => {
                    ranks.iter_mut().for_each(Supervised::kill);
                    return Err(err);
                }
            }
        }
        let outcomes = ranks.iter().map(|_| None).collect();
        Ok(Self { ranks, outcomes })
    }

    /// One look at every rank still running; once one has ended other than by exiting 0 by
    /// itself, the others are stopped.
    pub fn poll(&mut self, interrupts: &Interrupts) -> Result<(), SuperviseError> {
        for (rank, outcome) in self.ranks.iter_mut().zip(self.outcomes.iter_mut()) {
            if outcome.is_none() {
                *outcome = rank.poll(interrupts)?;
            }
        }
        if self.failed() {
            self.ranks.iter_mut().for_each(Supervised::stop_with_group);
        }
        Ok(())
    }

    /// Every rank has signalled ready.
    pub fn is_ready(&self) -> bool {
        self.ranks.iter().all(Supervised::is_ready)
    }

    /// Every rank has ended.
    pub fn ended(&self) -> bool {
        self.outcomes.iter().all(Option::is_some)
    }

    /// The member takes no more grants and completes no more requests: every rank has ended,
    /// or one ended other than by exiting 0 by itself.
    pub fn out(&self) -> bool {
        self.ended() || self.failed()
    }

    fn failed(&self) -> bool {
        self.outcomes.iter().flatten().any(|o| !o.succeeded())
    }

    /// Rank 0's outcome with the others' in its `ranks`; call once [`RankGroup::ended`].
    pub fn outcome(self) -> Outcome {
        let mut outcomes = self.outcomes.into_iter().map(|o| o.expect("every rank ended"));
        let mut first = outcomes.next().expect("a member has a process");
        first.ranks = outcomes.collect();
        first
    }
}
