//! `decode-baseline compare`: controlled against stock within one session, or one session against
//! another cell by cell; each row a test of the log ratio of per-token times (a paired test on
//! A B / B A blocks where the session interleaved, Holm across rows, equivalence against a stated
//! margin), the A/A results beside it, refusal of unlike sessions, four output formats. The rule
//! and the exit codes are documented in `req/compare.md`.

mod aa;
mod command;
mod csv;
mod energy;
mod error;
mod estimate;
mod identity;
mod json;
mod markdown;
mod render;
pub(crate) mod rule;
mod session_rows;
mod table;

pub use command::{run, CompareArgs, Format};
pub use csv::Csv;
pub use decode_baseline_wire::compare::{
    AaResult, Basis, CompareReport, EnergyRow, Kind, Mismatch, Row, RowResult, SessionRef, Side, Versions,
    COMPARE_SCHEMA_VERSION,
};
pub use error::CompareError;
pub use estimate::{compare_within, within_rows, Settings};
pub use json::Json;
pub use markdown::Markdown;
pub use render::{error_words, profile_lines};
pub use session_rows::session_rows;
pub use table::Table;
