//! `compare --format junit`: JUnit XML for a CI's test report, in the Jenkins dialect that CI
//! test reporters read, valid against its published schema (`junit-10.xsd`: no `skipped`
//! attribute on `<testsuites>`, no properties on a test case, which is why the XML is written
//! here with `quick-xml` rather than by a JUnit model crate that adds both). One test case per
//! row: a `slower` row is a failing case carrying its ratio and interval; `inconclusive`, not
//! compared and not judged rows are skipped with the reason; `faster` and `no difference` pass.
//! A refused comparison is one case in error that lists what differs. Every compared row's
//! estimate is its case's `system-out`.

use std::io;

use quick_xml::events::{BytesDecl, BytesText, Event};
use quick_xml::Writer;

use crate::export::Exporter;

use super::render::{estimate_phrase, mismatch_list, row_name, title};
use decode_baseline_wire::compare::{CompareReport, Row, RowResult};
use decode_baseline_wire::stats::Verdict;

/// JUnit XML.
pub struct Junit;

impl Exporter<CompareReport> for Junit {
    fn export(&self, report: &CompareReport) -> anyhow::Result<String> {
        Ok(String::from_utf8(junit(report)?)?)
    }
}

/// What a case ends as: the element inside it, if any, with its `type` and `message`, and the
/// element's text.
struct Outcome {
    element: Option<(&'static str, &'static str, String)>,
    text: Option<String>,
}

impl Outcome {
    fn passed() -> Self {
        Outcome { element: None, text: None }
    }

    fn skipped(message: String) -> Self {
        Outcome { element: Some(("skipped", "skipped", message)), text: None }
    }
}

/// A test case: its name, class name, outcome and `system-out`.
struct Case {
    name: String,
    classname: String,
    outcome: Outcome,
    out: Option<String>,
}

fn row_case(row: &Row) -> Case {
    let estimate = estimate_phrase(row);
    let outcome = match &row.outcome {
        RowResult::NotCompared { reason } => Outcome::skipped(format!("not compared: {reason}")),
        RowResult::Compared { .. } if !row.judged => Outcome::skipped("not judged (raw; --raw judges it)".to_owned()),
        RowResult::Compared { decision, .. } => match decision.verdict {
            Verdict::Slower => Outcome {
                element: Some(("failure", "slower", format!("slower: {}", estimate.clone().unwrap_or_default()))),
                text: None,
            },
            Verdict::Inconclusive => Outcome::skipped(format!(
                "inconclusive: neither a difference nor its absence is shown ({})",
                estimate.clone().unwrap_or_default()
            )),
            Verdict::Faster | Verdict::NoDifference => Outcome::passed(),
        },
    };
    let word = if row.judged { row.verdict().map_or("", Verdict::words) } else { "not judged" };
    let out = estimate.map(|e| format!("{word}: {e}\n"));
    Case { name: row_name(row), classname: row.cell.clone(), outcome, out }
}

fn refused_case(report: &CompareReport) -> Case {
    Case {
        name: "identity".to_owned(),
        classname: "decode-baseline.compare".to_owned(),
        outcome: Outcome {
            element: Some(("error", "refused", "the compared things differ".to_owned())),
            text: Some(mismatch_list(report)),
        },
        out: None,
    }
}

fn junit(report: &CompareReport) -> io::Result<Vec<u8>> {
    let cases: Vec<Case> =
        if report.refused { vec![refused_case(report)] } else { report.rows.iter().map(row_case).collect() };
    let count = |kind: &str| cases.iter().filter(|c| c.outcome.element.as_ref().is_some_and(|e| e.0 == kind)).count();
    let (tests, failures, errors, skipped) = (
        cases.len().to_string(),
        count("failure").to_string(),
        count("error").to_string(),
        count("skipped").to_string(),
    );
    let s = &report.settings;
    let mut properties = vec![
        ("alpha", format!("{}", s.alpha)),
        ("margin", format!("{}", s.margin)),
        ("judged_rows", report.judged_rows.to_string()),
        ("verdict", report.verdict.map_or("refused", Verdict::words).to_owned()),
        ("exit_code", report.exit_code.to_string()),
    ];
    properties.extend(s.floor.map(|floor| ("floor", format!("{floor}"))));

    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    w.create_element("testsuites")
        .with_attributes([
            ("name", "decode-baseline compare"),
            ("tests", tests.as_str()),
            ("failures", failures.as_str()),
            ("errors", errors.as_str()),
        ])
        .write_inner_content(|w| {
            w.create_element("testsuite")
                .with_attributes([
                    ("name", title(report).as_str()),
                    ("tests", tests.as_str()),
                    ("failures", failures.as_str()),
                    ("errors", errors.as_str()),
                    ("skipped", skipped.as_str()),
                ])
                .write_inner_content(|w| {
                    w.create_element("properties").write_inner_content(|w| {
                        for (name, value) in &properties {
                            w.create_element("property")
                                .with_attributes([("name", *name), ("value", value.as_str())])
                                .write_empty()?;
                        }
                        Ok(())
                    })?;
                    cases.iter().try_for_each(|case| write_case(w, case))
                })?;
            Ok(())
        })?;
    let mut xml = w.into_inner();
    xml.push(b'\n');
    Ok(xml)
}

fn write_case(w: &mut Writer<Vec<u8>>, case: &Case) -> io::Result<()> {
    let element = w
        .create_element("testcase")
        .with_attributes([("name", case.name.as_str()), ("classname", case.classname.as_str())]);
    if case.outcome.element.is_none() && case.out.is_none() {
        element.write_empty()?;
        return Ok(());
    }
    element.write_inner_content(|w| {
        if let Some((tag, kind, message)) = &case.outcome.element {
            let inner = w.create_element(*tag).with_attributes([("type", *kind), ("message", message.as_str())]);
            match &case.outcome.text {
                Some(text) => inner.write_text_content(BytesText::new(text))?,
                None => inner.write_empty()?,
            };
        }
        if let Some(out) = &case.out {
            w.create_element("system-out").write_text_content(BytesText::new(out))?;
        }
        Ok(())
    })?;
    Ok(())
}
