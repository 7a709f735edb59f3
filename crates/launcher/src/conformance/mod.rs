//! The worker conformance scenarios (`req/protocol.md` seen from outside), their harness and
//! the tiny fixture's manifest and jobs; `decode-baseline conformance` (`command.rs`) runs them
//! against any worker, and so do the integration tests.

pub mod checks;
mod command;
pub mod fixture;
pub mod group_scenarios;
pub mod harness;
pub mod scenarios;
pub mod suite;
pub mod tampers;

pub use command::{run, ConformanceArgs};
