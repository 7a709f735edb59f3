//! Energy, clocks and throttling in `session.json`: what the launcher read from the host's
//! energy counters (NVML, Linux powercap, a test-only fake) around each request it granted in
//! an interleaved session, which sources were missing and why, the idle reading before each
//! group, and the analysis of it (joules per token, the paired energy ratio, the throttled
//! pairs). The readers and the estimators live in `crates/launcher/src/energy`; these are the
//! records only.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{stats::Summary, Adapter};

/// The clocks-event (throttle) reason bits that mean the device was slowed against its will,
/// NVML's `nvmlClocksEventReason*`: SwPowerCap 0x4, HwSlowdown 0x8, SwThermalSlowdown 0x20,
/// HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80. The other bits (GpuIdle 0x1, the
/// applications clocks setting 0x2, SyncBoost 0x10, the display clock 0x100) are not throttling.
pub const THROTTLE_REASONS: u64 = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

/// The session's energy record; `null` in sessions before version 7.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionEnergy {
    /// The `DECODE_BASELINE_FAKE_ENERGY` spec when the readings came from the test-only fake
    /// source, so nobody mistakes them for a measurement; `null` for real sources.
    pub fake: Option<String>,
    /// Every source the launcher tried, available or missing, in the order tried.
    pub sources: Vec<SourceState>,
    /// One idle reading per interleaved group, taken after every member was ready and before
    /// the first grant.
    pub idle: Vec<IdleReading>,
    /// Per cell, what the per-request readings say; empty when no source produced data.
    pub cells: Vec<CellEnergy>,
}

/// One energy source and whether it could be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceState {
    /// `nvml`, `powercap`, `macos` or `fake`.
    pub source: String,
    /// Why it is missing (`no NVIDIA driver (libnvidia-ml.so.1 not found)`); `null` when it was
    /// read.
    pub missing: Option<String>,
    /// The domains it reads (`nvml:0`, `powercap:package-0`, `powercap:package-0/dram`); empty
    /// when missing.
    pub domains: Vec<String>,
}

/// Why a domain's energy over an interval was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Dropped {
    /// The counter went backwards with no wrap range to explain it: it was reset (a driver
    /// reload) during the interval.
    CounterReset,
    /// The delta implies a mean power above the plausible bound: a reset the wrap range hid.
    Implausible,
    /// The counter could not be read at one of the samples.
    Unreadable,
}

/// The SM and memory clocks of a device, MHz.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Clocks {
    /// Streaming-multiprocessor clock, MHz.
    pub sm_mhz: u32,
    /// Memory clock, MHz.
    pub mem_mhz: u32,
}

/// The thermal state a platform reports (macOS `ProcessInfo.thermalState`'s four levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThermalState {
    Nominal,
    Fair,
    /// Counts as throttled.
    Serious,
    /// Counts as throttled.
    Critical,
}

/// One domain's energy over one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DomainEnergy {
    /// The domain (`nvml:0`, `powercap:package-0`, …).
    pub domain: String,
    /// Energy over the interval, microjoules (NVML's millijoules times 1000); `null` when
    /// dropped.
    pub energy_uj: Option<u64>,
    /// Why `energy_uj` is `null`.
    pub dropped: Option<Dropped>,
    /// Clocks at the start of the interval, where the source has them (NVML).
    pub clocks_start: Option<Clocks>,
    /// Clocks at the end.
    pub clocks_end: Option<Clocks>,
}

/// The energy of one granted request, read at the gate: the counters before the grant was
/// written and after its done file was seen, and any sampled in between.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestEnergy {
    /// The request's index in the worker's job (its `requests[].index`).
    pub index: u32,
    /// Monotonic time between the first and the last sample, nanoseconds.
    pub wall_ns: u64,
    /// How many samples were taken (start, end and any in between).
    pub samples: u32,
    /// Per domain, its energy over the request.
    pub domains: Vec<DomainEnergy>,
    /// The clocks-event reason bits of every sample, OR-ed; `null` where no source reports them.
    pub reasons: Option<u64>,
    /// The worst thermal state sampled; `null` where no source reports one.
    pub thermal: Option<ThermalState>,
    /// `reasons` has a bit of [`THROTTLE_REASONS`], or `thermal` was serious or critical.
    pub throttled: bool,
}

