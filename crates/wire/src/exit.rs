//! The exit codes of every decode-baseline process, in one place (see `req/protocol.md`).

/// A documented process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum ExitCode {
    /// Worker: every request done, report written. Launcher: session ok. Guard: all checks pass.
    Ok = 0,
    /// Worker: failed or refused (bad folder, existing claim, validation, report refused). A
    /// worker's code only: the commands of the suite never end with it.
    Failed = 1,
    /// Bad input: an unreadable or invalid job, manifest or flag (launcher, guard, compare).
    BadInput = 2,
    /// Worker or session: the deadline fired; complete records were kept.
    Timeout = 3,
    /// Worker or session: cancelled by SIGTERM/SIGINT; complete records were kept.
    Cancelled = 4,
    /// Launcher: a worker failed (crashed, exited without a valid report, never got ready).
    WorkerFailed = 5,
    /// Guard: the manifest or a pinned file does not match its pin.
    GuardMismatch = 6,
    /// Launcher: the host's benchmark lease is held and `--no-wait` was given.
    LeaseBusy = 7,
    /// Launcher: the session ran but its report (`session.json`) could not be written, e.g. a
    /// full disk; nothing was overwritten, the worker folders are kept, and the next launcher
    /// marks the session incomplete.
    OutputFailed = 8,
    /// Any command: an unexpected failure that is not the input's fault: an I/O error on the
    /// tool's own files (the session folder could not be created, a temp file not written), a
    /// child process that could not be started, or a bug. The message names what failed.
    Internal = 9,
    /// Compare: the numerator is faster than the denominator in at least one cell, beyond the
    /// noise threshold, and slower in none (see `req/compare.md`).
    Faster = 10,
    /// Compare: the numerator is slower than the denominator in at least one cell, beyond the
    /// noise threshold (wins over `Faster`: CI guards against regressions).
    Slower = 11,
    /// Compare: the sessions differ in manifest, model, libmlx, worker sources or host, and
    /// `--allow-mismatch` was not given.
    Refused = 12,
    /// Compare: no row faster or slower, and at least one row inconclusive: its interval
    /// straddles an edge of the noise band, or the run-to-run noise was not bounded (one worker
    /// run per side and no A/A pair), so neither a difference nor its absence is shown.
    Inconclusive = 13,
    /// `run` (and `bench`, `calibrate`, which run sessions): the session ran, but a worker's
    /// report failed validation or the adapters' argmax streams disagree.
    ValidationFailed = 14,
    /// `conformance`: at least one scenario did not end as the protocol requires.
    ScenarioFailed = 15,
    /// `bisect step`: the session could not decide within its budget; `git bisect run` skips
    /// the commit on this code.
    BisectSkip = 125,
}

impl ExitCode {
    pub fn code(self) -> i32 {
        self as i32
    }

    /// Of two sessions' codes, the one a command that ran both ends with (`bench` over its
    /// placements): the user's interrupt first, then a deadline, a report that could not be
    /// written, a failed worker, a failed validation, and ok last, the order in which `run` ranks
    /// one session's workers. A code that stopped a command before its sessions (bad input, a
    /// busy lease, an internal failure) outranks them all; `compare`'s verdicts are not sessions'
    /// codes and rank with them.
    pub fn worse(self, other: ExitCode) -> ExitCode {
        if other.severity() > self.severity() {
            other
        } else {
            self
        }
    }

    fn severity(self) -> u8 {
        match self {
            ExitCode::Ok => 0,
            ExitCode::ValidationFailed => 1,
            ExitCode::WorkerFailed => 2,
            ExitCode::OutputFailed => 3,
            ExitCode::Timeout => 4,
            ExitCode::Cancelled => 5,
            _ => 6,
        }
    }
}
