//! Older `session.json` versions (1 to 7) converted into the current one before the strict
//! parse, so that every reader sees one typed form.
//!
//! What changed with version 8: `decisions` (the rows tested once when the session finished) is
//! new and reads as `null`; readers then test the rows themselves.
//!
//! What changed with version 7, and how a version 1 to 6 report is read: `quiet_wait_ns`,
//! `analysis.cells[].adapters.*.cold`, `energy` (the energy sources, idle readings and analysis)
//! and `workers[].energy` (per request) are new and read as `null` (no energy measured); the
//! quiet wait left `launcher_overhead_ns` (older values keep it: nothing can take it out again).
//!
//! What changed with version 6, and how a version 1 to 5 report is read: those sessions ran
//! controlled and stock only, stock being the reference.
//! - `reference` is new: `stock`.
//! - `analysis.cells[].ratio` (controlled over stock) becomes `ratios: {"controlled": …}`, and
//!   `argmax` and `stream` (controlled against stock) become maps keyed `controlled`; their
//!   mismatches' `controlled`/`stock` sides become `adapter_token`/`reference_token` (and the
//!   margins `adapter_margin`/`reference_margin`).
//!
//! What changed with version 5, and how a version 1 to 4 report is read:
//! - `workers[].aa` is new: versions 1 to 4 marked the extra run of an A/A pair only by the
//!   `-aa` suffix of its run id (the launcher's folder name), which is read here.
//! - `workers[].intervention` was one string, `<reason>: <signal>` (`past_deadline: SIGTERM`,
//!   `cancelled: no signal`); it is split into `reason` and `signal`.
//! - `host`, `lease` and `analysis` were free-form; their keys are those version 5 types, the
//!   ones added since version 1 read as `null` or empty (see the types' docs).
//!
//! Nothing else is changed: a key the current types do not know is still refused by the parse.

use serde_json::{json, Map, Value};

use decode_baseline_wire::session::SESSION_REPORT_SCHEMA_VERSION;

/// The run-id suffix versions 1 to 4 gave the extra run of an A/A pair.
const LEGACY_AA_SUFFIX: &str = "-aa";

/// Converts a report of an older version into the current version, in place; `Err` names the
/// key that cannot be converted and what was expected.
pub fn to_current(report: &mut Value) -> Result<(), String> {
    let version = report.get("schema_version").and_then(Value::as_u64).unwrap_or(0);
    if version < 5 {
        to_five(report)?;
    }
    if version < 6 {
        to_six(report);
    }
    if version < 7 {
        to_seven(report);
    }
    report["schema_version"] = json!(SESSION_REPORT_SCHEMA_VERSION);
    Ok(())
}

/// Versions 1 to 5 into version 6: stock the reference, the pairwise analysis keyed by adapter.
/// Only what has the old shape is converted; a key that already has the new one is left alone.
fn to_six(report: &mut Value) {
    if let Some(report) = report.as_object_mut() {
        report.entry("reference").or_insert(json!("stock"));
    }
    let cells =
        report.pointer_mut("/analysis/cells").and_then(Value::as_array_mut).map_or(&mut [][..], Vec::as_mut_slice);
    for cell in cells.iter_mut().filter_map(Value::as_object_mut) {
        if let Some(ratio) = cell.remove("ratio") {
            cell.insert("ratios".to_owned(), keyed_controlled(ratio));
        }
        // The old shape is one agreement (or `null`), with fields of its own; the new one a map
        // by adapter.
        for (key, own_field) in [("argmax", "mismatches"), ("stream", "identical")] {
            if !cell.get(key).is_some_and(|v| v.is_null() || v.get(own_field).is_some()) {
                continue;
            }
            let mut value = cell.remove(key).unwrap_or(Value::Null);
            let mismatches = match key {
                "argmax" => value.get_mut("mismatches").and_then(Value::as_array_mut).map(Vec::as_mut_slice),
                _ => value.get_mut("first_divergence").map(std::slice::from_mut),
            };
            for mismatch in mismatches.unwrap_or_default().iter_mut().filter_map(Value::as_object_mut) {
                for (old, new) in [
                    ("controlled", "adapter_token"),
                    ("stock", "reference_token"),
                    ("controlled_margin", "adapter_margin"),
                    ("stock_margin", "reference_margin"),
                ] {
                    if let Some(v) = mismatch.remove(old) {
                        mismatch.insert(new.to_owned(), v);
                    }
                }
            }
            cell.insert(key.to_owned(), keyed_controlled(value));
        }
    }
}

/// Versions 1 to 6 into version 7: no energy record, for the session and for each worker.
fn to_seven(report: &mut Value) {
    if let Some(report) = report.as_object_mut() {
        report.entry("energy").or_insert(Value::Null);
    }
    let workers = report.get_mut("workers").and_then(Value::as_array_mut).map_or(&mut [][..], Vec::as_mut_slice);
    for worker in workers.iter_mut().filter_map(Value::as_object_mut) {
        worker.entry("energy").or_insert(Value::Null);
    }
}

/// `null` → `{}`; anything else → `{"controlled": value}`.
fn keyed_controlled(value: Value) -> Value {
    if value.is_null() {
        json!({})
    } else {
        json!({ "controlled": value })
    }
}