/// An idle reading: every member of an interleaved group loaded and waiting at the gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdleReading {
    /// The cell.
    pub cell: String,
    /// The repetition of the group.
    pub repetition: u32,
    /// The A/A group.
    pub aa: bool,
    /// Monotonic time between the two samples, nanoseconds.
    pub wall_ns: u64,
    /// Per domain, its energy over the reading.
    pub domains: Vec<DomainEnergy>,
}

/// One cell's energy analysis, per domain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CellEnergy {
    /// `<case>.<prompt>.<mode>`.
    pub cell: String,
    /// One entry per domain that produced data, in the order the sources list them.
    pub domains: Vec<DomainAnalysis>,
}

/// One domain of one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DomainAnalysis {
    /// The domain.
    pub domain: String,
    /// Per adapter with at least two measured requests that kept their energy.
    #[schemars(extend("propertyNames" = { "$ref": "#/$defs/Adapter" }))]
    pub adapters: BTreeMap<Adapter, AdapterEnergy>,
    /// Per adapter other than the reference: its energy against the reference's, pair by pair.
    #[schemars(extend("propertyNames" = { "$ref": "#/$defs/Adapter" }))]
    pub paired: BTreeMap<Adapter, PairedEnergy>,
}

/// One adapter's energy in one cell and domain, over its measured requests (A/A runs excluded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdapterEnergy {
    /// Joules per output token, one value per request (the request's energy, prefill
    /// included, over its tokens: the first token and every decode step).
    pub joules_per_token: Summary,
    /// The same with the idle energy of the request's length taken off (the group's idle power
    /// times the request's wall time); `null` without an idle reading.
    pub net_joules_per_token: Option<Summary>,
    /// 1 / the median joules per token: derived from the median, not an averaged rate.
    pub tokens_per_joule: f64,
    /// Measured requests whose energy was dropped (counter reset, implausible, unreadable).
    pub dropped: usize,
    /// Measured requests during which the device was throttled (their energy is kept).
    pub throttled: usize,
}

/// An energy ratio and its verdict, by the same test as time (the launcher's
/// `stats::decision`, `req/compare.md`). Interleaved: per request pair `d = ln(E_X / E_R)` of
/// the per-token energies (so unequal token counts pair fairly), A B / B A blocks of two pairs,
/// Yuen's 20 % trimmed mean of the blocks with its error. Non-interleaved (each worker alone behind
/// the gate while an energy source is active): Yuen's two-sample estimate of the two adapters'
/// per-request log energies per token, as time's `request_medians`. The verdict at α = 5 %
/// with a ±3 % equivalence margin.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnergyRatio {
    /// `exp(trimmed mean of the blocks)`.
    pub ratio: f64,
    /// Lower end of the `1 − α` t-interval of the ratio.
    pub lower: f64,
    /// Upper end.
    pub upper: f64,
    /// The interval's confidence level, `1 − α`.
    pub confidence: f64,
    /// Pairs it rests on; in a non-interleaved session, the requests of both adapters.
    pub pairs: usize,
    /// The test's verdict: `faster` means less energy per token.
    pub verdict: crate::stats::Verdict,
    /// Two-sided p-value of "no difference at all".
    pub p_value: f64,
}

/// An adapter's energy against the reference's in one cell and domain. In a non-interleaved
/// session, which has no pairs, `pairs` counts both adapters' requests with an energy,
/// `throttled_pairs` the throttled ones among them and `dropped_pairs` the requests without one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PairedEnergy {
    /// Over every pair whose both sides kept their energy; `null` below two pairs.
    pub all: Option<EnergyRatio>,
    /// Over the pairs during which neither side was throttled; `null` below two.
    pub unthrottled: Option<EnergyRatio>,
    /// Pairs with both energies.
    pub pairs: usize,
    /// Of those, pairs during which either side was throttled.
    pub throttled_pairs: usize,
    /// Pairs left out because either side's energy was dropped.
    pub dropped_pairs: usize,
    /// The share of throttled pairs above which the analysis warns.
    pub max_throttled_share: f64,
    /// A sentence when more than `max_throttled_share` of the pairs were throttled.
    pub warning: Option<String>,
}
