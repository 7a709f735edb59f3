//! The launcher: `decode-baseline run`. Its readers of what it is handed (the session job, each
//! worker's report with its validation) are public, so that the
//! integration tests can feed them arbitrary input directly (`tests/integration/launcher_readers.rs`).

mod agreement;
mod analysis;
mod device;
mod display;
mod events;
mod execute;
mod finish;
mod gate_wait;
mod groups;
mod interleave;
mod lease;
mod memory;
mod options;
mod output;
pub mod placement;
pub mod plan;
mod preflight;
mod prepare;
mod progress_log;
pub(crate) mod rank_group;
mod rank_group_run;
mod record;
mod recovery;
mod run;
#[cfg(test)]
mod run_tests;
mod sequential;
mod session_dir;
pub mod session_job;
mod session_options;
mod show;
mod signals;
mod supervise;
pub mod validate;
mod worker_job;

pub use finish::{Recorded, SessionOutcome};
pub use lease::LeaseError;
pub use options::{RunArgs, RunOptions};
pub use run::{run, run_session};
pub use sequential::Budget;
pub use session_dir::new_session_dir;
pub use session_options::{Looks, SessionOptions};
pub use show::Show;
