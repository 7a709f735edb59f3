//! decode-baseline's worker runtime: the worker side of the frozen protocol (`req/protocol.md`)
//! around an adapter's [`Driver`]: the out dir, claim, ready, the watchdog, cancellation, the
//! request gate, test hooks, validation of the job, and the once-only report, tied together by
//! [`run_worker`]. No MLX: the controlled loop is one driver, and any Rust loop can be another.

#[cfg(test)]
mod bounded;
mod cancel;
mod claim;
mod gate;
mod group;
mod hooks;
mod interrupt;
mod marker;
mod outdir;
mod ready;
mod refusal;
mod report_write;
mod run;
mod slowdown;
mod utc;
mod validate;
mod watchdog;

pub use cancel::CancelFlag;
pub use claim::{claim, ClaimError};
pub use decode_baseline_pins::chain;
pub use gate::{signal_done, DoneError, Gate};
pub use hooks::{HookError, Hooks};
pub use interrupt::Interrupt;
pub use ready::{signal_ready, ReadyError};
pub use refusal::Refusal;
pub use report_write::{write_once, ReportWriteError, WriteOutcome};
pub use run::{request_plan, run_worker, Driver, RequestContext, RequestError, RequestSpec};
pub use slowdown::{Slowdown, SlowdownError};
pub use utc::utc_now_rfc3339;
pub use validate::{check_device, check_mapped_libmlx, check_mlx_version, identity, validate_job, Runtime, Validated};
pub use watchdog::{Backstop, Watchdog};
