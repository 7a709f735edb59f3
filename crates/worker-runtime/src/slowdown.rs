//! The test-only slowdown: a fixed busy wait inside every decode step of one adapter, so that a
//! benchmark can check that the suite sees a difference of known size (`decode-baseline`'s
//! power bench, `req/compare.md`).
//!
//! `DECODE_BASELINE_TEST_SLOWDOWN_US=<µs>` with `DECODE_BASELINE_TEST_SLOWDOWN_ADAPTER=<adapter>`:
//! a worker of that adapter spins for the given microseconds at the `before_decode_step` poll,
//! which lies inside the step's timed interval in every mode. The report records it
//! (`test_slowdown_us`), so a slowed run can never pass for a clean one. Both variables must
//! be set together; an unparsable value is a refusal, not silence.

use std::time::{Duration, Instant};

use decode_baseline_wire::{
    hooks::{SLOWDOWN_ADAPTER_ENV, SLOWDOWN_ENV},
    Adapter,
};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SlowdownError {
    #[error("{SLOWDOWN_ENV}={0:?} is not a whole number of microseconds")]
    BadMicros(String),
    #[error("{SLOWDOWN_ENV} and {SLOWDOWN_ADAPTER_ENV} must be set together")]
    Half,
}

/// The slowdown this worker applies, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Slowdown {
    per_step: Option<Duration>,
}

impl Slowdown {
    /// Reads the two variables for a worker of `adapter`.
    pub fn from_env(adapter: Adapter) -> Result<Self, SlowdownError> {
        let var = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        Self::parse(var(SLOWDOWN_ENV), var(SLOWDOWN_ADAPTER_ENV), adapter)
    }

    fn parse(micros: Option<String>, target: Option<String>, adapter: Adapter) -> Result<Self, SlowdownError> {
        match (micros, target) {
            (None, None) => Ok(Self::default()),
            (Some(micros), Some(target)) => {
                let us: u32 = micros.trim().parse().map_err(|_| SlowdownError::BadMicros(micros.clone()))?;
                let applies = target == adapter.as_str() && us > 0;
                Ok(Self { per_step: applies.then(|| Duration::from_micros(u64::from(us))) })
            }
            _ => Err(SlowdownError::Half),
        }
    }

    /// The microseconds per step, for the report; `None` when this worker is not slowed.
    pub fn micros(&self) -> Option<u32> {
        self.per_step.map(|d| d.as_micros() as u32)
    }

    /// Spins for the slowdown (a sleep would round up by the scheduler's slack).
    pub fn apply(&self) {
        if let Some(per_step) = self.per_step {
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
        let slowed = Slowdown::parse(some("25"), some("controlled"), Adapter::Controlled).unwrap();
        assert_eq!(slowed.micros(), Some(25));
        assert_eq!(Slowdown::parse(some("25"), some("controlled"), Adapter::Stock).unwrap().micros(), None);
        assert_eq!(Slowdown::parse(None, None, Adapter::Stock).unwrap(), Slowdown::default());
        assert_eq!(
            Slowdown::parse(some("x"), some("stock"), Adapter::Stock),
            Err(SlowdownError::BadMicros("x".into()))
        );
        assert_eq!(Slowdown::parse(some("5"), None, Adapter::Stock), Err(SlowdownError::Half));
        assert_eq!(Slowdown::parse(None, some("stock"), Adapter::Stock), Err(SlowdownError::Half));

        let started = Instant::now();
        slowed.apply();
        assert!(started.elapsed() >= Duration::from_micros(25));
    }

    #[test]
    fn the_slowdown_spins_on_the_cpu_rather_than_sleeping() {
        // Issue 28: a sleep of 23 µs cost far more than asked, so the slowdown spins. A sleep
        // gives the CPU up, which the kernel counts as a voluntary context switch of the thread;
        // a spin never does (a busy host may still preempt it: those switches are involuntary
        // and counted apart), so the count tells the two apart however loaded the host is.
        use nix::sys::resource::{getrusage, UsageWho};
        let voluntary = || getrusage(UsageWho::RUSAGE_THREAD).expect("the thread's usage").voluntary_context_switches();
        let slowed = Slowdown { per_step: Some(Duration::from_millis(20)) };
        let (wall, before) = (Instant::now(), voluntary());
        slowed.apply();
        let (elapsed, gave_up) = (wall.elapsed(), voluntary() - before);
        assert!(elapsed >= Duration::from_millis(20), "{elapsed:?}");
        assert_eq!(gave_up, 0, "the thread gave the CPU up {gave_up} times in a {elapsed:?} wait: it did not spin");
        // And the count sees a sleep: the check can fail.
        let before = voluntary();
        std::thread::sleep(Duration::from_millis(1));
        assert!(voluntary() > before, "a sleep gives the CPU up");
    }
}
