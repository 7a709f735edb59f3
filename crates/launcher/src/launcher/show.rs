//! What `run` prints of a finished session: the summary (or the detailed table, or the report
//! as JSON) on stdout from the stored record, the problems on stderr, and where the record is.

use decode_baseline_wire::session::SessionReport;

use crate::{export::Exporter, report::SessionView};

/// How a session is shown while it runs and when it ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Show {
    /// The session report as JSON on stdout instead of the table.
    pub json: bool,
    /// Nothing on stdout, no line per group (problems still go to stderr): the caller prints
    /// its own summary.
    pub quiet: bool,
    /// The detailed table instead of the 100-column summary.
    pub verbose: bool,
}

impl Show {
    /// Whether the notes on what the verdicts rest on go beside what is shown.
    pub(super) fn details(&self) -> bool {
        !self.quiet && !self.json
    }
}

/// Prints the end of a recorded session, `view` of `report`, as `show` says.
pub(super) fn show(report: &SessionReport, view: &SessionView, show: &Show) -> anyhow::Result<()> {
    if show.quiet {
        print_problems(report);
        return Ok(());
    }
    let exporter: &dyn Exporter<_> = match (show.json, show.verbose) {
        (true, _) => &crate::report::Json,
        (false, true) => &crate::report::Table,
        (false, false) => &crate::report::Summary,
    };
    print!("{}", exporter.export(view)?);
    if !show.json {
        print_problems(report);
        println!("session: {:?}, report: {}", report.status, view.dir.join("session.json").display());
    }
    Ok(())
}

fn print_problems(report: &SessionReport) {
    for problem in &report.problems {
        eprintln!("problem: {problem}");
    }
}
