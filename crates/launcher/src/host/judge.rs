//! Whether a [`HostActivity`] record puts its measurement in doubt.
//!
//! A **warning** says the measured times are suspect: something that slows a decode loop was
//! seen during the run.
//! - Others (everything but the measured processes) used more than `max_other_cpus` CPUs' worth
//!   on average ([`MAX_OTHER_CPUS`] = 0.25 by default: a quarter of a CPU taken from a
//!   per-step-overhead-bound loop is visible in its times).
//! - Without `/proc/stat` (macOS), the 1-minute load at the start exceeded `1 + max_other_cpus`
//!   (the previous worker of the session may account for 1). Coarse: the load average trails by
//!   a minute.
//! - The fastest CPU's clock fell by more than [`MAX_FREQ_DROP`] (10 %) between the start and
//!   the end while every CPU ran the `performance` governor, which holds the clock up: that fall
//!   is throttling (heat, power).
//! - macOS: a CPU speed limit under 100 %, a thermal or performance warning level, Low Power
//!   Mode on.
//!
//! A **note** is information that does not by itself make the run suspect.
//! - A governor other than `performance`: the clock follows the load, so times move between
//!   runs; a clock that fell under such a governor is noted, not warned, since it is not
//!   evidence of throttling.
//! - Running on battery power.
//! - Others' CPU use unknown (the measured processes' CPU time was not given).

use super::activity::HostActivity;

/// Others' CPU use, in CPUs' worth on average, above which a measurement is called busy.
pub const MAX_OTHER_CPUS: f64 = 0.25;

/// The fall of the fastest CPU's clock, as a share, above which a measurement is called throttled.
pub const MAX_FREQ_DROP: f64 = 0.10;

/// The warnings and notes about one record, each a sentence.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Judgement {
    pub warnings: Vec<String>,
    pub notes: Vec<String>,
}

/// The warnings, joined into one sentence, when the host was busy or throttled during the run.
pub fn busy(activity: &HostActivity, max_other_cpus: f64) -> Option<String> {
    let warnings = judge(activity, max_other_cpus).warnings;
    (!warnings.is_empty()).then(|| warnings.join("; "))
}

/// Every warning and note about `activity` (see the module docs for which is which).
pub fn judge(a: &HostActivity, max_other_cpus: f64) -> Judgement {
    let mut j = Judgement::default();
    match (a.others_cpus, a.busy_share) {
        (Some(others), _) if others > max_other_cpus => j.warnings.push(format!(
            "other processes used {others:.2} CPUs on average during the run (limit {max_other_cpus}): the host was busy"
        )),
        (Some(_), _) => {}
        (None, Some(_)) => j.notes.push(match (a.busy_cpu_ns, a.measured_cpu_ns) {
            (Some(busy), Some(own)) => format!(
                "others' CPU use is unknown: the host's busy time ({:.2} s) fell short of the measured processes' own \
                 CPU time ({:.2} s) beyond tick rounding, so the two clocks disagree",
                busy as f64 / 1e9,
                own as f64 / 1e9
            ),
            _ => "the measured processes' CPU time is unknown, so others' use is too".into(),
        }),
        (None, None) => {
            if let Some(load) = a.load1_start.filter(|&l| l > 1.0 + max_other_cpus) {
                j.warnings.push(format!(
                    "the 1-minute load was {load:.2} at the start (limit {}): the host was probably busy",
                    1.0 + max_other_cpus
                ));
            }
        }
    }
    frequency(a, &mut j);
    if let Some(limit) = a.cpu_speed_limit_pct.filter(|&l| l < 100) {
        j.warnings.push(format!("the CPU speed limit was {limit} % (thermal throttling)"));
    }
    if let Some(levels) = a.thermal_warnings.as_ref().filter(|w| !w.is_empty()) {
        j.warnings.push(format!("macOS reported a thermal warning: {}", levels.join(" / ")));
    }
    if a.low_power_mode == Some(true) {
        j.warnings.push("Low Power Mode was on".into());
    }
    if a.power_source.as_deref() == Some("Battery Power") {
        j.notes.push("running on battery power".into());
    }
    j
}

