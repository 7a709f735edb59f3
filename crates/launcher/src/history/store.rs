//! The history database: one SQLite file (rusqlite, its SQLite bundled) beside the sessions it
//! records, `<output root>/history.sqlite`. Two tables, `sessions` (one row per session, its
//! facts) and `points` (one row per session and series), documented in `req/history.md`.
//! Recording a session again replaces its rows, so `history import` may be rerun.

use std::path::Path;

use rusqlite::{params, Connection, OpenFlags};

use super::entry::{PointEntry, SessionEntry};

/// The database's file name in an output root.
pub const FILE: &str = "history.sqlite";

/// The layout version, in `PRAGMA user_version`.
const LAYOUT: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    session_id   TEXT PRIMARY KEY,
    folder       TEXT NOT NULL,
    started_utc  TEXT NOT NULL,
    status       TEXT NOT NULL,
    host         TEXT NOT NULL,
    device       TEXT NOT NULL,
    placement    TEXT NOT NULL,
    design       TEXT NOT NULL,
    versions     TEXT NOT NULL,
    code_version TEXT NOT NULL,
    loop_sources TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS points (
    session_id  TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    series      TEXT NOT NULL,
    series_key  TEXT NOT NULL,
    cell        TEXT NOT NULL,
    quantity    TEXT NOT NULL,
    adapter     TEXT NOT NULL,
    against     TEXT NOT NULL,
    ratio       REAL NOT NULL,
    lower       REAL NOT NULL,
    upper       REAL NOT NULL,
    log_estimate REAL NOT NULL,
    se          REAL NOT NULL,
    df          REAL NOT NULL,
    verdict     TEXT NOT NULL,
    mde         REAL NOT NULL,
    numerator_median_ns   REAL,
    denominator_median_ns REAL,
    PRIMARY KEY (session_id, series)
);
CREATE INDEX IF NOT EXISTS points_by_series ON points(series);
";

/// A stored point with its session's facts: one line of a series.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredPoint {
    pub session: SessionEntry,
    pub point: PointEntry,
}

/// A series in the list: its id, key, how many points and the span they cover.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesSummary {
    pub series: String,
    pub series_key: String,
    pub points: usize,
    pub first_utc: String,
    pub last_utc: String,
}

/// An open history database.
pub struct Store {
    db: Connection,
}

