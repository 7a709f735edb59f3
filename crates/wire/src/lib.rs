//! decode-baseline's wire formats: the contract described in `req/protocol.md`, `req/manifest.md`,
//! `req/session.md` and `req/compare.md` (its JSON output), as types. Every format is versioned and rejects unknown fields.
//!
//! Shared by the launcher and every worker, and depending on nothing else of the project. No
//! file-system or process logic lives here (the pins crate reads and checks files, the worker
//! runtime runs a worker); the protocol's names (file names, environment variables, hook
//! sites), its request plan and its schemas are here, so that each is written once, and the
//! Python kit reads them from the document [`constants`] generates.

pub mod analysis;
pub mod backend;
pub mod compare;
pub mod constants;
pub mod decision;
pub mod digest;
pub mod energy;
pub mod exit;
pub mod group;
pub mod hooks;
pub mod host;
pub mod job;
pub mod manifest;
pub mod marker;
pub mod order;
pub mod outdir;
pub mod policy;
pub mod profile;
pub mod quantity;
pub mod report;
pub mod row;
pub mod schema;
pub mod sequential;
pub mod session;
pub mod source_rule;
pub mod stats;

pub use backend::{Backend, DeviceKind};
pub use digest::Sha256Digest;
pub use exit::ExitCode;
pub use job::{Adapter, AdapterName, Mode, WorkerJob, WORKER_JOB_SCHEMA_VERSION};
pub use policy::RunPolicy;
pub use report::{Identity, Phase, RequestRecord, Status, StepRecord, WorkerReport, REPORT_SCHEMA_VERSION};
