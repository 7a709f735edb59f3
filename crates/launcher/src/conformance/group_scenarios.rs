//! The rank-group scenarios (`req/protocol.md` §4.6, `req/distributed.md`): the ranks of one
//! group started as the launcher starts them (each in its own folder and process group, with its
//! own job and `MLX_RANK`/`MLX_HOSTFILE`, the host file on loopback ports found free), and what
//! the protocol promises of them. A loop that does not shard is conformant when it refuses every
//! group job naming `group`; each scenario accepts that refusal in place of the run.

use std::{
    os::unix::process::CommandExt,
    path::PathBuf,
    process::Child,
    sync::mpsc::{self, RecvTimeoutError},
    time::{Duration, Instant},
};

use decode_baseline_wire::{
    group::{GroupBackend, RankJob, SessionGroup, RANK_ENV},
    outdir::{READY_FILE, REPORT_FILE},
    Mode, Status, WorkerJob, WorkerReport,
};
use nix::{
    errno::Errno,
    sys::signal::{killpg, Signal},
    unistd::Pid,
};

use super::{
    checks::check_report,
    harness::{spawn, tail, wait, Failure, Finished, Outcome, Setup, Suite, CANCEL_RELEASE_BOUND, RUN_BOUND},
};
use crate::{
    ensure, ensure_eq,
    launcher::rank_group::{hostfile_path, rank_dir, rank_env, write_hostfile},
};

/// The group's size in every scenario.
const RANKS: u32 = 2;

/// How long a rank whose peer never starts is watched for `worker-ready`: longer than a loop
/// takes on the fixture from its start to ready (here 0.2 to 3 s for the built-in loops), so
/// that one that falls back to a group of one shows it.
const NO_PEER_BOUND: Duration = Duration::from_secs(5);

/// How long a rank with a wrong environment may take to be refused. One that does not check
/// joins and waits for a peer that never starts; only such a worker reaches it.
const REFUSAL_BOUND: Duration = Duration::from_secs(60);

/// How long the other ranks may take to end by themselves once one has failed (a loop that
/// refuses groups refuses with every rank within it) before the harness stops them.
const PEER_END_BOUND: Duration = Duration::from_secs(10);

/// The ranks of one group: rank 0's folder, manifest and job as any scenario's; rank `r`'s
/// folder `<rank 0's>.rank<r>` and its job rank 0's with the run id suffixed `.rank<r>`, as the
/// launcher lays them out (`req/distributed.md` §2); every job names the group, every rank's
/// environment its rank and the host file.
struct Group<'s> {
    ranks: Vec<Setup<'s>>,
    hostfile: PathBuf,
}

impl<'s> Group<'s> {
    fn new(suite: &'s Suite, mode: Mode) -> Result<Self, Failure> {
        let mut rank0 = Setup::new(suite, mode)?;
        let hostfile = hostfile_path(&rank0.out);
        let group =
            |rank| Some(RankJob { rank, ranks: RANKS, backend: GroupBackend::Ring, hostfile: hostfile.clone() });
        rank0.job.group = group(0);
        rank0.env = rank_env(0, &hostfile);
        let mut ranks = Vec::new();
        for rank in 1..RANKS {
            let out = rank_dir(&rank0.out, rank);
            std::fs::create_dir(&out)?;
            let run_id = format!("{}.rank{rank}", rank0.job.run_id);
            let job = WorkerJob { run_id, group: group(rank), ..rank0.job.clone() };
            ranks.push(Setup { suite, out, fixture: rank0.fixture.clone(), job, env: rank_env(rank, &hostfile) });
        }
        ranks.insert(0, rank0);
        for setup in &ranks {
            setup.write_job()?;
        }
        Ok(Self { ranks, hostfile })
    }

    /// Writes the host file with free loopback ports, as the launcher does just before the
    /// group starts.
    fn write_hostfile(&self) -> Outcome {
        let group = SessionGroup { ranks: RANKS, backend: GroupBackend::Ring, hosts: None };
        write_hostfile(&self.hostfile, &group).map_err(Failure::new)?;
        Ok(())
    }

    /// Writes the host file and starts every rank, each held at `hook` if given; a rank that
    /// cannot be started kills the ones already started.
    fn start(&self, hook: Option<(&str, u32)>) -> Result<Vec<Child>, Failure> {
        self.write_hostfile()?;
        let mut children = Vec::new();
        for setup in &self.ranks {
            match spawn_rank(setup, hook) {
                Ok(child) => children.push(child),
                Err(why) => {
                    let _ =
                        wait_ranks(children, RUN_BOUND, Stop::After { after: Duration::ZERO, grace: Duration::ZERO });
                    return Err(why);
                }
            }
        }
        Ok(children)
    }

