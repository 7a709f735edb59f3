//! From counter readings to energy: the delta of one counter between two readings (wrap and
//! reset), over a sequence of readings (start, any in between, end), and the record of one
//! request from the snapshots taken around it.
//!
//! - A counter that goes backwards wrapped if it has a wrap range `W` (powercap's
//!   `max_energy_range_uj`): the delta is `(W - start) + end`. Summing the deltas of
//!   consecutive readings counts one wrap per gap, so a request sampled in between survives
//!   several.
//! - One that goes backwards without a wrap range was reset (NVML's counter restarts when the
//!   driver reloads): the interval's energy is dropped and counted, as vLLM does, never guessed.
//! - A delta whose mean power over the interval exceeds [`MAX_PLAUSIBLE_WATTS`] is a reset the
//!   wrap range hid (a counter reset to 0 looks like a wrap from a high start): dropped too.
//!
//! The clocks-event reason bits of every snapshot are OR-ed, so a throttle seen at any sample
//! marks the request; the thermal state is the worst sampled.

use std::time::Duration;

use decode_baseline_wire::energy::{DomainEnergy, Dropped, RequestEnergy, ThermalState, THROTTLE_REASONS};

use super::source::{Counter, DomainSample, Snapshot};

/// Mean power above which a delta is taken for a hidden reset: well above any single device or
/// CPU package (the largest GPUs draw about 1 kW).
pub const MAX_PLAUSIBLE_WATTS: f64 = 5_000.0;

/// Energy between two readings of one counter, microjoules.
pub fn counter_delta(start: &Counter, end: &Counter) -> Result<u64, Dropped> {
    let delta = if end.value >= start.value {
        end.value - start.value
    } else {
        match end.wrap {
            Some(range) if start.value <= range => (range - start.value) + end.value,
            _ => return Err(Dropped::CounterReset),
        }
    };
    Ok(end.unit.to_microjoules(delta))
}

/// Energy over a sequence of readings of one counter taken over `wall`, microjoules: the sum of
/// the consecutive deltas, dropped when a reading is missing, the counter was reset, or the
/// mean power is implausible.
pub fn interval_energy(readings: &[Option<Counter>], wall: Duration) -> Result<u64, Dropped> {
    let counters: Vec<Counter> = readings.iter().copied().collect::<Option<_>>().ok_or(Dropped::Unreadable)?;
    if counters.len() < 2 {
        return Err(Dropped::Unreadable);
    }
    let mut total: u64 = 0;
    for pair in counters.windows(2) {
        total = total.saturating_add(counter_delta(&pair[0], &pair[1])?);
    }
    let seconds = wall.as_secs_f64().max(1e-6);
    if total as f64 / 1e6 / seconds > MAX_PLAUSIBLE_WATTS {
        return Err(Dropped::Implausible);
    }
    Ok(total)
}

/// Per domain of the first snapshot, its energy over `snapshots` with the clocks at the first
/// and the last.
pub fn domain_energies(snapshots: &[Snapshot]) -> Vec<DomainEnergy> {
    let (Some(first), Some(last)) = (snapshots.first(), snapshots.last()) else { return Vec::new() };
    let wall = last.at.saturating_duration_since(first.at);
    first
        .domains
        .iter()
        .map(|d| {
            fn find<'s>(s: &'s Snapshot, domain: &str) -> Option<&'s DomainSample> {
                s.domains.iter().find(|x| x.domain == domain)
            }
            let find = |s| find(s, &d.domain);
            let readings: Vec<Option<Counter>> = snapshots.iter().map(|s| find(s).and_then(|x| x.energy)).collect();
            let energy = interval_energy(&readings, wall);
            DomainEnergy {
                domain: d.domain.clone(),
                energy_uj: energy.ok(),
                dropped: energy.err(),
                clocks_start: d.clocks,
                clocks_end: find(last).and_then(|x| x.clocks),
            }
        })
        .collect()
}

