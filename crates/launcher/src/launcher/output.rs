//! What the launcher leaves behind and shows: `session.json`, written atomically and once, and
//! the summary table on the terminal.

use std::path::Path;

use decode_baseline_pins::once::{self, LinkError, Linked};
use decode_baseline_wire::session::SessionReport;

#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("failed to write {path}")]
    Write {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} already exists; a session report is never overwritten")]
    Exists { path: std::path::PathBuf },
}

/// `session.json`'s bytes: compact JSON, with the step records' `null` fields left out.
///
/// Nearly all of a session's bytes are step records (one per decode step of every request of
/// every worker). Pretty-printed, each took ten indented lines, and more than half of its bytes
/// were indentation; of the compact record, a quarter was `"build_ns":null,"eval_ns":null,
/// "margin":null,"tie":null` for fields that do not apply to the mode or adapter. Those are
/// `Option`s, which read back as `null` when absent, so no measured value is lost and every
/// reader gets the same `SessionReport` (`req/session.md`). `--json` still prints it pretty.
pub fn session_bytes(report: &SessionReport) -> Vec<u8> {
    let mut value = serde_json::to_value(report).expect("session report serializes");
    // `get_mut`, not indexing: indexing a `null` report would turn it into an object.
    let steps = value
        .get_mut("workers")
        .and_then(serde_json::Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(|worker| worker.get_mut("report")?.get_mut("requests")?.as_array_mut())
        .flatten()
        .filter_map(|request| request.get_mut("steps")?.as_array_mut())
        .flatten();
    for step in steps {
        if let Some(fields) = step.as_object_mut() {
            fields.retain(|_, v| !v.is_null());
        }
    }
    let mut bytes = serde_json::to_vec(&value).expect("session report serializes");
    bytes.push(b'\n');
    bytes
}

/// Writes `session.json` into `dir` once ([`once::link_new`], temp `.session.json.<pid>`): a
/// failure leaves neither the temp nor a partial report, an existing report is never replaced.
pub fn write_session(dir: &Path, report: &SessionReport) -> Result<(), OutputError> {
    let path = dir.join("session.json");
    let temp = dir.join(format!(".session.json.{}", std::process::id()));
    match once::link_new(&temp, &path, &session_bytes(report)) {
        Ok(Linked::Written) => Ok(()),
        Ok(Linked::Exists) => Err(OutputError::Exists { path }),
        Err(LinkError::Temp { source, .. } | LinkError::Link { source, .. }) => {
            Err(OutputError::Write { path, source })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compact_session_reads_back_as_the_same_report_and_is_smaller() {
        let path = crate::launcher::session_job::repo_root().join("tests/data/sessions/back-to-back-a/session.json");
        let mut report = crate::session::load_session(&path).unwrap().report;
        // A worker without a report (it crashed) must stay without one.
        let mut crashed = report.workers[0].clone();
        crashed.report = None;
        report.workers.push(crashed);
        let steps: Vec<_> = report
            .workers
            .iter()
            .filter_map(|w| w.report.as_ref())
            .flat_map(|r| &r.requests)
            .flat_map(|q| &q.steps)
            .collect();
        assert!(
            steps.iter().any(|s| s.margin.is_some()) && steps.iter().any(|s| s.margin.is_none()),
            "both kinds of step"
        );
        let bytes = session_bytes(&report);
        let back: SessionReport = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(back, report, "no value lost");
        assert!(!String::from_utf8_lossy(&bytes).contains(":null,\"tie\""));
        assert!(bytes.len() < serde_json::to_vec_pretty(&report).unwrap().len() / 2);
    }
}
