//! What the host did during one measurement: [`HostSampler::start`] before a worker runs,
//! [`HostSampler::finish`] after, giving a [`HostActivity`] record. Linux reads `/proc` and
//! cpufreq; macOS runs its tools (`macos`); every value is `None` where unreadable.

use std::{
    path::Path,
    time::{Duration, Instant},
};

pub use decode_baseline_wire::host::{FreqRange as Range, HostActivity};

use super::{
    linux::{self, CpuTimes},
    macos::{self, MacSample},
    process::ticks_to_duration,
};

/// The host's state at the start of a measurement.
#[derive(Debug)]
pub struct HostSampler {
    at: Instant,
    sample: Sample,
}

/// One reading of everything the record compares.
#[derive(Debug, Clone, Default)]
struct Sample {
    cpu: Option<CpuTimes>,
    load1: Option<f64>,
    freq: Option<Range>,
    governors: Option<Vec<String>>,
    mac: MacSample,
}

impl Sample {
    fn read(cpufreq: &Path) -> Self {
        let mac = macos::read();
        Sample {
            cpu: linux::read_stat(),
            load1: linux::read_loadavg().or(mac.load1),
            freq: linux::read_frequency(cpufreq),
            governors: linux::read_governors(cpufreq),
            mac,
        }
    }
}

impl HostSampler {
    /// Samples the host now.
    pub fn start() -> Self {
        HostSampler { at: Instant::now(), sample: Sample::read(Path::new(linux::CPUFREQ_ROOT)) }
    }

    /// Samples the host again and compares. `measured_cpu` is the CPU time the measured
    /// processes used since [`start`](Self::start) (see `process_cpu_time` and
    /// `reaped_children_cpu_time`); without it, what others used is unknown.
    pub fn finish(self, measured_cpu: Option<Duration>) -> HostActivity {
        let end = Sample::read(Path::new(linux::CPUFREQ_ROOT));
        compare(&self.sample, &end, self.at.elapsed(), measured_cpu, linux::clock_ticks_per_s())
    }
}