fn frequency(a: &HostActivity, j: &mut Judgement) {
    let performance = a.governors.as_ref().is_some_and(|g| g.iter().all(|g| g == "performance"));
    if let Some(governors) = a.governors.as_ref().filter(|_| !performance) {
        j.notes.push(format!(
            "CPU frequency governor {}, not performance: the clock follows the load",
            governors.join(", ")
        ));
    }
    let (Some(start), Some(end)) = (a.freq_khz_start, a.freq_khz_end) else {
        return;
    };
    if start.max == 0 {
        return;
    }
    let drop = 1.0 - end.max as f64 / start.max as f64;
    if drop > MAX_FREQ_DROP {
        let sentence = format!(
            "the fastest CPU's clock fell from {} to {} MHz ({:.0} %) during the run",
            start.max / 1000,
            end.max / 1000,
            drop * 100.0
        );
        if performance {
            j.warnings.push(format!("{sentence} under the performance governor: throttled"));
        } else {
            j.notes.push(sentence);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::linux::Range;

    fn quiet() -> HostActivity {
        HostActivity {
            wall_ns: 1_000_000_000,
            cpus: Some(2),
            busy_share: Some(0.5),
            busy_cpu_ns: Some(1_000_000_000),
            measured_cpu_ns: Some(950_000_000),
            others_cpu_ns: Some(50_000_000),
            others_cpus: Some(0.05),
            load1_start: Some(1.0),
            load1_end: Some(1.1),
            freq_khz_start: Some(Range { min: 2_900_000, max: 3_000_000 }),
            freq_khz_end: Some(Range { min: 2_900_000, max: 2_950_000 }),
            governors: Some(vec!["performance".into()]),
            cpu_speed_limit_pct: None,
            thermal_warnings: None,
            power_source: None,
            low_power_mode: None,
        }
    }

    #[test]
    fn a_quiet_host_gives_neither_warnings_nor_notes() {
        assert_eq!(judge(&quiet(), MAX_OTHER_CPUS), Judgement::default());
        assert_eq!(busy(&quiet(), MAX_OTHER_CPUS), None);
    }

    #[test]
    fn others_above_the_limit_warn() {
        let a = HostActivity { others_cpus: Some(0.8), ..quiet() };
        let warning = busy(&a, MAX_OTHER_CPUS).unwrap();
        assert!(warning.contains("0.80 CPUs") && warning.contains("busy"), "{warning}");
        assert_eq!(busy(&a, 1.0), None, "within a higher limit");
    }

    #[test]
    fn without_proc_stat_the_load_decides() {
        let mac = HostActivity { busy_share: None, others_cpus: None, load1_start: Some(2.5), ..quiet() };
        assert!(busy(&mac, MAX_OTHER_CPUS).unwrap().contains("load was 2.50"));
        let calm = HostActivity { load1_start: Some(1.1), ..mac };
        assert_eq!(busy(&calm, MAX_OTHER_CPUS), None, "the previous worker may account for 1");
    }

    #[test]
    fn unknown_measured_time_is_a_note() {
        let a = HostActivity { others_cpus: None, others_cpu_ns: None, measured_cpu_ns: None, ..quiet() };
        let j = judge(&a, MAX_OTHER_CPUS);
        assert!(j.warnings.is_empty());
        assert_eq!(j.notes.len(), 1, "{j:?}");
        // Clocks that disagree: what each measured, not a 0.
        let a = HostActivity {
            others_cpus: None,
            others_cpu_ns: None,
            busy_cpu_ns: Some(1_200_000_000),
            measured_cpu_ns: Some(1_900_000_000),
            ..quiet()
        };
        let j = judge(&a, MAX_OTHER_CPUS);
        assert!(j.warnings.is_empty());
        assert!(
            j.notes[0].contains("busy time (1.20 s) fell short of the measured processes' own CPU time (1.90 s)"),
            "{j:?}"
        );
    }

    #[test]
    fn a_clock_drop_warns_only_under_the_performance_governor() {
        let dropped = HostActivity { freq_khz_end: Some(Range { min: 1_000_000, max: 2_400_000 }), ..quiet() };
        let warning = busy(&dropped, MAX_OTHER_CPUS).unwrap();
        assert!(warning.contains("from 3000 to 2400 MHz (20 %)") && warning.contains("throttled"), "{warning}");
        let schedutil = HostActivity { governors: Some(vec!["schedutil".into()]), ..dropped.clone() };
        let j = judge(&schedutil, MAX_OTHER_CPUS);
        assert!(j.warnings.is_empty(), "{j:?}");
        assert_eq!(j.notes.len(), 2, "governor and clock fall: {j:?}");
        let small = HostActivity { freq_khz_end: Some(Range { min: 1, max: 2_750_000 }), ..quiet() };
        assert_eq!(busy(&small, MAX_OTHER_CPUS), None, "8 % is within 10 %");
    }

    #[test]
    fn macos_throttling_and_low_power_warn_and_battery_is_a_note() {
        let a = HostActivity {
            cpu_speed_limit_pct: Some(70),
            thermal_warnings: Some(vec!["Thermal warning level set to 1.".into()]),
            low_power_mode: Some(true),
            power_source: Some("Battery Power".into()),
            ..quiet()
        };
        let j = judge(&a, MAX_OTHER_CPUS);
        assert_eq!(j.warnings.len(), 3, "{j:?}");
        assert_eq!(j.notes, vec!["running on battery power".to_owned()]);
        let unthrottled = HostActivity { cpu_speed_limit_pct: Some(100), thermal_warnings: Some(vec![]), ..quiet() };
        assert_eq!(busy(&unthrottled, MAX_OTHER_CPUS), None);
    }
}
