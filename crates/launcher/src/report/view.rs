//! What every view of a finished session is given.

use std::{borrow::Cow, path::Path};

use decode_baseline_wire::{compare::Row, session::SessionReport};

use crate::session::BenchRecord;

/// A finished session as the views show it: its report, its tested rows, the records `bench`
/// left beside it, and its folder (where the page and the figures are written). Every view is a
/// function of these alone: it reads the rows from here, never testing them itself, so that they
/// all show one decision, and it reads no file.
#[derive(Debug, Clone)]
pub struct SessionView<'a> {
    pub report: &'a SessionReport,
    /// Every adapter against the reference in every cell (`compare::session_rows`).
    pub rows: Cow<'a, [Row]>,
    pub dir: &'a Path,
    /// What `bench` asked for and resolved (`bench.json`): the model's source, the notes.
    pub bench: Option<BenchRecord>,
    /// `bench --ranks`'s table of one process against the group (`by-ranks.txt`).
    pub ranks: Option<String>,
}

impl<'a> SessionView<'a> {
    /// The view of `report` with the records `bench` left in `dir` ([`Self::with_records`]).
    pub fn new(report: &'a SessionReport, dir: &'a Path, asked: Option<&Path>, quiet: bool) -> anyhow::Result<Self> {
        Self::without_records(report, dir, asked, quiet).with_records()
    }

    /// The view of `report`: the decisions it stored when it finished, or, when the reader
    /// names a profile file (`asked`) or the session stored none that can be shown as they are
    /// (`compare::stored_rows`), its rows tested now with that file or the host's default one
    /// (notes and warnings on stderr unless `quiet`); no record of `bench`'s yet.
    pub fn without_records(report: &'a SessionReport, dir: &'a Path, asked: Option<&Path>, quiet: bool) -> Self {
        let rows = match (crate::compare::stored_rows(report), asked) {
            (Some(stored), None) => Cow::Borrowed(stored),
            _ => {
                let profiles = crate::noise_profiles::resolve_or_warn(asked, report, quiet);
                let settings = crate::compare::Settings {
                    config: crate::stats::DecisionConfig::default(),
                    profiles: profiles.as_ref(),
                };
                Cow::Owned(crate::compare::session_rows(report, &settings, true))
            }
        };
        Self { report, rows, dir, bench: None, ranks: None }
    }