    /// The launcher's grace between SIGTERM and SIGKILL.
    fn grace(&self) -> Duration {
        Duration::from_secs(u64::from(self.ranks[0].job.run_policy.backstop_grace_s))
    }
}

/// Starts one rank in its own process group, as the launcher starts every worker.
fn spawn_rank(setup: &Setup, hook: Option<(&str, u32)>) -> Result<Child, Failure> {
    let mut cmd = setup.hooked(hook);
    cmd.process_group(0);
    spawn(cmd)
}

/// When the ranks still running are stopped as the launcher stops a rank: SIGTERM to its process
/// group, the grace, SIGKILL.
#[derive(Clone, Copy)]
enum Stop {
    /// [`PEER_END_BOUND`] after a rank ends other than by exiting 0. The launcher stops the others
    /// at once; the harness first lets them end by themselves, so that every rank of a loop that
    /// refuses groups is seen refusing, and stops only the ranks that would wait for ever in a
    /// collective for a peer that is gone.
    OnFailure { grace: Duration },
    /// `after` from now.
    After { after: Duration, grace: Duration },
    /// Never: each rank has its bound alone.
    Never,
}

/// A rank's end: its exit (or why it could not be waited for) and the signal the harness sent
/// its process group to stop it, if any.
struct Ended {
    finished: Result<Finished, Failure>,
    stopped: Option<Signal>,
}

impl Ended {
    fn code(&self) -> Option<i32> {
        self.finished.as_ref().ok().and_then(|f| f.status.code())
    }

    /// `rank N`, and whether the harness stopped it: what a rank's failure starts with.
    fn name(&self, rank: usize) -> String {
        match self.stopped {
            None => format!("rank {rank}"),
            Some(signal) => format!("rank {rank} (sent {signal} after another rank ended)"),
        }
    }
}

