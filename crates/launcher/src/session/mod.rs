//! The one reader of `session.json`: load (any readable version, converted to the current one
//! first) and the typed views every command that reads a finished session shares: the samples
//! per cell and adapter, the request pairs, the rows people see with their depth points, and the
//! `bench.json` record beside the session. `compare`, `report`, `plot`, `calibrate` and `bench`
//! depend on this module, not on each other.

mod bench_record;
#[cfg(test)]
pub mod fixtures;
mod load;
mod read_error;
mod rows;
mod samples;
mod upgrade;
mod words;

pub use bench_record::{BenchRecord, ModelSource, BENCH_RECORD, BENCH_RECORD_SCHEMA_VERSION};
pub use load::{load_session, LoadedSession};
pub use read_error::ReadError;
pub use rows::{agreement, DepthPoint, Row, Rows};
pub use samples::{
    cells, first_token_cells, first_token_times, judged_cells, judged_cells_of, request_pairs, CellData,
    MeasuredRequest,
};
pub use words::{
    group_line, group_setup, placement_as_compared, placement_line, replaced_line, replaced_lines, serde_word,
    within_case,
};
