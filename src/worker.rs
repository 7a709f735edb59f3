//! The controlled worker entry point, compiled in with the `controlled` feature.

use std::path::Path;

use decode_baseline_wire::{Adapter, ExitCode};

/// Runs the frozen worker protocol around the controlled loop, as `controlled` or as the
/// declared adapter `as_adapter`. The worker's repository is the one this binary was built from
/// (or `$DECODE_BASELINE_REPO`): its sources are what the manifest pins.
#[cfg(feature = "controlled")]
pub fn run(out_dir: &Path, as_adapter: Option<Adapter>) -> anyhow::Result<ExitCode> {
    let repo = decode_baseline_pins::installed::repo_root(Path::new(env!("CARGO_MANIFEST_DIR")));
    let adapter = as_adapter.unwrap_or(Adapter::Controlled);
    let mut driver = decode_baseline_controlled::worker::ControlledDriver::new(repo, adapter);
    Ok(decode_baseline_worker_runtime::run_worker(out_dir, &mut driver))
}

#[cfg(not(feature = "controlled"))]
pub fn run(_out_dir: &Path, _as_adapter: Option<Adapter>) -> anyhow::Result<ExitCode> {
    anyhow::bail!("this build has no controlled worker: rebuild with the default `controlled` feature")
}
