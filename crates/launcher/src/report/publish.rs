//! What a finished session leaves in its folder for people, beside its record: the figures
//! and the page, drawn from the stored report and the records `bench` wrote beside it. The
//! engine writes `session.json` and returns; the command that ran the session publishes it,
//! once, here (`report` rewrites the page of a session folder later).

use std::path::Path;

use decode_baseline_wire::session::SessionReport;

use super::{page::write_page, view::SessionView, PAGE};

/// Writes the figures and the page of the session recorded in `dir`; returns its view (with
/// `bench`'s records, when they can be read) and what could not be written, in words.
pub fn publish<'a>(report: &'a SessionReport, dir: &'a Path) -> (SessionView<'a>, Vec<String>) {
    let mut warnings = Vec::new();
    if let Err(err) = crate::plot::write_session_plots(report, dir) {
        warnings.push(format!("plots not written: {:#}", anyhow::Error::from(err)));
    }
    let view = SessionView::without_records(report, dir, None, true);
    let view = view.clone().with_records().unwrap_or_else(|err| {
        warnings.push(format!("{err:#}: the page and the table leave it out"));
        view
    });
    if let Err(err) = write_page(&view) {
        warnings.push(format!("{} not written: {err:#}", dir.join(PAGE).display()));
    }
    (view, warnings)
}
