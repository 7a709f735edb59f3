//! The `{utc, pid}` marker files (`worker-claim`, `worker-ready`), created exclusively: the
//! create fails if the file exists, so two processes can never both believe they made it.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The content of `worker-claim` and `worker-ready`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Marker {
    /// UTC time the file was created, RFC 3339.
    pub utc: String,
    /// Process id of the worker that created it.
    pub pid: u32,
}

impl Marker {
    /// A marker for this process, now.
    pub fn now() -> Self {
        Self { utc: super::utc::utc_now_rfc3339(), pid: std::process::id() }
    }
}

/// Creates `path` exclusively and writes `marker` into it, synced to disk.
///
/// An `AlreadyExists` error means someone else made it; a later write error leaves the file
/// (the claim is sticky either way).
pub(crate) fn create_exclusive(path: &Path, marker: &Marker) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(marker).expect("a marker serializes");
    bytes.push(b'\n');
    crate::once::create_new(path, &bytes)
}
