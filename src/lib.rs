//! decode-baseline as a library: the parts of the suite that the binary's subcommands share and
//! that tests reach directly. Only what needs no MLX lives here.

pub mod energy;
pub mod host;
pub mod stats;

/// Which checkout the launcher serves, and the launcher's readers of what it is handed: the session job, and each worker's report with
/// its validation. The rest of the launcher (`src/launcher/`) is in the binary, which re-exports
/// these; they are here so that the integration tests can feed them arbitrary input directly
/// (`tests/integration/launcher_readers.rs`).
pub mod launcher {
    pub mod checkout;
    pub mod session_job;
    pub mod validate;
}

/// The worker conformance scenarios (`req/protocol.md` seen from outside), their harness and
/// the tiny fixture's manifest and jobs: the binary's `conformance` command runs them against
/// any worker (`src/conformance/command.rs`), and so do the integration tests.
pub mod conformance {
    pub mod checks;
    pub mod fixture;
    pub mod harness;
    pub mod scenarios;
    pub mod suite;
    pub mod tampers;
}
