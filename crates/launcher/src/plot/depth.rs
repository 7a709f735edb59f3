//! The context-length figures: per-token decode time against the context length the decode steps
//! run at, and time to first token against the prompt length (the prompt length of each headline
//! cell), one line per adapter through the medians, with each median's 95 % interval as a band and
//! a whisker.

use std::collections::BTreeMap;

use decode_baseline_wire::{row::Quantity, Adapter};

use super::{
    steps,
    svg::{legend, nice_range, Axis, Frame, LegendEntry, Svg, TimeUnit, FIGURE, INK},
};
use crate::session::DepthPoint;

/// The adapter's colour in every figure (`steps::color`), from its name in the analysis.
fn color(adapter: &str) -> &'static str {
    Adapter::parse(adapter).map_or(INK, |a| steps::color(&a))
}

/// The figure's heading, what a point is, and its axes.
fn words(quantity: Quantity) -> [&'static str; 4] {
    match quantity {
        Quantity::PerToken => [
            "decode time per token against context length",
            "median per-token step time of the headline requests at each prompt length, with its 95 % interval",
            "context length (prompt tokens before the decode steps)",
            "time per token",
        ],
        Quantity::FirstToken => [
            "time to first token against prompt length",
            "median time from a headline request's start to its first token at each prompt length, with its 95 % interval",
            "prompt length (tokens prefilled before the first token)",
            "time to first token",
        ],
    }
}

/// The SVG of `quantity` against the prompt length, or `None` when no adapter has two lengths.
pub fn figure(title: &str, series: &BTreeMap<String, Vec<DepthPoint>>, quantity: Quantity) -> Option<String> {
    let [heading, subtitle, x_label, y_label] = words(quantity);
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
    svg.text((80.0, 24.0), &format!("{title}: {heading}"), 15.0, "start", INK, None);
    svg.text((80.0, 44.0), subtitle, 12.0, "start", INK, None);
    frame.draw_axes(&mut svg, x_label, &format!("{y_label} ({})", unit.name()));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{Row, Rows};

    /// A headline row of `adapter` at prompt length `l`: 1 ms per token, `ttft` ms to the first
    /// token (none when 0), each with a ±5 % interval.
    fn row(adapter: &str, l: u32, ttft: f64) -> Row {
        Row {
            cell: format!("tiny.L{l}.headline"),
            case: Some("tiny".into()),
            mode: "headline".into(),
            adapter: adapter.into(),
            prompt_len: Some(l),
            per_token_ns: 1e6,
            ci_ns: (0.95e6, 1.05e6),
            p90_ns: 1.1e6,
            cv: None,
            prefill_ns: None,
            first_token_ns: (ttft > 0.0).then_some(ttft * 1e6),
            first_token_ci_ns: (ttft > 0.0).then_some((0.95 * ttft * 1e6, 1.05 * ttft * 1e6)),
            split: None,
            cold: None,
            peak_memory_bytes: None,
            warnings: Vec::new(),
        }
    }

    #[test]
    fn time_to_first_token_is_drawn_against_prompt_length_beside_decode() {
        let rows = Rows {
            rows: vec![
                row("controlled", 512, 60.0),
                row("controlled", 16, 3.0),
                row("stock", 16, 5.0),
                row("stock", 512, 64.0),
                row("stock", 2048, 0.0),
            ],
            ..Rows::default()
        };
        let ttft = rows.depth_series("tiny", Quantity::FirstToken);
        let points = |s: &BTreeMap<String, Vec<DepthPoint>>, a: &str| -> Vec<(u32, f64)> {
            s[a].iter().map(|p| (p.context, p.median_ns)).collect()
        };
        assert_eq!(points(&ttft, "controlled"), [(16, 3e6), (512, 60e6)], "ascending by prompt length");
        assert_eq!(points(&ttft, "stock"), [(16, 5e6), (512, 64e6)], "a length without a first token is left out");
        let decode = rows.depth_series("tiny", Quantity::PerToken);
        assert_eq!(decode["stock"].len(), 3);
        let svg = figure("tiny", &ttft, Quantity::FirstToken).unwrap();
        assert!(svg.contains("tiny: time to first token against prompt length"), "{svg}");
        assert!(svg.contains("time to first token (ms)"), "{svg}");
        assert!(figure("tiny", &decode, Quantity::PerToken).unwrap().contains("decode time per token"));
        assert_eq!(figure("tiny", &rows.depth_series("other", Quantity::FirstToken), Quantity::FirstToken), None);
    }
}
