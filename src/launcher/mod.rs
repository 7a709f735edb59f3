//! The launcher: `decode-baseline run`.

mod agreement;
mod analysis;
mod lease;
mod output;
mod plan;
#[cfg(test)]
mod reader_props;
mod recovery;
mod run;
mod session_job;
mod signals;
mod supervise;
mod validate;
mod worker_job;

pub use run::{run, RunArgs};
