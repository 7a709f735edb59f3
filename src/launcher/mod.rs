//! The launcher: `decode-baseline run`.

mod agreement;
mod analysis;
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
mod recovery;
mod run;
mod sequential;
mod signals;
mod supervise;
mod worker_job;

// The readers live in the library, where the integration tests reach them.
use decode_baseline::launcher::{session_job, validate};

pub use analysis::replaced_line;
pub use run::{new_session_dir, run, RunArgs};
