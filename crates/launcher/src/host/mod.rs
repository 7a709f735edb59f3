//! The host around a measurement: what else used the CPUs while a worker ran, how fast they
//! were clocked, whether the machine was throttled, and a bounded wait for a quiet host before
//! a worker starts. Linux reads `/proc` and cpufreq; macOS runs `sysctl` and `pmset`.

mod activity;
mod judge;
pub mod linux;
pub mod macos;
mod process;
mod quiet;

pub use activity::{HostActivity, HostSampler};
pub use judge::{busy, judge, Judgement, MAX_FREQ_DROP, MAX_OTHER_CPUS};
pub use process::{process_cpu_time, reaped_children_cpu_time};
pub use quiet::{wait_for_quiet, QuietError};
