//! Linux's views of the host: `/proc/stat`, `/proc/loadavg`, `/proc/<pid>/stat` and the
//! cpufreq files under `/sys/devices/system/cpu`. The parsers take text and are pure; the
//! readers around them return `None` where a file is missing or unreadable (macOS, a container
//! without `/sys`, a VM without cpufreq).

use std::path::Path;

/// The aggregate `cpu` line of `/proc/stat`, in clock ticks summed over all CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimes {
    /// user + nice + system + irq + softirq + steal: the ticks some process, the kernel or (for
    /// steal) another guest of the hypervisor had the CPU. guest and guest_nice are already
    /// inside user and nice, so they are not added again.
    pub busy: u64,
    /// busy + idle + iowait: every tick accounted.
    pub total: u64,
    /// The `cpuN` lines: the CPUs online when the file was read.
    pub cpus: u32,
}

/// The busy and total ticks between two readings of `/proc/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TickDelta {
    pub busy: u64,
    pub total: u64,
}

impl CpuTimes {
    /// What happened between `self` (earlier) and `later`. Counters that went backwards (a
    /// known quirk of iowait on some kernels) count as zero.
    pub fn until(&self, later: &CpuTimes) -> TickDelta {
        TickDelta { busy: later.busy.saturating_sub(self.busy), total: later.total.saturating_sub(self.total) }
    }
}

impl TickDelta {
    /// The busy share of all CPUs' time, 0 to 1; `None` when no tick passed.
    pub fn busy_share(&self) -> Option<f64> {
        (self.total > 0).then(|| (self.busy.min(self.total)) as f64 / self.total as f64)
    }
}

pub use decode_baseline_wire::host::FreqRange as Range;

/// Parses `/proc/stat`: the aggregate `cpu` line and the number of `cpuN` lines.
pub fn parse_stat(text: &str) -> Option<CpuTimes> {
    let mut aggregate = None;
    let mut cpus = 0;
    for line in text.lines() {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("cpu") => {
                let fields: Vec<u64> = words.map(str::parse).collect::<Result<_, _>>().ok()?;
                // user nice system idle are there on every kernel; the rest came later.
                if fields.len() < 4 {
                    return None;
                }
                let at = |i: usize| fields.get(i).copied().unwrap_or(0);
                let busy = at(0) + at(1) + at(2) + at(5) + at(6) + at(7);
                aggregate = Some((busy, busy + at(3) + at(4)));
            }
            Some(word)
                if word.strip_prefix("cpu").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) =>
            {
                cpus += 1
            }
            _ => {}
        }
    }
    let (busy, total) = aggregate?;
    Some(CpuTimes { busy, total, cpus })
}

/// Parses `/proc/loadavg`: the 1-minute load average (its first field).
pub fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok().filter(|v: &f64| v.is_finite() && *v >= 0.0)
}

/// Parses `/proc/<pid>/stat`: utime + stime + cutime + cstime, in clock ticks: the CPU time of
/// the process's threads and of the children it has reaped.
pub fn parse_pid_stat(text: &str) -> Option<u64> {
    // The command name (field 2) is in parentheses and may hold spaces and parentheses itself:
    // the fields that follow start after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Field 3 (state) is fields[0]; utime, stime, cutime, cstime are fields 14 to 17.
    let tick = |field: usize| fields.get(field - 3)?.parse::<i64>().ok().map(|v| v.max(0) as u64);
    Some(tick(14)? + tick(15)? + tick(16)? + tick(17)?)
}

/// Parses a cpufreq file holding one number (`scaling_cur_freq`, in kHz).
pub fn parse_number(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// The range of a list of per-CPU values; `None` for none.
pub fn range(values: impl IntoIterator<Item = u64>) -> Option<Range> {
    values.into_iter().fold(None, |acc: Option<Range>, v| {
        Some(acc.map_or(Range { min: v, max: v }, |r| Range { min: r.min.min(v), max: r.max.max(v) }))
    })
}

/// The distinct values of a list of per-CPU words, sorted; `None` for none.
pub fn distinct(values: impl IntoIterator<Item = String>) -> Option<Vec<String>> {
    let mut values: Vec<String> = values.into_iter().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()).collect();
    values.sort();
    values.dedup();
    (!values.is_empty()).then_some(values)
}

pub fn read_stat() -> Option<CpuTimes> {
    parse_stat(&std::fs::read_to_string("/proc/stat").ok()?)
}

pub fn read_loadavg() -> Option<f64> {
    parse_loadavg(&std::fs::read_to_string("/proc/loadavg").ok()?)
}

