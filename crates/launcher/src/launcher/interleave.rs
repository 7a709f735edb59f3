//! The interleaved order: the workers of one cell and repetition run at the same time, and the
//! launcher lets one request run at a time through the request gate (`req/protocol.md`, "The
//! request gate"), alternating the adapters A B, B A, A B, … round by round.
//!
//! A disturbance of the machine (another program, a frequency change, heat) then lands on
//! neighbouring requests of every adapter rather than on one adapter's whole run, and the
//! ratio of adjacent requests cancels it (`stats::paired`).
//!
//! The first grant waits until every member has signalled ready (or ended); a member that ends
//! early (crashed, refused, killed) drops out and the others go on alone. Each member is still
//! supervised as in the non-interleaved orders: its own ready timeout, run limit, Ctrl-C and
//! escalation (`supervise::Supervised`).
//!
//! Each grant file carries the grant's sequence number in the group and the one the launcher
//! read from the previous grant's done file (`seq <n>`, `after <m>`): a chain of file contents
//! that proves the order of the requests without a clock.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use crate::energy::GroupRecorder;
use decode_baseline_wire::outdir::{read_seq, seq_line, OutDir};

use super::{
    gate_wait::GateWait,
    rank_group_run::RankGroup,
    signals::Interrupts,
    supervise::{Limits, Outcome, Process, SuperviseError},
};

/// `DECODE_BASELINE_GRANT_ORDER=fixed` grants every round in the members' order (A B, A B, …):
/// a measurement switch (`tools/placement/candidates.sh`); the order effect it leaves in the
/// ratio is why the rounds alternate (`req/findings.md` §22).
pub const GRANT_ORDER_ENV: &str = "DECODE_BASELINE_GRANT_ORDER";

/// One member of an interleaved group: one worker, or the ranks of a worker's group
/// (`req/distributed.md`), which the gate treats as one: every rank is granted each request,
/// and the request is done once every rank's done file is there.
#[derive(Debug, Clone)]
pub struct Member<'a> {
    /// Rank 0 (or the lone worker) first.
    pub processes: Vec<Process<'a>>,
    /// How many requests its job runs (the gate grants exactly these).
    pub requests: u32,
}

/// The order of the grants: round `k` grants request `k` to the members in their order when
/// `k` is even and, when `alternate`, in reverse when odd, skipping members whose job has fewer
/// requests.
pub fn grant_order(requests: &[u32], alternate: bool) -> Vec<(usize, u32)> {
    let rounds = requests.iter().copied().max().unwrap_or(0);
    let mut order = Vec::new();
    for k in 0..rounds {
        let mut members: Vec<usize> = (0..requests.len()).collect();
        if alternate && k % 2 == 1 {
            members.reverse();
        }
        order.extend(members.into_iter().filter(|&m| k < requests[m]).map(|m| (m, k)));
    }
    order
}

/// How long the launcher waits for a done file it has seen to carry its `seq` line before it
/// goes on without one. The worker creates the file and then writes it, and the launcher wakes on
/// the creation, so it can read it empty for a moment; only a worker that leaves it empty (the
/// protocol allows that) waits out the whole grace, outside every measured interval.
pub const DONE_GRACE: Duration = Duration::from_millis(100);

/// The content of `request-<i>-granted` (`req/protocol.md` §4.4): the grant's sequence number in
/// its group and, when the previous grant's done file carried one, that file's `seq`.
pub fn grant_text(seq: u64, after: Option<u64>) -> String {
    match after {
        Some(after) => format!("{}after {after}\n", seq_line(seq)),
        None => seq_line(seq),
    }
}

/// Writes the grant of request `k` to the member in `dir` whole (`.request-<k>-granted.<pid>`
/// hard-linked to the name), so that a worker that sees the file reads its content; one that
/// exists already grants as well. A grant that cannot be written leaves the worker waiting
/// until its run limit ends it; the record says why.
fn grant(dir: &OutDir, k: u32, text: &str) {
    let path = dir.granted(k);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = path.with_file_name(format!(".{name}.{}", std::process::id()));
    match decode_baseline_pins::once::link_new(&temp, &path, text.as_bytes()) {
        Ok(_) => wake(dir),
        Err(err) => eprintln!("decode-baseline: failed to grant request {k}: {}", decode_baseline_pins::chain(&err)),
    }
}

/// The member's wake-up FIFO, if it made one (`req/protocol.md` §4.4); anything else at that
/// name is left alone.
fn wake_fifo(out: &OutDir) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let path = out.gate();
    std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_fifo()).then_some(path)
}

/// Writes a byte to the member's wake-up FIFO if it is listening: a worker that polls for its
/// grant instead has no FIFO, and a write that cannot be made changes nothing (the grant file
/// is what counts).
fn wake(out: &OutDir) {
    use std::os::unix::fs::OpenOptionsExt;
    let fifo = wake_fifo(out)
        .and_then(|path| std::fs::OpenOptions::new().write(true).custom_flags(nix::libc::O_NONBLOCK).open(path).ok());
    if let Some(mut fifo) = fifo {
        let _ = std::io::Write::write_all(&mut fifo, b"g");
    }
}

