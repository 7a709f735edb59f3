//! The protocol's constants as one JSON document, built from the Rust definitions themselves,
//! for workers written in other languages: the Python kit reads it at import
//! (`tools/kit/python/decode_baseline_worker/protocol_constants.json`, committed).
//!
//! The document holds the out dir's file names, the environment variables, the hook sites, the
//! statuses and their exit codes, the schema versions, the adapter rules, the request plan, the
//! default prefill step size and the key sets of the job and the manifest at every depth. The test below fails when the
//! committed file differs from what this builds; `DECODE_BASELINE_WRITE_SCHEMAS=1` rewrites it
//! (as for `schemas/`, [`crate::schema`]).

use std::path::PathBuf;

use serde_json::{json, Map, Value};

use crate::{
    hooks::{self, Site},
    job::{EnvironmentPins, ADAPTER_NAME_PATTERN},
    manifest::{Interpreter, Manifest, ENV_NAME_ENV, MANIFEST_SCHEMA_VERSION},
    outdir,
    source_rule::STOCK_ROOTS,
    Adapter, Mode, Phase, RunPolicy, Sha256Digest, Status, WorkerJob, REPORT_SCHEMA_VERSION, WORKER_JOB_SCHEMA_VERSION,
};

/// The committed document's path, relative to the repository root.
pub const CONSTANTS_FILE: &str = "tools/kit/python/decode_baseline_worker/protocol_constants.json";

fn name_of(value: impl serde::Serialize) -> Value {
    serde_json::to_value(value).expect("a unit variant serializes")
}

/// The keys a value of `T` serializes with (sorted, the order the Rust worker checks them in).
fn keys_of(value: impl serde::Serialize) -> Vec<String> {
    match serde_json::to_value(value).expect("the value serializes") {
        Value::Object(map) => map.keys().cloned().collect(),
        other => panic!("expected an object, found {other}"),
    }
}

/// The key structure of a generated schema, for a reader that checks keys at every depth: an
/// object `{keys, required, fields}` (`fields`: the structure below each key that has one), a
/// map `{values}`, a list `{items}`; `null` for a value with no keys below it.
fn shape(schema: &Value, defs: &Map<String, Value>) -> Value {
    if let Some(name) = schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
        return shape(&defs[name], defs);
    }
    for branches in ["anyOf", "oneOf"] {
        if let Some(found) = schema
            .get(branches)
            .and_then(Value::as_array)
            .and_then(|all| all.iter().map(|branch| shape(branch, defs)).find(|s| !s.is_null()))
        {
            return found;
        }
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        let fields: Map<String, Value> =
            props.iter().map(|(k, v)| (k.clone(), shape(v, defs))).filter(|(_, s)| !s.is_null()).collect();
        return json!({
            "keys": props.keys().collect::<Vec<_>>(),
            "required": schema.get("required").cloned().unwrap_or(json!([])),
            "fields": fields,
        });
    }
    let nested = |key: &str| schema.get(key).filter(|s| s.is_object()).map(|s| shape(s, defs));
    match (nested("additionalProperties"), nested("items")) {
        (Some(values), _) if !values.is_null() => json!({ "values": values }),
        (_, Some(items)) if !items.is_null() => json!({ "items": items }),
        _ => Value::Null,
    }
}

/// The key structure of `T` as serde reads it (keys with a default are not required).
fn shape_of<T: schemars::JsonSchema>() -> Value {
    let schema = serde_json::to_value(schemars::schema_for!(T)).expect("a schema serializes");
    let defs = schema.get("$defs").and_then(Value::as_object).cloned().unwrap_or_default();
    shape(&schema, &defs)
}

/// A job whose policy counts are distinct and above one, so that the plan it yields names
/// the policy field behind each run of phases.
fn probe_job(mode: Mode) -> WorkerJob {
    let digest = Sha256Digest::of_bytes(b"");
    let policy = RunPolicy { first_requests: 2, warmup_requests: 3, measured_requests: 4, ..RunPolicy::frozen() };
    WorkerJob {
        schema_version: WORKER_JOB_SCHEMA_VERSION,
        run_id: String::new(),
        adapter: Adapter::Stock,
        mode,
        device: crate::DeviceKind::Cpu,
        repo_root: PathBuf::new(),
        manifest_path: PathBuf::new(),
        manifest_sha256: digest,
        case_id: String::new(),
        model_dir: PathBuf::new(),
        prompt_id: String::new(),
        prompt_ids: Vec::new(),
        prompt_sha256: digest,
        continuation: None,
        stop_ids: Vec::new(),
        run_policy: policy,
        prefill_step_size: crate::policy::PREFILL_STEP_SIZE,
        environment: environment_probe(),
        gate: false,
        group: None,
    }
}

fn environment_probe() -> EnvironmentPins {
    let digest = Sha256Digest::of_bytes(b"");
    EnvironmentPins {
        backend: None,
        lock_sha256: digest,
        mlx_version: String::new(),
        mlx_lm_version: String::new(),
        mlx_lm_freeze_sha256: digest,
        libmlx_sha256: digest,
    }
}

