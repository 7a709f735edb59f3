//! decode-baseline's wire formats and the worker side of the frozen protocol.
//!
//! Shared by the launcher (which needs no MLX) and the controlled worker. The formats are the
//! contract described in `req/protocol.md`; every type here is versioned and rejects unknown
//! fields.

pub mod analysis;
pub mod backend;
pub mod constants;
pub mod digest;
pub mod exit;
pub mod freeze;
pub mod host;
pub mod installed;
pub mod job;
pub mod manifest;
pub mod once;
pub mod pins;
pub mod policy;
pub mod report;
pub mod schema;
pub mod session;
pub mod sources;
pub mod stats;
pub mod worker;

pub use backend::{Backend, DeviceKind};
pub use digest::Sha256Digest;
pub use exit::ExitCode;
pub use job::{Adapter, AdapterName, Mode, WorkerJob, WORKER_JOB_SCHEMA_VERSION};
pub use policy::RunPolicy;
pub use report::{Identity, Phase, RequestRecord, Status, StepRecord, WorkerReport, REPORT_SCHEMA_VERSION};