/// Removes a wake-up FIFO a worker left behind (killed before it could), so that nothing that
/// reads every file of the session folder blocks on it.
fn remove_fifo(out: &OutDir) {
    if let Some(path) = wake_fifo(out) {
        let _ = std::fs::remove_file(path);
    }
}

/// Starts every member, grants their requests one at a time, and supervises them to the end.
/// A member done with its last request writes its report and exits; no request is granted
/// until it has ended, so that its exit never runs beside another member's request (on a shared
/// CPU the stock worker's exit doubled the controlled loop's last time to first token in every
/// run it ended first, `req/findings.md` §38).
/// `on_request` is called after each completed request (for the progress display), `on_tick`
/// on every look. `energy` samples the energy sources just before each grant is written, on
/// every look while the request runs, and when its done file is seen (`crates/launcher/src/energy`). Outcomes
/// come back in the members' order.
pub fn supervise_group(
    members: &[Member<'_>],
    limits: Limits,
    interrupts: &Interrupts,
    mut on_tick: impl FnMut(),
    mut on_request: impl FnMut(usize),
    energy: &mut GroupRecorder<'_>,
) -> Result<Vec<Outcome>, SuperviseError> {
    let dirs: Vec<Vec<OutDir>> =
        members.iter().map(|m| m.processes.iter().map(|p| OutDir::at(p.out_dir)).collect()).collect();
    let mut running: Vec<RankGroup> = Vec::with_capacity(members.len());
    for member in members {
        running.push(RankGroup::spawn(&member.processes, limits)?);
    }
    let all_dirs: Vec<&Path> = members.iter().flat_map(|m| m.processes.iter().map(|p| p.out_dir)).collect();
    let gate_wait = GateWait::new(&all_dirs);
    let alternate = std::env::var(GRANT_ORDER_ENV).map_or(true, |v| v != "fixed");
    let order = grant_order(&members.iter().map(|m| m.requests).collect::<Vec<_>>(), alternate);
    let mut next = 0;
    let mut outstanding: Option<(usize, u32)> = None;
    // Per member, the requests not yet seen done.
    let mut left: Vec<u32> = members.iter().map(|m| m.requests).collect();
    // The next grant's sequence number, the `seq` read from the last done file, and when the
    // outstanding request's done files were first all seen.
    let (mut seq, mut after, mut done_seen): (u64, Option<u64>, Option<Instant>) = (0, None, None);
    loop {
        for group in running.iter_mut() {
            group.poll(interrupts)?;
        }
        if running.iter().all(RankGroup::ended) {
            break;
        }
        on_tick();
        energy.tick();
        if let Some((m, k)) = outstanding {
            if dirs[m].iter().all(|d| d.done(k).exists()) {
                let first_seen = *done_seen.get_or_insert_with(|| {
                    energy.done(m, k);
                    on_request(m);
                    left[m] = left[m].saturating_sub(1);
                    Instant::now()
                });
                // Rank 0's done file carries the seq the next grant names.
                let read = std::fs::read(dirs[m][0].done(k)).ok().and_then(|content| read_seq(&content));
                if read.is_some() || running[m].out() || first_seen.elapsed() >= DONE_GRACE {
                    (after, outstanding, done_seen) = (read, None, None);
                }
            } else if running[m].out() {
                energy.abandoned(m);
                (after, outstanding) = (None, None);
            }
        }
        let everyone_ready = running.iter().all(|g| g.is_ready() || g.out());
        let exiting = running.iter().zip(&left).any(|(g, &left)| left == 0 && !g.out());
        if outstanding.is_none() && everyone_ready && !exiting && interrupts.count() == 0 {
            while let Some(&(m, k)) = order.get(next) {
                next += 1;
                if running[m].out() {
                    continue;
                }
                energy.before_grant(m, k);
                let text = grant_text(seq, after);
                dirs[m].iter().for_each(|dir| grant(dir, k, &text));
                (seq, after, outstanding) = (seq + 1, None, Some((m, k)));
                break;
            }
        }
        // Blocked while the request runs; looking every tick while a seen done file fills.
        gate_wait.wait(outstanding.is_some() && done_seen.is_none());
    }
    dirs.iter().flatten().for_each(remove_fifo);
    Ok(running.into_iter().map(RankGroup::outcome).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wake_byte_reaches_a_fifo_and_a_leftover_fifo_is_removed_but_nothing_else() {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let out = OutDir::at(tmp.path());
        wake(&out); // no FIFO: nothing happens, nothing is created
        assert!(!out.gate().exists());

        nix::unistd::mkfifo(&out.gate(), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let mut reader = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(nix::libc::O_NONBLOCK)
            .open(out.gate())
            .unwrap();
        wake(&out);
        let mut byte = [0u8; 4];
        assert_eq!(reader.read(&mut byte).unwrap(), 1);
        remove_fifo(&out);
        assert!(std::fs::symlink_metadata(out.gate()).is_err());

        std::fs::write(out.gate(), b"not a fifo").unwrap();
        wake(&out);
        remove_fifo(&out);
        assert_eq!(std::fs::read(out.gate()).unwrap(), b"not a fifo");
    }

    #[test]
    fn a_grant_carries_its_seq_and_the_previous_read_seq() {
        assert_eq!(grant_text(0, None), "seq 0\n");
        assert_eq!(grant_text(5, Some(4)), "seq 5\nafter 4\n");
        assert_eq!(grant_text(12, Some(3)), "seq 12\nafter 3\n");
        // What a worker copies back is what the launcher reads.
        assert_eq!(read_seq(grant_text(7, Some(6)).as_bytes()), Some(7));
    }

    #[test]
    fn a_grant_is_written_whole_once_and_leaves_no_temp() {
        let tmp = tempfile::tempdir().unwrap();
        let out = OutDir::at(tmp.path());
        grant(&out, 2, "seq 4\nafter 3\n");
        assert_eq!(std::fs::read_to_string(out.granted(2)).unwrap(), "seq 4\nafter 3\n");
        // An existing grant is left as it is, and no temp file stays behind.
        grant(&out, 2, "seq 9\n");
        assert_eq!(std::fs::read_to_string(out.granted(2)).unwrap(), "seq 4\nafter 3\n");
        let names: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["request-2-granted"]);
    }

    /// A worker of the gate's protocol in `sh`, in `dir`: ready, then each of its `requests` in
    /// turn when granted (its done file copies the grant's `seq`), then, after its last,
    /// `exit_s` seconds of work before it writes `exited` and ends.
    fn sh_worker(dir: &Path, requests: u32, exit_s: &str) -> Vec<String> {
        let script = format!(
            "cd '{}' && touch worker-ready && k=0 && while [ $k -lt {requests} ]; do \
               while [ ! -e request-$k-granted ]; do sleep 0.005; done; \
               head -n 1 request-$k-granted > .done; mv .done request-$k-done; k=$((k+1)); done; \
             sleep {exit_s}; touch exited",
            dir.display()
        );
        vec!["sh".into(), "-c".into(), script]
    }

    /// The gate grants no request while a member done with its last one is still exiting: the
    /// second member ends first here (rounds A B, B A), takes 0.3 s to exit, and the first
    /// member's last request is granted only after its `exited` file was written.
    #[test]
    fn no_request_is_granted_while_a_finished_member_exits() {
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        let (argv_a, argv_b) = (sh_worker(&a, 2, "0"), sh_worker(&b, 2, "0.3"));
        let member =
            |argv, out_dir| Member { processes: vec![Process { argv, out_dir, env: Vec::new() }], requests: 2 };
        let limits = Limits {
            ready_timeout: Duration::from_secs(30),
            run_timeout: Duration::from_secs(60),
            grace: Duration::from_secs(2),
            placement: crate::launcher::placement::Mask::inherit(),
        };
        let mut meter = crate::energy::Meter::new(Vec::new(), Vec::new(), None);
        let mut energy = GroupRecorder::new(&mut meter, 2, Duration::ZERO);
        let interrupts = Interrupts::install().unwrap();
        let members = [member(&argv_a, &a), member(&argv_b, &b)];
        let outcomes = supervise_group(&members, limits, &interrupts, || {}, |_| {}, &mut energy).unwrap();
        assert!(outcomes.iter().all(|o| o.status.success()), "{outcomes:?}");
        // The order: a 0, b 0, b 1, a 1; b's exit lies between b 1 and a 1.
        let mtime = |path: std::path::PathBuf| {
            let m = std::fs::metadata(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (m.mtime(), m.mtime_nsec())
        };
        let b_exited = mtime(b.join("exited"));
        assert!(mtime(OutDir::at(&b).granted(1)) <= b_exited);
        let a_last = mtime(OutDir::at(&a).granted(1));
        assert!(a_last >= b_exited, "a's last grant {a_last:?} was written before b had exited {b_exited:?}");
    }

    #[test]
    fn rounds_alternate_and_short_jobs_drop_out() {
        assert_eq!(grant_order(&[3, 3], true), [(0, 0), (1, 0), (1, 1), (0, 1), (0, 2), (1, 2)]);
        assert_eq!(grant_order(&[2, 1, 2], true), [(0, 0), (1, 0), (2, 0), (2, 1), (0, 1)]);
        assert_eq!(grant_order(&[1], true), [(0, 0)]);
        assert!(grant_order(&[], true).is_empty());
        // The measurement switch's fixed order: every round in the members' order.
        assert_eq!(grant_order(&[3, 3], false), [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]);
    }
}
