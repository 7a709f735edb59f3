//! The frozen run policy: every finite limit a run obeys, taken from the manifest.

use serde::{Deserialize, Serialize};

/// Finite limits of a run. All counts and durations must be positive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunPolicy {
    /// Requests run first after load and discarded from statistics (cold caches, lazy init).
    pub first_requests: u32,
    /// Warm-up requests after the first, discarded from statistics.
    pub warmup_requests: u32,
    /// Requests whose times enter the statistics.
    pub measured_requests: u32,
    /// Tokens generated per headline request (the first token plus `max_new_tokens - 1` steps).
    pub max_new_tokens: u32,
    /// Teacher-forced steps per fixed-continuation request.
    pub fixed_continuation_steps: u32,
    /// Seconds the launcher waits for `worker-ready` after spawning a worker.
    pub ready_timeout_s: u32,
    /// Seconds from `worker-ready` until the worker's watchdog fires.
    pub job_deadline_s: u32,
    /// Milliseconds between watchdog polls (1000 in the frozen policy).
    pub watchdog_poll_ms: u32,
    /// Seconds the watchdog waits for the main loop to stop before writing the report itself,
    /// and the launcher waits between SIGTERM and SIGKILL.
    pub backstop_grace_s: u32,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("run_policy.{field} must be positive, found {value}")]
pub struct PolicyError {
    pub field: &'static str,
    pub value: u32,
}

impl RunPolicy {
    /// The frozen policy of `workloads.json`.
    pub fn frozen() -> Self {
        Self {
            first_requests: 1,
            warmup_requests: 5,
            measured_requests: 20,
            max_new_tokens: 128,
            fixed_continuation_steps: 32,
            ready_timeout_s: 120,
            job_deadline_s: 600,
            watchdog_poll_ms: 1000,
            backstop_grace_s: 5,
        }
    }

    /// Rejects any non-positive value, naming the field.
    pub fn validate(&self) -> Result<(), PolicyError> {
        let fields = [
            ("first_requests", self.first_requests),
            ("warmup_requests", self.warmup_requests),
            ("measured_requests", self.measured_requests),
            ("max_new_tokens", self.max_new_tokens),
            ("fixed_continuation_steps", self.fixed_continuation_steps),
            ("ready_timeout_s", self.ready_timeout_s),
            ("job_deadline_s", self.job_deadline_s),
            ("watchdog_poll_ms", self.watchdog_poll_ms),
            ("backstop_grace_s", self.backstop_grace_s),
        ];
        match fields.into_iter().find(|(_, value)| *value == 0) {
            Some((field, value)) => Err(PolicyError { field, value }),
            None => Ok(()),
        }
    }

    /// Requests per headline or fixed-continuation job: first + warm-up + measured.
    pub fn total_requests(&self) -> u32 {
        self.first_requests + self.warmup_requests + self.measured_requests
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frozen_policy_is_valid_and_zero_is_named() {
        assert_eq!(RunPolicy::frozen().validate(), Ok(()));
        let policy = RunPolicy { warmup_requests: 0, ..RunPolicy::frozen() };
        assert_eq!(policy.validate(), Err(PolicyError { field: "warmup_requests", value: 0 }));
    }
}
