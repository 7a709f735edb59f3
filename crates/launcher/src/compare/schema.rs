//! The JSON Schema of `compare --format json` ([`CompareReport`]), committed as
//! `schemas/compare.schema.json` beside the wire formats' schemas (which the protocol crate
//! generates), checked for staleness with them (`crates/launcher/src/generated.rs`); after a deliberate change,
//! bump [`super::estimate::COMPARE_SCHEMA_VERSION`] if it is not additive.

use super::estimate::CompareReport;

/// File name of `compare --format json`'s schema under `schemas/`.
pub const COMPARE_SCHEMA_FILE: &str = "compare.schema.json";

/// The JSON Schema of `compare --format json`'s output, as it is written (schemars' serialize
/// contract): every key is required except `device_differences`, which is left out when empty,
/// and every object is closed, as the formats `compare` reads are.
pub fn compare_schema() -> String {
    let mut value = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<CompareReport>()
        .to_value();
    close_objects(&mut value);
    let schema = schemars::Schema::try_from(value).expect("an object schema stays a schema");
    decode_baseline_wire::schema::render(&schema, false)
}

/// `additionalProperties: false` on every object schema with `properties` that says nothing of
/// other keys (the output types are written, never parsed, so serde has no such attribute).
fn close_objects(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                map.insert("additionalProperties".into(), serde_json::Value::Bool(false));
            }
            map.values_mut().for_each(close_objects);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}
