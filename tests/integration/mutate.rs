//! Inputs for the parser property tests: arbitrary JSON built from the formats' own key names,
//! and structured mutations of a valid document (drop a field, change a value's type, extreme
//! or malformed numbers, an unknown field, another schema version).
//!
//! Shared by the wire formats' reader tests (`parsers.rs`) and the launcher's
//! (`launcher_readers.rs`). It lives with the integration tests, not in `crates/wire/`, whose
//! every `.rs` file is a pinned controlled-worker source.

use proptest::{prelude::*, sample::Index};
use serde_json::{json, Map, Value};

/// The key an added field gets: no format has it, so every reader must refuse it.
pub const UNKNOWN_KEY: &str = "zz_not_a_field";

/// Key names of every format, so arbitrary objects reach past the first field check.
const KEYS: &[&str] = &[
    "schema_version",
    "run_id",
    "adapter",
    "mode",
    "repo_root",
    "manifest_path",
    "manifest_sha256",
    "case_id",
    "model_dir",
    "prompt_id",
    "prompt_ids",
    "prompt_sha256",
    "continuation",
    "stop_ids",
    "run_policy",
    "environment",
    "status",
    "exit_code",
    "error",
    "pid",
    "claimed_utc",
    "finished_utc",
    "start_to_ready_ns",
    "load_ns",
    "identity",
    "requests",
    "index",
    "phase",
    "prompt_len",
    "prefill_dur_ns",
    "first_token_ns",
    "first_token",
    "steps",
    "position",
    "argmax",
    "t_ns",
    "dur_ns",
    "build_ns",
    "eval_ns",
    "margin",
    "tie",
    "cases",
    "prompts",
    "cells",
    "worker_sources",
    "path",
    "architecture",
    "dtype",
    "files",
    "case",
    "ids",
    "sha256",
    "continuation_sha256",
    "prompt",
    "stock",
    "controlled",
    "manifest",
    "adapters",
    "output_root",
    "repetitions",
    "order",
    "aa_pair",
    "utc",
    "lock_sha256",
    "mlx_version",
    "mlx_lm_version",
    "mlx_lm_freeze_sha256",
    "libmlx_sha256",
    "first_requests",
    "warmup_requests",
    "measured_requests",
    "max_new_tokens",
    "fixed_continuation_steps",
    "ready_timeout_s",
    "job_deadline_s",
    "watchdog_poll_ms",
    "backstop_grace_s",
    "device",
    "backend",
    "device_info",
];

/// Values that break naive readers: nulls, wrong kinds, negative and huge numbers, fractions,
/// empty and odd strings (hex-looking, non-ASCII, the enum names).
pub fn nasty_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        prop::sample::select(vec![
            json!(0),
            json!(-1),
            json!(1),
            json!(2),
            json!(u32::MAX),
            json!(u64::from(u32::MAX) + 1),
            json!(i64::MAX),
            json!(i64::MIN),
            json!(u64::MAX),
            json!(0.5),
            json!(-0.0),
            json!(1e308),
            json!(-1e308),
            json!(f64::MIN_POSITIVE),
        ]),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f).map(Value::Number)),
        prop::sample::select(vec![
            "",
            "ok",
            "failed",
            "timeout",
            "cancelled",
            "stock",
            "controlled",
            "headline",
            "fixed_continuation",
            "reference_pair",
            "first",
            "warmup",
            "measured",
            "alternate",
            "fixed",
            "length",
            "stop",
            "0000000000000000000000000000000000000000000000000000000000000000",
            "000000000000000000000000000000000000000000000000000000000000000",
            "00000000000000000000000000000000000000000000000000000000000000000",
            "ABCDEF0000000000000000000000000000000000000000000000000000000000",
            "é000000000000000000000000000000000000000000000000000000000000000",
            "/",
            "..",
            "../outside",
            "a\u{0}b",
            "\u{feff}",
            "💥",
        ])
        .prop_map(|s| Value::String(s.to_owned())),
        "\\PC{0,40}".prop_map(Value::String),
        Just(json!([])),
        Just(json!({})),
        Just(json!([null])),
        Just(json!({"": null})),
    ]
}

/// Arbitrary JSON whose object keys are mostly the formats' own.
pub fn arbitrary_json() -> impl Strategy<Value = Value> {
    let key = prop_oneof![4 => prop::sample::select(KEYS).prop_map(str::to_owned), 1 => "\\PC{0,8}"];
    nasty_value().prop_recursive(5, 96, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..12)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

/// Number tokens a `Value` cannot hold, spliced into the text: out of every integer range,
/// out of the float range, and not JSON at all.
const RAW_NUMBERS: &[&str] = &[
    "18446744073709551616",
    "-9223372036854775809",
    "99999999999999999999999999999999",
    "1e400",
    "-1e400",
    "1e-400",
    "1.0",
    "-0",
    "4294967296",
    "00",
    "0x10",
    "NaN",
    "Infinity",
    "+1",
    ".5",
];

/// One change to a valid document.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// Remove the field or element at a location (not the root).
    Drop(Index),
    /// Replace the value at a location (the root included) with another.
    Replace(Index, Value),
    /// Add [`UNKNOWN_KEY`] to an object.
    AddUnknown(Index),
    /// Set `schema_version` at the top level.
    Version(Value),
    /// Replace the value at a location by a raw number token (applied to the text, last).
    RawNumber(Index, &'static str),
}

pub fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => any::<Index>().prop_map(Mutation::Drop),
        4 => (any::<Index>(), nasty_value()).prop_map(|(i, v)| Mutation::Replace(i, v)),
        1 => (any::<Index>(), arbitrary_json()).prop_map(|(i, v)| Mutation::Replace(i, v)),
        1 => any::<Index>().prop_map(Mutation::AddUnknown),
        1 => prop_oneof![any::<u64>().prop_map(Value::from), any::<i64>().prop_map(Value::from), nasty_value()]
            .prop_map(Mutation::Version),
        2 => (any::<Index>(), prop::sample::select(RAW_NUMBERS)).prop_map(|(i, n)| Mutation::RawNumber(i, n)),
    ]
}

