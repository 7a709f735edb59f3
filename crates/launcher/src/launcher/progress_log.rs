//! Progress a log can show. On a terminal the session draws its bar (indicatif); when standard
//! error is not one (a CI log, a file, a pipe) the bar draws nothing, so the session says it is
//! alive with one line per finished group of workers instead: the time so far, the groups done
//! and left, what just ran and how long it took, and an estimate of the time left from the
//! requests done so far.

use std::time::Duration;

/// Counts the finished groups of one session and words their lines.
#[derive(Debug)]
pub struct ProgressLog {
    groups: usize,
    done: usize,
    total_requests: u64,
    requests: u64,
}

impl ProgressLog {
    /// A session of `groups` groups and `total_requests` requests in all.
    pub fn new(groups: usize, total_requests: u64) -> Self {
        ProgressLog { groups, done: 0, total_requests, requests: 0 }
    }

    /// Counts a finished group of `requests` requests that took `wall`, `elapsed` into the
    /// session, and returns its line, e.g. `[1:04] group 5/18 done: tiny-qwen3.….headline
    /// controlled + stock in 11.9 s; 96/324 requests, about 2:32 left`.
    pub fn group_done(&mut self, what: &str, requests: u64, wall: Duration, elapsed: Duration) -> String {
        self.done += 1;
        self.requests += requests;
        let left = match self.requests {
            0 => "time left unknown".to_owned(),
            done => {
                let per_request = elapsed.as_secs_f64() / done as f64;
                let left = per_request * self.total_requests.saturating_sub(done) as f64;
                format!("about {} left", clock(Duration::from_secs_f64(left)))
            }
        };
        format!(
            "[{}] group {}/{} done: {what} in {:.1} s; {}/{} requests, {left}",
            clock(elapsed),
            self.done,
            self.groups,
            wall.as_secs_f64(),
            self.requests,
            self.total_requests
        )
    }
}

/// `m:ss`, or `h:mm:ss` from an hour.
fn clock(d: Duration) -> String {
    let s = d.as_secs();
    match s / 3600 {
        0 => format!("{}:{:02}", s / 60, s % 60),
        h => format!("{h}:{:02}:{:02}", s / 60 % 60, s % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_group_gets_a_line_with_the_count_the_time_and_an_estimate_from_the_requests_done() {
        let mut log = ProgressLog::new(4, 40);
        let s = Duration::from_secs;
        assert_eq!(
            log.group_done("cell controlled + stock", 10, Duration::from_millis(12_340), s(15)),
            "[0:15] group 1/4 done: cell controlled + stock in 12.3 s; 10/40 requests, about 0:45 left"
        );
        assert_eq!(
            log.group_done("cell controlled + stock", 0, s(1), s(16)),
            "[0:16] group 2/4 done: cell controlled + stock in 1.0 s; 10/40 requests, about 0:48 left"
        );
        let mut long = ProgressLog::new(1, 0);
        assert_eq!(
            long.group_done("x", 0, s(1), s(3725)),
            "[1:02:05] group 1/1 done: x in 1.0 s; 0/0 requests, time left unknown"
        );
    }
}
