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
//! supervised as in the sequential orders: its own ready timeout, run limit, Ctrl-C and
//! escalation (`supervise::Supervised`).

use std::path::Path;

use crate::energy::GroupRecorder;
use decode_baseline_wire::outdir::OutDir;

use super::{
    gate_wait::GateWait,
    signals::Interrupts,
    supervise::{Limits, Outcome, SuperviseError, Supervised},
};

/// `DECODE_BASELINE_GRANT_ORDER=fixed` grants every round in the members' order (A B, A B, …):
/// a measurement switch (`tools/placement/candidates.sh`); the order effect it leaves in the
/// ratio is why the rounds alternate (`req/findings.md` §22).
pub const GRANT_ORDER_ENV: &str = "DECODE_BASELINE_GRANT_ORDER";

/// One member of an interleaved group.
#[derive(Debug, Clone)]
pub struct Member<'a> {
    pub argv: &'a [String],
    pub out_dir: &'a Path,
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
    let dirs: Vec<OutDir> = members.iter().map(|m| OutDir::at(m.out_dir)).collect();
    let mut running = Vec::with_capacity(members.len());
    for member in members {
        running.push(Supervised::spawn(member.argv, member.out_dir, limits)?);
    }
    let gate_wait = GateWait::new(&members.iter().map(|m| m.out_dir).collect::<Vec<_>>());
    let mut outcomes: Vec<Option<Outcome>> = members.iter().map(|_| None).collect();
    let alternate = std::env::var(GRANT_ORDER_ENV).map_or(true, |v| v != "fixed");
    let order = grant_order(&members.iter().map(|m| m.requests).collect::<Vec<_>>(), alternate);
    let mut next = 0;
    let mut outstanding: Option<(usize, u32)> = None;
    loop {
        for (i, worker) in running.iter_mut().enumerate() {
            if let Some(outcome) = worker.poll(interrupts)? {
                outcomes[i] = Some(outcome);
            }
        }
        if outcomes.iter().all(Option::is_some) {
            break;
        }
        on_tick();
        energy.tick();
        if let Some((m, k)) = outstanding {
            if dirs[m].done(k).exists() {
                energy.done(m, k);
                on_request(m);
                outstanding = None;
            } else if outcomes[m].is_some() {
                energy.abandoned(m);
                outstanding = None;
            }
        }
        let everyone_ready = running.iter().zip(&outcomes).all(|(w, o)| w.is_ready() || o.is_some());
        if outstanding.is_none() && everyone_ready && interrupts.count() == 0 {
            while let Some(&(m, k)) = order.get(next) {
                next += 1;
                if outcomes[m].is_some() {
                    continue;
                }
                // A grant that cannot be written leaves the worker waiting until its run limit
                // ends it; the record says why. One that exists already grants as well.
                energy.before_grant(m, k);
                match decode_baseline_pins::once::create_new(&dirs[m].granted(k), b"") {
                    Ok(()) => wake(&dirs[m]),
                    Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => wake(&dirs[m]),
                    Err(err) => {
                        eprintln!(
                            "decode-baseline: failed to grant request {k} in {}: {err}",
                            members[m].out_dir.display()
                        )
                    }
                }
                outstanding = Some((m, k));
                break;
            }
        }
        gate_wait.wait(outstanding.is_some());
    }
    dirs.iter().for_each(remove_fifo);
    Ok(outcomes.into_iter().map(|o| o.expect("every member ended")).collect())
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
    fn rounds_alternate_and_short_jobs_drop_out() {
        assert_eq!(grant_order(&[3, 3], true), [(0, 0), (1, 0), (1, 1), (0, 1), (0, 2), (1, 2)]);
        assert_eq!(grant_order(&[2, 1, 2], true), [(0, 0), (1, 0), (2, 0), (2, 1), (0, 1)]);
        assert_eq!(grant_order(&[1], true), [(0, 0)]);
        assert!(grant_order(&[], true).is_empty());
        // The measurement switch's fixed order: every round in the members' order.
        assert_eq!(grant_order(&[3, 3], false), [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]);
    }
}
