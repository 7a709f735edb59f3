//! The context-length figure: per-token decode time against the context length the decode steps
//! run at (the prompt length of each headline cell), one line per adapter through the per-token
//! medians, with each median's 95 % interval as a band and a whisker.

use std::collections::BTreeMap;

use decode_baseline_wire::Adapter;

use super::{
    steps,
    svg::{legend, nice_range, Axis, Frame, LegendEntry, Svg, TimeUnit, FIGURE, INK},
};
use crate::session::DepthPoint;

/// The adapter's colour in every figure (`steps::color`), from its name in the analysis.
fn color(adapter: &str) -> &'static str {
    Adapter::parse(adapter).map_or(INK, |a| steps::color(&a))
}

/// The SVG, or `None` when no adapter has two context lengths.
pub fn figure(title: &str, series: &BTreeMap<String, Vec<DepthPoint>>) -> Option<String> {
    let points: Vec<&DepthPoint> = series.values().flatten().collect();
    if series.is_empty() || points.is_empty() {
        return None;
    }
    let x_hi = points.iter().map(|p| f64::from(p.context)).fold(0.0, f64::max);
    let unit = TimeUnit::for_max_us(points.iter().map(|p| p.ci_ns.1 / 1e3).fold(0.0, f64::max));
    let y_lo = points.iter().map(|p| unit.of(p.ci_ns.0 / 1e3)).fold(f64::INFINITY, f64::min);
    let y_hi = points.iter().map(|p| unit.of(p.ci_ns.1 / 1e3)).fold(0.0, f64::max);
    let (y_lo, y_hi) = nice_range((y_lo * 0.9).max(0.0), y_hi * 1.05);
    let (x_lo, x_hi) = nice_range(0.0, x_hi * 1.02);
    let (w, h) = FIGURE;
    let frame = Frame::standard((x_lo, x_hi), (y_lo.max(0.0), y_hi), Axis::Linear);
    let mut svg = Svg::new(w, h);
    svg.text((80.0, 24.0), &format!("{title}: decode time per token against context length"), 15.0, "start", INK, None);
    svg.text(
        (80.0, 44.0),
        "median per-token step time of the headline requests at each prompt length, with its 95 % interval",
        12.0,
        "start",
        INK,
        None,
    );
    frame.draw_axes(
        &mut svg,
        "context length (prompt tokens before the decode steps)",
        &format!("time per token ({})", unit.name()),
    );
    let mut entries = Vec::new();
    for (adapter, pts) in series {
        let c = color(adapter);
        let at = |p: &DepthPoint, ns: f64| frame.at(f64::from(p.context), unit.of(ns / 1e3));
        let upper: Vec<_> = pts.iter().map(|p| at(p, p.ci_ns.1)).collect();
        let lower: Vec<_> = pts.iter().map(|p| at(p, p.ci_ns.0)).collect();
        svg.band(&upper, &lower, c, 0.18);
        for p in pts {
            let (x, lo) = at(p, p.ci_ns.0);
            let (_, hi) = at(p, p.ci_ns.1);
            svg.line((x, lo), (x, hi), c, 1.2, None);
            let (_, y) = at(p, p.median_ns);
            svg.rect((x - 3.0, y - 3.0), (6.0, 6.0), c, c);
        }
        svg.polyline(&pts.iter().map(|p| at(p, p.median_ns)).collect::<Vec<_>>(), c, 1.8, None);
        entries.push(LegendEntry { color: c, label: format!("{adapter} median"), band: false, dash: None });
        entries.push(LegendEntry { color: c, label: format!("{adapter} 95 % interval"), band: true, dash: None });
    }
    legend(&mut svg, &entries);
    Some(svg.finish())
}
