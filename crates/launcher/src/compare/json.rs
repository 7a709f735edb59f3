//! `compare --format json`: the [`CompareReport`] as it is (`schemas/compare.schema.json`).

use crate::export::Exporter;

use decode_baseline_wire::compare::CompareReport;

/// The whole comparison as JSON, pretty, one document.
pub struct Json;

impl Exporter<CompareReport> for Json {
    fn export(&self, report: &CompareReport) -> anyhow::Result<String> {
        Ok(serde_json::to_string_pretty(report)? + "\n")
    }
}
