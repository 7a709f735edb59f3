//! The history for other tools:
//!
//! * CSV with Apache Otava's columns (`time` and `commit` first, then the metrics and attributes),
//!   one line per point of every series shown;
//! * Bencher Metric Format JSON of each series' newest point (`{benchmark: {ratio: {value,
//!   lower_value, upper_value}}}`);
//! * github-action-benchmark's `data.js` (`window.BENCHMARK_DATA = {…}`), one entry per session
//!   with a bench per series point, smaller is better.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::series::Series;
use crate::export::{csv_field, Exporter};

/// A series' benchmark name: the row in words (`tiny.L16.headline controlled/stock`), with the
/// series id when another shown series has the same words.
fn names(all: &[Series]) -> Vec<String> {
    let words: Vec<String> =
        all.iter().map(|s| s.summary.series_key.split(" | ").next().unwrap_or("").to_owned()).collect();
    words
        .iter()
        .zip(all)
        .map(|(w, s)| {
            if words.iter().filter(|x| *x == w).count() > 1 {
                format!("{w} ({})", s.summary.series)
            } else {
                w.clone()
            }
        })
        .collect()
}

/// Otava's CSV: `time,commit,…`, oldest first within each series.
pub struct Csv;

impl Exporter<[Series]> for Csv {
    fn export(&self, all: &[Series]) -> anyhow::Result<String> {
        Ok(csv(all))
    }
}

fn csv(all: &[Series]) -> String {
    let mut out = String::from(
        "time,commit,series,name,session,ratio,ratio_lower,ratio_upper,log_ratio,se,verdict,versions,\
         change_point\n",
    );
    for (series, name) in all.iter().zip(names(all)) {
        for (i, p) in series.points.iter().enumerate() {
            let fields = [
                p.session.started_utc.clone(),
                p.session.code_version.clone(),
                series.summary.series.clone(),
                name.clone(),
                p.session.session_id.clone(),
                format!("{}", p.point.ratio),
                format!("{}", p.point.lower),
                format!("{}", p.point.upper),
                format!("{}", p.point.log_estimate),
                format!("{}", p.point.se),
                p.point.verdict.clone(),
                p.session.versions.clone(),
                series.change_at(i).map_or(String::new(), |c| format!("{}", c.ratio())),
            ];
            out.push_str(&fields.iter().map(|f| csv_field(f)).collect::<Vec<_>>().join(","));
            out.push('\n');
        }
    }
    out
}

/// Bencher Metric Format of each series' newest point.
pub struct Bmf;

impl Exporter<[Series]> for Bmf {
    fn export(&self, all: &[Series]) -> anyhow::Result<String> {
        bmf(all)
    }
}

fn bmf(all: &[Series]) -> anyhow::Result<String> {
    let mut out = Map::new();
    for (series, name) in all.iter().zip(names(all)) {
        let Some(newest) = series.points.last() else { continue };
        let p = &newest.point;
        out.insert(name, json!({"ratio": {"value": p.ratio, "lower_value": p.lower, "upper_value": p.upper}}));
    }
    Ok(serde_json::to_string_pretty(&Value::Object(out))? + "\n")
}

/// Milliseconds since the epoch of an RFC 3339 stamp; 0 when it does not parse.
fn epoch_ms(stamp: &str) -> u64 {
    humantime::parse_rfc3339_weak(stamp)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64)
}

/// github-action-benchmark's `data.js`: every session of the shown series, oldest first.
pub struct DataJs;

impl Exporter<[Series]> for DataJs {
    fn export(&self, all: &[Series]) -> anyhow::Result<String> {
        data_js(all)
    }
}

fn data_js(all: &[Series]) -> anyhow::Result<String> {
    let mut sessions: BTreeMap<(String, String), Vec<Value>> = BTreeMap::new();
    let mut commits: BTreeMap<String, String> = BTreeMap::new();
    for (series, name) in all.iter().zip(names(all)) {
        for p in &series.points {
            let key = (p.session.started_utc.clone(), p.session.session_id.clone());
            commits.insert(p.session.session_id.clone(), p.session.code_version.clone());
            sessions.entry(key).or_default().push(json!({
                "name": name,
                "value": p.point.ratio,
                "unit": format!("{} / {}", p.point.adapter, p.point.against),
                "range": format!("{:.4} to {:.4}", p.point.lower, p.point.upper),
                "extra": format!("session {}; {}; {}", p.session.session_id, p.point.verdict, p.session.versions),
            }));
        }
    }
    let entries: Vec<Value> = sessions
        .into_iter()
        .map(|((started, session), benches)| {
            json!({
                "commit": {
                    "id": commits.get(&session).cloned().unwrap_or_default(),
                    "message": format!("session {session}"),
                    "timestamp": started,
                    "url": "",
                },
                "date": epoch_ms(&started),
                "tool": "customSmallerIsBetter",
                "benches": benches,
            })
        })
        .collect();
    let last = entries.last().and_then(|e| e["date"].as_u64()).unwrap_or(0);
    let data = json!({ "lastUpdate": last, "repoUrl": "", "entries": { "decode-baseline": entries } });
    Ok(format!("window.BENCHMARK_DATA = {};\n", serde_json::to_string_pretty(&data)?))
}
