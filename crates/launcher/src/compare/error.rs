//! Why `compare` (and `plot`, which reads sessions the same way) could not do its work: every
//! variant is bad input and ends with exit code 2.

/// A session that cannot be read, or settings that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(transparent)]
    Session(#[from] crate::session::ReadError),
    #[error("invalid test setting (--alpha, --margin or --floor)")]
    Settings(#[source] crate::stats::StatsError),
    #[error("nothing to compare: {detail}")]
    NothingToCompare { detail: String },
}
