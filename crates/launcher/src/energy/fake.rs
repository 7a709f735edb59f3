//! The fake source, test-only: in-process counter values, either scripted reading by reading
//! (the unit tests) or from a spec in `DECODE_BASELINE_FAKE_ENERGY` (a whole session from the
//! command line, for demonstration). A session that used it records the spec in
//! `energy.fake`, and the table and the page mark every energy figure of it as fake.
//!
//! The spec is `key=value` pairs separated by commas, every key optional:
//! - `watts=W` (default 100): the counter advances `W` × the wall time since it was opened;
//! - `wrap=U`: the counter wraps at `U` µJ (powercap's `max_energy_range_uj`);
//! - `throttle_every=N`: every N-th reading reports HwSlowdown (0x8) and a lower SM clock;
//! - `reset_at=K`: the counter restarts from 0 at the K-th reading (1-based), as a driver
//!   reload does.

use std::time::{Duration, Instant};

use super::source::{Clocks, Counter, DomainSample, EnergySource, Unit};

/// The test-only variable that replaces every real source with a [`FakeSource`].
pub const FAKE_ENERGY_ENV: &str = "DECODE_BASELINE_FAKE_ENERGY";

/// A parsed `DECODE_BASELINE_FAKE_ENERGY`.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeSpec {
    pub watts: f64,
    pub wrap: Option<u64>,
    pub throttle_every: Option<u64>,
    pub reset_at: Option<u64>,
}

impl FakeSpec {
    /// Parses `text`; the error names the key and what was expected.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut spec = FakeSpec { watts: 100.0, wrap: None, throttle_every: None, reset_at: None };
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) =
                part.split_once('=').ok_or_else(|| format!("{FAKE_ENERGY_ENV}: expected key=value, got {part:?}"))?;
            let positive = || match value.parse::<u64>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(format!("{FAKE_ENERGY_ENV}: {key}: expected a positive integer, got {value:?}")),
            };
            match key {
                "watts" => {
                    spec.watts =
                        value.parse::<f64>().ok().filter(|w| w.is_finite() && *w > 0.0).ok_or_else(|| {
                            format!("{FAKE_ENERGY_ENV}: watts: expected a positive number, got {value:?}")
                        })?
                }
                "wrap" => spec.wrap = Some(positive()?),
                "throttle_every" => spec.throttle_every = Some(positive()?),
                "reset_at" => spec.reset_at = Some(positive()?),
                other => {
                    return Err(format!(
                        "{FAKE_ENERGY_ENV}: unknown key {other:?}; expected watts, wrap, throttle_every or reset_at"
                    ))
                }
            }
        }
        Ok(spec)
    }
}

/// Where the readings of a fake come from.
enum Script {
    /// These readings in order, the last one repeated.
    Readings(Vec<Vec<DomainSample>>),
    /// A counter driven by the wall time and a spec.
    Spec { spec: FakeSpec, opened: Instant, base: Duration },
}

/// An in-process source of scripted readings.
pub struct FakeSource {
    script: Script,
    domains: Vec<String>,
    reads: u64,
}

impl std::fmt::Debug for FakeSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeSource").field("domains", &self.domains).field("reads", &self.reads).finish()
    }
}

/// The fake's SM clock, MHz, and the one it reports while throttled.
const FAKE_SM_MHZ: (u32, u32) = (1500, 1000);

impl FakeSource {
    /// Readings given one by one: each call to `read` returns the next (the last repeats).
    pub fn scripted(readings: Vec<Vec<DomainSample>>) -> Self {
        let domains = readings.first().map(|r| r.iter().map(|d| d.domain.clone()).collect()).unwrap_or_default();
        FakeSource { script: Script::Readings(readings), domains, reads: 0 }
    }

    /// A counter from `spec`, advancing with the wall time from now.
    pub fn from_spec(spec: FakeSpec) -> Self {
        FakeSource {
            script: Script::Spec { spec, opened: Instant::now(), base: Duration::ZERO },
            domains: vec!["fake:0".into()],
            reads: 0,
        }
    }

