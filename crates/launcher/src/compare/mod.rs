//! `decode-baseline compare`: controlled against stock within one session, or one session against
//! another cell by cell; each row a test of the log ratio of per-token times (a paired test on
//! A B / B A blocks where the session interleaved, Holm across rows, equivalence against a stated
//! margin), the A/A results beside it, refusal of unlike sessions, seven output formats (three
//! of them for CI: a step summary, JUnit XML, Bencher Metric Format). The rule
//! and the exit codes are documented in `req/compare.md`.

mod aa;
mod bmf;
mod command;
mod csv;
mod energy;
mod error;
mod estimate;
mod github;
pub(crate) mod identity;
mod json;
mod junit;
mod markdown;
mod render;
pub(crate) mod rule;
mod session_rows;
mod settings;
mod table;

pub use bmf::Bmf;
pub use command::{run, CompareArgs, Format};
pub use csv::Csv;
pub use decode_baseline_wire::compare::{
    AaResult, Basis, CompareReport, EnergyRow, Kind, Mismatch, Quantity, Row, RowResult, SessionRef, Side, Versions,
    COMPARE_SCHEMA_VERSION,
};
pub use error::CompareError;
pub use estimate::within_rows;
pub use github::Github;
pub use json::Json;
pub use junit::Junit;
pub use markdown::Markdown;
pub use render::{error_words, profile_lines};
#[cfg(test)]
pub use session_rows::tested_without_profile;
pub use session_rows::{compare_within, decide, decided_settings, default_rows, session_rows, stored_rows};
pub use settings::Settings;
pub use table::Table;
