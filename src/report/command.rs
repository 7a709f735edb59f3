//! The `report` subcommand: write a session's `index.html` again, from its `session.json`.

use std::path::PathBuf;

use decode_baseline_wire::ExitCode;

use super::page::write_page;
use crate::compare::load_session;

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The session: a `session.json` or the session folder.
    pub session: PathBuf,
}

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let session = load_session(&args.session)?;
    let path = write_page(&session.report, session.dir())?;
    println!("{}", path.display());
    Ok(ExitCode::Ok)
}
