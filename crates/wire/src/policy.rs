//! The frozen run policy: every finite limit a run obeys, taken from the manifest.

use serde::{Deserialize, Serialize};

use crate::{Mode, Phase};

/// mlx_lm's default `prefill_step_size`: the most prompt tokens one prefill forward takes. Both
/// built-in loops prefill as `generate_step` does, `prompt[:-1]` in chunks of at most this many
/// tokens, then the last prompt token alone (`req/protocol.md` section 5).
pub const PREFILL_STEP_SIZE: u32 = 2048;

/// The forwards of that prefill for a prompt of `prompt_len` tokens: the chunks of
/// `prompt[:-1]`, and the last token's.
pub fn prefill_forwards(prompt_len: u32, step_size: u32) -> u32 {
    prompt_len.saturating_sub(1).div_ceil(step_size.max(1)) + 1
}

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
            warmup_requests: 2,
            measured_requests: 8,
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

    /// The phase of every request a job of `mode` runs, in order: one request without a phase
    /// for reference-pair; first, warm-up and measured requests otherwise. The one statement of
    /// the request plan, for the worker that runs it and the launcher that checks and counts it.
    pub fn request_plan(&self, mode: Mode) -> Vec<Option<Phase>> {
        match mode {
            Mode::ReferencePair => vec![None],
            Mode::Headline | Mode::FixedContinuation => {
                std::iter::repeat_n(Some(Phase::First), self.first_requests as usize)
                    .chain(std::iter::repeat_n(Some(Phase::Warmup), self.warmup_requests as usize))
                    .chain(std::iter::repeat_n(Some(Phase::Measured), self.measured_requests as usize))
                    .collect()
            }
        }
    }

    /// How many requests a job of `mode` runs: the length of [`RunPolicy::request_plan`].
    pub fn requests(&self, mode: Mode) -> u32 {
        match mode {
            Mode::ReferencePair => 1,
            Mode::Headline | Mode::FixedContinuation => self.total_requests(),
        }
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

    #[test]
    fn the_prefill_takes_the_chunks_of_all_but_the_last_token_then_the_last() {
        assert_eq!(prefill_forwards(1, PREFILL_STEP_SIZE), 1, "a one-token prompt is its last token alone");
        assert_eq!(prefill_forwards(16, PREFILL_STEP_SIZE), 2);
        assert_eq!(prefill_forwards(2049, PREFILL_STEP_SIZE), 2, "2048 tokens are one chunk");
        assert_eq!(prefill_forwards(2050, PREFILL_STEP_SIZE), 3);
        assert_eq!(prefill_forwards(12, 5), 4, "chunks of 5, 5 and 1, then the last");
    }

    #[test]
    fn the_plan_follows_the_policy_and_its_length_is_the_count() {
        use Phase::*;
        let policy = RunPolicy { first_requests: 1, warmup_requests: 2, measured_requests: 3, ..RunPolicy::frozen() };
        let plan = policy.request_plan(Mode::Headline);
        assert_eq!(plan, [Some(First), Some(Warmup), Some(Warmup), Some(Measured), Some(Measured), Some(Measured)]);
        assert_eq!(policy.request_plan(Mode::FixedContinuation), plan);
        assert_eq!(policy.request_plan(Mode::ReferencePair), [None]);
        for mode in [Mode::Headline, Mode::FixedContinuation, Mode::ReferencePair] {
            assert_eq!(policy.requests(mode) as usize, policy.request_plan(mode).len(), "{mode:?}");
        }
    }
}