/// Versions 1 to 4 into version 5.
fn to_five(report: &mut Value) -> Result<(), String> {
    let workers = report.get_mut("workers").and_then(Value::as_array_mut).map_or(&mut [][..], Vec::as_mut_slice);
    for (index, worker) in workers.iter_mut().enumerate() {
        let Some(worker) = worker.as_object_mut() else { continue };
        upgrade_worker(worker).map_err(|detail| format!("workers[{index}].{detail}"))?;
    }
    Ok(())
}

fn upgrade_worker(worker: &mut Map<String, Value>) -> Result<(), String> {
    let aa = worker.get("run_id").and_then(Value::as_str).is_some_and(|id| id.ends_with(LEGACY_AA_SUFFIX));
    worker.insert("aa".to_owned(), json!(aa));
    if let Some(text) = worker.get("intervention").and_then(Value::as_str) {
        let intervention = split_intervention(text)?;
        worker.insert("intervention".to_owned(), intervention);
    }
    Ok(())
}

/// `past_deadline: SIGTERM` → `{"reason": "past_deadline", "signal": "SIGTERM"}`; the signal
/// `no signal` is `null`.
fn split_intervention(text: &str) -> Result<Value, String> {
    let expected = || {
        format!(
            "intervention: expected \"<reason>: <signal>\" (e.g. \"past_deadline: SIGTERM\") as versions 1 to 4 \
             wrote it, got {text:?}"
        )
    };
    let (reason, signal) = text.split_once(": ").ok_or_else(expected)?;
    let signal = match signal {
        "no signal" => Value::Null,
        "SIGTERM" | "SIGKILL" => json!(signal),
        _ => return Err(expected()),
    };
    Ok(json!({ "reason": reason, "signal": signal }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_the_intervention_and_reads_the_aa_suffix() {
        let mut report = json!({
            "schema_version": 4,
            "workers": [
                { "run_id": "s-c-stock-0", "intervention": "past_deadline: SIGKILL" },
                { "run_id": "s-c-stock-2-aa", "intervention": null },
                { "run_id": "s-c-controlled-0", "intervention": "cancelled: no signal" },
            ]
        });
        to_current(&mut report).unwrap();
        assert_eq!(report["schema_version"], json!(SESSION_REPORT_SCHEMA_VERSION));
        let w = &report["workers"];
        assert_eq!(w[0]["intervention"], json!({ "reason": "past_deadline", "signal": "SIGKILL" }));
        assert_eq!(w[0]["aa"], json!(false));
        assert_eq!(w[1]["aa"], json!(true));
        assert!(w[1]["intervention"].is_null());
        assert_eq!(w[2]["intervention"], json!({ "reason": "cancelled", "signal": null }));
    }

    #[test]
    fn version_5_pairs_become_keyed_by_the_controlled_adapter_against_stock() {
        let mut report = json!({
            "schema_version": 5,
            "workers": [],
            "analysis": { "cells": [
                { "cell": "a", "ratio": { "ratio": 0.9 }, "argmax": null, "stream": {
                    "identical": false,
                    "first_divergence": { "position": 3, "controlled": 7, "stock": 8, "controlled_margin": 0.5, "stock_margin": null }
                } },
                { "cell": "b", "ratio": null, "argmax": { "mismatches": [{ "position": 1, "controlled": 2, "stock": 3 }] }, "stream": null },
            ] }
        });
        to_current(&mut report).unwrap();
        assert_eq!(report["reference"], json!("stock"));
        let cells = &report["analysis"]["cells"];
        assert_eq!(cells[0]["ratios"], json!({ "controlled": { "ratio": 0.9 } }));
        assert_eq!(cells[0]["argmax"], json!({}));
        assert_eq!(
            cells[0]["stream"]["controlled"]["first_divergence"],
            json!({ "position": 3, "adapter_token": 7, "reference_token": 8, "adapter_margin": 0.5, "reference_margin": null })
        );
        assert_eq!(cells[1]["ratios"], json!({}));
        assert_eq!(
            cells[1]["argmax"]["controlled"]["mismatches"][0],
            json!({ "position": 1, "adapter_token": 2, "reference_token": 3 })
        );
        assert_eq!(cells[1]["stream"], json!({}));
        assert!(cells[0].get("ratio").is_none());
    }

    #[test]
    fn version_6_reads_with_no_energy_and_a_present_key_is_kept() {
        let mut report =
            json!({ "schema_version": 6, "workers": [{ "run_id": "a" }, { "run_id": "b", "energy": [] }] });
        to_current(&mut report).unwrap();
        assert_eq!(report["schema_version"], json!(SESSION_REPORT_SCHEMA_VERSION));
        assert_eq!(report["energy"], Value::Null);
        assert_eq!(report["workers"][0]["energy"], Value::Null);
        assert_eq!(report["workers"][1]["energy"], json!([]), "only what is absent is added");
    }

    #[test]
    fn an_intervention_it_cannot_split_is_refused_by_its_place() {
        let mut report = json!({ "schema_version": 3, "workers": [{ "run_id": "r", "intervention": "sigterm" }] });
        let err = to_current(&mut report).unwrap_err();
        assert!(err.starts_with("workers[0].intervention: expected"), "{err}");
        assert!(err.contains("\"sigterm\""), "{err}");
    }
}
