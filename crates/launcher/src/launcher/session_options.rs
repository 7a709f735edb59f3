//! How the engine runs a session, apart from any command line: what `run`'s options say
//! (`RunOptions::session`), or what another command asks for, written from
//! [`SessionOptions::default`] (a session as `run` with no option runs it) with only what differs:
//!
//! ```ignore
//! let options = SessionOptions { repetitions: Some(4), session_dir: Some(dir), ..SessionOptions::default() };
//! ```

use std::path::PathBuf;

use decode_baseline_wire::row::Quantity;

use super::{placement, sequential::Budget};

/// How one session runs.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionOptions {
    /// Refuse at once (exit 7) when another session holds the benchmark lease.
    pub no_wait: bool,
    /// Write the folders and worker jobs and run nothing.
    pub dry_run: bool,
    /// Wait up to this many seconds for a quiet host before each group (0: do not wait).
    pub quiet_wait: u64,
    /// The CPUs the workers run on.
    pub cpus: placement::Cpus,
    /// The noise profile file the verdicts and the looks use; `None`: the host's.
    pub noise_profile: Option<PathBuf>,
    /// Worker runs per adapter and cell, in place of the job's.
    pub repetitions: Option<u32>,
    /// `--until-decided`: the cells' groups are the looks of a sequential test.
    pub looks: Option<Looks>,
    /// A session folder made beforehand (`bench`'s holds the session's own manifest), used
    /// instead of a new folder below the job's output root.
    pub session_dir: Option<PathBuf>,
}

/// The sequential test's settings (`run --until-decided`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Looks {
    pub budget: Budget,
    /// The rows the looks decide.
    pub decide_on: Quantity,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            no_wait: false,
            dry_run: false,
            quiet_wait: 0,
            cpus: placement::Cpus::First,
            noise_profile: None,
            repetitions: None,
            looks: None,
            session_dir: None,
        }
    }
}
