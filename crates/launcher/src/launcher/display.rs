//! `run`'s view of a running session, drawn from its events on standard error: on a terminal a
//! bar (indicatif) of the requests done with what runs now; elsewhere (a CI log, a file, a pipe)
//! the bar draws nothing, so a line per finished group says the session is alive
//! (`progress_log`). Notes, warnings and errors are printed as they come, prefixed
//! `decode-baseline:`, above the bar.

use std::cell::RefCell;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{
    events::{Event, Observer},
    progress_log::ProgressLog,
};

/// Standard error as `run` shows a session.
pub struct Display {
    bar: ProgressBar,
    /// A line per finished group, when standard error is not a terminal.
    log: bool,
    /// Print [`Event::Detail`]s (not under `--json` or `--quiet`).
    details: bool,
    groups: RefCell<Option<ProgressLog>>,
}

impl Display {
    /// `log`: a line per finished group; `details`: the notes on what the table's verdicts rest
    /// on.
    pub fn new(log: bool, details: bool) -> Self {
        // Drawn from the groups' start: before it, notes only.
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden()).with_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} requests, ~{eta} left  {msg}",
            )
            .expect("valid template"),
        );
        Display { bar, log, details, groups: RefCell::new(None) }
    }

    fn say(&self, line: &str) {
        self.bar.suspend(|| eprintln!("decode-baseline: {line}"));
    }
}

impl Observer for Display {
    fn on(&self, event: Event<'_>) {
        match event {
            Event::Started { groups, requests } => {
                self.bar.set_length(requests);
                self.bar.set_draw_target(ProgressDrawTarget::stderr());
                *self.groups.borrow_mut() = Some(ProgressLog::new(groups, requests));
            }
            Event::GroupStarted { cell, members } => self.bar.set_message(format!("{cell} {members}")),
            Event::WaitingForQuiet => self.bar.set_message("waiting for a quiet host"),
            Event::Tick => self.bar.tick(),
            Event::Requests(n) => self.bar.inc(n),
            Event::GroupDone { cell, members, requests, wall, elapsed } => {
                if let (true, Some(groups)) = (self.log, self.groups.borrow_mut().as_mut()) {
                    let line = groups.group_done(&format!("{cell} {members}"), requests, wall, elapsed);
                    self.say(&line);
                }
            }
            Event::GroupsDone => self.bar.finish_and_clear(),
            Event::Note(line) => self.say(&line),
            Event::Detail(line) if self.details => self.say(&line),
            Event::Detail(_) => {}
            Event::Warning(line) => self.say(&format!("warning: {line}")),
            Event::Error(line) => self.say(&format!("error: {line}")),
        }
    }
}
