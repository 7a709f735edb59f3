//! Not yet built: see the open issues.

use decode_baseline_protocol::ExitCode;

#[derive(Debug, clap::Args)]
pub struct CompareArgs {}

pub fn run(_args: CompareArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`compare` is not built yet")
}