/// The request plan of `mode` as a rule: runs of one phase, each counted by a policy field
/// (by name) or a fixed number.
fn plan_rule(mode: Mode) -> Value {
    let job = probe_job(mode);
    let policy = serde_json::to_value(&job.run_policy).expect("a policy serializes");
    let mut runs: Vec<(Option<Phase>, u64)> = Vec::new();
    for phase in job.run_policy.request_plan(job.mode) {
        match runs.last_mut() {
            Some((last, n)) if *last == phase => *n += 1,
            _ => runs.push((phase, 1)),
        }
    }
    let count = |n: u64| {
        let fields = policy.as_object().expect("a policy is an object");
        let named: Vec<&String> =
            fields.iter().filter(|(_, v)| n > 1 && v.as_u64() == Some(n)).map(|(k, _)| k).collect();
        match named[..] {
            [] => json!(n),
            [name] => json!(name),
            _ => panic!("the probe policy's count {n} is the value of several fields: {named:?}"),
        }
    };
    runs.into_iter().map(|(phase, n)| json!({ "phase": phase, "count": count(n) })).collect()
}

/// The constants document, pretty-printed with a final newline.
pub fn document() -> String {
    let sites: Vec<Value> = Site::ALL
        .into_iter()
        .map(|s| {
            json!({
                "name": s.name(),
                "per_request": s.per_request(),
                "forces_deadline": s.forces_deadline(),
                "before_forward": s.before_forward(),
            })
        })
        .collect();
    let statuses: Map<String, Value> = Status::ALL
        .into_iter()
        .map(|s| (name_of(s).as_str().expect("a status name").to_owned(), json!(s.exit_code().code())))
        .collect();
    let plans: Map<String, Value> = Mode::ALL.into_iter().map(|m| (m.as_str().to_owned(), plan_rule(m))).collect();
    let doc = json!({
        "files": {
            "job": outdir::JOB_FILE,
            "claim": outdir::CLAIM_FILE,
            "ready": outdir::READY_FILE,
            "report": outdir::REPORT_FILE,
            "report_temp_prefix": outdir::REPORT_TEMP_PREFIX,
            "request_prefix": outdir::REQUEST_FILE_PREFIX,
            "gate_fifo": outdir::GATE_FIFO,
        },
        "launcher_message": outdir::LAUNCHER_MESSAGE,
        "gate": {
            "poll_s": outdir::GATE_POLL.as_secs_f64(),
            "wake_timeout_s": outdir::GATE_WAKE_TIMEOUT.as_secs_f64(),
        },
        "env": {
            "hook": hooks::HOOK_ENV,
            "hook_request": hooks::HOOK_REQUEST_ENV,
            "hook_arrival": hooks::HOOK_ARRIVAL_ENV,
            "slowdown": hooks::SLOWDOWN_ENV,
            "slowdown_adapter": hooks::SLOWDOWN_ADAPTER_ENV,
            "slowdown_site": hooks::SLOWDOWN_SITE_ENV,
            "environment": ENV_NAME_ENV,
            "rank": crate::group::RANK_ENV,
            "hostfile": crate::group::HOSTFILE_ENV,
        },
        "hook_sites": sites,
        "status_exit_codes": statuses,
        "schema_versions": {
            "manifest": MANIFEST_SCHEMA_VERSION,
            "worker_job": WORKER_JOB_SCHEMA_VERSION,
            "report": REPORT_SCHEMA_VERSION,
        },
        "adapters": {
            "built_in": [Adapter::Controlled.as_str(), Adapter::Stock.as_str()],
            "name_pattern": ADAPTER_NAME_PATTERN,
            "interpreters": [name_of(Interpreter::Python)],
            "stock_roots": STOCK_ROOTS,
        },
        "request_plan": plans,
        "policy_fields": keys_of(RunPolicy::frozen()),
        "prefill_step_size": crate::policy::PREFILL_STEP_SIZE,
        "environment_fields": keys_of(environment_probe()),
        "job": shape_of::<WorkerJob>(),
        "manifest": shape_of::<Manifest>(),
    });
    let mut text = serde_json::to_string_pretty(&doc).expect("the document serializes");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_rule_names_the_policy_fields_and_reference_pair_is_one_request() {
        let doc: Value = serde_json::from_str(&document()).unwrap();
        let counts: Vec<&Value> =
            doc["request_plan"]["headline"].as_array().unwrap().iter().map(|run| &run["count"]).collect();
        assert_eq!(counts, [&json!("first_requests"), &json!("warmup_requests"), &json!("measured_requests")]);
        assert_eq!(doc["request_plan"]["reference_pair"], json!([{ "phase": null, "count": 1 }]));
    }

    #[test]
    fn the_manifest_shape_reaches_every_depth() {
        let doc: Value = serde_json::from_str(&document()).unwrap();
        let manifest = &doc["manifest"];
        assert!(manifest["required"].as_array().unwrap().contains(&json!("run_policy")));
        assert!(!manifest["required"].as_array().unwrap().contains(&json!("adapters")));
        let case = &manifest["fields"]["cases"]["values"];
        assert!(case["keys"].as_array().unwrap().contains(&json!("stop_ids")));
        assert_eq!(manifest["fields"]["run_policy"]["keys"], json!(doc["policy_fields"]));
        assert!(manifest["fields"]["cells"]["items"]["keys"].as_array().unwrap().contains(&json!("mode")));
    }
}
