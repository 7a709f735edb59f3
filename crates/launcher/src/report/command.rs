//! The `report` subcommand: write a session's `index.html` again, from its `session.json`.

use std::path::PathBuf;

use decode_baseline_wire::ExitCode;

use super::page::write_page;
use crate::session::load_session;

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The session: a `session.json` or the session folder.
    pub session: PathBuf,
    /// Test the verdicts again with this host noise profile file (see `compare
    /// --noise-profile`). Default: the decisions the session stored when it finished (a session
    /// written before they were stored is tested with the host's profile file, when it exists).
    #[arg(long, value_name = "FILE")]
    pub noise_profile: Option<PathBuf>,
}

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let session = load_session(&args.session)?;
    let view = super::SessionView::new(&session.report, session.dir(), args.noise_profile.as_deref(), false)?;
    let path = write_page(&view)?;
    println!("{}", path.display());
    Ok(ExitCode::Ok)
}
