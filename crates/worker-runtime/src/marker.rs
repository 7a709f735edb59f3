//! The `{utc, pid}` marker files (`worker-claim`, `worker-ready`), created exclusively: the
//! create fails if the file exists, so two processes can never both believe they made it.

use std::path::Path;

use decode_baseline_wire::marker::Marker;

/// A marker for this process, now.
pub fn now() -> Marker {
    Marker { utc: super::utc::utc_now_rfc3339(), pid: std::process::id() }
}

/// Creates `path` exclusively and writes `marker` into it, synced to disk.
///
/// An `AlreadyExists` error means someone else made it; a later write error leaves the file
/// (the claim is sticky either way).
pub(crate) fn create_exclusive(path: &Path, marker: &Marker) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(marker).expect("a marker serializes");
    bytes.push(b'\n');
    decode_baseline_pins::once::create_new(path, &bytes)
}
