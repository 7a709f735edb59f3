//! `history` in a terminal: every series in one table, or one series point by point with its
//! change points.

use super::series::Series;
use crate::export::Exporter;
use crate::stats::ChangePoint;

/// Every series in one table, then each change in words.
pub struct List;

impl Exporter<[Series]> for List {
    fn export(&self, all: &[Series]) -> anyhow::Result<String> {
        Ok(list(all))
    }
}

/// One series point by point.
pub struct One;

impl Exporter<Series> for One {
    fn export(&self, series: &Series) -> anyhow::Result<String> {
        Ok(one(series))
    }
}

/// `ratio 1.052 [1.031, 1.074]`.
fn ratio_words(ratio: f64, (lower, upper): (f64, f64)) -> String {
    format!("{ratio:.3} [{lower:.3}, {upper:.3}]")
}

/// The first 12 characters of a commit (and `+dirty`).
fn short_commit(code_version: &str) -> String {
    match code_version.split_once('+') {
        Some((commit, rest)) => format!("{}+{rest}", commit.get(..12).unwrap_or(commit)),
        None => code_version.get(..12).unwrap_or(code_version).to_owned(),
    }
}

/// One change in words: `change at session S (point 21 of 36): after / before 1.052 [1.031,
/// 1.074] (95 % CI), t 6.10 > 3.92`.
fn change_line(series: &Series, change: &ChangePoint) -> String {
    let session = &series.points[change.index].session.session_id;
    let mut line = format!(
        "change at session {session} (point {} of {}): after / before {} (95 % CI), |t| {:.2} > {:.2} (means of {} \
         and {} points)",
        change.index + 1,
        series.points.len(),
        ratio_words(change.ratio(), change.interval(0.95)),
        change.z.abs(),
        change.threshold,
        change.before,
        change.after
    );
    let changed = series.what_changed(change);
    if !changed.is_empty() {
        line.push_str(&format!("; there: {}", changed.join("; ")));
    }
    line
}

/// The test's settings and the noise it found, in one line.
fn test_line(series: &Series) -> String {
    let s = &series.settings;
    let noise = series.point_sd.map_or("too few points to test (fewer than 3)".to_owned(), |(sd, df)| {
        format!("one session's sd {:.2} % (log scale) on {df:.1} df", sd * 100.0)
    });
    format!(
        "change points: α {} % per series (Bonferroni over the candidate splits), at least {} sessions each side, \
         means of up to {} each side; {noise}",
        s.alpha * 100.0,
        s.min_segment,
        s.window
    )
}

/// Every series: id, points, changes, newest ratio, span and key.
fn list(all: &[Series]) -> String {
    if all.is_empty() {
        return "no series recorded yet\n".to_owned();
    }
    let mut lines = vec![vec![
        "series".to_owned(),
        "points".to_owned(),
        "changes".to_owned(),
        "newest ratio".to_owned(),
        "from".to_owned(),
        "to".to_owned(),
        "row | host | device | placement | design".to_owned(),
    ]];
    for s in all {
        let newest =
            s.points.last().map_or("-".to_owned(), |p| ratio_words(p.point.ratio, (p.point.lower, p.point.upper)));
        lines.push(vec![
            s.summary.series.clone(),
            s.points.len().to_string(),
            s.changes.len().to_string(),
            newest,
            s.summary.first_utc.clone(),
            s.summary.last_utc.clone(),
            s.summary.series_key.clone(),
        ]);
    }
    let mut out = crate::export::columns(&lines, |_| false);
    for s in all {
        for change in &s.changes {
            out.push_str(&format!("{}: {}\n", s.summary.series, change_line(s, change)));
        }
    }
    out
}

/// One series point by point, a change marked at its first point, then the changes in words.
fn one(series: &Series) -> String {
    let mut out = format!("series {}: {}\n{}\n\n", series.summary.series, series.summary.series_key, test_line(series));
    let mut lines = vec![vec![
        "#".to_owned(),
        "started".to_owned(),
        "session".to_owned(),
        "commit".to_owned(),
        "versions".to_owned(),
        "ratio [95 % CI]".to_owned(),
        "verdict".to_owned(),
        "".to_owned(),
    ]];
    for (i, p) in series.points.iter().enumerate() {
        let mark = series.change_at(i).map_or(String::new(), |c| format!("◀ change ×{:.3}", c.ratio()));
        lines.push(vec![
            (i + 1).to_string(),
            p.session.started_utc.clone(),
            p.session.session_id.clone(),
            short_commit(&p.session.code_version),
            p.session.versions.clone(),
            ratio_words(p.point.ratio, (p.point.lower, p.point.upper)),
            p.point.verdict.clone(),
            mark,
        ]);
    }
    out.push_str(&crate::export::columns(&lines, |_| false));
    out.push('\n');
    if series.changes.is_empty() {
        out.push_str("no change point\n");
    }
    for change in &series.changes {
        out.push_str(&change_line(series, change));
        out.push('\n');
    }
    out
}
