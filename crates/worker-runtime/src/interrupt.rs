//! Why a request stopped before completing ([`Interrupt`]): what the stop check of a decode
//! loop ([`crate::RequestContext::check`]) and the request gate's wait ([`crate::Gate::wait`])
//! both answer, and the status a report gives it.

use decode_baseline_wire::Status;

/// Why a request stopped before completing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    Timeout,
    Cancelled,
}

impl Interrupt {
    /// The report's status for a job that ends this way.
    pub(crate) fn status(self) -> Status {
        match self {
            Interrupt::Timeout => Status::Timeout,
            Interrupt::Cancelled => Status::Cancelled,
        }
    }
}
