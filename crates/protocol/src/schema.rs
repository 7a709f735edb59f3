//! JSON Schemas of the worker formats, generated from the Rust types, committed under
//! `schemas/` at the repository root.
//!
//! The test below fails when a committed schema differs from what the types generate now; run
//! it with `DECODE_BASELINE_WRITE_SCHEMAS=1` to rewrite them after a deliberate change (and
//! bump the schema version if the change is not additive).

use crate::{WorkerJob, WorkerReport};

/// File name of the worker job schema under `schemas/`.
pub const WORKER_JOB_SCHEMA_FILE: &str = "worker-job.schema.json";
/// File name of the worker report schema under `schemas/`.
pub const WORKER_REPORT_SCHEMA_FILE: &str = "worker-report.schema.json";

/// Every key of a closed object is required: workers write one key set for every mode and
/// status, `null` where a value does not apply (serde alone would accept a missing `Option`).
fn require_every_key(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            let closed = map.get("additionalProperties") == Some(&serde_json::Value::Bool(false));
            if let (true, Some(serde_json::Value::Object(props))) = (closed, map.get("properties")) {
                let keys = props.keys().cloned().map(serde_json::Value::String).collect();
                map.insert("required".into(), serde_json::Value::Array(keys));
            }
            map.values_mut().for_each(require_every_key);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(require_every_key),
        _ => {}
    }
}

fn render(schema: &schemars::Schema) -> String {
    let mut value = serde_json::to_value(schema).expect("a schema serializes");
    require_every_key(&mut value);
    let mut text = serde_json::to_string_pretty(&value).expect("a schema serializes");
    text.push('\n');
    text
}

/// The JSON Schema of `job.json`, pretty-printed with a final newline.
pub fn worker_job_schema() -> String {
    render(&schemars::schema_for!(WorkerJob))
}

/// The JSON Schema of `report.json`, pretty-printed with a final newline.
pub fn worker_report_schema() -> String {
    render(&schemars::schema_for!(WorkerReport))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn committed_schemas_are_current() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas");
        let write = std::env::var("DECODE_BASELINE_WRITE_SCHEMAS").is_ok_and(|v| v == "1");
        let mut stale = Vec::new();
        for (name, text) in
            [(WORKER_JOB_SCHEMA_FILE, worker_job_schema()), (WORKER_REPORT_SCHEMA_FILE, worker_report_schema())]
        {
            let path = dir.join(name);
            if write {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &text).unwrap();
            } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                stale.push(path.display().to_string());
            }
        }
        assert!(
            stale.is_empty(),
            "stale or missing schemas (regenerate with DECODE_BASELINE_WRITE_SCHEMAS=1 cargo test --release -p decode-baseline-protocol schema): {stale:?}"
        );
    }

    #[test]
    fn schemas_forbid_unknown_fields_and_allow_null_where_optional() {
        let report: serde_json::Value = serde_json::from_str(&worker_report_schema()).unwrap();
        assert_eq!(report["additionalProperties"], serde_json::Value::Bool(false));
        let required: Vec<&str> = report["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        // One key set for every mode: optional values are required keys that may be null.
        for key in ["error", "identity", "start_to_ready_ns", "load_ns"] {
            assert!(required.contains(&key), "{key} must be a required (nullable) key");
        }
    }
}
