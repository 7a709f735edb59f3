//! decode-baseline's pins and the files of the protocol on disk: what the launcher and every
//! worker check and write, with no MLX.
//!
//! * The pin checks of `workloads.json`, one module per kind ([`manifest_pin`], [`structure`],
//!   [`confinement`], [`artifacts`], [`worker_sources`](mod@worker_sources), [`environment`]) and
//!   the [`guard`](mod@guard) that runs them all. Each failure is one [`PinError`]: the manifest
//!   field as a typed [`FieldPath`] and the [`PinProblem`]. Checks that look at many things
//!   return every failure they find, so the guard can print them all; callers that only need a
//!   yes/no take the first.
//!   The same rules compute the pins ([`case_files`], [`worker_sources()`], [`environment_pins`]),
//!   so what `manifest pin` writes is by construction what the checks expect. The Python stock
//!   worker re-implements the checks it runs from `req/manifest.md`.
//! * The file rules under them: trees and their freeze ([`freeze`]), which files are an
//!   adapter's sources ([`sources`]), the installed environment ([`installed`]), a file's digest
//!   ([`file_digest`]), the repository's code version ([`code_version()`]), an installed wheel's
//!   marker ([`install_marker`]).
//! * The manifest pin file's name and line ([`pin_file`]), which [`manifest_pin`] checks.
//! * Files written exactly once ([`once`]), by the launcher and by workers.

pub mod artifacts;
pub mod chain;
pub mod code_version;
pub mod confinement;
pub mod environment;
pub mod error;
pub mod file_digest;
mod file_pin;
pub mod freeze;
pub mod guard;
pub mod install_marker;
pub mod installed;
pub mod manifest_pin;
pub mod once;
pub mod pin_file;
pub mod sources;
pub mod structure;
pub mod worker_sources;

pub use artifacts::{artifact_file_names, case_files, check_case};
pub use chain::chain;
pub use code_version::code_version;
pub use confinement::{case_dir, check_confinement};
pub use environment::{
    adapter_environment, adapter_pins, check_installed, check_lock, environment_pins, environment_pins_of,
    lock_backend, mlx_lm_freeze, selected_pins,
};
pub use error::{FieldPath, PinError, PinProblem};
pub use guard::{guard, EnvironmentCheck, GuardOutcome};
pub use install_marker::{InstallMarker, INSTALL_MARKER};
pub use manifest_pin::{load_manifest, read_pin, verify_pin};
pub use pin_file::{parse_pin, pin_path, pin_text};
pub use structure::{check_continuation_digest, check_policy, check_structure, is_path_safe_id};
pub use worker_sources::{built_in_sources, check_adapter_sources, check_worker_sources, worker_sources};
