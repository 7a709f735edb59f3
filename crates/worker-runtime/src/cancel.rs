//! Cancellation: SIGTERM and SIGINT set an atomic flag; the decode loop polls it before every
//! prefill chunk, the seed forward and every decode step (see [`super::run::RequestContext`]).
//!
//! The signal handler only stores to the flag (async-signal-safe). A second signal while the
//! flag is already set ends the process at once with exit code 4 and no report: the escape
//! for a worker stuck inside one non-interruptible forward.

use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};

use decode_baseline_wire::ExitCode;

/// The cancellation flag.
#[derive(Debug, Clone, Default)]
pub struct CancelFlag(Arc<AtomicBool>);

impl CancelFlag {
    /// A flag that no signal sets (for tests and embedding).
    pub fn new() -> Self {
        Self::default()
    }

    /// A flag set by SIGTERM and SIGINT; a second signal exits with [`ExitCode::Cancelled`].
    pub fn install() -> std::io::Result<Self> {
        let flag = Self::new();
        for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
            // Registered first so it sees the flag as the previous signal left it.
            signal_hook::flag::register_conditional_shutdown(signal, ExitCode::Cancelled.code(), Arc::clone(&flag.0))?;
            signal_hook::flag::register(signal, Arc::clone(&flag.0))?;
        }
        Ok(flag)
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// Sets the flag as a signal would.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}
