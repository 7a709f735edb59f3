//! The worker's out dir: the folder the launcher created for exactly one worker run, the names
//! of the files the protocol puts in it (`req/protocol.md`, "Out dir layout") and the request
//! gate's timing. Paths only: opening and checking the folder is the worker runtime's.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

/// The job the launcher wrote.
pub const JOB_FILE: &str = "job.json";
/// The exclusive claim, `{utc, pid}`, created before anything else.
pub const CLAIM_FILE: &str = "worker-claim";
/// Created after validation and load; the job deadline starts here.
pub const READY_FILE: &str = "worker-ready";
/// The report, hard-linked once.
pub const REPORT_FILE: &str = "report.json";
/// Prefix of the per-process temp file the report is written to before the link.
pub const REPORT_TEMP_PREFIX: &str = "report.json.tmp.";

/// Prefix of the request gate's files: `request-<i>-granted` (the launcher lets request `i`
/// start) and `request-<i>-done` (the worker finished it).
pub const REQUEST_FILE_PREFIX: &str = "request-";

/// The line of a gate file that carries a grant's sequence number in its group: `seq <n>\n`
/// (`req/protocol.md` §4.4). The launcher writes it first in `request-<i>-granted`, a worker
/// copies it into `request-<i>-done`.
pub fn seq_line(seq: u64) -> String {
    format!("seq {seq}\n")
}

/// The sequence number a gate file carries: its first complete line `seq <n>` (decimal digits
/// only). Anything else (empty, partial, garbage, not UTF-8) carries none.
pub fn read_seq(content: &[u8]) -> Option<u64> {
    let (line, _) = std::str::from_utf8(content).ok()?.split_once('\n')?;
    let digits = line.strip_prefix("seq ")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The worker's wake-up FIFO of the request gate (created by the worker, removed at its end).
pub const GATE_FIFO: &str = "gate";

/// The tail of the refusal message both workers print for a missing or blocked out dir.
pub const LAUNCHER_MESSAGE: &str = "out_dir must be created by the launcher";

/// How often a worker at the gate looks for its grant and for cancellation when it has no wake-up
/// FIFO. The grant's latency adds to the session's wall time only, never to a measured interval.
pub const GATE_POLL: Duration = Duration::from_micros(200);

/// With the wake-up FIFO, the longest one blocking wait lasts before cancellation and the
/// deadline are looked at again: a waiting worker wakes 50 times a second, not 5000.
pub const GATE_WAKE_TIMEOUT: Duration = Duration::from_millis(20);

/// The paths of an out dir.
#[derive(Debug, Clone)]
pub struct OutDir {
    path: PathBuf,
}

impl OutDir {
    /// The layout of the folder at `path` (nothing is checked or read).
    pub fn at(path: &Path) -> Self {
        Self { path: path.to_owned() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn job(&self) -> PathBuf {
        self.path.join(JOB_FILE)
    }

    pub fn claim(&self) -> PathBuf {
        self.path.join(CLAIM_FILE)
    }

    pub fn ready(&self) -> PathBuf {
        self.path.join(READY_FILE)
    }

    pub fn report(&self) -> PathBuf {
        self.path.join(REPORT_FILE)
    }

    /// Created by the launcher: request `index` may start (gated jobs only).
    pub fn granted(&self, index: u32) -> PathBuf {
        self.path.join(format!("{REQUEST_FILE_PREFIX}{index}-granted"))
    }

    /// The worker's wake-up FIFO (gated jobs only).
    pub fn gate(&self) -> PathBuf {
        self.path.join(GATE_FIFO)
    }

    /// Created by the worker: request `index` is complete (gated jobs only).
    pub fn done(&self, index: u32) -> PathBuf {
        self.path.join(format!("{REQUEST_FILE_PREFIX}{index}-done"))
    }

    /// This process's temp file for the report.
    pub fn report_temp(&self, pid: u32) -> PathBuf {
        self.path.join(format!("{REPORT_TEMP_PREFIX}{pid}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_complete_seq_line_first_in_a_gate_file_is_read() {
        assert_eq!(read_seq(seq_line(3).as_bytes()), Some(3));
        assert_eq!(read_seq(b"seq 0\nafter 9\n"), Some(0));
        assert_eq!(read_seq(b"seq 18446744073709551615\n"), Some(u64::MAX));
        for garbage in [
            &b""[..],
            b"\n",
            b"seq 3",                      // not yet complete
            b"seq \n",                     // no number
            b"seq -1\n",                   // not a sequence number
            b"seq +1\n",                   // not decimal digits only
            b"seq 3 \n",                   // trailing text
            b"seq 18446744073709551616\n", // too large
            b"SEQ 3\n",
            b"after 2\nseq 3\n", // not the first line
            b"\xff\xfe\n",
            b"done\n",
        ] {
            assert_eq!(read_seq(garbage), None, "{:?}", String::from_utf8_lossy(garbage));
        }
    }
}