/// Waits for every rank to exit within `bound` (a rank past it is killed), draining each one's
/// pipes, stopping the ranks still running as `stop` says; then kills whatever is left in each
/// rank's process group.
fn wait_ranks(children: Vec<Child>, bound: Duration, stop: Stop) -> Vec<Ended> {
    let pgids: Vec<u32> = children.iter().map(Child::id).collect();
    let (tx, rx) = mpsc::channel();
    for (rank, child) in children.into_iter().enumerate() {
        let tx = tx.clone();
        std::thread::spawn(move || tx.send((rank, wait(child, bound))));
    }
    drop(tx);
    let mut ended: Vec<Option<Result<Finished, Failure>>> = pgids.iter().map(|_| None).collect();
    let mut stopped: Vec<Option<Signal>> = vec![None; pgids.len()];
    let stop_running = |ended: &[Option<Result<Finished, Failure>>], stopped: &mut [Option<Signal>], signal| {
        for rank in (0..pgids.len()).filter(|&r| ended[r].is_none()) {
            signal_group(pgids[rank], signal);
            stopped[rank] = Some(signal);
        }
    };
    let (mut term_at, grace) = match stop {
        Stop::After { after, grace } => (Some(Instant::now() + after), grace),
        Stop::OnFailure { grace } => (None, grace),
        Stop::Never => (None, Duration::ZERO),
    };
    let (mut kill_at, mut failed) = (None, false);
    while ended.iter().any(Option::is_none) {
        let received = match kill_at.or(term_at) {
            Some(at) => rx.recv_timeout(at.saturating_duration_since(Instant::now())),
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match received {
            Ok((rank, result)) => {
                let clean = matches!(&result, Ok(f) if f.status.code() == Some(0));
                ended[rank] = Some(result);
                if !clean && !failed && matches!(stop, Stop::OnFailure { .. }) {
                    failed = true;
                    term_at = Some(Instant::now() + PEER_END_BOUND);
                }
            }
            Err(RecvTimeoutError::Timeout) if term_at.take().is_some() => {
                stop_running(&ended, &mut stopped, Signal::SIGTERM);
                kill_at = Some(Instant::now() + grace);
            }
            Err(RecvTimeoutError::Timeout) => {
                stop_running(&ended, &mut stopped, Signal::SIGKILL);
                kill_at = None;
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    for &pgid in &pgids {
        signal_group(pgid, Signal::SIGKILL);
    }
    ended
        .into_iter()
        .zip(stopped)
        .map(|(finished, stopped)| Ended {
            finished: finished.unwrap_or_else(|| Err(Failure::new("the harness lost the rank's waiter"))),
            stopped,
        })
        .collect()
}

/// Signals a rank's whole process group; a group already gone is not an error here.
fn signal_group(pgid: u32, signal: Signal) {
    let _ = killpg(Pid::from_raw(pgid as i32), signal);
}

/// Fails unless the process group `pgid` is empty within a few seconds of the rank's end (the
/// members the SIGKILL ended are reaped by then).
fn group_is_empty(pgid: u32) -> Outcome {
    let start = Instant::now();
    loop {
        match killpg(Pid::from_raw(pgid as i32), None) {
            Err(Errno::ESRCH) => return Ok(()),
            _ if start.elapsed() >= Duration::from_secs(5) => {
                signal_group(pgid, Signal::SIGKILL);
                return Err(Failure::new(format!("processes are left in the worker's process group {pgid}")));
            }
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Whether `error` refuses a group job at validation naming `group` (`validation failed:
/// group: …`, or a field of it: `group.ranks: …`).
fn names_the_group(error: &str) -> bool {
    error.strip_prefix("validation failed: group").is_some_and(|rest| rest.starts_with(':') || rest.starts_with('.'))
}

/// A rank that refused its group job: exit 1, a `failed` report (checked as any) whose error
/// names `group`, and no `worker-ready` (refused before the load).
fn refused_the_group(setup: &Setup, ended: &Ended) -> Outcome {
    let finished = ended.finished.as_ref().map_err(Clone::clone)?;
    finished.expect_code(1)?;
    let report = check_report(setup, finished)?;
    ensure_eq!(report.status, Status::Failed, "status");
    let error = report.error.unwrap_or_default();
    ensure!(names_the_group(&error), "exit 1 with an error that does not refuse naming `group`: {error:?}");
    ensure!(!setup.path(READY_FILE).exists(), "{READY_FILE} exists beside a refusal of the group");
    Ok(())
}

/// Whether every rank refused its group job; `Err` says why one rank is not a refusal when
/// every rank exited 1.
fn every_rank_refused(group: &Group, ended: &[Ended]) -> Result<bool, Failure> {
    if !ended.iter().all(|e| e.code() == Some(1)) {
        return Ok(false);
    }
    for (rank, (setup, end)) in group.ranks.iter().zip(ended).enumerate() {
        refused_the_group(setup, end).map_err(|why| {
            Failure::new(format!("{}: {why} (a loop that does not shard refuses naming `group`)", end.name(rank)))
        })?;
    }
    Ok(true)
}

/// A rank that ran its job to the end: exit 0, an `ok` report (checked as any, its `group` the
/// job's) with every request.
fn ran(setup: &Setup, ended: &Ended) -> Result<WorkerReport, Failure> {
    let finished = ended.finished.as_ref().map_err(Clone::clone)?;
    finished.expect_code(0)?;
    let report = check_report(setup, finished)?;
    ensure_eq!(report.status, Status::Ok, "status");
    ensure_eq!(report.requests.len(), setup.total_requests(), "requests");
    Ok(report)
}

/// Where `report`'s tokens differ from rank 0's: after each all_sum every rank holds the same
/// activations, so the first token and every step's argmax are rank 0's.
fn same_tokens(rank: usize, report: &WorkerReport, rank0: &WorkerReport) -> Outcome {
    for (mine, theirs) in report.requests.iter().zip(&rank0.requests) {
        let i = mine.index;
        ensure_eq!(mine.first_token, theirs.first_token, "rank {rank}'s first token of request {i} vs rank 0's");
        ensure_eq!(mine.steps.len(), theirs.steps.len(), "rank {rank}'s steps of request {i} vs rank 0's");
        if let Some((a, b)) = mine.steps.iter().zip(&theirs.steps).find(|(a, b)| a.argmax != b.argmax) {
            return Err(Failure::new(format!(
                "rank {rank}: argmax {} at position {} of request {i}, rank 0's {} (the ranks' logits differ)",
                a.argmax, a.position, b.argmax
            )));
        }
    }
    Ok(())
}

pub fn a_group_job_is_run_or_refused_naming_the_group(suite: &Suite) -> Outcome {
    let group = Group::new(suite, Mode::FixedContinuation)?;
    let ended = wait_ranks(group.start(None)?, RUN_BOUND, Stop::OnFailure { grace: group.grace() });
    if every_rank_refused(&group, &ended)? {
        return Ok(());
    }
    // The ranks the harness did not stop first: their end is the cause.
    let mut order: Vec<usize> = (0..ended.len()).collect();
    order.sort_by_key(|&rank| ended[rank].stopped.is_some());
    let mut reports = vec![None; ended.len()];
    for rank in order {
        let report = ran(&group.ranks[rank], &ended[rank]).map_err(|why| {
            Failure::new(format!(
                "{}: {why} (expected every rank ok, or every rank refused naming `group`)",
                ended[rank].name(rank)
            ))
        })?;
        reports[rank] = Some(report);
    }
    let reports: Vec<WorkerReport> = reports.into_iter().flatten().collect();
    for (rank, report) in reports.iter().enumerate().skip(1) {
        same_tokens(rank, report, &reports[0])?;
    }
    Ok(())
}

pub fn a_rank_whose_peer_never_starts_never_signals_ready_and_stops(suite: &Suite) -> Outcome {
    let group = Group::new(suite, Mode::FixedContinuation)?;
    group.write_hostfile()?;
    let rank0 = &group.ranks[0];
    let mut child = spawn_rank(rank0, None)?;
    let pgid = child.id();
    let watched = watch_without_peer(rank0, &mut child);
    // The launcher's stop for a rank still running; one that ended by itself (refused, or failed
    // to join) is only reaped.
    let stop = if matches!(watched, Ok(true)) {
        Stop::Never
    } else {
        Stop::After { after: Duration::ZERO, grace: group.grace() }
    };
    let ended = wait_ranks(vec![child], RUN_BOUND, stop).remove(0);
    group_is_empty(pgid)?;
    watched?;
    ensure!(
        !rank0.path(READY_FILE).exists(),
        "{READY_FILE} appeared after SIGTERM, though rank 1 never started (a rank joins strict)"
    );
    let finished = ended.finished.map_err(|why| Failure::new(format!("after SIGTERM and SIGKILL: {why}")))?;
    ensure!(finished.status.code() != Some(0), "exit 0 without its peer; stderr: {}", tail(&finished.stderr));
    if !rank0.path(REPORT_FILE).exists() {
        return Ok(());
    }
    // A report the rank wrote (failed to join, or cancelled) is checked as any; one beside a
    // SIGKILL cannot be held against an exit code.
    let report = match finished.status.code() {
        Some(_) => check_report(rank0, &finished)?,
        None => rank0.report()?.0,
    };
    ensure!(report.status != Status::Ok, "{REPORT_FILE} says ok, though rank 1 never started");
    Ok(())
}

/// Watches a rank whose peer never starts for [`NO_PEER_BOUND`] or until it exits (then
/// `Ok(true)`): `Err` when it signals ready.
fn watch_without_peer(setup: &Setup, child: &mut Child) -> Result<bool, Failure> {
    let start = Instant::now();
    while start.elapsed() < NO_PEER_BOUND {
        ensure!(
            !setup.path(READY_FILE).exists(),
            "{READY_FILE} appeared {:?} after the start, though rank 1 never started (a rank joins strict)",
            start.elapsed()
        );
        if child.try_wait()?.is_some() {
            return Ok(true);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(false)
}

pub fn sigterm_in_a_group_cancels_every_rank(suite: &Suite) -> Outcome {
    const SITE: &str = "before_decode_step";
    let group = Group::new(suite, Mode::Headline)?;
    let mut children = group.start(Some((SITE, 1)))?;
    if let Err(exited) = wait_for_every_hook(&group, &mut children, SITE) {
        let ended = wait_ranks(children, RUN_BOUND, Stop::After { after: PEER_END_BOUND, grace: group.grace() });
        if every_rank_refused(&group, &ended).unwrap_or(false) {
            return Ok(());
        }
        let reached = format!("hook-{SITE}-reached");
        return Err(match exited.map(|rank| (rank, &ended[rank].finished)) {
            Some((rank, Ok(finished))) => Failure::new(format!(
                "hook site {SITE}: rank {rank} exited ({}) before {reached} appeared in every rank's folder; stderr: {}",
                finished.status,
                tail(&finished.stderr)
            )),
            Some((rank, Err(why))) => Failure::new(format!("hook site {SITE}: rank {rank}: {why}")),
            None => Failure::new(format!("hook site {SITE}: {reached} not in every rank's folder within {RUN_BOUND:?}")),
        });
    }
    let sent = Instant::now();
    for child in &children {
        signal_group(child.id(), Signal::SIGTERM);
    }
    let ended = wait_ranks(children, CANCEL_RELEASE_BOUND, Stop::Never);
    let released = sent.elapsed();
    for (rank, (setup, end)) in group.ranks.iter().zip(&ended).enumerate() {
        let finished = end
            .finished
            .as_ref()
            .map_err(|why| Failure::new(format!("after SIGTERM at {SITE} in a group: rank {rank}: {why}")))?;
        finished.expect_code(4).map_err(|why| Failure::new(format!("rank {rank}: {why}")))?;
        let report = check_report(setup, finished).map_err(|why| Failure::new(format!("rank {rank}: {why}")))?;
        ensure_eq!(report.status, Status::Cancelled, "rank {rank}'s status");
        ensure_eq!(report.requests.len(), 1, "rank {rank}'s requests (request 0 kept, nothing of request 1)");
    }
    ensure!(
        released <= CANCEL_RELEASE_BOUND,
        "the ranks exited {released:?} after SIGTERM, bound {CANCEL_RELEASE_BOUND:?}"
    );
    Ok(())
}

/// Waits until every rank reports that it reached `site`; `Err(Some(rank))` as soon as a rank
/// exits first, `Err(None)` after [`RUN_BOUND`] (the caller then stops the ranks).
fn wait_for_every_hook(group: &Group, children: &mut [Child], site: &str) -> Result<(), Option<usize>> {
    let reached = format!("hook-{site}-reached");
    let start = Instant::now();
    while !group.ranks.iter().all(|setup| setup.path(&reached).exists()) {
        for (rank, child) in children.iter_mut().enumerate() {
            if !matches!(child.try_wait(), Ok(None)) {
                return Err(Some(rank));
            }
        }
        if start.elapsed() >= RUN_BOUND {
            return Err(None);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(())
}

pub fn a_rank_with_a_wrong_environment_is_refused_naming_it(suite: &Suite) -> Outcome {
    let mut group = Group::new(suite, Mode::FixedContinuation)?;
    group.write_hostfile()?;
    // Rank 0's job, with the environment of rank 1.
    let rank0 = &mut group.ranks[0];
    rank0.env.retain(|(name, _)| name != RANK_ENV);
    rank0.env.push((RANK_ENV.to_owned(), "1".to_owned()));
    let child = spawn_rank(rank0, None)?;
    let pgid = child.id();
    let finished = wait(child, REFUSAL_BOUND);
    signal_group(pgid, Signal::SIGKILL);
    let finished = finished.map_err(|why| Failure::new(format!("{why} (a rank that joins waits for its peer)")))?;
    finished.expect_code(1)?;
    let report = check_report(rank0, &finished)?;
    ensure_eq!(report.status, Status::Failed, "status");
    let error = report.error.unwrap_or_default();
    ensure!(
        (error.starts_with("validation failed: ") && error.contains(RANK_ENV))
            || error.starts_with("validation failed: group: "),
        "the error does not name {RANK_ENV}: {error:?}"
    );
    ensure_eq!(report.group, None, "group (refused before the join)");
    ensure!(!rank0.path(READY_FILE).exists(), "{READY_FILE} exists beside the refusal");
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    #[test]
    fn a_refusal_of_the_group_names_group_or_a_field_of_it_at_validation() {
        assert!(names_the_group("validation failed: group: the x worker does not run in rank groups"));
        assert!(names_the_group("validation failed: group.ranks: num_key_value_heads 1 does not divide by 2"));
        assert!(!names_the_group("validation failed: groups: no"));
        assert!(!names_the_group("failed to join the rank group: RuntimeError('[ring] Accept failed')"));
        assert!(!names_the_group("validation failed: environment MLX_RANK: expected 0, found 1"));
    }

    fn start(script: &str) -> Child {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]).process_group(0);
        cmd.spawn().unwrap()
    }

    #[test]
    fn ranks_still_running_are_sent_sigterm_then_sigkill_after_the_grace() {
        let grace = Duration::from_millis(200);
        let children = vec![start("exit 0"), start("trap '' TERM; sleep 30 & wait; sleep 30")];
        std::thread::sleep(Duration::from_millis(100));
        let ended = wait_ranks(children, RUN_BOUND, Stop::After { after: Duration::ZERO, grace });
        assert_eq!(ended[0].code(), Some(0));
        assert_eq!(ended[1].stopped, Some(Signal::SIGKILL), "deaf to SIGTERM, killed after the grace");
        assert_eq!(ended[1].code(), None, "killed by a signal");
    }

    #[test]
    fn without_a_failure_no_rank_is_stopped() {
        let ended = wait_ranks(vec![start("exit 0"), start("sleep 0.2; exit 4")], RUN_BOUND, Stop::Never);
        assert_eq!(ended.iter().map(Ended::code).collect::<Vec<_>>(), [Some(0), Some(4)]);
        assert!(ended.iter().all(|e| e.stopped.is_none()));
        let ended =
            wait_ranks(vec![start("exit 0"), start("sleep 0.2")], RUN_BOUND, Stop::OnFailure { grace: RUN_BOUND });
        assert!(ended.iter().all(|e| e.stopped.is_none() && e.code() == Some(0)));
    }
}
