//! Waiting, with a bound, until the host is quiet before a measurement: `/proc/stat` polled
//! until a whole window had less than a given number of CPUs' worth busy. Between workers
//! nothing is being measured, so everything busy counts (the polling launcher too, which is
//! negligible).

use std::{
    collections::VecDeque,
    time::{Duration, Instant},
};

use super::linux::{self, CpuTimes};

#[derive(Debug, thiserror::Error)]
pub enum QuietError {
    #[error(
        "the host did not become quiet within {bound:?}: the last window of {window:?} had \
         {} CPUs busy (limit {limit})",
        last_cpus.map_or("an unknown number of".to_owned(), |c| format!("{c:.2}"))
    )]
    Timeout { bound: Duration, window: Duration, limit: f64, last_cpus: Option<f64> },
    #[error("cannot tell whether the host is quiet: /proc/stat is unreadable on this system")]
    Unreadable,
    #[error("stopped while waiting for the host to become quiet")]
    Stopped,
}

/// Polls `/proc/stat` until the last `window` had fewer than `max_busy_cpus` CPUs' worth busy
/// on average, and returns how long that took (at least `window`). Gives up after `bound`, or
/// as soon as `stop()` says so (the launcher's Ctrl-C).
pub fn wait_for_quiet(
    max_busy_cpus: f64,
    window: Duration,
    bound: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<Duration, QuietError> {
    let started = Instant::now();
    let step = (window / 4).clamp(Duration::from_millis(10), Duration::from_millis(250));
    let mut windows = Window::new(window);
    let mut last_cpus = None;
    loop {
        let times = linux::read_stat().ok_or(QuietError::Unreadable)?;
        let now = started.elapsed();
        if let Some(cpus) = windows.push(now, times) {
            if cpus < max_busy_cpus {
                return Ok(now);
            }
            last_cpus = Some(cpus);
        }
        if now >= bound {
            return Err(QuietError::Timeout { bound, window, limit: max_busy_cpus, last_cpus });
        }
        if stop() {
            return Err(QuietError::Stopped);
        }
        std::thread::sleep(step.min(bound - now));
    }
}

/// A sliding window over timed `/proc/stat` readings.
#[derive(Debug)]
struct Window {
    length: Duration,
    samples: VecDeque<(Duration, CpuTimes)>,
}

impl Window {
    fn new(length: Duration) -> Self {
        Window { length, samples: VecDeque::new() }
    }

    /// Adds a reading taken at `at`; once readings span the window, the average number of
    /// CPUs busy from the newest reading at least a window old until this one.
    fn push(&mut self, at: Duration, times: CpuTimes) -> Option<f64> {
        self.samples.push_back((at, times));
        while self.samples.get(1).is_some_and(|&(t, _)| at.saturating_sub(t) >= self.length) {
            self.samples.pop_front();
        }
        let &(first_at, first) = self.samples.front()?;
        if at.saturating_sub(first_at) < self.length {
            return None;
        }
        Some(first.until(&times).busy_share()? * f64::from(times.cpus))
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// 2 CPUs at 100 Hz: 50 ticks of both every 250 ms, `busy` of them busy.
    fn feed(window: &mut Window, busy_per_step: &[u64]) -> Vec<Option<f64>> {
        let mut times = CpuTimes { busy: 0, total: 0, cpus: 2 };
        let mut out = vec![window.push(Duration::ZERO, times)];
        for (i, busy) in busy_per_step.iter().enumerate() {
            times = CpuTimes { busy: times.busy + busy, total: times.total + 50, cpus: 2 };
            out.push(window.push(ms(250 * (i as u64 + 1)), times));
        }
        out
    }

    #[test]
    fn the_window_reports_once_it_is_full_and_then_slides() {
        let mut w = Window::new(ms(1000));
        // One CPU busy for 1 s, then nothing busy.
        let out = feed(&mut w, &[25, 25, 25, 25, 0, 0, 0, 0]);
        assert_eq!(&out[..4], &[None, None, None, None], "not yet a full window");
        assert_eq!(out[4], Some(1.0));
        assert_eq!(out[6], Some(0.5), "half the window after the busy second");
        assert_eq!(out[8], Some(0.0));
        assert!(w.samples.len() <= 6, "old readings are dropped: {}", w.samples.len());
    }

    #[test]
    fn no_ticks_in_a_window_reports_nothing() {
        let mut w = Window::new(ms(100));
        let t = CpuTimes { busy: 5, total: 10, cpus: 2 };
        assert_eq!(w.push(Duration::ZERO, t), None);
        assert_eq!(w.push(ms(200), t), None);
    }

    #[test]
    fn an_unreachable_limit_is_met_after_one_window() {
        if linux::read_stat().is_none() {
            eprintln!("skipped: no /proc/stat on this system");
            return;
        }
        let waited = wait_for_quiet(f64::INFINITY, ms(200), Duration::from_secs(30), &|| false).unwrap();
        assert!(waited >= ms(200) && waited < Duration::from_secs(30), "{waited:?}");
    }

    #[test]
    fn a_host_kept_busy_times_out_at_the_bound_or_stops_when_told() {
        if linux::read_stat().is_none() {
            eprintln!("skipped: no /proc/stat on this system");
            return;
        }
        let mut hog = Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
        // With a hog running, fewer than 0 CPUs busy is never seen.
        let result = wait_for_quiet(0.0, ms(200), ms(1000), &|| false);
        let stopped = wait_for_quiet(0.0, ms(200), Duration::from_secs(30), &|| true);
        let _ = hog.kill();
        let _ = hog.wait();
        match result {
            Err(QuietError::Timeout { last_cpus: Some(cpus), .. }) => assert!(cpus > 0.0, "{cpus}"),
            other => panic!("expected a timeout with a measurement, got {other:?}"),
        }
        assert!(matches!(stopped, Err(QuietError::Stopped)), "{stopped:?}");
    }
}
