//! `session.json`'s `analysis`: what the launcher computed from the validated reports, per cell
//! and adapter (statistics, the build/evaluation split), the ratios between the adapters, the
//! A/A noise, and the agreement checks. `crates/launcher/src/launcher/analysis.rs` fills it in;
//! `compare`, `plot` and the report page read it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{
    stats::{BootstrapConfig, Drift, RatioEstimate, Summary},
    Adapter, Mode,
};

/// Everything computed from one session's validated reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Analysis {
    /// The bootstrap settings of every interval below.
    pub bootstrap: BootstrapConfig,
    /// One entry per cell, in the manifest's order.
    pub cells: Vec<CellAnalysis>,
}

/// One cell. The maps by adapter are keyed by its name (`controlled`, `stock`, a declared one),
/// which the schema holds to [`Adapter`]'s names. The pairwise maps (`ratios`, `paired`,
/// `paired_aa`, `argmax`, `stream`) hold every adapter other than the session's `reference`,
/// each against the reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CellAnalysis {
    /// `<case>.<prompt>.<mode>`.
    pub cell: String,
    pub mode: Mode,
    /// Per adapter with at least one valid run that could be summarized.
    #[schemars(extend("propertyNames" = { "$ref": "#/$defs/Adapter" }))]
    pub adapters: BTreeMap<Adapter, AdapterStats>,
    /// Per adapter other than the reference with statistics, when the reference has them too:
    /// its per-token median over the reference's, by-request bootstrap interval. Version 5 and
    /// earlier had one `ratio`, controlled over stock.
    #[schemars(extend("propertyNames" = { "$ref": "#/$defs/Adapter" }))]
    pub ratios: BTreeMap<Adapter, RatioEstimate>,
    /// Per adapter: its A/A pair (the extra run over the first), the spread `compare` uses.
    #[schemars(extend("propertyNames" = { "$ref": "#/$defs/Adapter" }))]
    pub aa_ratios: BTreeMap<Adapter, RatioEstimate>,
    /// Interleaved sessions, per adapter other than the reference: its paired ratio against the
    /// reference (the median ratio of adjacent requests), by-pair or by-run-then-pair bootstrap interval. Empty
    /// for other orders; absent before version 3.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "$ref": "#/$defs/Adapter" }))]
    pub paired: BTreeMap<Adapter, RatioEstimate>,
    /// Interleaved sessions with an A/A group, per adapter other than the reference: the A/A group's
    /// paired ratio over the other groups', the noise threshold `compare` uses for it. Empty
    /// otherwise; absent before version 3.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "$ref": "#/$defs/Adapter" }))]
    pub paired_aa: BTreeMap<Adapter, RatioEstimate>,
    /// Fixed-continuation cells, per adapter other than the reference: its argmax agreement
    /// with the reference step by step; empty for other modes.
    #[schemars(extend("propertyNames" = { "$ref": "#/$defs/Adapter" }))]
    pub argmax: BTreeMap<Adapter, ArgmaxAgreement>,
    /// Reference-pair cells, per adapter other than the reference: its stream against the
    /// reference's; empty for other modes.
    #[schemars(extend("propertyNames" = { "$ref": "#/$defs/Adapter" }))]
    pub stream: BTreeMap<Adapter, StreamAgreement>,
}

impl CellAnalysis {
    /// `adapter`'s ratio to the reference as the summary table and the report page show it: the
    /// paired one where the cell ran interleaved, else the ratio of medians; with its kind,
    /// `"paired"` or `"ratio"`.
    pub fn ratio_to_reference(&self, adapter: &Adapter) -> Option<(&'static str, &RatioEstimate)> {
        match self.paired.get(adapter) {
            Some(r) => Some(("paired", r)),
            None => self.ratios.get(adapter).map(|r| ("ratio", r)),
        }
    }
}

/// How the table, the report page and every message name a comparison of `adapter` with the
/// reference: `<adapter>/<reference>`.
pub fn pair_label(adapter: &Adapter, reference: &Adapter) -> String {
    format!("{adapter}/{reference}")
}

