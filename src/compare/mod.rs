//! `decode-baseline compare`: controlled against stock within one session, or one session against
//! another cell by cell; ratios of per-token medians with by-request bootstrap intervals, verdicts
//! against a measured noise threshold, refusal of unlike sessions, four output formats. The
//! derivation of the threshold and the exit codes are documented in `req/compare.md`.

mod command;
mod error;
mod estimate;
mod identity;
mod load;
mod render;
mod samples;
#[cfg(test)]
pub(crate) mod schema;
mod threshold;
mod upgrade;

pub use command::{run, CompareArgs};
pub use error::CompareError;
pub use load::load_session;
pub use samples::{cells, request_pairs, CellData, MeasuredRequest};