/// The CPU time of process `pid` and its reaped children, in clock ticks. A process that has
/// exited but not been reaped (a zombie) still reads: read it just before `wait`.
pub fn read_pid_ticks(pid: u32) -> Option<u64> {
    parse_pid_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// `file` (e.g. `scaling_cur_freq`) of every `cpuN/cpufreq/` below `root`
/// (`/sys/devices/system/cpu`), as text, for the CPUs where it reads.
pub fn read_cpufreq(root: &Path, file: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let name = entry.file_name();
            let n = name.to_str()?.strip_prefix("cpu")?;
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            std::fs::read_to_string(entry.path().join("cpufreq").join(file)).ok()
        })
        .collect()
}

/// The system's cpufreq directory.
pub const CPUFREQ_ROOT: &str = "/sys/devices/system/cpu";

/// The current frequency range over the CPUs, in kHz.
pub fn read_frequency(root: &Path) -> Option<Range> {
    range(read_cpufreq(root, "scaling_cur_freq").iter().filter_map(|t| parse_number(t)))
}

/// The scaling governors in use, distinct and sorted.
pub fn read_governors(root: &Path) -> Option<Vec<String>> {
    distinct(read_cpufreq(root, "scaling_governor"))
}

/// The kernel's clock tick (`USER_HZ`), in which `/proc` counts CPU time.
pub fn clock_ticks_per_s() -> Option<u64> {
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok()??;
    u64::try_from(hz).ok().filter(|&hz| hz > 0)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A 2-CPU `/proc/stat` as this project's build machine wrote it (intr line shortened).
    const STAT: &str = "cpu  249764 0 30062 17560 736 0 197 739 0 0\n\
        cpu0 123062 0 14496 11521 63 0 19 358 0 0\n\
        cpu1 126701 0 15565 6038 672 0 178 380 0 0\n\
        intr 1215810 0 0 0 0 0 0 0\n\
        ctxt 2542376\nbtime 1795926614\nprocesses 29380\nprocs_running 14\nprocs_blocked 0\n\
        softirq 2183151 0 389573 2 19367 0 0 60 823102 0 951047\n";

    #[test]
    fn the_aggregate_line_gives_busy_total_and_the_cpu_count() {
        let t = parse_stat(STAT).unwrap();
        assert_eq!(t.busy, 249764 + 30062 + 197 + 739);
        assert_eq!(t.total, t.busy + 17560 + 736);
        assert_eq!(t.cpus, 2);
    }

    #[test]
    fn guest_time_is_not_counted_twice_and_old_kernels_read() {
        let t = parse_stat("cpu  100 10 20 1000 5 1 2 3 50 7\ncpu0 1 1 1 1\n").unwrap();
        assert_eq!((t.busy, t.total), (136, 1141));
        let old = parse_stat("cpu  100 10 20 1000\ncpu0 1 1 1 1\ncpu1 1 1 1 1\n").unwrap();
        assert_eq!((old.busy, old.total, old.cpus), (130, 1130, 2));
    }

    #[test]
    fn broken_stat_texts_are_refused() {
        assert_eq!(parse_stat(""), None);
        assert_eq!(parse_stat("cpu0 1 2 3 4\n"), None, "no aggregate line");
        assert_eq!(parse_stat("cpu  1 2 3\n"), None, "too few fields");
        assert_eq!(parse_stat("cpu  1 2 x 4\n"), None);
    }

    #[test]
    fn a_delta_gives_the_busy_share() {
        let a = CpuTimes { busy: 100, total: 1000, cpus: 2 };
        let b = CpuTimes { busy: 250, total: 1200, cpus: 2 };
        assert_eq!(a.until(&b), TickDelta { busy: 150, total: 200 });
        assert_eq!(a.until(&b).busy_share(), Some(0.75));
        assert_eq!(a.until(&a).busy_share(), None, "no tick passed");
        assert_eq!(b.until(&a), TickDelta { busy: 0, total: 0 }, "backwards counts as zero");
    }

    #[test]
    fn loadavg_gives_the_one_minute_load() {
        assert_eq!(parse_loadavg("12.93 10.45 8.00 14/203 29380\n"), Some(12.93));
        assert_eq!(parse_loadavg(""), None);
        assert_eq!(parse_loadavg("nan 1 1 1/1 1"), None);
    }

    #[test]
    fn pid_stat_sums_the_four_cpu_fields_past_a_tricky_name() {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
        // utime stime cutime cstime ...
        let text = "4242 (a (b) c) R 1 4242 4242 0 -1 4194304 100 0 0 0 150 25 7 3 20 0 1 0 99 1000 50\n";
        assert_eq!(parse_pid_stat(text), Some(185));
        assert_eq!(parse_pid_stat("4242 (sh) R 1 2 3"), None, "truncated");
        assert_eq!(parse_pid_stat("garbage"), None);
    }

    #[test]
    fn cpufreq_files_are_read_per_cpu_under_a_root() {
        let root = tempfile::tempdir().unwrap();
        for (cpu, khz, governor) in [("cpu0", "3000000\n", "performance\n"), ("cpu1", "2400000\n", "powersave\n")] {
            let dir = root.path().join(cpu).join("cpufreq");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("scaling_cur_freq"), khz).unwrap();
            std::fs::write(dir.join("scaling_governor"), governor).unwrap();
        }
        // Not a CPU: cpufreq/ and cpuidle/ sit beside the cpuN folders.
        std::fs::create_dir_all(root.path().join("cpufreq").join("cpufreq")).unwrap();
        std::fs::write(root.path().join("cpufreq").join("cpufreq").join("scaling_cur_freq"), "1\n").unwrap();
        assert_eq!(read_frequency(root.path()), Some(Range { min: 2_400_000, max: 3_000_000 }));
        assert_eq!(read_governors(root.path()), Some(vec!["performance".into(), "powersave".into()]));
        let empty = tempfile::tempdir().unwrap();
        assert_eq!((read_frequency(empty.path()), read_governors(empty.path())), (None, None));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_machine_reads_and_counts_a_spin() {
        use nix::sys::resource::{getrusage, UsageWho};
        let cpu = || {
            let usage = getrusage(UsageWho::RUSAGE_THREAD).expect("the thread's usage");
            let micros = |t: nix::sys::time::TimeVal| (t.tv_sec() * 1_000_000 + t.tv_usec()) as u64;
            std::time::Duration::from_micros(micros(usage.user_time()) + micros(usage.system_time()))
        };
        let hz = clock_ticks_per_s().expect("clock ticks");
        let (host, own) = (read_stat().expect("/proc/stat"), read_pid_ticks(std::process::id()).expect("own ticks"));
        assert!(host.cpus >= 1);
        // 300 ms of this thread's own CPU time (its clock, so a loaded host only makes it take
        // longer): the host's busy ticks and this process's ticks must both count it, the
        // process's own within sampling (half of it is a wide margin).
        let start = cpu();
        while cpu() - start < std::time::Duration::from_millis(300) {
            std::hint::spin_loop();
        }
        let (later, own_later) = (read_stat().unwrap(), read_pid_ticks(std::process::id()).unwrap());
        let spun = hz * 3 / 10;
        let delta = host.until(&later);
        assert!(own_later - own >= spun / 2, "{} ticks of this process for {spun}", own_later - own);
        assert!(delta.busy >= spun / 2 && delta.total >= delta.busy, "{delta:?} for {spun} ticks spun");
        assert!(read_loadavg().is_some());
    }

    proptest! {
        #[test]
        fn any_counters_give_busy_within_total(fields in proptest::collection::vec(0u64..1 << 40, 4..11), cpus in 1usize..64) {
            let line = fields.iter().map(u64::to_string).collect::<Vec<_>>().join(" ");
            let text = format!("cpu  {line}\n{}", (0..cpus).map(|i| format!("cpu{i} 1 1 1 1\n")).collect::<String>());
            let t = parse_stat(&text).unwrap();
            prop_assert!(t.busy <= t.total);
            prop_assert_eq!(t.cpus as usize, cpus);
        }

        #[test]
        fn any_delta_share_is_a_share(a in 0u64..1 << 40, b in 0u64..1 << 40, da in 0u64..1 << 30, db in 0u64..1 << 30) {
            let early = CpuTimes { busy: a, total: a + b, cpus: 1 };
            let late = CpuTimes { busy: a + da, total: a + b + da + db, cpus: 1 };
            if let Some(share) = early.until(&late).busy_share() {
                prop_assert!((0.0..=1.0).contains(&share));
            }
        }

        #[test]
        fn the_range_holds_every_value(values in proptest::collection::vec(any::<u64>(), 1..32)) {
            let r = range(values.iter().copied()).unwrap();
            prop_assert!(values.iter().all(|v| (r.min..=r.max).contains(v)));
            prop_assert!(values.contains(&r.min) && values.contains(&r.max));
        }
    }
}