/// The record of request `index` from the snapshots taken before its grant, in between, and
/// after its done file.
pub fn request_energy(index: u32, snapshots: &[Snapshot]) -> RequestEnergy {
    let all = || snapshots.iter().flat_map(|s| &s.domains);
    let reasons = all().filter_map(|d| d.reasons).reduce(|a, b| a | b);
    let thermal = all().filter_map(|d| d.thermal).max();
    let wall = match (snapshots.first(), snapshots.last()) {
        (Some(a), Some(b)) => b.at.saturating_duration_since(a.at),
        _ => Duration::ZERO,
    };
    RequestEnergy {
        index,
        wall_ns: wall.as_nanos() as u64,
        samples: snapshots.len() as u32,
        domains: domain_energies(snapshots),
        reasons,
        thermal,
        throttled: reasons.is_some_and(|r| r & THROTTLE_REASONS != 0) || thermal >= Some(ThermalState::Serious),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::super::source::{Clocks, Unit};
    use super::*;

    fn uj(value: u64, wrap: Option<u64>) -> Counter {
        Counter { value, unit: Unit::Microjoules, wrap }
    }

    #[test]
    fn a_wrapped_counter_adds_the_rest_of_its_range() {
        // 1000 µJ range: from 900 up to the wrap (100) and on to 50.
        assert_eq!(counter_delta(&uj(900, Some(1000)), &uj(50, Some(1000))), Ok(150));
        assert_eq!(counter_delta(&uj(10, Some(1000)), &uj(60, Some(1000))), Ok(50));
        let mj = |value| Counter { value, unit: Unit::Millijoules, wrap: None };
        assert_eq!(counter_delta(&mj(7), &mj(10)), Ok(3000), "NVML's millijoules in µJ");
    }

    #[test]
    fn a_counter_that_goes_backwards_without_a_wrap_range_was_reset() {
        assert_eq!(counter_delta(&uj(900, None), &uj(50, None)), Err(Dropped::CounterReset));
        // A start above the stated range cannot have wrapped either.
        assert_eq!(counter_delta(&uj(2000, Some(1000)), &uj(50, Some(1000))), Err(Dropped::CounterReset));
    }

    #[test]
    fn readings_in_between_count_one_wrap_per_gap_and_a_gap_drops_the_interval() {
        let w = Some(1000);
        let second = Duration::from_secs(1);
        // Two wraps in one request: 800 → 300 (+500) → 900 (+600) → 200 (+300).
        let readings = [Some(uj(800, w)), Some(uj(300, w)), Some(uj(900, w)), Some(uj(200, w))];
        assert_eq!(interval_energy(&readings, second), Ok(1400));
        assert_eq!(interval_energy(&[Some(uj(1, w)), None, Some(uj(5, w))], second), Err(Dropped::Unreadable));
        assert_eq!(interval_energy(&[Some(uj(1, w))], second), Err(Dropped::Unreadable));
    }

    #[test]
    fn a_reset_hidden_by_the_wrap_range_is_implausible() {
        // A 262 kJ range (a typical RAPL package): reset from 200 kJ to 0 reads as a 62 kJ
        // "wrap" within 1 s, 62 kW.
        let w = Some(262_143_328_850);
        let readings = [Some(uj(200_000_000_000, w)), Some(uj(1_000_000, w))];
        assert_eq!(interval_energy(&readings, Duration::from_secs(1)), Err(Dropped::Implausible));
        // The same wrap over a day is 0.7 W: kept.
        assert!(interval_energy(&readings, Duration::from_secs(86_400)).is_ok());
    }

    fn snapshot(at: Instant, value: u64, reasons: Option<u64>, sm: u32) -> Snapshot {
        Snapshot {
            at,
            domains: vec![DomainSample {
                domain: "nvml:0".into(),
                energy: Some(Counter { value, unit: Unit::Millijoules, wrap: None }),
                clocks: Some(Clocks { sm_mhz: sm, mem_mhz: 1593 }),
                reasons,
                thermal: None,
            }],
        }
    }

    #[test]
    fn a_throttle_bit_seen_at_any_sample_marks_the_request_and_clocks_are_start_and_end() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let samples = [
            snapshot(t0, 100, Some(0x1), 1980),
            snapshot(ms(50), 110, Some(0x40), 1410),
            snapshot(ms(100), 125, Some(0), 1500),
        ];
        let r = request_energy(4, &samples);
        assert_eq!((r.index, r.samples, r.wall_ns), (4, 3, 100_000_000));
        assert_eq!(r.reasons, Some(0x41), "the idle bit and HwThermalSlowdown, OR-ed");
        assert!(r.throttled);
        assert_eq!(r.domains[0].energy_uj, Some(25_000));
        assert_eq!(r.domains[0].clocks_start.map(|c| c.sm_mhz), Some(1980));
        assert_eq!(r.domains[0].clocks_end.map(|c| c.sm_mhz), Some(1500));

        // Only GpuIdle and SyncBoost: not throttling.
        let calm = request_energy(5, &[snapshot(t0, 1, Some(0x1), 1980), snapshot(ms(10), 2, Some(0x10), 1980)]);
        assert_eq!(calm.reasons, Some(0x11));
        assert!(!calm.throttled);
        // A source without reasons says nothing either way.
        let none = request_energy(6, &[snapshot(t0, 1, None, 1), snapshot(ms(10), 2, None, 1)]);
        assert_eq!((none.reasons, none.throttled), (None, false));
    }

    #[test]
    fn a_serious_thermal_state_is_throttled() {
        let t0 = Instant::now();
        let mut a = snapshot(t0, 1, None, 1);
        let mut b = snapshot(t0 + Duration::from_millis(5), 2, None, 1);
        a.domains[0].thermal = Some(ThermalState::Fair);
        b.domains[0].thermal = Some(ThermalState::Serious);
        let r = request_energy(0, &[a.clone(), b]);
        assert_eq!((r.thermal, r.throttled), (Some(ThermalState::Serious), true));
        let mut fair = a.clone();
        fair.at += Duration::from_millis(5);
        assert!(!request_energy(0, &[a, fair]).throttled);
    }

    #[test]
    fn a_counter_reset_mid_request_drops_that_domain_only() {
        let t0 = Instant::now();
        let mut start = snapshot(t0, 5_000, None, 1);
        let mut end = snapshot(t0 + Duration::from_secs(1), 10, None, 1);
        start.domains.push(DomainSample::energy("powercap:package-0", Some(uj(100, Some(1000)))));
        end.domains.push(DomainSample::energy("powercap:package-0", Some(uj(600, Some(1000)))));
        let r = request_energy(0, &[start, end]);
        assert_eq!((r.domains[0].energy_uj, r.domains[0].dropped), (None, Some(Dropped::CounterReset)));
        assert_eq!((r.domains[1].energy_uj, r.domains[1].dropped), (Some(500), None));
    }
}
