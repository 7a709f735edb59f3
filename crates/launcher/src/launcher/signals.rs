//! Ctrl-C and SIGTERM for the launcher: counted, not acted on in the handler. The supervision
//! loop reads the count: the first interrupt cancels gracefully, the second kills at once.

use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc,
};

/// A shared counter of SIGINT and SIGTERM deliveries.
#[derive(Debug, Clone, Default)]
pub struct Interrupts(Arc<AtomicUsize>);

impl Interrupts {
    /// Installs the handlers. Registration only fails for forbidden signals, never these two.
    pub fn install() -> std::io::Result<Self> {
        let interrupts = Self::default();
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let counter = Arc::clone(&interrupts.0);
            // SAFETY: the action only touches an atomic, which is async-signal-safe.
            unsafe {
                signal_hook::low_level::register(signal, move || {
                    counter.fetch_add(1, Ordering::SeqCst);
                })?;
            }
        }
        Ok(interrupts)
    }

    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}