    /// The view with the records `bench` left in its folder (`bench.json`, `by-ranks.txt`);
    /// one that is there and cannot be read is the error.
    pub fn with_records(self) -> anyhow::Result<Self> {
        let (bench, ranks) = (BenchRecord::read(self.dir)?, crate::ranks::read_table(self.dir)?);
        Ok(Self { bench, ranks, ..self })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::RowResult;
    use crate::export::Exporter;
    use decode_baseline_wire::stats::Verdict;

    /// Every view of a session shows the decision it stored: a stored verdict and ratio changed
    /// by hand (to ones no test of these data gives) appear in the run table, the answer, the
    /// page, the Markdown, the JSON and `compare` of the session, and a reader that asks for the
    /// rows to be tested again gets the tested ones back.
    #[test]
    fn every_view_reads_the_stored_decision_and_follows_it_when_it_changes() {
        let path = crate::launcher::session_job::repo_root().join("tests/data/sessions/back-to-back-a/session.json");
        let mut session = crate::session::fixtures::repeated(&crate::session::load_session(&path).unwrap().report, 4);
        let mut decisions = crate::compare::decide(
            &session,
            &crate::compare::Settings { config: crate::stats::DecisionConfig::default(), profiles: None },
        );
        let row = decisions.rows.iter_mut().find(|r| r.decision().is_some()).expect("a compared row");
        let cell = row.cell.clone();
        let RowResult::Compared { decision, warnings, .. } = &mut row.outcome else { unreachable!() };
        assert_eq!(decision.verdict, Verdict::Faster, "the tested verdict of {cell}");
        decision.verdict = Verdict::Slower;
        decision.ratio = 1.234;
        warnings.push("A/A stored: a warning no test of these data gives".into());
        session.decisions = Some(decisions);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("session.json"), serde_json::to_vec(&session).unwrap()).unwrap();
        let loaded = crate::session::load_session(dir.path()).unwrap();

        let view = SessionView::new(&loaded.report, dir.path(), None, true).unwrap();
        let table = crate::report::Table.export(&view).unwrap();
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(&cell) && l.contains("verdict controlled/stock: slower (ratio 1.234 [")),
            "{table}"
        );
        let answer = table.lines().find(|l| l.contains("1.234 [")).expect("the answer line");
        assert!(answer.contains("slower"), "{answer}");
        let page = crate::report::Html.export(&view).unwrap();
        let card = &page[page.find("<section id=\"answer\">").unwrap()..];
        let card = &card[..card.find("</section>").unwrap()];
        assert!(card.contains("1.234 [") && card.contains("slower"), "{card}");
        assert!(card.contains("controlled/stock: A/A stored: a warning no test of these data gives"), "{card}");
        // The stored warning and the A/A ones of these data, counted in one line.
        assert!(table.contains(" warnings change the reading of these verdicts: "), "{table}");
        let markdown = crate::report::Markdown.export(&view).unwrap();
        assert!(markdown.lines().any(|l| l.contains("1.234 [") && l.contains("slower")), "{markdown}");
        assert!(markdown.contains("- warning: "), "{markdown}");
        let json: serde_json::Value = serde_json::from_str(&crate::report::Json.export(&view).unwrap()).unwrap();
        let stored = &json["decisions"]["rows"][0]["outcome"]["decision"];
        assert_eq!((stored["verdict"].as_str(), stored["ratio"].as_f64()), (Some("slower"), Some(1.234)), "{json:#}");

        let settings = crate::compare::Settings { config: crate::stats::DecisionConfig::default(), profiles: None };
        let compared = crate::compare::compare_within(&loaded, &settings, false, false).unwrap();
        let row = compared.rows.iter().find(|r| r.cell == cell).unwrap();
        assert_eq!((row.verdict(), row.decision().map(|d| d.ratio)), (Some(Verdict::Slower), Some(1.234)));
        assert_eq!(compared.verdict, Some(Verdict::Slower));
        let printed = crate::compare::Table.export(&compared).unwrap();
        assert!(printed.contains("1.234"), "{printed}");

        // Asked to test again, compare and the views get the tested verdict back.
        let retested = crate::compare::compare_within(&loaded, &settings, false, true).unwrap();
        assert_eq!(retested.rows.iter().find(|r| r.cell == cell).unwrap().verdict(), Some(Verdict::Faster));
        let fresh = crate::compare::session_rows(&loaded.report, &settings, true);
        assert_eq!(fresh.iter().find(|r| r.cell == cell).unwrap().verdict(), Some(Verdict::Faster));
    }

    /// The page is a function of the view: `bench`'s records appear when the view holds them,
    /// read once by [`SessionView::new`], and a file in the folder that the view does not hold
    /// changes nothing.
    #[test]
    fn the_page_shows_the_records_the_view_holds_and_reads_no_file() {
        let path = crate::launcher::session_job::repo_root().join("tests/data/sessions/back-to-back-a/session.json");
        let session = crate::session::load_session(&path).unwrap().report;
        let dir = tempfile::tempdir().unwrap();
        let bare = SessionView::new(&session, dir.path(), None, true).unwrap();
        assert!(bare.bench.is_none() && bare.ranks.is_none());
        let page = crate::report::Html.export(&bare).unwrap();

        // Written after the view was made: the view, and so the page, do not see it.
        std::fs::write(dir.path().join(crate::ranks::RANKS_FILE), "a rank table written later\n").unwrap();
        assert_eq!(crate::report::Html.export(&bare).unwrap(), page);
        // A view made now holds it, and the page shows it.
        let read = SessionView::new(&session, dir.path(), None, true).unwrap();
        assert_eq!(read.ranks.as_deref(), Some("a rank table written later\n"));
        assert!(crate::report::Html.export(&read).unwrap().contains("a rank table written later"));
        // A record that is there and cannot be read is the error, naming the file.
        std::fs::write(dir.path().join(crate::session::BENCH_RECORD), "{").unwrap();
        let err = SessionView::new(&session, dir.path(), None, true).unwrap_err();
        assert!(format!("{err:#}").contains("bench.json"), "{err:#}");
    }
}
