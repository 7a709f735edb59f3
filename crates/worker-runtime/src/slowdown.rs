//! The test-only slowdown: a fixed busy wait inside every decode step of one adapter, so that a
//! benchmark can check that the suite sees a difference of known size (`decode-baseline`'s
//! power bench, `req/compare.md`).
//!
//! `DECODE_BASELINE_TEST_SLOWDOWN_US=<µs>` with `DECODE_BASELINE_TEST_SLOWDOWN_ADAPTER=<adapter>`:
//! a worker of that adapter spins for the given microseconds at the `before_decode_step` poll,
//! which lies inside the step's timed interval in every mode. With
//! `DECODE_BASELINE_TEST_SLOWDOWN_SITE=before_seed_forward` it spins at the seed forward's poll
//! instead, once per request, inside the time to first token (a prefill slowed on purpose). The
//! report records it (`test_slowdown_us`), so a slowed run can never pass for a clean one. The
//! first two variables must be set together; an unparsable value is a refusal, not silence.

use std::time::{Duration, Instant};

use decode_baseline_wire::{
    hooks::{Site, SLOWDOWN_ADAPTER_ENV, SLOWDOWN_ENV, SLOWDOWN_SITES, SLOWDOWN_SITE_ENV},
    Adapter,
};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SlowdownError {
    #[error("{SLOWDOWN_ENV}={0:?} is not a whole number of microseconds")]
    BadMicros(String),
    #[error("{SLOWDOWN_ENV} and {SLOWDOWN_ADAPTER_ENV} must be set together")]
    Half,
    #[error("{SLOWDOWN_SITE_ENV}={0:?} names no slowdown site: expected before_decode_step or before_seed_forward")]
    BadSite(String),
}

/// The slowdown this worker applies, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slowdown {
    per_arrival: Option<Duration>,
    site: Site,
}

impl Default for Slowdown {
    fn default() -> Self {
        Self { per_arrival: None, site: Site::BeforeDecodeStep }
    }
}

impl Slowdown {
    /// Reads the variables for a worker of `adapter`.
    pub fn from_env(adapter: Adapter) -> Result<Self, SlowdownError> {
        let var = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        Self::parse(var(SLOWDOWN_ENV), var(SLOWDOWN_ADAPTER_ENV), var(SLOWDOWN_SITE_ENV), adapter)
    }

    fn parse(
        micros: Option<String>,
        target: Option<String>,
        site: Option<String>,
        adapter: Adapter,
    ) -> Result<Self, SlowdownError> {
        let site = match site {
            None => Site::BeforeDecodeStep,
            Some(name) => SLOWDOWN_SITES.into_iter().find(|s| s.name() == name).ok_or(SlowdownError::BadSite(name))?,
        };
        match (micros, target) {
            (None, None) => Ok(Self::default()),
            (Some(micros), Some(target)) => {
                let us: u32 = micros.trim().parse().map_err(|_| SlowdownError::BadMicros(micros.clone()))?;
                let applies = target == adapter.as_str() && us > 0;
                Ok(Self { per_arrival: applies.then(|| Duration::from_micros(u64::from(us))), site })
            }
            _ => Err(SlowdownError::Half),
        }
    }

    /// The microseconds per arrival at its site, for the report; `None` when this worker is not
    /// slowed.
    pub fn micros(&self) -> Option<u32> {
        self.per_arrival.map(|d| d.as_micros() as u32)
    }

    /// Whether the slowdown spins at `site`.
    fn spins_at(&self, site: Site) -> bool {
        self.per_arrival.is_some() && site == self.site
    }

    /// At `site`: spins for the slowdown when it is the slowdown's site (a sleep would round up
    /// by the scheduler's slack).
    pub fn apply(&self, site: Site) {
        if let Some(per_step) = self.per_arrival.filter(|_| self.spins_at(site)) {
            let until = Instant::now() + per_step;
            while Instant::now() < until {
                std::hint::spin_loop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_named_adapter_is_slowed_and_bad_values_are_refused() {
        let some = |s: &str| Some(s.to_owned());
        let slowed = Slowdown::parse(some("25"), some("controlled"), None, Adapter::Controlled).unwrap();
        assert_eq!(slowed.micros(), Some(25));
        assert_eq!(Slowdown::parse(some("25"), some("controlled"), None, Adapter::Stock).unwrap().micros(), None);
        assert_eq!(Slowdown::parse(None, None, None, Adapter::Stock).unwrap(), Slowdown::default());
        assert_eq!(
            Slowdown::parse(some("x"), some("stock"), None, Adapter::Stock),
            Err(SlowdownError::BadMicros("x".into()))
        );
        assert_eq!(Slowdown::parse(some("5"), None, None, Adapter::Stock), Err(SlowdownError::Half));
        assert_eq!(Slowdown::parse(None, some("stock"), None, Adapter::Stock), Err(SlowdownError::Half));
        assert_eq!(
            Slowdown::parse(some("5"), some("stock"), some("after_ready"), Adapter::Stock),
            Err(SlowdownError::BadSite("after_ready".into()))
        );

        let started = Instant::now();
        slowed.apply(Site::BeforeDecodeStep);
        assert!(started.elapsed() >= Duration::from_micros(25));
    }

    #[test]
    fn a_slowdown_spins_at_its_own_site_only() {
        let some = |s: &str| Some(s.to_owned());
        let seed = Slowdown::parse(some("20000"), some("controlled"), some("before_seed_forward"), Adapter::Controlled)
            .unwrap();
        let started = Instant::now();
        seed.apply(Site::BeforeSeedForward);
        assert!(started.elapsed() >= Duration::from_millis(20));
        assert!(seed.spins_at(Site::BeforeSeedForward));
        for site in [Site::BeforeDecodeStep, Site::BeforePrefillChunk, Site::AfterReady] {
            assert!(!seed.spins_at(site), "{site:?}");
        }
        let step = Slowdown::parse(some("5"), some("controlled"), None, Adapter::Controlled).unwrap();
        assert!(step.spins_at(Site::BeforeDecodeStep) && !step.spins_at(Site::BeforeSeedForward));
        assert!(!Slowdown::default().spins_at(Site::BeforeDecodeStep), "not slowed");
    }

    #[test]
    fn the_slowdown_spins_on_the_cpu_rather_than_sleeping() {
        // Issue 28: a sleep of 23 µs cost far more than asked, so the slowdown spins. A sleep
        // gives the CPU up, which the kernel counts as a voluntary context switch of the thread;
        // a spin never does (a busy host may still preempt it: those switches are involuntary
        // and counted apart), so the count tells the two apart however loaded the host is.
        use nix::sys::resource::{getrusage, UsageWho};
        let voluntary = || getrusage(UsageWho::RUSAGE_THREAD).expect("the thread's usage").voluntary_context_switches();
        let slowed = Slowdown { per_arrival: Some(Duration::from_millis(20)), site: Site::BeforeDecodeStep };
        let (wall, before) = (Instant::now(), voluntary());
        slowed.apply(Site::BeforeDecodeStep);
        let (elapsed, gave_up) = (wall.elapsed(), voluntary() - before);
        assert!(elapsed >= Duration::from_millis(20), "{elapsed:?}");
        assert_eq!(gave_up, 0, "the thread gave the CPU up {gave_up} times in a {elapsed:?} wait: it did not spin");
        // And the count sees a sleep: the check can fail.
        let before = voluntary();
        std::thread::sleep(Duration::from_millis(1));
        assert!(voluntary() > before, "a sleep gives the CPU up");
    }
}
