//! The request gate of an interleaved session (`req/protocol.md`, "The request gate").
//!
//! With `job.gate` set, the launcher starts the workers of a cell together and lets one request
//! run at a time, alternating the adapters. Before request `i` a worker waits until
//! `request-<i>-granted` exists in its folder; after the request's record is complete it creates
//! `request-<i>-done`, carrying the grant's `seq <n>` line back to the launcher. The wait lies outside every timed interval (a request's clock starts
//! after it) and pauses the job deadline: the deadline bounds the worker's own work, the
//! launcher bounds the wait. The worker sleeps in the wake-up FIFO `gate` of its folder, which the
//! launcher writes a byte to after each grant, looking at cancellation every
//! [`GATE_WAKE_TIMEOUT`]; where no FIFO can be made it polls every [`GATE_POLL`].

use std::{
    fs::File,
    io::Read,
    os::{fd::AsFd, unix::fs::OpenOptionsExt},
    path::PathBuf,
};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use decode_baseline_wire::outdir::{read_seq, seq_line, OutDir, GATE_POLL, GATE_WAKE_TIMEOUT};

use super::{cancel::CancelFlag, interrupt::Interrupt, watchdog::Watchdog};

#[derive(Debug, thiserror::Error)]
#[error("failed to create {path}")]
pub struct DoneError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// The worker's side of the gate: the wake-up FIFO `gate` in its folder when it could be made
/// (the launcher writes a byte to it after each grant), removed again when the gate is dropped.
/// Without one the wait polls every [`GATE_POLL`].
pub struct Gate {
    fifo: Option<(PathBuf, File)>,
}

