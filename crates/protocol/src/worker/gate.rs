//! The request gate of an interleaved session (`req/protocol.md`, "The request gate").
//!
//! With `job.gate` set, the launcher starts the workers of a cell together and lets one request
//! run at a time, alternating the adapters. Before request `i` a worker waits until
//! `request-<i>-granted` exists in its folder; after the request's record is complete it creates
//! `request-<i>-done`. The wait lies outside every timed interval (a request's clock starts
//! after it), polls cancellation every [`GATE_POLL`], and pauses the job deadline: the deadline
//! bounds the worker's own work, the launcher bounds the wait.

use std::{path::PathBuf, time::Duration};

use super::{cancel::CancelFlag, outdir::OutDir, run::Interrupt, watchdog::Watchdog};

/// How often a worker at the gate looks for its grant and for cancellation. The grant's latency
/// adds to the session's wall time only, never to a measured interval.
pub const GATE_POLL: Duration = Duration::from_micros(200);

#[derive(Debug, thiserror::Error)]
#[error("failed to create {path}")]
pub struct DoneError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Waits for the grant of request `index`, the deadline paused; `Err(Cancelled)` if a
/// cancellation arrives first. A deadline that fired before the wait is reported as such.
pub fn wait_for_grant(out: &OutDir, index: u32, cancel: &CancelFlag, watchdog: &Watchdog) -> Result<(), Interrupt> {
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
            break Ok(());
        }
        std::thread::sleep(GATE_POLL);
    };
    watchdog.resume();
    result
}

/// Tells the launcher that request `index` is complete.
pub fn signal_done(out: &OutDir, index: u32) -> Result<(), DoneError> {
    let path = out.done(index);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map(drop)
        .map_err(|source| DoneError { path, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dog() -> Watchdog {
        Watchdog::start(Duration::from_secs(3600), Duration::from_millis(1), Duration::from_secs(3600), Box::new(|| ()))
    }

    #[test]
    fn the_grant_releases_the_wait_and_done_is_created_once() {
        let tmp = tempfile::tempdir().unwrap();
        let out = OutDir::open(tmp.path()).unwrap();
        let (cancel, watchdog) = (CancelFlag::new(), dog());
        std::fs::write(out.granted(3), b"").unwrap();
        assert_eq!(wait_for_grant(&out, 3, &cancel, &watchdog), Ok(()));
        signal_done(&out, 3).unwrap();
        assert!(out.done(3).exists());
        // A second done for the same request is refused, never overwritten.
        assert!(signal_done(&out, 3).is_err());
        watchdog.stop();
    }

    #[test]
    fn a_cancellation_ends_the_wait_and_a_fired_deadline_is_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let out = OutDir::open(tmp.path()).unwrap();
        let cancel = std::sync::Arc::new(CancelFlag::new());
        let handle = {
            let (cancel, out) = (std::sync::Arc::clone(&cancel), out.clone());
            std::thread::spawn(move || {
                let watchdog = dog();
                let result = wait_for_grant(&out, 1, &cancel, &watchdog);
                watchdog.stop();
                result
            })
        };
        cancel.cancel();
        assert_eq!(handle.join().unwrap(), Err(Interrupt::Cancelled));

        let watchdog = dog();
        watchdog.force_deadline();
        watchdog.wait_fired();
        assert_eq!(wait_for_grant(&out, 2, &CancelFlag::new(), &watchdog), Err(Interrupt::Timeout));
        watchdog.stop();
    }
}