    /// The `k`-th reading (1-based) of a spec'd counter, `elapsed` after it was opened.
    fn spec_reading(spec: &FakeSpec, base: &mut Duration, k: u64, elapsed: Duration) -> DomainSample {
        if spec.reset_at == Some(k) {
            *base = elapsed;
        }
        let uj = (spec.watts * elapsed.saturating_sub(*base).as_secs_f64() * 1e6) as u64;
        let throttled = spec.throttle_every.is_some_and(|n| k % n == 0);
        DomainSample {
            domain: "fake:0".into(),
            energy: Some(Counter { value: spec.wrap.map_or(uj, |w| uj % w), unit: Unit::Microjoules, wrap: spec.wrap }),
            clocks: Some(Clocks { sm_mhz: if throttled { FAKE_SM_MHZ.1 } else { FAKE_SM_MHZ.0 }, mem_mhz: 1000 }),
            reasons: Some(if throttled { 0x8 } else { 0 }),
            thermal: None,
        }
    }
}

impl EnergySource for FakeSource {
    fn name(&self) -> &'static str {
        "fake"
    }

    fn domains(&self) -> Vec<String> {
        self.domains.clone()
    }

    fn read(&mut self) -> Vec<DomainSample> {
        self.reads += 1;
        match &mut self.script {
            Script::Readings(readings) => {
                let i = (self.reads as usize - 1).min(readings.len().saturating_sub(1));
                readings.get(i).cloned().unwrap_or_default()
            }
            Script::Spec { spec, opened, base } => {
                vec![Self::spec_reading(spec, base, self.reads, opened.elapsed())]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_parses_and_refuses_by_key() {
        let spec = FakeSpec::parse("watts=150, wrap=2000000,throttle_every=7,reset_at=3").unwrap();
        assert_eq!(spec, FakeSpec { watts: 150.0, wrap: Some(2_000_000), throttle_every: Some(7), reset_at: Some(3) });
        assert_eq!(FakeSpec::parse("").unwrap().watts, 100.0);
        assert_eq!(
            FakeSpec::parse("watts=-1").unwrap_err(),
            "DECODE_BASELINE_FAKE_ENERGY: watts: expected a positive number, got \"-1\""
        );
        assert_eq!(
            FakeSpec::parse("wrap=0").unwrap_err(),
            "DECODE_BASELINE_FAKE_ENERGY: wrap: expected a positive integer, got \"0\""
        );
        assert!(FakeSpec::parse("volts=3").unwrap_err().contains("unknown key \"volts\""));
        assert!(FakeSpec::parse("watts").unwrap_err().contains("expected key=value"));
    }

    #[test]
    fn a_spec_counter_follows_the_wall_time_wraps_resets_and_throttles() {
        let spec = FakeSpec { watts: 100.0, wrap: Some(250_000), throttle_every: Some(2), reset_at: Some(3) };
        let mut base = Duration::ZERO;
        let ms = Duration::from_millis;
        let value = |s: &DomainSample| s.energy.unwrap().value;
        // 100 W for 1 ms is 100 mJ = 100 000 µJ.
        let first = FakeSource::spec_reading(&spec, &mut base, 1, ms(1));
        assert_eq!((value(&first), first.reasons), (100_000, Some(0)));
        let second = FakeSource::spec_reading(&spec, &mut base, 2, ms(3));
        assert_eq!(value(&second), 50_000, "300 000 µJ wrapped at 250 000");
        assert_eq!((second.reasons, second.clocks.unwrap().sm_mhz), (Some(0x8), 1000));
        let third = FakeSource::spec_reading(&spec, &mut base, 3, ms(4));
        assert_eq!(value(&third), 0, "reset at the third reading");
        assert_eq!(value(&FakeSource::spec_reading(&spec, &mut base, 4, ms(5))), 100_000);
    }

    #[test]
    fn scripted_readings_come_in_order_and_the_last_repeats() {
        let r =
            |v| vec![DomainSample::energy("fake:0", Some(Counter { value: v, unit: Unit::Microjoules, wrap: None }))];
        let mut fake = FakeSource::scripted(vec![r(1), r(5)]);
        assert_eq!(fake.domains(), ["fake:0"]);
        let values: Vec<u64> = (0..3).map(|_| fake.read()[0].energy.unwrap().value).collect();
        assert_eq!(values, [1, 5, 5]);
    }
}