/// One adapter in one cell, over its measured requests (all repetitions, A/A run excluded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdapterStats {
    /// Per-token decode step time, ns.
    pub per_token_ns: Summary,
    /// Prefill duration, ns (one value per request).
    pub prefill_ns: Option<Summary>,
    /// Request start to first token, ns.
    pub first_token_ns: Option<Summary>,
    /// Median graph-build part of a step (controlled only), ns.
    pub build_median_ns: Option<f64>,
    /// Median evaluation part of a step (controlled only), ns.
    pub eval_median_ns: Option<f64>,
    /// Host overhead (controlled only): the share of the measured step time outside MLX's
    /// evaluation, `(Σ dur - Σ eval) / Σ dur` over every measured step; absent in version 1.
    #[serde(default)]
    pub host_overhead: Option<f64>,
    /// Process start to worker-ready, ns, median over runs.
    pub start_to_ready_ns: Option<f64>,
    /// Unused forward passes per request (stock's look-ahead), from the first measured request.
    pub unused_forwards: u32,
    /// Model calls per request, from the first measured request.
    pub model_calls: u32,
    /// Early against late measured requests (per-request medians, first half against second).
    pub drift: Option<Drift>,
    /// The test-only slowdown the workers applied at its site (each decode step, or each seed
    /// forward), µs; `null` in every real
    /// measurement (`DECODE_BASELINE_TEST_SLOWDOWN_US`).
    #[serde(default)]
    pub test_slowdown_us: Option<u32>,
    /// Warnings about the host during this adapter's runs of the cell (busy, throttled), once
    /// each; empty when none (absent before version 3).
    #[serde(default)]
    pub host_warnings: Vec<String>,
    /// The first (cold) request of each run, kept out of every statistic above and reported
    /// beside them; `null` when no run had one (reference-pair) and before version 7.
    #[serde(default)]
    pub cold: Option<ColdRequests>,
}

/// The first request of each worker run (run-policy phase `first`): what a loop costs cold, with
/// imports paid but caches, allocator pools and any compiled trace not yet warm. A loop that
/// compiles its step traces it here.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ColdRequests {
    /// First requests behind the figures (one per run).
    pub requests: u32,
    /// Median of their prefill durations, ns.
    pub prefill_ns: f64,
    /// Median of their per-request median step times, ns.
    pub per_token_ns: f64,
}

/// Fixed-continuation agreement of one adapter with the reference in one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArgmaxAgreement {
    /// Steps of the first request compared between the two adapters.
    pub steps_compared: usize,
    /// Positions where the adapters' argmax differ.
    pub mismatches: Vec<Mismatch>,
    /// Positions where either of the two saw top-1 and top-2 exactly equal (lowest index won).
    pub tie_positions: Vec<u32>,
    /// Requests within either of the two whose argmax sequence differs from its first request.
    pub unstable_requests: Vec<String>,
}

/// One position where an adapter and the reference chose different tokens. Version 5 and
/// earlier named the sides `controlled` and `stock`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Mismatch {
    /// The sequence position.
    pub position: u32,
    /// The adapter's token there.
    pub adapter_token: u32,
    /// The reference's token there.
    pub reference_token: u32,
    /// The adapter's top-1 minus top-2 there, when recorded.
    pub adapter_margin: Option<f64>,
    /// The reference's top-1 minus top-2 there, when recorded.
    pub reference_margin: Option<f64>,
}

/// Reference-pair agreement of one adapter with the reference in one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StreamAgreement {
    /// Tokens compared (the shorter stream's length).
    pub tokens_compared: usize,
    /// Both streams are the same tokens and the same length.
    pub identical: bool,
    /// Position of the first differing token, with both tokens and margins there.
    pub first_divergence: Option<Mismatch>,
    /// Either adapter saw its top-1 and top-2 exactly equal at the first divergence (stock ranks
    /// log-probabilities, whose rounding can make two close logits equal): both tokens are
    /// greedy choices there, so the divergence is listed, not a problem. Absent in early version
    /// 1 sessions, read as `false`.
    #[serde(default)]
    pub diverged_at_tie: bool,
}
