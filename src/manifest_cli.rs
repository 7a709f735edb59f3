//! Not yet built: see the open issues.

use decode_baseline_protocol::ExitCode;

#[derive(Debug, clap::Subcommand)]
pub enum ManifestCommand {
    /// Re-pin the manifest.
    Pin,
}

pub fn run(_command: ManifestCommand) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`manifest` is not built yet")
}
