//! One series read back with its change points: what every view of the history shows.

use crate::stats::{change_points, point_variance, ChangePoint, ChangeSettings, SeriesPoint};

use super::store::{SeriesSummary, Store, StoredPoint};

/// A series, its points oldest first, and the changes found in it.
#[derive(Debug, Clone)]
pub struct Series {
    pub summary: SeriesSummary,
    pub points: Vec<StoredPoint>,
    pub changes: Vec<ChangePoint>,
    /// The standard deviation of one point (log scale) the test used, and its degrees of freedom;
    /// `None` with fewer than three points.
    pub point_sd: Option<(f64, f64)>,
    pub settings: ChangeSettings,
}

impl Series {
    /// Reads `summary`'s points from `store` and looks for changes with `settings`.
    pub fn read(store: &Store, summary: SeriesSummary, settings: ChangeSettings) -> anyhow::Result<Series> {
        let points = store.points(&summary.series)?;
        let values: Vec<SeriesPoint> =
            points.iter().map(|p| SeriesPoint { log_estimate: p.point.log_estimate, se: p.point.se }).collect();
        Ok(Series {
            changes: change_points(&values, &settings),
            point_sd: point_variance(&values).map(|(v, df)| (v.sqrt(), df)),
            summary,
            points,
            settings,
        })
    }

    /// The change that starts at point `index`, if one does.
    pub fn change_at(&self, index: usize) -> Option<&ChangePoint> {
        self.changes.iter().find(|c| c.index == index)
    }

    /// What differs between the sessions on either side of `change`: the loop's commit, its
    /// sources, the MLX versions (each `before → after`), in words; empty when nothing recorded
    /// differs.
    pub fn what_changed(&self, change: &ChangePoint) -> Vec<String> {
        let (before, after) = (&self.points[change.index - 1].session, &self.points[change.index].session);
        let mut out = Vec::new();
        let mut differ = |what: &str, a: &str, b: &str| {
            if a != b {
                out.push(format!("{what} {a} → {b}"));
            }
        };
        differ("commit", &before.code_version, &after.code_version);
        differ("worker sources", &before.loop_sources, &after.loop_sources);
        differ("versions", &before.versions, &after.versions);
        out
    }
}
