//! Per cell and energy domain, every measured request's energy per token against its time per
//! token (its median decode step), coloured by adapter, hollow when the request was throttled:
//! whether a loop that is faster also spends less, request by request. Titled FAKE for a
//! fake-source session (`crates/launcher/src/energy`).

use crate::energy::{request_points, RequestPoint};
use decode_baseline_wire::session::SessionReport;

use super::{
    steps::color,
    svg::{legend, nice_range, Axis, Frame, LegendEntry, Svg, TimeUnit, FIGURE, INK},
};

/// The figures' names: `<cell>.energy-<domain>` with the domain's `:` and `/` as `-`.
pub fn name(cell: &str, domain: &str) -> String {
    format!("{cell}.energy-{}", domain.replace([':', '/'], "-"))
}

/// The figure of one cell and domain: a point per measured request, its median step time
/// against its joules per token, coloured by adapter, hollow when throttled; `None` below two
/// points.
pub fn figure(session: &SessionReport, cell: &str, domain: &str) -> Option<String> {
    let fake = if session.energy.as_ref().is_some_and(|e| e.fake.is_some()) { " FAKE" } else { "" };
    let points = request_points(&session.workers, cell, domain);
    if points.len() < 2 {
        return None;
    }
    let max = |f: &dyn Fn(&RequestPoint) -> f64| points.iter().map(f).fold(f64::MIN, f64::max);
    let min = |f: &dyn Fn(&RequestPoint) -> f64| points.iter().map(f).fold(f64::MAX, f64::min);
    let unit = TimeUnit::for_max_us(max(&|p| p.time_per_token_ns) / 1e3);
    let (scale, joules) = if max(&|p| p.joules_per_token) < 1.0 { (1e3, "mJ") } else { (1.0, "J") };
    let x = |p: &RequestPoint| unit.of(p.time_per_token_ns / 1e3);
    let y = |p: &RequestPoint| p.joules_per_token * scale;
    let frame = Frame::standard(nice_range(min(&x), max(&x)), nice_range(min(&y), max(&y)), Axis::Linear);
    let mut svg = Svg::new(FIGURE.0, FIGURE.1);
    let title = format!("{cell}: energy per token against time per token, {domain}{fake}");
    svg.text((FIGURE.0 / 2.0, 28.0), &title, 14.0, "middle", INK, None);
    frame.draw_axes(
        &mut svg,
        &format!("request's median decode step ({})", unit.name()),
        &format!("request's energy per output token ({joules})"),
    );
    let mut adapters: Vec<&decode_baseline_wire::Adapter> = Vec::new();
    for p in &points {
        let (px, py) = frame.at(x(p), y(p));
        let color = color(&p.adapter);
        if p.throttled {
            svg.rect((px - 3.5, py - 3.5), (7.0, 7.0), "white", color);
        } else {
            svg.rect((px - 3.0, py - 3.0), (6.0, 6.0), color, color);
        }
        if !adapters.contains(&&p.adapter) {
            adapters.push(&p.adapter);
        }
    }
    let mut entries: Vec<LegendEntry<'_>> = adapters
        .iter()
        .map(|a| LegendEntry { color: color(a), label: a.as_str().to_owned(), band: false, dash: None })
        .collect();
    if points.iter().any(|p| p.throttled) {
        entries.push(LegendEntry { color: INK, label: "hollow: throttled".into(), band: false, dash: Some("2,2") });
    }
    legend(&mut svg, &entries);
    Some(svg.finish())
}
