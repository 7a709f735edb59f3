//! `decode-baseline history`: every session's decisions appended to a SQLite history beside the
//! sessions (`<output root>/history.sqlite`), series of like sessions, change points over them
//! (`stats::change_points`), and exports for other tools (Otava's CSV, Bencher's BMF,
//! github-action-benchmark's `data.js`). The layout and the rules are in `req/history.md`.

mod command;
mod entry;
mod export;
mod record;
mod series;
mod store;
mod view;

pub use command::{run, HistoryAction, HistoryArgs, HistoryFormat};
pub use entry::{point_entries, series_id, session_entry, PointEntry, SessionEntry};
pub use export::{Bmf, Csv, DataJs};
pub use record::{database_in, record, record_finished};
pub use series::Series;
pub use store::{SeriesSummary, Store, StoredPoint, FILE};
pub use view::{List, One};
