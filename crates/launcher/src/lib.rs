//! decode-baseline's launcher and everything around it, as a library: the `decode-baseline`
//! executable (`src/main.rs`, `src/cli.rs` at the repository root) is its command line, and the
//! integration tests and benches reach the same modules directly.
//!
//! One module per command or concept:
//!
//! * [`launcher`]: `run`, the session (lease, workers, gate, analysis, output), on the
//!   [`schedule`] of its runs.
//! * [`stats`], [`host`], [`energy`]: what the analysis measures and computes.
//! * [`session`]: the one reader of `session.json` and its typed views; [`noise_profiles`]: the
//!   host noise profiles the verdicts use.
//! * [`compare`], [`report`], [`plot`], [`calibrate`]: what reads a finished session;
//!   [`decomposition`]: every headline ratio taken apart (synchronous design, placement, rest).
//! * [`mod@bench`]: one model in one command, on top of the launcher.
//! * [`conformance`]: the worker protocol checked from outside.
//! * [`guard`], [`manifest_cli`]: the manifest and its pins; [`init`]: a new workspace.
//! * [`checkout`]: which program files a command serves (a checkout, or an installed wheel's);
//!   [`workspace`]: which user folder (manifest, jobs, `out/`) it works in.
//!
//! Nothing here links MLX; the `controlled` feature only says that the executable does (its
//! `worker` subcommand is the controlled worker).

pub mod bench;
pub mod bisect;
pub mod calibrate;
pub mod checkout;
pub mod compare;
pub mod conformance;
pub mod decomposition;
pub mod duration;
pub mod energy;
pub mod exit;
pub mod exit_code;
pub mod export;
#[cfg(test)]
mod generated;
pub mod guard;
pub mod history;
pub mod host;
pub mod init;
pub mod launcher;
pub mod manifest_cli;
pub mod noise_profiles;
pub mod plot;
pub mod ranks;
pub mod report;
pub mod safetensors_header;
pub mod schedule;
pub mod session;
pub mod stats;
pub mod workspace;
