//! The worker side of the frozen protocol (`req/protocol.md`): out dir, claim, ready,
//! watchdog, cancellation, test hooks, the once-only report, and [`run_worker`] tying them
//! together around an adapter's [`Driver`].

mod cancel;
mod claim;
mod gate;
mod hooks;
mod marker;
mod outdir;
mod ready;
mod report_write;
mod run;
mod slowdown;
mod utc;
mod validate;
mod watchdog;

pub use cancel::CancelFlag;
pub use claim::{claim, ClaimError};
pub use gate::{signal_done, DoneError, Gate, GATE_POLL, GATE_WAKE_TIMEOUT};
pub use hooks::{HookError, Hooks, Site, HOOK_ENV, HOOK_REQUEST_ENV};
pub use marker::Marker;
pub use outdir::{
    OutDir, OutDirError, CLAIM_FILE, GATE_FIFO, JOB_FILE, LAUNCHER_MESSAGE, READY_FILE, REPORT_FILE,
    REPORT_TEMP_PREFIX, REQUEST_FILE_PREFIX,
};
pub use ready::{signal_ready, ReadyError};
pub use report_write::{write_once, ReportWriteError, WriteOutcome};
pub use run::{request_plan, run_worker, Driver, Interrupt, Refusal, RequestContext, RequestError, RequestSpec};
pub use slowdown::{Slowdown, SlowdownError, SLOWDOWN_ADAPTER_ENV, SLOWDOWN_ENV};
pub use utc::utc_now_rfc3339;
pub use validate::{
    check_device, check_mapped_libmlx, check_mlx_version, code_version, identity, pinned_sources_sha256, validate_job,
    worker_sources_sha256, Runtime, Validated,
};
pub use watchdog::{Backstop, Watchdog};
