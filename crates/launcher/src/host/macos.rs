//! macOS's views of the host, from its command-line tools: the load (`sysctl -n vm.loadavg`),
//! thermal throttling (`pmset -g therm`), the power source (`pmset -g batt`) and Low Power Mode
//! (`pmset -g`). The parsers are pure and tested on every platform; the readers run only on
//! macOS and have not been run there yet (untested: no macOS machine in this project's CI).

/// What one round of the macOS tools said; every value `None` where unreadable.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MacSample {
    pub load1: Option<f64>,
    pub therm: Option<Therm>,
    pub power_source: Option<String>,
    pub low_power_mode: Option<bool>,
}

/// What `pmset -g therm` said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Therm {
    /// `CPU_Speed_Limit`, percent (100: not throttled), where printed.
    pub speed_limit_pct: Option<u32>,
    /// Lines that report a thermal or performance warning level, verbatim; the "No ... has been
    /// recorded" notes are not warnings.
    pub warnings: Vec<String>,
}

/// Parses `sysctl -n vm.loadavg`, e.g. `{ 1.95 2.03 2.07 }`: the 1-minute load.
pub fn parse_vm_loadavg(text: &str) -> Option<f64> {
    let inner = text.trim().trim_start_matches('{').trim_end_matches('}');
    inner.split_whitespace().next()?.parse().ok().filter(|v: &f64| v.is_finite() && *v >= 0.0)
}

/// Parses `pmset -g therm`.
pub fn parse_therm(text: &str) -> Therm {
    let mut therm = Therm::default();
    for line in text.lines().map(str::trim) {
        if let Some(value) = line.strip_prefix("CPU_Speed_Limit").and_then(|rest| rest.trim().strip_prefix('=')) {
            therm.speed_limit_pct = value.trim().parse().ok();
        } else if line.to_ascii_lowercase().contains("warning level") && !line.contains("No ") {
            therm.warnings.push(line.to_owned());
        }
    }
    therm
}

/// Parses `pmset -g batt`: the source in `Now drawing from 'AC Power'`.
pub fn parse_power_source(text: &str) -> Option<String> {
    let rest = text.lines().find_map(|l| l.trim().strip_prefix("Now drawing from"))?;
    let source = rest.trim().trim_matches('\'');
    (!source.is_empty()).then(|| source.to_owned())
}

/// Parses `pmset -g`: the `lowpowermode` setting (absent before macOS 12).
pub fn parse_low_power_mode(text: &str) -> Option<bool> {
    let line = text.lines().find(|l| l.split_whitespace().next() == Some("lowpowermode"))?;
    match line.split_whitespace().nth(1)? {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

/// Runs the tools and parses what they print.
#[cfg(target_os = "macos")]
pub fn read() -> MacSample {
    fn output(program: &str, args: &[&str]) -> Option<String> {
        let out = std::process::Command::new(program).args(args).stderr(std::process::Stdio::null()).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }
    MacSample {
        load1: output("sysctl", &["-n", "vm.loadavg"]).as_deref().and_then(parse_vm_loadavg),
        therm: output("pmset", &["-g", "therm"]).as_deref().map(parse_therm),
        power_source: output("pmset", &["-g", "batt"]).as_deref().and_then(parse_power_source),
        low_power_mode: output("pmset", &["-g"]).as_deref().and_then(parse_low_power_mode),
    }
}

/// Elsewhere there is nothing to run.
#[cfg(not(target_os = "macos"))]
pub fn read() -> MacSample {
    MacSample::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_load_is_the_first_number_in_braces() {
        assert_eq!(parse_vm_loadavg("{ 1.95 2.03 2.07 }\n"), Some(1.95));
        assert_eq!(parse_vm_loadavg("{ }"), None);
        assert_eq!(parse_vm_loadavg(""), None);
    }

    #[test]
    fn therm_reads_the_speed_limit_and_only_real_warnings() {
        let quiet = "Note: No thermal warning level has been recorded\n\
            Note: No performance warning level has been recorded\n\
            Note: No CPU power status has been recorded\n";
        assert_eq!(parse_therm(quiet), Therm { speed_limit_pct: None, warnings: vec![] });
        let throttled = "Note: No thermal warning level has been recorded\n\
            Thermal warning level set to 1.\n\
            2026-12-01 10:00:00 +0000 CPU Power notify\n\
            \tCPU_Scheduler_Limit \t= 100\n\
            \tCPU_Available_CPUs \t= 8\n\
            \tCPU_Speed_Limit \t= 75\n";
        let therm = parse_therm(throttled);
        assert_eq!(therm.speed_limit_pct, Some(75));
        assert_eq!(therm.warnings, vec!["Thermal warning level set to 1.".to_owned()]);
    }

    #[test]
    fn the_power_source_is_quoted_after_now_drawing_from() {
        let batt = "Now drawing from 'Battery Power'\n -InternalBattery-0 (id=1234)\t85%; discharging; 4:10 remaining present: true\n";
        assert_eq!(parse_power_source(batt).as_deref(), Some("Battery Power"));
        assert_eq!(parse_power_source("Now drawing from 'AC Power'\n").as_deref(), Some("AC Power"));
        assert_eq!(parse_power_source("nothing\n"), None);
    }

    #[test]
    fn low_power_mode_is_the_lowpowermode_setting() {
        let pmset = "System-wide power settings:\nCurrently in use:\n standby              1\n lowpowermode         1\n sleep                1\n";
        assert_eq!(parse_low_power_mode(pmset), Some(true));
        assert_eq!(
            parse_low_power_mode(&pmset.replace("lowpowermode         1", "lowpowermode         0")),
            Some(false)
        );
        assert_eq!(parse_low_power_mode("Currently in use:\n sleep 1\n"), None, "before macOS 12");
    }

    #[cfg(not(target_os = "macos"))]
    #[test]
    fn elsewhere_nothing_is_read() {
        assert_eq!(read(), MacSample::default());
    }
}
