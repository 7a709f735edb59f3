//! `decode-baseline conformance`: the worker conformance scenarios against one worker. The
//! scenarios, their harness and the fixture live in the library (`decode_baseline::conformance`),
//! where the integration tests reach them too; this module is the command.

mod command;

pub use command::{run, ConformanceArgs};
