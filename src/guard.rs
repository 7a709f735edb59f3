//! Not yet built: see the open issues.

use decode_baseline_protocol::ExitCode;

#[derive(Debug, clap::Args)]
pub struct GuardArgs {}

pub fn run(_args: GuardArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`guard` is not built yet")
}
