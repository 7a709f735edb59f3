//! The launcher: `decode-baseline run`. Its readers of what it is handed (the session job, each
//! worker's report with its validation) and the checkout it serves are public, so that the
//! integration tests can feed them arbitrary input directly (`tests/integration/launcher_readers.rs`).

mod agreement;
mod analysis;
pub mod checkout;
mod device;
mod execute;
mod gate_wait;
mod interleave;
mod lease;
mod memory;
mod output;
pub mod placement;
pub mod plan;
mod preflight;
mod progress_log;
pub(crate) mod rank_group;
mod rank_group_run;
mod recovery;
mod run;
mod sequential;
pub mod session_job;
mod signals;
mod supervise;
pub mod validate;
mod worker_job;

pub use lease::LeaseError;
pub use run::{new_session_dir, run, run_session, RunArgs, RunOptions, SessionOutcome};
