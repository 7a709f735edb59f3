//! The test hooks' names: the environment variables that arm a hook or the test-only slowdown,
//! and the sites a worker can be held at (`req/protocol.md`, "Test hooks"). What a worker does
//! at a site is the worker runtime's.

/// The environment variable naming the site.
pub const HOOK_ENV: &str = "DECODE_BASELINE_TEST_HOOK";
/// The environment variable naming the request index for per-request sites.
pub const HOOK_REQUEST_ENV: &str = "DECODE_BASELINE_TEST_HOOK_REQUEST";
/// The environment variable naming which arrival at the site, counted from 0 within the armed
/// request (per-request sites) or the process, holds the worker: `1` holds it before the second
/// prefill chunk. Default 0, the first.
pub const HOOK_ARRIVAL_ENV: &str = "DECODE_BASELINE_TEST_HOOK_ARRIVAL";

/// The environment variable whose words replace `adapter`'s pinned worker program:
/// `DECODE_BASELINE_WORKER_<NAME>`, the name upper-cased with `-` as `_` (the launcher's tests run
/// misbehaving workers through it; a session that uses one is unpinned, `req/session.md`).
pub fn replacement_variable(adapter: &crate::Adapter) -> String {
    format!("DECODE_BASELINE_WORKER_{}", adapter.as_str().to_ascii_uppercase().replace('-', "_"))
}

/// Where a worker can be held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Site {
    /// After `worker-claim` was created, before the job is read.
    AfterClaim,
    /// After `worker-ready` was created, before the first request.
    AfterReady,
    /// Before a prefill chunk's forward (the flags were polled just before).
    BeforePrefillChunk,
    /// Before the seed forward (the last prompt token alone).
    BeforeSeedForward,
    /// Before a cached decode step's forward.
    BeforeDecodeStep,
    /// At the start of the request: force the deadline, wait for the fire, then hold.
    RequestLoop,
    /// After the final request's record is complete, before the post-loop check: force the
    /// deadline, wait for the fire, then hold.
    FinalRequest,
    /// At the start of the request: force the deadline, wait for the fire, then block for good
    /// (ignoring release and cancel), so only the watchdog's backstop can end the run.
    Stall,
    /// Before `report.json` is written.
    BeforeReportWrite,
}

impl Site {
    pub const ALL: [Site; 9] = [
        Site::AfterClaim,
        Site::AfterReady,
        Site::BeforePrefillChunk,
        Site::BeforeSeedForward,
        Site::BeforeDecodeStep,
        Site::RequestLoop,
        Site::FinalRequest,
        Site::Stall,
        Site::BeforeReportWrite,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Site::AfterClaim => "after_claim",
            Site::AfterReady => "after_ready",
            Site::BeforePrefillChunk => "before_prefill_chunk",
            Site::BeforeSeedForward => "before_seed_forward",
            Site::BeforeDecodeStep => "before_decode_step",
            Site::RequestLoop => "request_loop",
            Site::FinalRequest => "final_request",
            Site::Stall => "stall",
            Site::BeforeReportWrite => "before_report_write",
        }
    }

    /// Whether the site happens once per request (and so takes the request index).
    pub fn per_request(self) -> bool {
        matches!(
            self,
            Site::BeforePrefillChunk
                | Site::BeforeSeedForward
                | Site::BeforeDecodeStep
                | Site::RequestLoop
                | Site::Stall
        )
    }

    /// Whether the site is one a decode loop reaches itself, before one of its forwards.
    pub fn before_forward(self) -> bool {
        matches!(self, Site::BeforePrefillChunk | Site::BeforeSeedForward | Site::BeforeDecodeStep)
    }

    /// Whether the site first moves the watchdog deadline to now and waits for the fire.
    pub fn forces_deadline(self) -> bool {
        matches!(self, Site::RequestLoop | Site::FinalRequest | Site::Stall)
    }
}

/// Microseconds of busy wait per decode step.
pub const SLOWDOWN_ENV: &str = "DECODE_BASELINE_TEST_SLOWDOWN_US";
/// The adapter that is slowed; workers of other adapters ignore the slowdown.
pub const SLOWDOWN_ADAPTER_ENV: &str = "DECODE_BASELINE_TEST_SLOWDOWN_ADAPTER";
/// The environment variable naming where the slowdown spins: `before_decode_step` (the default:
/// every decode step) or `before_seed_forward` (once per request, inside its time to first token).
pub const SLOWDOWN_SITE_ENV: &str = "DECODE_BASELINE_TEST_SLOWDOWN_SITE";
/// The sites [`SLOWDOWN_SITE_ENV`] may name.
pub const SLOWDOWN_SITES: [Site; 2] = [Site::BeforeDecodeStep, Site::BeforeSeedForward];
