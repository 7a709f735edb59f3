//! JSON Schemas of the wire formats (the worker job and report, the session job, the manifest,
//! `session.json`), generated from the Rust types, committed under `schemas/` at the repository
//! root, and `compare --format json`'s output.
//!
//! The launcher's test `generated::committed_files_are_current` (`crates/launcher/src/generated.rs`) fails when a
//! committed schema differs from what the types generate now; run it with
//! `DECODE_BASELINE_WRITE_SCHEMAS=1` to rewrite them after a deliberate change (and bump the
//! schema version if the change is not additive).

use crate::{manifest::Manifest, session::SessionJob, session::SessionReport, WorkerJob, WorkerReport};

/// File name of the worker job schema under `schemas/`.
pub const WORKER_JOB_SCHEMA_FILE: &str = "worker-job.schema.json";
/// File name of the worker report schema under `schemas/`.
pub const WORKER_REPORT_SCHEMA_FILE: &str = "worker-report.schema.json";
/// File name of the session job schema under `schemas/`.
pub const SESSION_JOB_SCHEMA_FILE: &str = "session-job.schema.json";
/// File name of the manifest schema under `schemas/`.
pub const MANIFEST_SCHEMA_FILE: &str = "manifest.schema.json";
/// File name of the noise profile file's schema under `schemas/`.
pub const NOISE_PROFILE_SCHEMA_FILE: &str = "noise-profile.schema.json";
/// File name of the `session.json` schema under `schemas/`.
pub const SESSION_REPORT_SCHEMA_FILE: &str = "session.schema.json";
/// File name of `compare --format json`'s schema under `schemas/`.
pub const COMPARE_SCHEMA_FILE: &str = "compare.schema.json";

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

/// A written format (one key set, `require_every_key`) or a hand-written one, whose optional
/// keys may be left out (`closed` false).
pub fn render(schema: &schemars::Schema, closed: bool) -> String {
    let mut value = serde_json::to_value(schema).expect("a schema serializes");
    if closed {
        require_every_key(&mut value);
    }
    let mut text = serde_json::to_string_pretty(&value).expect("a schema serializes");
    text.push('\n');
    text
}

/// The JSON Schema of a noise profile file (`calibrate`), pretty-printed with a final newline.
pub fn noise_profile_schema() -> String {
    render(&schemars::schema_for!(crate::profile::NoiseProfileFile), true)
}

/// The JSON Schema of `job.json`, pretty-printed with a final newline.
pub fn worker_job_schema() -> String {
    render(&schemars::schema_for!(WorkerJob), true)
}

/// The JSON Schema of `report.json`, pretty-printed with a final newline.
pub fn worker_report_schema() -> String {
    render(&schemars::schema_for!(WorkerReport), true)
}

/// The JSON Schema of a session job (hand-written: optional keys may be left out).
pub fn session_job_schema() -> String {
    render(&schemars::schema_for!(SessionJob), false)
}

/// The JSON Schema of `workloads.json` (hand-kept: optional keys may be left out).
pub fn manifest_schema() -> String {
    render(&schemars::schema_for!(Manifest), false)
}

/// The JSON Schema of `session.json` as this version writes it: every key present, except the
/// step records' `null` values, which the launcher leaves out (`session_bytes` in
/// `crates/launcher/src/launcher/output.rs`; they read back as `null`).
pub fn session_report_schema() -> String {
    let mut value = serde_json::to_value(schemars::schema_for!(SessionReport)).expect("a schema serializes");
    require_every_key(&mut value);
    if let Some(step) = value.pointer_mut("/$defs/StepRecord") {
        require_only_non_null(step);
    }
    let mut text = serde_json::to_string_pretty(&value).expect("a schema serializes");
    text.push('\n');
    text
}

/// Of a closed object's keys, requires only those whose value may not be `null`.
fn require_only_non_null(object: &mut serde_json::Value) {
    let Some(props) = object.get("properties").and_then(serde_json::Value::as_object) else { return };
    let keys: Vec<serde_json::Value> = props
        .iter()
        .filter(|(_, schema)| !accepts_null(schema))
        .map(|(key, _)| serde_json::Value::String(key.clone()))
        .collect();
    object["required"] = serde_json::Value::Array(keys);
}

/// Whether a property schema as schemars writes an `Option` accepts `null`: a `type` list with
/// `"null"`, or an `anyOf` with a `{"type": "null"}` branch.
fn accepts_null(schema: &serde_json::Value) -> bool {
    let null_type = |s: &serde_json::Value| match s.get("type") {
        Some(serde_json::Value::String(t)) => t == "null",
        Some(serde_json::Value::Array(types)) => types.iter().any(|t| t == "null"),
        _ => false,
    };
    null_type(schema)
        || schema.get("anyOf").and_then(serde_json::Value::as_array).is_some_and(|a| a.iter().any(null_type))
}

/// The JSON Schema of `compare --format json`'s output, as it is written (schemars' serialize
/// contract): every key is required except `device_differences`, which is left out when empty,
/// and every object is closed. After a deliberate change, bump
/// [`crate::compare::COMPARE_SCHEMA_VERSION`] if it is not additive.
pub fn compare_schema() -> String {
    let value = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<crate::compare::CompareReport>();
    render(&value, false)
}

/// Every schema this crate generates, by file name under `schemas/`.
pub fn all() -> [(&'static str, String); 7] {
    [
        (NOISE_PROFILE_SCHEMA_FILE, noise_profile_schema()),
        (WORKER_JOB_SCHEMA_FILE, worker_job_schema()),
        (WORKER_REPORT_SCHEMA_FILE, worker_report_schema()),
        (SESSION_JOB_SCHEMA_FILE, session_job_schema()),
        (MANIFEST_SCHEMA_FILE, manifest_schema()),
        (SESSION_REPORT_SCHEMA_FILE, session_report_schema()),
        (COMPARE_SCHEMA_FILE, compare_schema()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

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
