//! What a session says while it runs, as events. The engine (prepare, the groups, finish) prints
//! nothing itself: it hands each event to its [`Observer`], and the command that started it
//! shows them (`display.rs`: `run`'s bar on a terminal, a line per group in a log). A caller
//! that runs sessions of its own shows them its way, or not at all.

use std::time::Duration;

/// One thing that happened in a session, in the order it happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Event<'a> {
    /// The groups are about to run: how many, and the requests they hold in all.
    Started { groups: usize, requests: u64 },
    /// A group starts: its cell and what runs in it (`controlled + stock`).
    GroupStarted { cell: &'a str, members: &'a str },
    /// Waiting for a quiet host before the group (`--quiet-wait`).
    WaitingForQuiet,
    /// The supervisor looked at the running workers and none had ended.
    Tick,
    /// This many requests of the running group are done.
    Requests(u64),
    /// A group ended: its requests, its own wall time, and the session's time so far.
    GroupDone { cell: &'a str, members: &'a str, requests: u64, wall: Duration, elapsed: Duration },
    /// Every group has run (or was skipped).
    GroupsDone,
    /// A sentence for whoever watches the session now: a folder recovered from an earlier
    /// launcher, a replaced program, the lease waited for, a quiet wait that ran out, what the
    /// looks of `--until-decided` decided.
    Note(String),
    /// What the verdicts of the table rest on (the noise profile found, or why none): shown
    /// beside the table, not beside a JSON record or a quiet run.
    Detail(String),
    /// Something that went wrong without stopping the session (a figure or the page not
    /// written, a profile file that cannot be read).
    Warning(String),
    /// Something that went wrong at the end: the session ran but its record could not be
    /// written (the exit code says so too).
    Error(String),
}

/// Receives a session's events as they happen.
pub trait Observer {
    fn on(&self, event: Event<'_>);
}
