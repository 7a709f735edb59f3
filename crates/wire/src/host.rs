//! What the host did during a measurement: the launcher samples it around each worker run
//! (`crates/launcher/src/host` reads `/proc`, cpufreq, and on macOS `sysctl` and `pmset`) and records it in
//! `session.json` beside the run. Every value is `null` where it could not be read.

use serde::{Deserialize, Serialize};

/// The range of a per-CPU value over the CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FreqRange {
    /// The lowest value over the CPUs.
    pub min: u64,
    /// The highest value over the CPUs.
    pub max: u64,
}

/// What else ran on the host during one measurement, and how fast its CPUs were clocked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostActivity {
    /// Monotonic wall time between the two samples, in nanoseconds.
    pub wall_ns: u64,
    /// CPUs the kernel accounts in `/proc/stat` (its `cpuN` lines) at the end.
    pub cpus: Option<u32>,
    /// Share of all CPUs' time that was busy over the interval, 0 to 1, from `/proc/stat`:
    /// (user + nice + system + irq + softirq + steal) / (those + idle + iowait).
    pub busy_share: Option<f64>,
    /// CPU time everything (processes, kernel, other guests' steal) used over the interval, in
    /// nanoseconds: the busy clock ticks of `/proc/stat`, summed over the CPUs.
    pub busy_cpu_ns: Option<u64>,
    /// CPU time of the measured processes over the interval, in nanoseconds, as handed to
    /// `HostSampler::finish` (`crates/launcher/src/host`).
    pub measured_cpu_ns: Option<u64>,
    /// `busy_cpu_ns` minus `measured_cpu_ns`, at least 0: what everything else used, the
    /// launcher itself included. `null` when either is unknown, or when the busy time fell
    /// short of the measured time by more than tick rounding (two clock ticks per CPU): the two
    /// clocks then disagree, and what others used is unknown rather than 0.
    pub others_cpu_ns: Option<u64>,
    /// `others_cpu_ns` in CPUs' worth: divided by each CPU's accounted time over the interval.
    /// 1.0 means others kept one CPU busy for the whole measurement.
    pub others_cpus: Option<f64>,
    /// The 1-minute load average at the start (`/proc/loadavg`; macOS `sysctl -n vm.loadavg`).
    pub load1_start: Option<f64>,
    /// The 1-minute load average at the end.
    pub load1_end: Option<f64>,
    /// `scaling_cur_freq` over the CPUs at the start, in kHz (Linux cpufreq).
    pub freq_khz_start: Option<FreqRange>,
    /// `scaling_cur_freq` over the CPUs at the end, in kHz.
    pub freq_khz_end: Option<FreqRange>,
    /// The distinct `scaling_governor`s of the CPUs at the end, sorted (Linux cpufreq).
    pub governors: Option<Vec<String>>,
    /// macOS: the lower `CPU_Speed_Limit` of `pmset -g therm` at the start and the end, in
    /// percent; 100 means not throttled.
    pub cpu_speed_limit_pct: Option<u32>,
    /// macOS: the thermal or performance warning levels `pmset -g therm` reported at the start
    /// or the end, verbatim; empty when it reported none.
    pub thermal_warnings: Option<Vec<String>>,
    /// macOS: the power source at the start, as `pmset -g batt` names it (`AC Power`,
    /// `Battery Power`).
    pub power_source: Option<String>,
    /// macOS: whether Low Power Mode was on at the start or the end (`pmset -g`).
    pub low_power_mode: Option<bool>,
}
