//! The host noise profile file (`decode-baseline calibrate`): per design, the session-to-session
//! spread of the paired-test log estimate over `K` A/A yardstick sessions. `compare` and `run`
//! read it (`--noise-profile FILE`, or the default file of the host) and hold each verdict's
//! error to at least the profile's (`crates/launcher/src/stats/profile.rs`).

use serde::{Deserialize, Serialize};

/// The version [`NoiseProfileFile`] is written with; readers refuse any other.
pub const NOISE_PROFILE_SCHEMA_VERSION: u32 = 2;

/// A profile file: one host's designs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoiseProfileFile {
    /// [`NOISE_PROFILE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// When `calibrate` wrote it, RFC 3339 UTC to the second.
    pub written_utc: String,
    /// One entry per design, adapter pair and session size calibrated (a later `calibrate` of
    /// the same three replaces it).
    pub designs: Vec<ProfiledDesign>,
}

/// The profile of one design, adapter pair and session size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfiledDesign {
    /// What the sessions had in common; a session matches when every field is equal.
    pub design: Design,
    /// The adapter pair the A/A sessions measured, numerator over reference, e.g.
    /// `controlled-b/controlled` or `stock-b/stock`: whose run-to-run noise the entry holds.
    pub pair: String,
    /// The session size: worker runs (repetitions) per adapter in each A/A session. A session
    /// of another size is held to a bound derived from it (`crates/launcher/src/noise_profiles.rs`).
    pub repetitions: u32,
    /// The A/A sessions' log estimates (numerator `adapter` against `reference`), in run order.
    pub log_estimates: Vec<f64>,
    /// Their sample standard deviation: one session's error from session to session.
    pub sd: f64,
    /// The session folders they came from.
    pub sessions: Vec<String>,
}

/// A design: host, device, library, model, cell kind, order and placement.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Design {
    /// Host name, OS, architecture, CPU count and model, e.g. `box (linux x86_64, 2 CPUs, AMD EPYC)`.
    pub host: String,
    /// The backend (`cpu`, `cuda`, `metal`) and the device's name.
    pub device: String,
    /// The libmlx the workers loaded, SHA-256 (several joined with `,`).
    pub libmlx_sha256: String,
    /// The model case of the cell (its shape follows from the pinned files).
    pub case_id: String,
    /// The cell's mode (`headline`, `fixed_continuation`, …).
    pub mode: String,
    /// The session order (`interleaved`, `alternate`, `fixed`).
    pub order: String,
    /// The CPUs the workers got (`run --cpus`), or `unrecorded`.
    pub placement: String,
}

// `crates/launcher/src/stats/profile.rs` documents how it enters a verdict's error.
/// The session-to-session spread of one design's estimate on one host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoiseProfile {
    /// Standard deviation of one session's log estimate over the A/A sessions.
    pub sd: f64,
    /// `K`, the A/A sessions it was measured from.
    pub sessions: usize,
    /// What it was measured on (host and design), for the output.
    pub label: String,
}

impl NoiseProfile {
    /// The profile's error for an estimate that spans `sessions` sessions, `sd · √sessions`.
    pub fn se(&self, sessions: usize) -> f64 {
        self.sd * (sessions as f64).sqrt()
    }

    /// The degrees of freedom of its t reference, `K − 1`.
    pub fn df(&self) -> f64 {
        self.sessions as f64 - 1.0
    }
}
