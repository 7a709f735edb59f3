//! The job deadline: a thread that polls every `run_policy.watchdog_poll_ms` and, once
//! `run_policy.job_deadline_s` has passed since `worker-ready`, sets the fired flag.
//!
//! The decode loop checks the flag at request and step boundaries, stops, and reports
//! `timeout` with every complete record. If it has not taken over the report within
//! `run_policy.backstop_grace_s` after the fire (stuck inside one forward, or a bug), the
//! watchdog runs the backstop: it writes the timeout report itself and exits 3.
//!
//! The fire lands at the first poll at or after the deadline, so up to one poll interval late.
//!
//! A gated worker (interleaved sessions) pauses the deadline while it waits at the request gate
//! for the other adapters' requests: the deadline bounds the worker's own work, and the
//! launcher bounds the wait.

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, Condvar, Mutex,
    },
    time::{Duration, Instant},
};

/// What the backstop does; it should not return when it wrote the report (it exits).
pub type Backstop = Box<dyn FnOnce() + Send + 'static>;

struct State {
    deadline: Instant,
    /// Set while the worker waits at the request gate: the deadline does not run.
    paused_since: Option<Instant>,
    fired: bool,
    stopped: bool,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    fired: AtomicBool,
    /// Polls done before the fire: what a test waits on to know that the thread looked.
    polls: AtomicU64,
}

/// A running watchdog.
pub struct Watchdog {
    shared: Arc<Shared>,
}

impl Watchdog {
    /// Starts the thread; `deadline` counts from now.
    pub fn start(deadline: Duration, poll: Duration, grace: Duration, backstop: Backstop) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                deadline: Instant::now() + deadline,
                paused_since: None,
                fired: false,
                stopped: false,
            }),
            changed: Condvar::new(),
            fired: AtomicBool::new(false),
            polls: AtomicU64::new(0),
        });
        let thread_shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("watchdog".into())
            .spawn(move || watch(&thread_shared, poll, grace, backstop))
            .expect("spawn the watchdog thread");
        Self { shared }
    }

    /// Whether the deadline has fired. Cheap: one atomic load.
    pub fn fired(&self) -> bool {
        self.shared.fired.load(Ordering::SeqCst)
    }

    /// The polls that found the deadline not passed (or paused) so far.
    #[cfg(test)]
    fn polls(&self) -> u64 {
        self.shared.polls.load(Ordering::SeqCst)
    }

    /// Moves the deadline to now, so the next poll fires (test hooks only).
    pub fn force_deadline(&self) {
        let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        state.deadline = Instant::now();
    }

    /// Stops the deadline's clock (the worker waits at the request gate). A deadline that has
    /// already fired stays fired.
    pub fn pause(&self) {
        let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        state.paused_since.get_or_insert_with(Instant::now);
    }

    /// Restarts the clock: the deadline moves later by the time spent paused.
    pub fn resume(&self) {
        let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(since) = state.paused_since.take() {
            state.deadline += since.elapsed();
        }
    }

    /// Blocks until the watchdog has fired.
    pub fn wait_fired(&self) {
        let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        while !state.fired {
            state = self.shared.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The main loop has taken over the report: the backstop will not run.
    pub fn stop(&self) {
        let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        state.stopped = true;
        self.shared.changed.notify_all();
    }
}

fn watch(shared: &Shared, poll: Duration, grace: Duration, backstop: Backstop) {
    let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
    // Poll until the deadline passes or the main loop stops us.
    loop {
        if state.stopped {
            return;
        }
        if state.paused_since.is_none() && Instant::now() >= state.deadline {
            state.fired = true;
            shared.fired.store(true, Ordering::SeqCst);
            shared.changed.notify_all();
            break;
        }
        shared.polls.fetch_add(1, Ordering::SeqCst);
        state = shared.changed.wait_timeout(state, poll).unwrap_or_else(|e| e.into_inner()).0;
    }
    // Grace for the main loop to notice the fire and take over the report.
    let grace_end = Instant::now() + grace;
    while !state.stopped {
        let now = Instant::now();
        if now >= grace_end {
            drop(state);
            backstop();
            return;
        }
        state = shared.changed.wait_timeout(state, grace_end - now).unwrap_or_else(|e| e.into_inner()).0;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;
    use crate::bounded::{within, BOUND};

    /// `dog.wait_fired()` under the bound; gives the watchdog back.
    fn wait_fired(what: &str, dog: Watchdog) -> Watchdog {
        within(what, move || {
            dog.wait_fired();
            dog
        })
    }

    #[test]
    fn forced_deadline_fires_at_the_next_poll_and_the_backstop_runs_after_grace() {
        let (tx, rx) = mpsc::channel();
        let dog = Watchdog::start(
            Duration::from_secs(3600),
            Duration::from_millis(5),
            Duration::from_millis(20),
            Box::new(move || tx.send(()).unwrap()),
        );
        assert!(!dog.fired());
        dog.force_deadline();
        let dog = wait_fired("a forced deadline", dog);
        assert!(dog.fired());
        rx.recv_timeout(BOUND).expect("the backstop did not run after the grace");
    }

    #[test]
    fn stop_before_grace_end_skips_the_backstop() {
        let (tx, rx) = mpsc::channel::<()>();
        let dog = Watchdog::start(
            Duration::ZERO,
            Duration::from_millis(1),
            Duration::from_secs(3600),
            Box::new(move || tx.send(()).unwrap()),
        );
        let dog = wait_fired("a zero deadline", dog);
        dog.stop();
        // The sender is dropped with the closure when the thread returns without calling it.
        assert_eq!(rx.recv_timeout(BOUND), Err(mpsc::RecvTimeoutError::Disconnected));
    }

    #[test]
    fn a_paused_deadline_does_not_fire_and_resumes_later() {
        let dog = Watchdog::start(
            Duration::from_secs(3600),
            Duration::from_millis(1),
            Duration::from_secs(3600),
            Box::new(|| ()),
        );
        dog.pause();
        dog.force_deadline();
        // Three polls are made while paused, counted, however slow the host: each found the
        // deadline passed and did not fire, which a deadline that ran during the pause would.
        let seen = dog.polls();
        let dog = within("three polls while paused", move || {
            while dog.polls() < seen + 3 {
                std::thread::sleep(Duration::from_millis(1));
            }
            dog
        });
        assert!(!dog.fired());
        dog.resume();
        // The deadline moved by the time paused; from the forced "now" that is in the past by
        // the time the next poll comes, so it fires.
        let dog = wait_fired("a resumed deadline", dog);
        assert!(dog.fired());
        dog.stop();
    }
}
