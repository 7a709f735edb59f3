//! In which order a session runs its workers: a name of the job and of a noise profile's design.

use serde::{Deserialize, Serialize};

/// In which order workers of one cell run when repeated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum), value(rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum WorkerOrder {
    /// Alternate the adapters and flip the starting one each repetition (ABBA…), so slow drift
    /// of the machine favours neither.
    Alternate,
    /// Always in the order of `adapters`.
    Fixed,
    /// The adapters' workers of a cell and repetition start together, load, signal ready, and
    /// then run one request at a time through the request gate, alternating A B, B A, … request
    /// by request; the starting adapter flips each repetition. The ratio then comes from pairs
    /// of adjacent requests. Every model of the group is loaded at once.
    Interleaved,
}

impl WorkerOrder {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerOrder::Alternate => "alternate",
            WorkerOrder::Fixed => "fixed",
            WorkerOrder::Interleaved => "interleaved",
        }
    }
}