impl Gate {
    /// Creates and opens the FIFO; any failure (a file system without FIFOs) leaves polling.
    pub fn open(out: &OutDir) -> Gate {
        let path = out.gate();
        let fifo = nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR)
            .ok()
            .and_then(|()| {
                // Read and write: the worker holds a writer itself, so the FIFO never reads as
                // hung up between the launcher's writes.
                let file =
                    std::fs::OpenOptions::new().read(true).write(true).custom_flags(nix::libc::O_NONBLOCK).open(&path);
                if file.is_err() {
                    let _ = std::fs::remove_file(&path);
                }
                file.ok()
            })
            .map(|file| (path, file));
        Gate { fifo }
    }

    /// Waits for the grant of request `index`, the deadline paused, and returns the grant's
    /// sequence number (`None` when its file has none or cannot be read: the done file is then
    /// left empty); `Err(Cancelled)` if a cancellation arrives first. A deadline that fired
    /// before the wait is reported as such.
    pub fn wait(
        &self,
        out: &OutDir,
        index: u32,
        cancel: &CancelFlag,
        watchdog: &Watchdog,
    ) -> Result<Option<u64>, Interrupt> {
        let granted = out.granted(index);
        watchdog.pause();
        let result = loop {
            if cancel.is_cancelled() {
                break Err(Interrupt::Cancelled);
            }
            if watchdog.fired() {
                break Err(Interrupt::Timeout);
            }
            if granted.exists() {
                break Ok(std::fs::read(&granted).ok().and_then(|content| read_seq(&content)));
            }
            self.sleep();
        };
        watchdog.resume();
        result
    }

    /// Until the launcher's next byte or [`GATE_WAKE_TIMEOUT`]; [`GATE_POLL`] without a FIFO.
    /// Returns whether a byte ended it.
    fn sleep(&self) -> bool {
        let Some((_, file)) = &self.fifo else {
            std::thread::sleep(GATE_POLL);
            return false;
        };
        let timeout = PollTimeout::try_from(GATE_WAKE_TIMEOUT).unwrap_or(PollTimeout::MAX);
        let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLIN)];
        let woken = poll(&mut fds, timeout).is_ok_and(|ready| ready > 0);
        if woken {
            let mut buf = [0u8; 64];
            while matches!((&*file).read(&mut buf), Ok(n) if n > 0) {}
        }
        woken
    }

    /// Whether the wake-up FIFO exists (it could be made here).
    pub fn wakes(&self) -> bool {
        self.fifo.is_some()
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        if let Some((path, _)) = &self.fifo {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Tells the launcher that request `index` is complete, copying its grant's `seq` line (`None`:
/// an empty done file).
pub fn signal_done(out: &OutDir, index: u32, seq: Option<u64>) -> Result<(), DoneError> {
    let path = out.done(index);
    let content = seq.map(seq_line).unwrap_or_default();
    decode_baseline_pins::once::create_new(&path, content.as_bytes()).map_err(|source| DoneError { path, source })
}

#[cfg(test)]
mod tests {
    use std::{sync::mpsc::RecvTimeoutError, time::Duration};

    use super::*;
    use crate::bounded::{within, BOUND};

    fn dog() -> Watchdog {
        Watchdog::start(Duration::from_secs(3600), Duration::from_millis(1), Duration::from_secs(3600), Box::new(|| ()))
    }

    /// `gate.wait(out, index, ..)` under the bound, with its own watchdog (stopped after).
    fn bounded_wait(
        what: &str,
        gate: Gate,
        out: &OutDir,
        index: u32,
        cancel: &CancelFlag,
    ) -> Result<Option<u64>, Interrupt> {
        let (out, cancel) = (out.clone(), cancel.clone());
        within(what, move || {
            let watchdog = dog();
            let result = gate.wait(&out, index, &cancel, &watchdog);
            watchdog.stop();
            result
        })
    }

    #[test]
    fn the_grant_releases_the_wait_with_its_seq_and_done_carries_it_once() {
        let tmp = tempfile::tempdir().unwrap();
        let out = crate::outdir::open(tmp.path()).unwrap();
        let cancel = CancelFlag::new();
        std::fs::write(out.granted(3), b"seq 7\nafter 6\n").unwrap();
        let gate = Gate::open(&out);
        assert_eq!(bounded_wait("a granted request's wait", gate, &out, 3, &cancel), Ok(Some(7)));
        signal_done(&out, 3, Some(7)).unwrap();
        assert_eq!(std::fs::read_to_string(out.done(3)).unwrap(), "seq 7\n");
        // A second done for the same request is refused, never overwritten.
        assert!(signal_done(&out, 3, Some(8)).is_err());
        assert_eq!(std::fs::read_to_string(out.done(3)).unwrap(), "seq 7\n");
    }

    #[test]
    fn a_grant_without_a_seq_still_releases_the_wait_and_done_is_left_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let out = crate::outdir::open(tmp.path()).unwrap();
        let cancel = CancelFlag::new();
        std::fs::write(out.granted(0), b"").unwrap();
        std::fs::write(out.granted(1), b"seq x\n").unwrap();
        let gate = Gate::open(&out);
        assert_eq!(bounded_wait("an empty grant's wait", gate, &out, 0, &cancel), Ok(None));
        let gate = Gate::open(&out);
        assert_eq!(bounded_wait("a garbled grant's wait", gate, &out, 1, &cancel), Ok(None));
        signal_done(&out, 0, None).unwrap();
        assert_eq!(std::fs::read(out.done(0)).unwrap(), b"");
    }

    #[test]
    fn the_fifo_wakes_the_wait_and_is_removed_with_the_gate() {
        let tmp = tempfile::tempdir().unwrap();
        let out = crate::outdir::open(tmp.path()).unwrap();
        let cancel = CancelFlag::new();
        let gate = Gate::open(&out);
        assert!(gate.wakes());
        // The worker's own FIFO: read and write for its owner, nobody else.
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(out.gate()).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        let byte = |out: &OutDir| {
            let mut fifo =
                std::fs::OpenOptions::new().write(true).custom_flags(nix::libc::O_NONBLOCK).open(out.gate()).unwrap();
            std::io::Write::write_all(&mut fifo, b"g").unwrap();
        };
        // Told apart by what ended each sleep, not by how long it took: with no byte the
        // timeout, with a byte the byte, which is read so that the next sleep times out again.
        assert!(!gate.sleep(), "no byte was written: the sleep ended by its timeout");
        byte(&out);
        assert!(gate.sleep(), "the byte ended the sleep");
        assert!(!gate.sleep(), "the byte was consumed");
        // The wait itself, released by a grant and its byte from another thread, the grant
        // written whole as the launcher writes it (a file linked in with its content).
        let launcher = {
            let out = out.clone();
            std::thread::spawn(move || {
                let temp = out.granted(0).with_extension("part");
                decode_baseline_pins::once::link_new(&temp, &out.granted(0), b"seq 0\n").unwrap();
                byte(&out);
            })
        };
        let (waiting_out, waiting_cancel) = (out.clone(), cancel.clone());
        let (result, gate) = within("the wait for a grant and its wake-up byte", move || {
            let watchdog = dog();
            let result = gate.wait(&waiting_out, 0, &waiting_cancel, &watchdog);
            watchdog.stop();
            (result, gate)
        });
        assert_eq!(result, Ok(Some(0)));
        launcher.join().unwrap();
        drop(gate);
        assert!(!out.gate().exists());
    }

    /// Where the FIFO cannot be made (here a file already holds its name) the gate polls: a
    /// grant still releases the wait, and the file the gate did not make is left in place.
    #[test]
    fn without_a_fifo_the_wait_polls_and_leaves_what_it_did_not_make() {
        let tmp = tempfile::tempdir().unwrap();
        let out = crate::outdir::open(tmp.path()).unwrap();
        std::fs::write(out.gate(), b"not a fifo").unwrap();
        let gate = Gate::open(&out);
        assert!(!gate.wakes(), "a FIFO over an existing file");
        assert!(!gate.sleep(), "no FIFO: the sleep is a poll, never a byte");
        std::fs::write(out.granted(4), b"seq 9\n").unwrap();
        assert_eq!(bounded_wait("a polled wait", gate, &out, 4, &CancelFlag::new()), Ok(Some(9)));
        assert_eq!(std::fs::read(out.gate()).unwrap(), b"not a fifo");
    }

    #[test]
    fn a_cancellation_ends_the_wait_and_a_fired_deadline_is_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let out = crate::outdir::open(tmp.path()).unwrap();
        let cancel = CancelFlag::new();
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let (out, cancel) = (out.clone(), cancel.clone());
            std::thread::spawn(move || {
                let (gate, watchdog) = (Gate::open(&out), dog());
                let result = gate.wait(&out, 1, &cancel, &watchdog);
                watchdog.stop();
                drop(gate);
                let _ = tx.send(result);
            });
        }
        // No grant and no cancellation: the worker keeps waiting.
        assert_eq!(rx.recv_timeout(Duration::from_millis(50)), Err(RecvTimeoutError::Timeout), "the wait ended alone");
        cancel.cancel();
        let result = rx.recv_timeout(BOUND).expect("the cancellation did not end the wait");
        assert_eq!(result, Err(Interrupt::Cancelled));

        let out_2 = out.clone();
        let result = within("a wait after the deadline fired", move || {
            let watchdog = dog();
            watchdog.force_deadline();
            watchdog.wait_fired();
            let result = Gate::open(&out_2).wait(&out_2, 2, &CancelFlag::new(), &watchdog);
            watchdog.stop();
            result
        });
        assert_eq!(result, Err(Interrupt::Timeout));
    }
}
