//! The seam between the launcher and the host's energy counters: an [`EnergySource`] reads a
//! [`Snapshot`] of its domains (a GPU, a CPU package, its DRAM), each an energy counter with
//! its unit and wrap range, the clocks, the clocks-event (throttle) reason bits and the
//! thermal state, each where the source has it. A source that cannot be opened says why, as a
//! [`Missing`] the session records once.

use std::{path::PathBuf, time::Instant};

pub use decode_baseline_wire::energy::{Clocks, ThermalState};

/// The unit a counter counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Linux powercap's `energy_uj`.
    Microjoules,
    /// NVML's `nvmlDeviceGetTotalEnergyConsumption`.
    Millijoules,
}

impl Unit {
    /// `value` of this unit in microjoules, saturating (a millijoule counter near `u64::MAX`
    /// is not a reading).
    pub fn to_microjoules(self, value: u64) -> u64 {
        match self {
            Unit::Microjoules => value,
            Unit::Millijoules => value.saturating_mul(1000),
        }
    }
}

/// One reading of an energy counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counter {
    pub value: u64,
    pub unit: Unit,
    /// The value at which the counter wraps to 0, in its unit (powercap's
    /// `max_energy_range_uj`); `None` for a counter that is not expected to wrap (NVML's 64-bit
    /// millijoules since the driver loaded).
    pub wrap: Option<u64>,
}

/// One domain at one instant; every part `None` where the source does not have it or could
/// not read it this time.
#[derive(Debug, Clone, PartialEq)]
pub struct DomainSample {
    /// `nvml:0`, `powercap:package-0`, `powercap:package-0/dram`, `fake:0`.
    pub domain: String,
    pub energy: Option<Counter>,
    pub clocks: Option<Clocks>,
    /// Clocks-event reason bits (NVML's), see `decode_baseline_wire::energy::THROTTLE_REASONS`.
    pub reasons: Option<u64>,
    pub thermal: Option<ThermalState>,
}

impl DomainSample {
    /// A domain with only an energy counter.
    pub fn energy(domain: impl Into<String>, energy: Option<Counter>) -> Self {
        DomainSample { domain: domain.into(), energy, clocks: None, reasons: None, thermal: None }
    }
}

/// Every domain of every source at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub at: Instant,
    pub domains: Vec<DomainSample>,
}

/// A source of energy readings. Reading never fails as a whole: a domain that cannot be read
/// this time has `None` parts, and the interval it spans drops that domain's energy.
pub trait EnergySource: Send {
    /// `nvml`, `powercap`, `macos` or `fake`.
    fn name(&self) -> &'static str;
    /// The domains every reading holds, in order.
    fn domains(&self) -> Vec<String>;
    /// Reads every domain now.
    fn read(&mut self) -> Vec<DomainSample>;
}

/// Why a source cannot be read on this host.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Missing {
    #[error("no NVIDIA driver: {library} not found")]
    NoDriver { library: String },
    #[error("NVML did not start: {call} returned {code}")]
    NvmlFailed { call: &'static str, code: u32 },
    #[error("NVML sees no GPU")]
    NoGpu,
    #[error("{} absent", path.display())]
    NoPowercap { path: PathBuf },
    #[error("no intel-rapl zone in {}", path.display())]
    NoZones { path: PathBuf },
    #[error("not root (energy_uj is root-only since Linux 5.10): {}", path.display())]
    NotRoot { path: PathBuf },
    #[error("failed to read {}: {detail}", path.display())]
    Unreadable { path: PathBuf, detail: String },
    #[error("not a macOS build")]
    NotMacos,
    #[error("not yet implemented: {what}")]
    NotImplemented { what: &'static str },
}

/// A source that could not be opened, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingSource {
    pub source: &'static str,
    pub why: Missing,
}
