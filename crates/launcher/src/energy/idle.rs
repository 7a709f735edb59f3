//! The idle reading before a group: every member loaded and waiting at the gate, nothing
//! granted, the counters read across a given duration. Its power times a request's wall time
//! is the energy the request would have cost doing nothing, so that energy can be shown with
//! and without idle.

use std::time::Duration;

use decode_baseline_wire::energy::{DomainEnergy, IdleReading};

use super::{delta::domain_energies, meter::Meter};

/// How long the launcher's idle reading before each interleaved group lasts. A request's idle
/// energy is this reading's power times the request's own wall time, so the reading need not
/// last exactly one request (whose length is not known before it runs).
pub const IDLE_WINDOW: Duration = Duration::from_secs(1);

/// What an idle reading measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Idle {
    /// Monotonic time between the two samples, ns.
    pub wall_ns: u64,
    pub domains: Vec<DomainEnergy>,
}

/// The session's record of `idle`, taken before the group of `cell`, `repetition` (`aa`: the
/// A/A group).
pub fn idle_reading(cell: &str, repetition: u32, aa: bool, idle: Idle) -> IdleReading {
    IdleReading { cell: cell.to_owned(), repetition, aa, wall_ns: idle.wall_ns, domains: idle.domains }
}

/// Samples `meter`, sleeps `duration`, samples again.
pub fn measure_idle(meter: &mut Meter, duration: Duration) -> Idle {
    let start = meter.sample();
    std::thread::sleep(duration);
    let end = meter.sample();
    Idle {
        wall_ns: end.at.saturating_duration_since(start.at).as_nanos() as u64,
        domains: domain_energies(&[start, end]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::energy::{FakeSource, FakeSpec};

    #[test]
    fn an_idle_reading_lasts_the_duration_and_measures_the_power() {
        let spec = FakeSpec { watts: 40.0, wrap: None, throttle_every: None, reset_at: None };
        let mut meter = Meter::new(vec![Box::new(FakeSource::from_spec(spec))], Vec::new(), Some("watts=40".into()));
        let idle = measure_idle(&mut meter, Duration::from_millis(50));
        assert!(idle.wall_ns >= 50_000_000, "{}", idle.wall_ns);
        let joules = idle.domains[0].energy_uj.unwrap() as f64 / 1e6;
        let watts = joules / (idle.wall_ns as f64 / 1e9);
        // The fake's clock and the sampler's are read a few µs apart.
        assert!((watts - 40.0).abs() < 1.0, "{watts} W");
    }
}
