//! The content of the `{utc, pid}` marker files, `worker-claim` and `worker-ready`.

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
