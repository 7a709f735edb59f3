//! Why plots could not be written.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("failed to write plot {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Session(#[from] crate::compare::CompareError),
    #[error("model bytes for the roofline from {path}: {detail}")]
    Model { path: PathBuf, detail: String },
    #[error("--peak-bandwidth-gbs: expected a positive number of GB/s, got {0}")]
    Bandwidth(f64),
}
