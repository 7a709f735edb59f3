//! The output of `decode-baseline compare --format json` (`req/compare.md`), as types: the rows,
//! each with its test, the A/A results and energy lines beside them, what differs between the
//! things compared, and the overall verdict with its exit code. Its JSON Schema is committed as
//! `schemas/compare.schema.json` ([`crate::schema::compare_schema`]). The comparisons that fill
//! it live in `crates/launcher/src/compare`.

use serde::{Deserialize, Serialize};

pub use crate::row::{AaResult, Basis, Quantity, Row, RowResult, Side};
use crate::{decision::DecisionConfig, energy::EnergyRatio, session::SessionStatus, stats::Verdict, Adapter, ExitCode};

/// The version of the JSON `compare --format json` prints. Version 2 added `basis`, `against`,
/// `noise`, the `inconclusive` verdict and `raw`. Version 3: the verdict is a test
/// (`outcome.decision`: rule, error, p-values, Holm level, equivalence, MDE), the bootstrap
/// ratio is kept for display as `outcome.median_ratio`, the A/A results sit beside each row
/// (`outcome.aa`) with `outcome.warnings`; `settings` and `judged_rows` replace
/// `threshold_flag`, and the noise threshold (`comparison`, `threshold`, `noise`) is gone.
/// Version 4 added `energy`.
pub const COMPARE_SCHEMA_VERSION: u32 = 4;

/// What was compared with what.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Controlled over stock, in one session.
    WithinSession,
    /// Session B over session A, per adapter.
    AcrossSessions,
}

/// A session as the output names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionRef {
    pub session_id: String,
    pub path: String,
    pub status: SessionStatus,
}

/// The MLX versions of two sessions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Versions {
    /// Session A's, e.g. `mlx 0.32.2, mlx_lm 0.32.2`.
    pub a: String,
    /// Session B's.
    pub b: String,
    /// `--across-versions` was given: environment differences are expected, not mismatches.
    pub across_versions: bool,
    /// The environment fields that differ (`mlx_version`, `lock_sha256`, …), asked for or not.
    pub differences: Vec<Mismatch>,
}

/// Everything `compare` found; printed in each format, and as is for `--format json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompareReport {
    /// Equals [`COMPARE_SCHEMA_VERSION`].
    pub schema_version: u32,
    pub kind: Kind,
    pub a: SessionRef,
    pub b: Option<SessionRef>,
    /// What differs between the things compared (see `identity`).
    pub mismatches: Vec<Mismatch>,
    /// Mismatches were found and `--allow-mismatch` was not given: no rows.
    pub refused: bool,
    /// Two sessions: the MLX versions each ran on, and whether the environment difference was
    /// asked for (`--across-versions`); absent within one session.
    pub versions: Option<Versions>,
    /// Two sessions compared with `--across-devices`: their backend and device differences
    /// (`DEVICE_FIELDS` of `crates/launcher/src/compare/identity.rs`), named here instead of
    /// refusing; empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device_differences: Vec<Mismatch>,
    /// The settings of every row's test (`--alpha`, `--margin`, `--floor`).
    pub settings: DecisionConfig,
    /// Judged rows compared: the family Holm's procedure ran over.
    pub judged_rows: usize,
    /// `--raw`: raw rows across sessions get a verdict too.
    pub raw: bool,
    pub rows: Vec<Row>,
    /// Cells only session A ran (two sessions).
    pub only_in_a: Vec<String>,
    /// Cells only session B ran (two sessions).
    pub only_in_b: Vec<String>,
    /// Energy per token against the reference (`crates/launcher/src/compare/energy.rs`), where
    /// the sessions read an energy source; not part of `verdict`.
    pub energy: Vec<EnergyRow>,
    /// The overall verdict: `slower` if any row is slower, else `faster` if any is faster, else
    /// `inconclusive` if any is inconclusive, else `no_difference`; absent when refused.
    pub verdict: Option<Verdict>,
    /// The process exit code this report ends with.
    pub exit_code: i32,
}

impl CompareReport {
    /// The exit code: refused, else by the overall verdict (see `req/compare.md`).
    pub fn exit(&self) -> ExitCode {
        match (self.refused, self.verdict) {
            (true, _) => ExitCode::Refused,
            (false, Some(Verdict::Slower)) => ExitCode::Slower,
            (false, Some(Verdict::Faster)) => ExitCode::Faster,
            (false, Some(Verdict::Inconclusive)) => ExitCode::Inconclusive,
            (false, Some(Verdict::NoDifference) | None) => ExitCode::Ok,
        }
    }
}

/// One thing that differs. In a two-session comparison `a` and `b` are the sessions' values; in
/// one session they are the controlled and the stock workers' values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Mismatch {
    /// What differs, e.g. `libmlx_sha256` or `model tiny-qwen3: model.safetensors`.
    pub field: String,
    pub a: String,
    pub b: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} vs {}", self.field, self.a, self.b)
    }
}

/// One energy line of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnergyRow {
    pub cell: String,
    /// The energy domain, as the session recorded it (`nvml:0`, `package-0`, `fake:0`, …).
    pub domain: String,
    /// The adapter whose joules per token are compared.
    pub adapter: Adapter,
    /// The session's reference adapter it is measured against.
    pub against: Adapter,
    /// Within one session `paired` (interleaved) or `ratio_of_medians` (non-interleaved: the two
    /// adapters' requests, unpaired); `against_reference` across two.
    pub basis: Basis,
    /// Whether a session's readings came from the test-only fake source.
    pub fake: bool,
    /// The ratio (below 1: less energy per token), its interval and verdict.
    pub ratio: Option<EnergyRatio>,
    /// Why there is no ratio.
    pub reason: Option<String>,
}