impl Store {
    /// Opens (creating when absent) the database at `path`, to record into.
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        let db = Self::checked(path, Connection::open(path))?;
        db.execute_batch(SCHEMA)?;
        db.execute_batch(&format!("PRAGMA user_version = {LAYOUT}; PRAGMA foreign_keys = ON;"))?;
        Ok(Store { db })
    }

    /// Opens the existing database at `path` to read it: nothing is written to it.
    pub fn open_to_read(path: &Path) -> anyhow::Result<Store> {
        let db = Self::checked(path, Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY))?;
        let tables: i64 = db.query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('sessions', 'points')",
            [],
            |r| r.get(0),
        )?;
        crate::ensure_input!(
            tables == 2,
            "history database {}: expected the tables `sessions` and `points` (req/history.md), found {tables} of them",
            path.display()
        );
        Ok(Store { db })
    }

    /// `opened`, once it reads as a SQLite database of a layout this build knows.
    fn checked(path: &Path, opened: rusqlite::Result<Connection>) -> anyhow::Result<Connection> {
        let unusable = |e: rusqlite::Error| {
            crate::exit::bad_input(format!("history database {}: not a usable SQLite database: {e}", path.display()))
        };
        let db = opened.map_err(unusable)?;
        // Sessions that finish together (two launchers on one output root) wait for each other.
        db.busy_timeout(std::time::Duration::from_secs(30))?;
        let layout: i64 = db.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(unusable)?;
        if layout > LAYOUT {
            crate::bad_input!(
                "history database {}: layout version {layout}, this decode-baseline reads up to {LAYOUT}",
                path.display()
            );
        }
        Ok(db)
    }

    /// Records one session and its points, replacing what was recorded for it before.
    pub fn record(&mut self, s: &SessionEntry, points: &[PointEntry]) -> anyhow::Result<()> {
        let tx = self.db.transaction()?;
        tx.execute("DELETE FROM points WHERE session_id = ?1", params![s.session_id])?;
        tx.execute(
            "INSERT OR REPLACE INTO sessions VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                s.session_id,
                s.folder,
                s.started_utc,
                s.status,
                s.host,
                s.device,
                s.placement,
                s.design,
                s.versions,
                s.code_version,
                s.loop_sources
            ],
        )?;
        for p in points {
            tx.execute(
                "INSERT INTO points VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
                params![
                    s.session_id,
                    p.series,
                    p.series_key,
                    p.cell,
                    p.quantity,
                    p.adapter,
                    p.against,
                    p.ratio,
                    p.lower,
                    p.upper,
                    p.log_estimate,
                    p.se,
                    p.df,
                    p.verdict,
                    p.mde,
                    p.numerator_median_ns,
                    p.denominator_median_ns
                ],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Every series, by key.
    pub fn series(&self) -> anyhow::Result<Vec<SeriesSummary>> {
        let mut q = self.db.prepare(
            "SELECT p.series, p.series_key, COUNT(*), MIN(s.started_utc), MAX(s.started_utc)
             FROM points p JOIN sessions s USING (session_id)
             GROUP BY p.series, p.series_key ORDER BY p.series_key",
        )?;
        let rows = q.query_map([], |r| {
            Ok(SeriesSummary {
                series: r.get(0)?,
                series_key: r.get(1)?,
                points: r.get::<_, i64>(2)? as usize,
                first_utc: r.get(3)?,
                last_utc: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The points of `series`, oldest first (by the sessions' start).
    pub fn points(&self, series: &str) -> anyhow::Result<Vec<StoredPoint>> {
        let mut q = self.db.prepare(
            "SELECT s.session_id, s.folder, s.started_utc, s.status, s.host, s.device, s.placement, s.design,
                    s.versions, s.code_version, s.loop_sources,
                    p.series, p.series_key, p.cell, p.quantity, p.adapter, p.against, p.ratio, p.lower, p.upper,
                    p.log_estimate, p.se, p.df, p.verdict, p.mde, p.numerator_median_ns, p.denominator_median_ns
             FROM points p JOIN sessions s USING (session_id)
             WHERE p.series = ?1 ORDER BY s.started_utc, s.session_id",
        )?;
        let rows = q.query_map(params![series], |r| {
            Ok(StoredPoint {
                session: SessionEntry {
                    session_id: r.get(0)?,
                    folder: r.get(1)?,
                    started_utc: r.get(2)?,
                    status: r.get(3)?,
                    host: r.get(4)?,
                    device: r.get(5)?,
                    placement: r.get(6)?,
                    design: r.get(7)?,
                    versions: r.get(8)?,
                    code_version: r.get(9)?,
                    loop_sources: r.get(10)?,
                },
                point: PointEntry {
                    series: r.get(11)?,
                    series_key: r.get(12)?,
                    cell: r.get(13)?,
                    quantity: r.get(14)?,
                    adapter: r.get(15)?,
                    against: r.get(16)?,
                    ratio: r.get(17)?,
                    lower: r.get(18)?,
                    upper: r.get(19)?,
                    log_estimate: r.get(20)?,
                    se: r.get(21)?,
                    df: r.get(22)?,
                    verdict: r.get(23)?,
                    mde: r.get(24)?,
                    numerator_median_ns: r.get(25)?,
                    denominator_median_ns: r.get(26)?,
                },
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The one series whose id is `wanted`, or whose key contains it; an error naming the
    /// candidates otherwise.
    pub fn find_series(&self, wanted: &str) -> anyhow::Result<SeriesSummary> {
        let all = self.series()?;
        if let Some(exact) = all.iter().find(|s| s.series == wanted) {
            return Ok(exact.clone());
        }
        let matching: Vec<&SeriesSummary> = all.iter().filter(|s| s.series_key.contains(wanted)).collect();
        match matching.as_slice() {
            [one] => Ok((*one).clone()),
            [] => crate::bad_input!(
                "--series {wanted}: no series has that id or contains it in its key ({} series; `history` lists them)",
                all.len()
            ),
            many => crate::bad_input!(
                "--series {wanted}: {} series match; give one id:\n{}",
                many.len(),
                many.iter().map(|s| format!("  {}  {}", s.series, s.series_key)).collect::<Vec<_>>().join("\n")
            ),
        }
    }
}
