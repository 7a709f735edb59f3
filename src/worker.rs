//! The controlled worker entry point, compiled in with the `controlled` feature.

use std::path::Path;

use decode_baseline_protocol::ExitCode;

#[cfg(feature = "controlled")]
pub fn run(_out_dir: &Path) -> anyhow::Result<ExitCode> {
    anyhow::bail!("the controlled worker is not built yet")
}

#[cfg(not(feature = "controlled"))]
pub fn run(_out_dir: &Path) -> anyhow::Result<ExitCode> {
    anyhow::bail!(
        "this build has no controlled worker: rebuild with the default `controlled` feature"
    )
}