pub fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    prop_oneof![
        15 => prop::collection::vec(mutation(), 1..5),
        // A lone other version that readers read as a number: the lists above make one about once
        // in a thousand cases, too rarely for the properties' version checks ever to run.
        1 => any::<u32>().prop_filter("not 1", |v| *v != 1).prop_map(|v| vec![Mutation::Version(Value::from(v))]),
    ]
}

/// Every location in `value` as a JSON pointer, the root (`""`) first.
pub fn pointers(value: &Value) -> Vec<String> {
    fn walk(value: &Value, at: String, out: &mut Vec<String>) {
        out.push(at.clone());
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    walk(v, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(v, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, String::new(), &mut out);
    out
}

fn split(pointer: &str) -> (&str, String) {
    let (parent, last) = pointer.rsplit_once('/').expect("not the root");
    (parent, last.replace("~1", "/").replace("~0", "~"))
}

const RAW_MARK: &str = "\u{1}raw-number\u{1}";

/// Applies `mutations` to `doc` and returns the document's text.
pub fn apply(doc: &Value, mutations: &[Mutation]) -> Vec<u8> {
    let mut doc = doc.clone();
    let mut raw = None;
    for m in mutations {
        let locations = pointers(&doc);
        match m {
            Mutation::Drop(i) if locations.len() > 1 => {
                let (parent, last) = split(&locations[1 + i.index(locations.len() - 1)]);
                match doc.pointer_mut(parent) {
                    Some(Value::Object(map)) => {
                        map.remove(&last);
                    }
                    Some(Value::Array(items)) => {
                        items.remove(last.parse::<usize>().unwrap());
                    }
                    _ => unreachable!("a parent is a container"),
                }
            }
            Mutation::Drop(_) => {}
            Mutation::Replace(i, v) => *doc.pointer_mut(&locations[i.index(locations.len())]).unwrap() = v.clone(),
            Mutation::AddUnknown(i) => {
                let objects: Vec<&String> =
                    locations.iter().filter(|p| doc.pointer(p).is_some_and(Value::is_object)).collect();
                if objects.is_empty() {
                    continue;
                }
                let at = objects[i.index(objects.len())].clone();
                // An object no format accepts as a value either, so maps refuse it too.
                doc.pointer_mut(&at)
                    .unwrap()
                    .as_object_mut()
                    .unwrap()
                    .insert(UNKNOWN_KEY.to_owned(), json!({UNKNOWN_KEY: true}));
            }
            Mutation::Version(v) => {
                if let Some(map) = doc.as_object_mut() {
                    map.insert("schema_version".to_owned(), v.clone());
                }
            }
            Mutation::RawNumber(i, token) => {
                *doc.pointer_mut(&locations[i.index(locations.len())]).unwrap() = Value::String(RAW_MARK.to_owned());
                raw = Some(*token);
            }
        }
    }
    let mut text = serde_json::to_string(&doc).unwrap();
    if let Some(token) = raw {
        // One marked location gets the token; any other surviving mark becomes a plain 0.
        text = text.replacen(&serde_json::to_string(RAW_MARK).unwrap(), token, 1);
        text = text.replace(&serde_json::to_string(RAW_MARK).unwrap(), "0");
    }
    text.into_bytes()
}

/// Whether the mutations are exactly one added unknown field (which every reader must refuse).
pub fn only_unknown_field(mutations: &[Mutation]) -> bool {
    matches!(mutations, [Mutation::AddUnknown(_)])
}

/// The schema version set by a lone [`Mutation::Version`], if it is not 1: `Ok` with a number a
/// reader reads as a version (a `u32`), which it must refuse by that number; `Err` with a value
/// that is no version at all, which it must refuse as a parse error.
pub fn only_wrong_version(mutations: &[Mutation]) -> Option<Result<u32, &Value>> {
    match mutations {
        [Mutation::Version(v)] if v != &json!(1) => Some(v.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or(v)),
        _ => None,
    }
}

/// What a reader must have done with a lone unknown field or a lone other version (with other
/// mutations there is nothing to check): refused the field as a parse error (`is_parse_error`),
/// a version number by that number (`version_of` reads it from the error), and any other version
/// value as a parse error.
pub fn check_refusal<T: std::fmt::Debug, E: std::fmt::Debug>(
    mutations: &[Mutation],
    read: &Result<T, E>,
    version_of: impl Fn(&E) -> Option<u32>,
    is_parse_error: impl Fn(&E) -> bool,
) -> Result<(), TestCaseError> {
    if only_unknown_field(mutations) {
        prop_assert!(
            read.as_ref().is_err_and(&is_parse_error),
            "an unknown field must be refused as a parse error, read as {read:?}"
        );
    }
    match (only_wrong_version(mutations), read) {
        (None, _) => {}
        (Some(Ok(v)), Err(e)) if version_of(e) == Some(v) => {}
        (Some(Err(_)), Err(e)) if is_parse_error(e) => {}
        (Some(Ok(v)), read) => {
            prop_assert!(false, "schema_version {v} must be refused by that number, read as {read:?}")
        }
        (Some(Err(v)), read) => {
            prop_assert!(false, "schema_version {v} must be refused as a parse error, read as {read:?}")
        }
    }
    Ok(())
}
