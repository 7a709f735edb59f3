//! The roofline figure: how close each adapter's decode comes to the memory-bandwidth ceiling.
//!
//! A decode step must read the weights its forward uses once and the KV cache up to its position
//! (`bytes(p)`, [`ModelBytes`]: the embedding's one row, `top_k` of a layer's experts, a sliding
//! window's cache capped at the window), so with a peak bandwidth `B` (bytes/s) a step at
//! position `p` takes at least `bytes(p) / B`, and `ceiling(p) = B / bytes(p)` tokens/s. Achieved
//! tokens/s at a step is `1e9 / median step ns`; its fraction of the ceiling is how close the loop
//! comes. A fraction above 100 % is impossible, so it marks the cell invalid: the bandwidth given
//! is too low, or the byte count misses something (e.g. weights cached on chip).

use decode_baseline_wire::Adapter;
use serde::Serialize;

pub use super::step_bytes::ModelBytes;
use super::{
    steps::{color, profile},
    svg::{legend, Axis, Frame, LegendEntry, Svg, FIGURE, INK, INVALID},
};
use crate::session::CellData;

/// One adapter's place under the roof.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AdapterRoof {
    pub adapter: Adapter,
    /// Median over steps of the achieved fraction of the ceiling.
    pub median_fraction: f64,
    /// The largest per-step fraction (per-step medians over requests).
    pub max_fraction: f64,
}

/// The roofline of one cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellRoof {
    pub cell: String,
    pub bytes: ModelBytes,
    pub peak_bandwidth_gbs: f64,
    pub adapters: Vec<AdapterRoof>,
    /// Some step came above the ceiling.
    pub invalid: bool,
}

/// The figure and its numbers.
pub fn figure(cell: &CellData, bytes: &ModelBytes, peak_bandwidth_gbs: f64) -> Option<(String, CellRoof)> {
    let bandwidth = peak_bandwidth_gbs * 1e9;
    let series: Vec<(Adapter, Vec<f64>, Vec<f64>)> = cell
        .adapters
        .iter()
        .filter_map(|(a, reqs)| profile(reqs).map(|p| (a.clone(), p.positions, p.median)))
        .map(|(a, pos, med_us)| {
            let tps: Vec<f64> = med_us.iter().map(|us| 1e6 / us).collect();
            (a, pos, tps)
        })
        .collect();
    if series.is_empty() {
        return None;
    }
    let mut adapters = Vec::new();
    for (adapter, pos, tps) in &series {
        let mut fractions: Vec<f64> = pos.iter().zip(tps).map(|(&p, &t)| t / (bandwidth / bytes.at(p))).collect();
        fractions.sort_by(f64::total_cmp);
        adapters.push(AdapterRoof {
            adapter: adapter.clone(),
            median_fraction: super::svg::quantile(&fractions, 0.5),
            max_fraction: fractions[fractions.len() - 1],
        });
    }
    let invalid = adapters.iter().any(|a| a.max_fraction > 1.0);
    let roof = CellRoof { cell: cell.cell.clone(), bytes: bytes.clone(), peak_bandwidth_gbs, adapters, invalid };

    let positions = series.iter().flat_map(|(_, p, _)| p.iter().copied());
    let (x_lo, x_hi) = (positions.clone().fold(f64::INFINITY, f64::min), positions.fold(0.0, f64::max));
    let ceiling = |p: f64| bandwidth / bytes.at(p);
    let values: Vec<f64> =
        series.iter().flat_map(|(_, _, t)| t.iter().copied()).chain([ceiling(x_lo), ceiling(x_hi)]).collect();
    let (lo, hi) = (values.iter().copied().fold(f64::INFINITY, f64::min), values.iter().copied().fold(0.0, f64::max));
    let (y_lo, y_hi) = (10f64.powf((lo * 0.8).log10().floor()), 10f64.powf((hi * 1.25).log10().ceil()));
    let (w, h) = FIGURE;
    let frame = Frame::standard((x_lo, x_hi), (y_lo, y_hi), Axis::Log);
    let mut svg = Svg::new(w, h);
    let (title, title_color) = if invalid {
        (format!("{}: INVALID, a step came above the bandwidth ceiling", cell.cell), INVALID)
    } else {
        (format!("{}: decode against the memory-bandwidth roofline", cell.cell), INK)
    };
    svg.text((80.0, 24.0), &title, 15.0, "start", title_color, None);
    svg.text(
        (80.0, 44.0),
        &format!(
            "peak {peak_bandwidth_gbs} GB/s; bytes per token = {} weight bytes + {} KV bytes × position",
            bytes.weight_bytes, bytes.kv_bytes_per_position
        ),
        12.0,
        "start",
        INK,
        None,
    );
    frame.draw_axes(&mut svg, "sequence position of the token fed", "tokens/s (log scale)");
    let steps = 64;
    let roof_pts: Vec<(f64, f64)> = (0..=steps)
        .map(|k| x_lo + (x_hi - x_lo) * f64::from(k) / f64::from(steps))
        .map(|p| frame.at(p, ceiling(p)))
        .collect();
    svg.polyline(&roof_pts, INK, 2.0, Some("8,4"));
    let mut entries = vec![LegendEntry {
        color: INK,
        label: format!("ceiling: bandwidth / bytes ({:.0} tokens/s at {x_lo})", ceiling(x_lo)),
        band: false,
        dash: Some("8,4"),
    }];
    for ((adapter, pos, tps), r) in series.iter().zip(&roof.adapters) {
        let pts: Vec<(f64, f64)> = pos.iter().zip(tps).map(|(&p, &t)| frame.at(p, t)).collect();
        svg.polyline(&pts, color(adapter), 1.6, None);
        entries.push(LegendEntry {
            color: color(adapter),
            label: format!(
                "{}: {:.2} % of the ceiling (median), {:.2} % max",
                adapter.as_str(),
                r.median_fraction * 100.0,
                r.max_fraction * 100.0
            ),
            band: false,
            dash: None,
        });
    }
    legend(&mut svg, &entries);
    Some((svg.finish(), roof))
}
