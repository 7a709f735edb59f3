//! Not yet built: see the open issues.

use decode_baseline_protocol::ExitCode;

#[derive(Debug, clap::Args)]
pub struct RunArgs {}

pub fn run(_args: RunArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`launcher` is not built yet")
}
