//! The distribution figure: the empirical CDF of per-token decode times for both adapters, over
//! every step of every measured request, with each median marked.
//!
//! The curve is drawn through 401 quantiles (p = 0, 0.0025, …, 1) rather than every observation,
//! which keeps the file small and loses nothing visible. The x axis stops at the larger p99 so
//! that one slow step does not flatten the rest; the subtitle gives the maxima.

use decode_baseline_wire::Adapter;

use super::{
    steps::color,
    svg::{legend, nice_range, quantile, Axis, Frame, LegendEntry, Svg, TimeUnit, FIGURE, INK},
};
use crate::session::CellData;

pub fn figure(cell: &CellData) -> Option<String> {
    let sorted: Vec<(Adapter, Vec<f64>)> = cell
        .adapters
        .iter()
        .map(|(a, reqs)| {
            let mut v: Vec<f64> = reqs.iter().flat_map(|r| r.dur_ns.iter().map(|&d| d as f64 / 1e3)).collect();
            v.sort_by(f64::total_cmp);
            (a.clone(), v)
        })
        .filter(|(_, v)| !v.is_empty())
        .collect();
    if sorted.is_empty() {
        return None;
    }
    let lo = sorted.iter().map(|(_, v)| v[0]).fold(f64::INFINITY, f64::min);
    let p99 = sorted.iter().map(|(_, v)| quantile(v, 0.99)).fold(0.0, f64::max);
    let unit = TimeUnit::for_max_us(p99);
    let (x_lo, x_hi) = nice_range(unit.of(lo) * 0.98, unit.of(p99) * 1.02);
    let (w, h) = FIGURE;
    let frame = Frame::standard((x_lo.max(0.0), x_hi), (0.0, 1.0), Axis::Linear);
    let mut svg = Svg::new(w, h);
    svg.text((80.0, 24.0), &format!("{}: distribution of per-token decode times", cell.cell), 15.0, "start", INK, None);
    svg.text(
        (80.0, 44.0),
        "empirical CDF over every step of every measured request; the x axis stops at the larger p99",
        12.0,
        "start",
        INK,
        None,
    );
    frame.draw_axes(&mut svg, &format!("step time ({})", unit.name()), "fraction of steps at or below");
    let mut entries = Vec::new();
    for (adapter, v) in &sorted {
        let pts: Vec<(f64, f64)> = (0..=400)
            .map(|k| {
                let p = f64::from(k) / 400.0;
                (unit.of(quantile(v, p)).min(x_hi), p)
            })
            .map(|(x, p)| frame.at(x, p))
            .collect();
        svg.polyline(&pts, color(adapter), 1.8, None);
        let median = quantile(v, 0.5);
        let x = frame.x.map(unit.of(median));
        svg.line((x, frame.y.map(0.0)), (x, frame.y.map(1.0)), color(adapter), 1.0, Some("5,4"));
        entries.push(LegendEntry {
            color: color(adapter),
            label: format!(
                "{}: {} steps, median {}, max {}",
                adapter.as_str(),
                v.len(),
                unit.show(median),
                unit.show(v[v.len() - 1])
            ),
            band: false,
            dash: None,
        });
    }
    entries.push(LegendEntry { color: INK, label: "dashed: medians".to_owned(), band: false, dash: Some("5,4") });
    legend(&mut svg, &entries);
    Some(svg.finish())
}
