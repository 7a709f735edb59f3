//! The `report` subcommand: write a session's `index.html` again, from its `session.json`.

use std::path::PathBuf;

use decode_baseline_wire::ExitCode;

use super::page::write_page;
use crate::session::load_session;

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The session: a `session.json` or the session folder.
    pub session: PathBuf,
    /// The host noise profile file the verdicts use (see `compare --noise-profile`). Default:
    /// the host's profile file, when it exists.
    #[arg(long, value_name = "FILE")]
    pub noise_profile: Option<PathBuf>,
}

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let session = load_session(&args.session)?;
    let profiles = crate::noise_profiles::resolve_or_warn(args.noise_profile.as_deref(), &session.report, false);
    let path = write_page(&session.report, session.dir(), profiles.as_ref())?;
    println!("{}", path.display());
    Ok(ExitCode::Ok)
}