/// The record from two samples, the wall time between them, the measured processes' CPU time
/// and the clock tick.
fn compare(start: &Sample, end: &Sample, wall: Duration, measured: Option<Duration>, hz: Option<u64>) -> HostActivity {
    let delta = start.cpu.zip(end.cpu).map(|(a, b)| a.until(&b));
    let cpus = end.cpu.map(|c| c.cpus);
    let busy_cpu_ns = delta.zip(hz).and_then(|(d, hz)| ticks_to_duration(d.busy, hz)).map(|d| d.as_nanos() as u64);
    let measured_cpu_ns = measured.map(|d| d.as_nanos() as u64);
    // `/proc/stat` counts each CPU's time in whole ticks, so the busy time can fall short of the
    // measured processes' own by up to two ticks per CPU. Beyond that the two clocks disagree
    // (different windows, a hypervisor's accounting) and what others used is unknown, not 0.
    let slack_ns = hz.zip(cpus).map(|(hz, n)| 2 * u64::from(n) * 1_000_000_000 / hz.max(1));
    let others_cpu_ns = match (busy_cpu_ns, measured_cpu_ns, slack_ns) {
        (Some(busy), Some(own), Some(slack)) if own <= busy + slack => Some(busy.saturating_sub(own)),
        _ => None,
    };
    // Each CPU's accounted time, from the same ticks as the busy time, so both share a clock.
    let per_cpu_ns = delta
        .zip(hz)
        .zip(cpus.filter(|&n| n > 0))
        .and_then(|((d, hz), n)| ticks_to_duration(d.total, hz).map(|t| t.as_nanos() as f64 / f64::from(n)))
        .filter(|&t| t > 0.0);
    let therms = [&start.mac.therm, &end.mac.therm];
    let thermal_warnings = therms
        .iter()
        .any(|t| t.is_some())
        .then(|| therms.iter().filter_map(|t| t.as_ref()).flat_map(|t| t.warnings.iter().cloned()).collect());
    HostActivity {
        wall_ns: wall.as_nanos() as u64,
        cpus,
        busy_share: delta.and_then(|d| d.busy_share()),
        busy_cpu_ns,
        measured_cpu_ns,
        others_cpu_ns,
        others_cpus: others_cpu_ns.zip(per_cpu_ns).map(|(others, per_cpu)| others as f64 / per_cpu),
        load1_start: start.load1,
        load1_end: end.load1,
        freq_khz_start: start.freq,
        freq_khz_end: end.freq,
        governors: end.governors.clone(),
        cpu_speed_limit_pct: therms.iter().filter_map(|t| t.as_ref()?.speed_limit_pct).min(),
        thermal_warnings,
        power_source: start.mac.power_source.clone(),
        low_power_mode: match (start.mac.low_power_mode, end.mac.low_power_mode) {
            (None, None) => None,
            (a, b) => Some(a == Some(true) || b == Some(true)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::macos::Therm;

    fn cpu(busy: u64, total: u64) -> Option<CpuTimes> {
        Some(CpuTimes { busy, total, cpus: 2 })
    }

    #[test]
    fn the_record_subtracts_the_measured_time_from_the_busy_time() {
        // 2 CPUs, 1 s at 100 Hz: 200 ticks, 170 busy; the measured process used 1.2 s.
        let start = Sample { cpu: cpu(1000, 5000), load1: Some(0.5), ..Sample::default() };
        let end = Sample { cpu: cpu(1170, 5200), load1: Some(1.5), ..Sample::default() };
        let a = compare(&start, &end, Duration::from_secs(1), Some(Duration::from_millis(1200)), Some(100));
        assert_eq!(a.busy_share, Some(0.85));
        assert_eq!(a.busy_cpu_ns, Some(1_700_000_000));
        assert_eq!(a.others_cpu_ns, Some(500_000_000));
        assert_eq!(a.others_cpus, Some(0.5));
        assert_eq!((a.load1_start, a.load1_end, a.cpus), (Some(0.5), Some(1.5), Some(2)));
        let unknown = compare(&start, &end, Duration::from_secs(1), None, Some(100));
        assert_eq!((unknown.others_cpu_ns, unknown.others_cpus), (None, None));
        // Tick rounding (two ticks per CPU, 40 ms here) is not a difference; beyond it the
        // clocks disagree and others' use is unknown, not 0.
        let rounded = compare(&start, &end, Duration::from_secs(1), Some(Duration::from_millis(1740)), Some(100));
        assert_eq!(rounded.others_cpu_ns, Some(0), "tick rounding never makes it negative");
        let more_than_busy = compare(&start, &end, Duration::from_secs(1), Some(Duration::from_secs(2)), Some(100));
        assert_eq!((more_than_busy.others_cpu_ns, more_than_busy.others_cpus), (None, None));
        assert_eq!(more_than_busy.measured_cpu_ns, Some(2_000_000_000), "what was measured stays recorded");
    }

    #[test]
    fn nothing_readable_gives_nothing() {
        let a = compare(&Sample::default(), &Sample::default(), Duration::from_millis(5), Some(Duration::ZERO), None);
        assert_eq!(a.wall_ns, 5_000_000);
        assert!(a.busy_share.is_none() && a.others_cpus.is_none() && a.load1_start.is_none());
        assert!(a.thermal_warnings.is_none() && a.low_power_mode.is_none() && a.cpu_speed_limit_pct.is_none());
    }

    #[test]
    fn macos_values_keep_the_worse_of_start_and_end() {
        let mac = |limit, warning: &[&str], lpm| MacSample {
            load1: None,
            therm: Some(Therm { speed_limit_pct: limit, warnings: warning.iter().map(|w| w.to_string()).collect() }),
            power_source: Some("AC Power".into()),
            low_power_mode: lpm,
        };
        let start = Sample { mac: mac(Some(100), &[], Some(false)), ..Sample::default() };
        let end = Sample { mac: mac(Some(70), &["Thermal warning level set to 1."], Some(true)), ..Sample::default() };
        let a = compare(&start, &end, Duration::from_secs(1), None, None);
        assert_eq!(a.cpu_speed_limit_pct, Some(70));
        assert_eq!(a.thermal_warnings, Some(vec!["Thermal warning level set to 1.".to_owned()]));
        assert_eq!((a.power_source.as_deref(), a.low_power_mode), (Some("AC Power"), Some(true)));
    }

    #[test]
    fn the_record_round_trips_and_refuses_unknown_fields() {
        let start = Sample { cpu: cpu(1000, 5000), freq: Some(Range { min: 1, max: 2 }), ..Sample::default() };
        let end = Sample { cpu: cpu(1100, 5200), governors: Some(vec!["performance".into()]), ..Sample::default() };
        let a = compare(&start, &end, Duration::from_secs(1), Some(Duration::ZERO), Some(100));
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!(serde_json::from_value::<HostActivity>(json.clone()).unwrap(), a);
        let mut extra = json;
        extra["surprise"] = serde_json::json!(1);
        assert!(serde_json::from_value::<HostActivity>(extra).is_err());
    }

    /// The behaviour test needs `/proc` and a per-thread CPU clock: Linux only.
    #[cfg(target_os = "linux")]
    mod on_linux {
        use std::process::{Child, Command};

        use nix::sys::resource::UsageWho;

        use super::*;
        use crate::host::{busy, process::rusage_cpu_time, process_cpu_time};

        /// A CPU hog: a shell spinning in a loop.
        struct Hog(Child);

        impl Drop for Hog {
            fn drop(&mut self) {
                let _ = self.0.kill();
                let _ = self.0.wait();
            }
        }

        #[test]
        fn a_cpu_hog_is_seen_as_others_while_the_sampler_idles() {
            if linux::read_stat().is_none() {
                eprintln!("skipped: no /proc/stat on this system");
                return;
            }
            let own_before = thread_cpu_time();
            let sampler = HostSampler::start();
            let hog = Hog(Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap());
            let pid = hog.0.id();
            // Until the hog has had 0.5 s of CPU however busy the machine is, bounded by 120 s.
            let deadline = Instant::now() + Duration::from_secs(120);
            let hog_cpu = loop {
                std::thread::sleep(Duration::from_millis(100));
                let used = process_cpu_time(pid).unwrap();
                if used >= Duration::from_millis(500) {
                    break used;
                }
                assert!(Instant::now() < deadline, "the hog got only {used:?} of CPU in 120 s");
            };
            // The hog is not the measured process: the sampler must count it among the others.
            let activity = sampler.finish(Some(Duration::ZERO));
            let own = thread_cpu_time() - own_before;
            drop(hog);
            let busy_ns = activity.busy_cpu_ns.unwrap();
            // Both counts are in clock ticks: allow a few ticks per CPU of rounding.
            let tick_ns = 1_000_000_000 / linux::clock_ticks_per_s().unwrap();
            let tick_slack_ns = 4 * tick_ns * u64::from(activity.cpus.unwrap());
            eprintln!(
                "hog {hog_cpu:?}, host busy {:?} over {:?} ({:.2} CPUs by others), sampling thread {own:?}",
                Duration::from_nanos(busy_ns),
                Duration::from_nanos(activity.wall_ns),
                activity.others_cpus.unwrap()
            );
            assert!(busy_ns + tick_slack_ns >= hog_cpu.as_nanos() as u64, "{activity:?}");
            assert!(own < hog_cpu / 2, "the sampling thread itself used {own:?}");
            // Others kept at least the hog's share of a CPU busy; a threshold below it must warn.
            let hog_cpus = hog_cpu.as_nanos() as f64 / activity.wall_ns as f64;
            let warning = busy(&activity, hog_cpus / 2.0).expect("a busy host");
            assert!(warning.contains("other processes"), "{warning}");
        }

        /// The CPU time of the calling thread (other tests run in this process meanwhile).
        fn thread_cpu_time() -> Duration {
            rusage_cpu_time(UsageWho::RUSAGE_THREAD).unwrap()
        }
    }
}
