//! The gate's side of energy: the launcher calls [`GroupRecorder`] just before it writes a
//! grant, on every look while the request runs, and when it sees the request's done file; the
//! recorder samples the meter there, so each request's interval holds the whole request (and
//! at most one gate tick on each side), outside every interval the workers time. Before the
//! group's first grant it takes the idle reading.

use std::time::Duration;

use decode_baseline_wire::energy::RequestEnergy;

use super::{
    delta::request_energy,
    idle::{measure_idle, Idle},
    meter::Meter,
    source::Snapshot,
};

/// How often a running request is sampled in between (for throttle bits and wraps).
pub const MID_SAMPLE_EVERY: Duration = Duration::from_millis(50);

/// The request being measured.
#[derive(Debug)]
struct Pending {
    member: usize,
    request: u32,
    samples: Vec<Snapshot>,
}

/// The energy readings of one interleaved group.
#[derive(Debug)]
pub struct GroupRecorder<'a> {
    meter: &'a mut Meter,
    idle_window: Duration,
    idle: Option<Idle>,
    idle_taken: bool,
    pending: Option<Pending>,
    records: Vec<Vec<RequestEnergy>>,
}

impl<'a> GroupRecorder<'a> {
    /// A recorder for a group of `members`, whose idle reading lasts `idle_window` (zero: none).
    pub fn new(meter: &'a mut Meter, members: usize, idle_window: Duration) -> Self {
        GroupRecorder {
            meter,
            idle_window,
            idle: None,
            idle_taken: false,
            pending: None,
            records: vec![Vec::new(); members],
        }
    }

    /// Just before `request` of `member` is granted.
    pub fn before_grant(&mut self, member: usize, request: u32) {
        if !self.meter.is_active() {
            return;
        }
        if !self.idle_taken {
            self.idle_taken = true;
            if !self.idle_window.is_zero() {
                self.idle = Some(measure_idle(self.meter, self.idle_window));
            }
        }
        self.pending = Some(Pending { member, request, samples: vec![self.meter.sample()] });
    }

    /// On every look of the gate loop: a sample in between when the last is old enough.
    pub fn tick(&mut self) {
        let Some(pending) = &mut self.pending else { return };
        if pending.samples.last().is_some_and(|s| s.at.elapsed() >= MID_SAMPLE_EVERY) {
            pending.samples.push(self.meter.sample());
        }
    }

    /// When `request` of `member` is seen done.
    pub fn done(&mut self, member: usize, request: u32) {
        match self.pending.take() {
            Some(mut p) if p.member == member && p.request == request => {
                p.samples.push(self.meter.sample());
                self.records[member].push(request_energy(request, &p.samples));
            }
            other => self.pending = other,
        }
    }

    /// When `member` ended without finishing its request: that request has no energy.
    pub fn abandoned(&mut self, member: usize) {
        if self.pending.as_ref().is_some_and(|p| p.member == member) {
            self.pending = None;
        }
    }

    /// The idle reading and, per member, its requests' energy.
    pub fn finish(self) -> (Option<Idle>, Vec<Vec<RequestEnergy>>) {
        (self.idle, self.records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::energy::{FakeSource, FakeSpec};

    fn fake_meter(spec: FakeSpec) -> Meter {
        Meter::new(vec![Box::new(FakeSource::from_spec(spec))], Vec::new(), Some("test".into()))
    }

    #[test]
    fn each_granted_request_gets_its_own_interval_and_an_abandoned_one_none() {
        let mut meter = fake_meter(FakeSpec { watts: 100.0, wrap: None, throttle_every: None, reset_at: None });
        let mut rec = GroupRecorder::new(&mut meter, 2, Duration::from_millis(5));
        rec.before_grant(0, 0);
        std::thread::sleep(Duration::from_millis(60));
        rec.tick();
        rec.done(1, 0); // not the outstanding request: ignored
        rec.done(0, 0);
        rec.before_grant(1, 0);
        rec.abandoned(1);
        rec.done(1, 0);
        let (idle, records) = rec.finish();
        assert!(idle.is_some_and(|i| i.wall_ns >= 5_000_000));
        assert_eq!(records[0].len(), 1);
        assert!(records[1].is_empty(), "the abandoned request has no record");
        let r = &records[0][0];
        assert_eq!((r.index, r.samples), (0, 3), "start, one in between, end");
        let watts = r.domains[0].energy_uj.unwrap() as f64 / (r.wall_ns as f64 / 1e3);
        assert!((watts - 100.0).abs() < 5.0, "{watts} W");
    }

    #[test]
    fn without_a_source_nothing_is_sampled() {
        let mut meter = Meter::new(Vec::new(), Vec::new(), None);
        let mut rec = GroupRecorder::new(&mut meter, 1, Duration::from_secs(60));
        rec.before_grant(0, 0);
        rec.done(0, 0);
        let (idle, records) = rec.finish();
        assert!(idle.is_none() && records[0].is_empty());
    }
}
