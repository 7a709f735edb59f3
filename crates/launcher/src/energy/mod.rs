//! Energy, clocks and throttling per request: the sources that read the host's energy counters
//! (NVML on an NVIDIA GPU, Linux powercap's RAPL zones, a macOS stub, a test-only fake), the
//! counter arithmetic (wrap, reset), the recorder the launcher drives at the request gate of an
//! interleaved session, the idle reading before each group, and the analysis that judges
//! energy like time (joules per token with an interval, the paired energy ratio with and
//! without throttled pairs). The records are `decode_baseline_wire::energy`'s.

mod analysis;
mod delta;
mod fake;
mod idle;
mod macos;
mod meter;
mod nvml;
mod powercap;
mod ratio;
mod recorder;
mod render;
mod source;

pub use analysis::{analyze, domains, energy_estimate, request_points, RequestPoint, MAX_THROTTLED_SHARE};
pub use delta::{counter_delta, interval_energy, request_energy, MAX_PLAUSIBLE_WATTS};
pub use fake::{FakeSource, FakeSpec, FAKE_ENERGY_ENV};
pub use idle::{idle_reading, measure_idle, Idle, IDLE_WINDOW};
pub use macos::MacSource;
pub use meter::Meter;
pub use nvml::{Nvml, NVML_LIBRARY};
pub use powercap::{Powercap, POWERCAP_ROOT};
pub use ratio::{energy_ratio, paired_energy_estimate, paired_energy_ratio};
pub use recorder::{GroupRecorder, MID_SAMPLE_EVERY};
pub use render::{csv, human_joules, pairing_words, ratio_words, sources_line, table, CSV_FILE};
pub use source::{Counter, DomainSample, EnergySource, Missing, MissingSource, Snapshot, Unit};
