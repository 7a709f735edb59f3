//! The session's energy sources, opened once: the host's (NVML and powercap on Linux, the stub
//! on macOS), or the fake alone when `DECODE_BASELINE_FAKE_ENERGY` is set. What could not be
//! opened is kept with its reason, for the session's one line about it.

use std::time::Instant;

use decode_baseline_wire::energy::{SessionEnergy, SourceState};

use super::{
    fake::{FakeSource, FakeSpec, FAKE_ENERGY_ENV},
    source::{EnergySource, MissingSource, Snapshot},
};

/// The opened sources and the missing ones.
pub struct Meter {
    sources: Vec<Box<dyn EnergySource>>,
    missing: Vec<MissingSource>,
    /// The fake's spec, when the fake replaced the host's sources.
    fake: Option<String>,
}

impl std::fmt::Debug for Meter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.sources.iter().map(|s| s.name()).collect();
        f.debug_struct("Meter")
            .field("sources", &names)
            .field("missing", &self.missing)
            .field("fake", &self.fake)
            .finish()
    }
}

impl Meter {
    /// A meter of the given sources.
    pub fn new(sources: Vec<Box<dyn EnergySource>>, missing: Vec<MissingSource>, fake: Option<String>) -> Self {
        Meter { sources, missing, fake }
    }

    /// The fake when `DECODE_BASELINE_FAKE_ENERGY` is set and not blank (an unparsable spec is
    /// an error naming the key), else the host's sources.
    pub fn from_environment() -> Result<Self, String> {
        Self::from_fake_variable(std::env::var(FAKE_ENERGY_ENV).ok().as_deref())
    }

    /// [`Meter::from_environment`] given the variable's value.
    pub fn from_fake_variable(value: Option<&str>) -> Result<Self, String> {
        match value.filter(|v| !v.trim().is_empty()) {
            Some(text) => {
                let spec = FakeSpec::parse(text)?;
                Ok(Meter::new(vec![Box::new(FakeSource::from_spec(spec))], Vec::new(), Some(text.to_owned())))
            }
            None => Ok(Self::host()),
        }
    }

    /// The host's sources: NVML and powercap on Linux, the macOS stub on macOS.
    pub fn host() -> Self {
        let mut meter = Meter::new(Vec::new(), Vec::new(), None);
        if cfg!(target_os = "linux") {
            meter.try_open("nvml", super::nvml::Nvml::open);
            meter.try_open("powercap", super::powercap::Powercap::open);
        } else {
            meter.try_open("macos", super::macos::MacSource::open);
        }
        meter
    }

    fn try_open<S: EnergySource + 'static>(
        &mut self,
        source: &'static str,
        open: impl FnOnce() -> Result<S, super::source::Missing>,
    ) {
        match open() {
            Ok(s) => self.sources.push(Box::new(s)),
            Err(why) => self.missing.push(MissingSource { source, why }),
        }
    }

    /// Whether any source was opened.
    pub fn is_active(&self) -> bool {
        !self.sources.is_empty()
    }

    /// Every domain of every source, now.
    pub fn sample(&mut self) -> Snapshot {
        let domains = self.sources.iter_mut().flat_map(|s| s.read()).collect();
        Snapshot { at: Instant::now(), domains }
    }

    /// The session's energy record as far as the sources go: which were read, which are
    /// missing and why; no readings yet.
    pub fn record(&self) -> SessionEnergy {
        let opened =
            self.sources.iter().map(|s| SourceState { source: s.name().into(), missing: None, domains: s.domains() });
        let missing = self.missing.iter().map(|m| SourceState {
            source: m.source.into(),
            missing: Some(m.why.to_string()),
            domains: Vec::new(),
        });
        SessionEnergy {
            fake: self.fake.clone(),
            sources: opened.chain(missing).collect(),
            idle: Vec::new(),
            cells: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::energy::{render::sources_line, source::Missing};

    #[test]
    fn the_missing_sources_are_recorded_with_their_reasons_and_make_one_line() {
        let meter = Meter::new(
            Vec::new(),
            vec![
                MissingSource { source: "nvml", why: Missing::NoDriver { library: "libnvidia-ml.so.1".into() } },
                MissingSource {
                    source: "powercap",
                    why: Missing::NoPowercap { path: PathBuf::from("/sys/class/powercap") },
                },
            ],
            None,
        );
        assert!(!meter.is_active());
        let record = meter.record();
        assert_eq!(record.sources[0].missing.as_deref(), Some("no NVIDIA driver: libnvidia-ml.so.1 not found"));
        assert_eq!(
            sources_line(&record),
            "energy: no source: nvml missing (no NVIDIA driver: libnvidia-ml.so.1 not found), \
             powercap missing (/sys/class/powercap absent)"
        );
    }

    #[test]
    fn a_root_only_counter_beside_a_read_gpu_makes_a_line_of_both() {
        // NVML through the stub would need a C compiler; a fake stands in for a read source.
        let counter = PathBuf::from("/sys/class/powercap/intel-rapl:0/energy_uj");
        let meter = Meter::new(
            vec![Box::new(FakeSource::scripted(vec![vec![crate::energy::DomainSample::energy("fake:0", None)]]))],
            vec![MissingSource { source: "powercap", why: Missing::NotRoot { path: counter } }],
            None,
        );
        assert_eq!(
            sources_line(&meter.record()),
            "energy: from fake (fake:0); powercap missing (not root (energy_uj is root-only since Linux 5.10): \
             /sys/class/powercap/intel-rapl:0/energy_uj)"
        );
    }

    #[test]
    fn the_fake_variable_replaces_every_source_and_a_blank_one_nothing() {
        let fake = Meter::from_fake_variable(Some("watts=7")).unwrap();
        let record = fake.record();
        assert_eq!(record.fake.as_deref(), Some("watts=7"));
        assert_eq!(record.sources.len(), 1);
        assert_eq!(
            (record.sources[0].source.as_str(), &record.sources[0].domains[..]),
            ("fake", &["fake:0".to_owned()][..])
        );
        for blank in [None, Some(""), Some("  ")] {
            let record = Meter::from_fake_variable(blank).unwrap().record();
            assert!(record.fake.is_none() && record.sources.iter().all(|s| s.source != "fake"), "{blank:?}");
        }
        assert!(Meter::from_fake_variable(Some("wrap=x")).unwrap_err().contains("wrap: expected a positive integer"));
    }

    #[test]
    fn this_host_says_what_it_has() {
        // Whatever this machine has, every source is either read (with domains) or missing
        // with a reason, never both and never neither; and what the host visibly lacks is
        // missing, with that reason: no NVIDIA driver (its /proc entry) means no NVML domain,
        // no powercap class means powercap absent.
        let record = Meter::host().record();
        assert!(!record.sources.is_empty());
        for s in &record.sources {
            assert_eq!(s.missing.is_some(), s.domains.is_empty(), "{s:?}");
        }
        let source = |name: &str| record.sources.iter().find(|s| s.source == name);
        if !Path::new("/proc/driver/nvidia/version").exists() {
            let nvml = source("nvml").expect("nvml is always tried");
            assert!(nvml.domains.is_empty() && nvml.missing.is_some(), "{nvml:?}");
        }
        if cfg!(target_os = "linux") && !Path::new("/sys/class/powercap").exists() {
            let powercap = source("powercap").expect("powercap is tried on Linux");
            assert!(powercap.missing.as_deref().is_some_and(|m| m.contains("/sys/class/powercap")), "{powercap:?}");
        }
        eprintln!("{}", sources_line(&record));
    }
}
