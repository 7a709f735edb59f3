//! The host noise profile file (`decode-baseline calibrate`): per design and row, a two-level
//! fit of how the row's estimate moves when nothing changed (a part per request unit, a part
//! per worker run, a part per session), from `K` sessions of a job. `compare` and `run` read it
//! (`--noise-profile FILE`, or the default file of the host) and hold each verdict's error to
//! at least the profile's, sized to the session judged (`crates/launcher/src/stats/profile.rs`).

use serde::{Deserialize, Serialize};

use crate::quantity::Quantity;

/// The version [`NoiseProfileFile`] is written with.
pub const NOISE_PROFILE_SCHEMA_VERSION: u32 = 4;

/// The versions readers accept: this one, and 3, whose entries are all of per-token rows
/// (version 4 added [`ProfiledDesign::quantity`], absent there and read as per token).
pub const NOISE_PROFILE_READABLE_VERSIONS: [u32; 2] = [3, NOISE_PROFILE_SCHEMA_VERSION];

/// A profile file: one host's designs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoiseProfileFile {
    /// [`NOISE_PROFILE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// When `calibrate` wrote it, RFC 3339 UTC to the second.
    pub written_utc: String,
    /// One entry per design and row (a later `calibrate` of the same two replaces it).
    pub designs: Vec<ProfiledDesign>,
}

/// The profile of one design and one row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfiledDesign {
    /// What the sessions had in common; a session's cell matches when every field is equal.
    pub design: Design,
    /// The row: `adapter/reference` for an adapter's request pairs with the reference in an
    /// interleaved session (units: A B / B A blocks of pair log ratios), or one adapter's name
    /// for its own times (units: per request, the log of its median step time or of its time
    /// to the first token, as `quantity` says), which the rows without
    /// pairs use (a non-interleaved session's sides, the raw rows of two sessions).
    pub pair: String,
    /// What the row's units are of: each request's median decode step (per token), or its
    /// time to the first token (the headline cells' TTFT rows). A row uses only an entry of
    /// its own quantity.
    #[serde(default)]
    pub quantity: Quantity,
    /// The two-level fit of the row's units.
    pub fit: TwoLevelFit,
    /// The calibration sessions' estimates of the row (mean of run means), in run order.
    pub log_estimates: Vec<f64>,
    /// The session folders they came from.
    pub sessions: Vec<String>,
}

/// The variance of a row's estimate split by level, fitted from `K` sessions of `j` runs of
/// `n` units each (`crates/launcher/src/stats/profile.rs` has the estimators and how a session
/// of `j'` runs of `n'` units is sized from them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TwoLevelFit {
    /// `K`, the sessions fitted.
    pub sessions: usize,
    /// `j`, the worker runs of a calibration session (their harmonic mean when they differ).
    pub runs_per_session: f64,
    /// `n`, the mean number of units in a run.
    pub units_per_run: f64,
    /// `b²`: one unit's variance as a run's trimmed mean sees it (the squared error of the
    /// run's trimmed mean times its units), pooled over every run.
    pub unit_var: f64,
    /// Its degrees of freedom.
    pub unit_df: f64,
    /// The variance of one run's mean about its session's mean, pooled over the sessions (at
    /// `n` units); `b²/n` when the sessions had one run each.
    pub run_var: f64,
    /// Its degrees of freedom, `Σ (j_k − 1)`; 0 with one run per session, when the run-level
    /// part cannot be told from the session-level part and counts as session-level.
    pub run_df: f64,
    /// `S²`, the variance of the sessions' estimates: `c² + run_var/j`, with `c²` the part
    /// shared by every run of a session.
    pub estimate_var: f64,
    /// Its degrees of freedom, `K − 1`.
    pub estimate_df: f64,
}

/// A design: host, device, library, cell, order and placement.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Design {
    /// Host name, OS, architecture, CPU count and model, e.g. `box (linux x86_64, 2 CPUs, AMD EPYC)`.
    pub host: String,
    /// The backend (`cpu`, `cuda`, `metal`) and the device's name.
    pub device: String,
    /// The libmlx the workers loaded, SHA-256 (several joined with `,`).
    pub libmlx_sha256: String,
    /// The cell, `<case>.<prompt>.<mode>`: model, prompt and mode.
    pub cell: String,
    /// The session order.
    pub order: crate::order::WorkerOrder,
    /// The CPUs the workers got (`run --cpus`), or `unrecorded`.
    pub placement: String,
}

// `crates/launcher/src/stats/profile.rs` documents how it enters a verdict's error.
/// The profile's error of one row, sized to the session(s) judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoiseProfile {
    /// The standard deviation of one session's estimate of the row, for the session's size.
    pub sd: f64,
    /// The degrees of freedom of its t reference (Welch–Satterthwaite over the fit's levels).
    pub df: f64,
    /// `K`, the calibration sessions it was fitted from.
    pub sessions: usize,
    /// What it was measured on (host and design), for the output.
    pub label: String,
}

impl NoiseProfile {
    /// The profile's error for an estimate that spans `sessions` sessions, `sd · √sessions`.
    pub fn se(&self, sessions: usize) -> f64 {
        self.sd * (sessions as f64).sqrt()
    }

    /// The degrees of freedom of its t reference.
    pub fn df(&self) -> f64 {
        self.df
    }
}
