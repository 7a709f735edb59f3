//! decode-baseline's integration tests: one binary, one module per area.

mod util;

mod conformance;
mod launcher;
mod setup;
