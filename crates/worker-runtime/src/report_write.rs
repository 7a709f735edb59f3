//! Writing `report.json` exactly once.
//!
//! The report goes to a per-process temp file in the out dir (`report.json.tmp.<pid>`), is
//! synced, then hard-linked to `report.json`. The link fails if `report.json` exists, so no
//! path of any worker ever replaces a report. The temp is removed in every outcome: a write
//! failure leaves neither a temp nor a report, a refused link leaves the existing report
//! byte-identical and no temp.

use decode_baseline_pins::once::{link_new, LinkError, Linked};
use decode_baseline_wire::{outdir::OutDir, WorkerReport};

/// How a write ended when nothing went wrong with the file system: `Written`, or `Exists`
/// (`report.json` already existed and was left as it was; this report is lost).
pub type WriteOutcome = Linked;

/// A temp that could not be written, or a link that failed for another reason than an
/// existing report.
pub type ReportWriteError = LinkError;

/// Writes `report` to `out`'s `report.json` once, never replacing an existing one.
pub fn write_once(out: &OutDir, report: &WorkerReport) -> Result<WriteOutcome, ReportWriteError> {
    let mut bytes = serde_json::to_vec_pretty(report).expect("a report serializes");
    bytes.push(b'\n');
    link_new(&out.report_temp(std::process::id()), &out.report(), &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use decode_baseline_wire::{Adapter, Mode, Status};

    pub(crate) fn sample_report() -> WorkerReport {
        WorkerReport {
            schema_version: decode_baseline_wire::REPORT_SCHEMA_VERSION,
            run_id: "s/c/stock-0".into(),
            adapter: Adapter::Stock,
            mode: Mode::Headline,
            case_id: "tiny".into(),
            prompt_id: "p".into(),
            status: Status::Ok,
            exit_code: 0,
            error: None,
            pid: std::process::id(),
            claimed_utc: "1970-01-01T00:00:00.000000Z".into(),
            finished_utc: "1970-01-01T00:00:00.000000Z".into(),
            start_to_ready_ns: None,
            load_ns: None,
            identity: None,
            test_slowdown_us: None,
            group: None,
            requests: vec![],
        }
    }

    fn listing(out: &OutDir) -> Vec<String> {
        let mut names: Vec<_> = std::fs::read_dir(out.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn writes_once_then_refuses_leaving_the_first_byte_identical() {
        let tmp = tempfile::tempdir().unwrap();
        let out = crate::outdir::open(tmp.path()).unwrap();
        assert_eq!(write_once(&out, &sample_report()).unwrap(), WriteOutcome::Written);
        let first = std::fs::read(out.report()).unwrap();
        let parsed: WorkerReport = serde_json::from_slice(&first).unwrap();
        assert_eq!(parsed, sample_report());

        let second = WorkerReport { run_id: "other".into(), ..sample_report() };
        assert_eq!(write_once(&out, &second).unwrap(), WriteOutcome::Exists);
        assert_eq!(std::fs::read(out.report()).unwrap(), first);
        assert_eq!(listing(&out), vec!["report.json"]);
    }

    #[test]
    fn a_temp_create_failure_leaves_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let out = crate::outdir::open(tmp.path()).unwrap();
        // A directory where this process's temp file would go makes the create fail.
        std::fs::create_dir(out.report_temp(std::process::id())).unwrap();
        let err = write_once(&out, &sample_report()).unwrap_err();
        assert!(matches!(err, ReportWriteError::Temp { .. }), "{err}");
        assert!(!out.report().exists());
    }
}
