//! The JSON Schema of `compare --format json` ([`CompareReport`]), committed as
//! `schemas/compare.schema.json` beside the wire formats' schemas (which the protocol crate
//! generates). The test below fails when the committed file is stale; run it with
//! `DECODE_BASELINE_WRITE_SCHEMAS=1` to rewrite it after a deliberate change, and bump
//! [`super::estimate::COMPARE_SCHEMA_VERSION`] if the change is not additive.

use super::estimate::CompareReport;

/// File name of `compare --format json`'s schema under `schemas/`.
pub const COMPARE_SCHEMA_FILE: &str = "compare.schema.json";

/// The JSON Schema of `compare --format json`'s output. Keys that are left out when empty
/// (`device_differences`) are optional.
pub fn compare_schema() -> String {
    decode_baseline_protocol::schema::render(&schemars::schema_for!(CompareReport), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_compare_schema_is_current() {
        let dir = decode_baseline::launcher::session_job::repo_root().join("schemas");
        let stale =
            decode_baseline_protocol::schema::write_or_find_stale(&dir, &[(COMPARE_SCHEMA_FILE, compare_schema())]);
        assert!(
            stale.is_empty(),
            "stale or missing schema (regenerate with DECODE_BASELINE_WRITE_SCHEMAS=1 cargo test --release --bin decode-baseline schema): {stale:?}"
        );
    }
}
