//! `compare --format bmf`: Bencher Metric Format JSON, `{benchmark: {measure: {value,
//! lower_value, upper_value}}}`, one benchmark per compared row (named as the CI outputs name
//! rows): the measure `ratio` with the row's interval, and `latency` (the numerator's median
//! per-token time or time to first token, in ns) where the row has one. Rows not compared have no
//! number and are left out.

use serde_json::{json, Map, Value};

use crate::export::Exporter;

use super::render::row_name;
use decode_baseline_wire::compare::CompareReport;

/// Bencher Metric Format JSON.
pub struct Bmf;

impl Exporter<CompareReport> for Bmf {
    fn export(&self, report: &CompareReport) -> anyhow::Result<String> {
        let mut out = Map::new();
        for row in &report.rows {
            let Some(d) = row.decision() else { continue };
            let mut measures = Map::new();
            measures.insert(
                "ratio".to_owned(),
                json!({"value": d.ratio, "lower_value": d.ci.lower, "upper_value": d.ci.upper}),
            );
            if let Some(ns) = row.numerator.median_ns {
                measures.insert("latency".to_owned(), json!({ "value": ns }));
            }
            out.insert(row_name(row), Value::Object(measures));
        }
        Ok(serde_json::to_string_pretty(&Value::Object(out))? + "\n")
    }
}
