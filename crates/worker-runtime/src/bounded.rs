//! Test support: a bound on each step that waits (a gate, a hook, the watchdog), so that a
//! regression fails its test with a message instead of hanging the suite.
//!
//! The step runs on a thread of its own and the test waits on a channel with a timeout. A step
//! past the bound is left running (a thread cannot be stopped from outside); the test fails at
//! once, and the process ends with the test run.

use std::{
    path::Path,
    sync::mpsc::{self, RecvTimeoutError},
    time::{Duration, Instant},
};

/// How long a step that takes milliseconds when it works may take before its test fails: wide
/// for a loaded two-core CI machine, short enough to be read as a failure, not a hang.
pub const BOUND: Duration = Duration::from_secs(5);

/// Runs `step` on its own thread and returns what it returned; fails naming `what` when it has
/// not returned within [`BOUND`]. A panic in `step` fails the test with the step's own message.
pub fn within<T: Send + 'static>(what: &str, step: impl FnOnce() -> T + Send + 'static) -> T {
    within_for(BOUND, what, step)
}

fn within_for<T: Send + 'static>(bound: Duration, what: &str, step: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        // The receiver is gone only when the test already failed on the bound.
        let _ = tx.send(step());
    });
    match rx.recv_timeout(bound) {
        Ok(value) => value,
        Err(RecvTimeoutError::Timeout) => panic!("{what}: did not return within {bound:?}"),
        Err(RecvTimeoutError::Disconnected) => match thread.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the step's thread ended without sending or panicking"),
        },
    }
}

/// Waits until `path` exists; fails naming `what` when it does not within [`BOUND`].
pub fn wait_for_file(path: &Path, what: &str) {
    let start = Instant::now();
    while !path.exists() {
        assert!(start.elapsed() < BOUND, "{what}: {} did not appear within {BOUND:?}", path.display());
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panic_message(result: std::thread::Result<()>) -> String {
        let panic = result.expect_err("a panic");
        match panic.downcast::<String>() {
            Ok(message) => *message,
            Err(panic) => panic.downcast::<&str>().map(|s| s.to_string()).expect("a text panic"),
        }
    }

    #[test]
    fn a_step_that_returns_gives_its_value_and_one_that_panics_fails_with_its_message() {
        assert_eq!(within("a quick step", || 7), 7);
        let result = std::panic::catch_unwind(|| within("a failing step", || panic!("the step's own message")));
        assert_eq!(panic_message(result), "the step's own message");
    }

    #[test]
    fn a_step_past_the_bound_fails_naming_it() {
        let bound = Duration::from_millis(20);
        let result = std::panic::catch_unwind(|| {
            within_for(bound, "a stuck step", || std::thread::sleep(Duration::from_millis(500)))
        });
        assert_eq!(panic_message(result), "a stuck step: did not return within 20ms");
    }
}
