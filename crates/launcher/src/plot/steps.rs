//! The per-step figure: decode-step time against sequence position for both adapters, the
//! median over the measured requests at each step with a p10–p90 band.

use decode_baseline_wire::Adapter;

use super::svg::{
    legend, nice_range, quantile, Axis, Frame, LegendEntry, Svg, TimeUnit, CONTROLLED, DECLARED, FIGURE, INK, STOCK,
};
use crate::session::{CellData, MeasuredRequest};

/// Per step index: position, p10, median, p90 (µs).
pub struct StepProfile {
    pub positions: Vec<f64>,
    pub p10: Vec<f64>,
    pub median: Vec<f64>,
    pub p90: Vec<f64>,
}

/// The profile of one adapter's requests, aligned by step index (positions of the first request).
pub fn profile(requests: &[MeasuredRequest]) -> Option<StepProfile> {
    let steps = requests.iter().map(|r| r.dur_ns.len()).max()?;
    let first = requests.iter().max_by_key(|r| r.dur_ns.len())?;
    let mut out = StepProfile { positions: Vec::new(), p10: Vec::new(), median: Vec::new(), p90: Vec::new() };
    for i in 0..steps {
        let mut values: Vec<f64> = requests.iter().filter_map(|r| r.dur_ns.get(i)).map(|&d| d as f64 / 1e3).collect();
        values.sort_by(f64::total_cmp);
        out.positions.push(f64::from(first.positions[i]));
        out.p10.push(quantile(&values, 0.10));
        out.median.push(quantile(&values, 0.50));
        out.p90.push(quantile(&values, 0.90));
    }
    Some(out)
}

pub fn color(adapter: &Adapter) -> &'static str {
    match adapter {
        Adapter::Controlled => CONTROLLED,
        Adapter::Stock => STOCK,
        Adapter::Declared(name) => {
            let sum: usize = name.as_str().bytes().map(usize::from).sum();
            DECLARED[sum % DECLARED.len()]
        }
    }
}

/// The SVG, or `None` when no adapter has a measured step.
pub fn figure(cell: &CellData) -> Option<String> {
    let profiles: Vec<(Adapter, usize, StepProfile)> =
        cell.adapters.iter().filter_map(|(a, reqs)| profile(reqs).map(|p| (a.clone(), reqs.len(), p))).collect();
    if profiles.is_empty() {
        return None;
    }
    let all = |f: fn(&StepProfile) -> &Vec<f64>| profiles.iter().flat_map(move |(_, _, p)| f(p).iter().copied());
    let (x_lo, x_hi) = (all(|p| &p.positions).fold(f64::INFINITY, f64::min), all(|p| &p.positions).fold(0.0, f64::max));
    let unit = TimeUnit::for_max_us(all(|p| &p.p90).fold(0.0, f64::max));
    let (y_lo, y_hi) = nice_range(
        unit.of(all(|p| &p.p10).fold(f64::INFINITY, f64::min)) * 0.97,
        unit.of(all(|p| &p.p90).fold(0.0, f64::max)) * 1.03,
    );
    let (w, h) = FIGURE;
    let frame = Frame::standard((x_lo, x_hi), (y_lo.max(0.0), y_hi), Axis::Linear);
    let mut svg = Svg::new(w, h);
    svg.text((80.0, 24.0), &format!("{}: decode step time by position", cell.cell), 15.0, "start", INK, None);
    let counts: Vec<String> = profiles.iter().map(|(a, n, _)| format!("{} {n}", a.as_str())).collect();
    svg.text(
        (80.0, 44.0),
        &format!("median and p10–p90 over the measured requests at each step ({})", counts.join(", ")),
        12.0,
        "start",
        INK,
        None,
    );
    frame.draw_axes(&mut svg, "sequence position of the token fed", &format!("step time ({})", unit.name()));
    let mut entries = Vec::new();
    for (adapter, _, p) in &profiles {
        let pts = |ys: &[f64]| p.positions.iter().zip(ys).map(|(&x, &y)| frame.at(x, unit.of(y))).collect::<Vec<_>>();
        svg.band(&pts(&p.p90), &pts(&p.p10), color(adapter), 0.18);
        svg.polyline(&pts(&p.median), color(adapter), 1.6, None);
        let overall = {
            let mut m = p.median.clone();
            m.sort_by(f64::total_cmp);
            quantile(&m, 0.5)
        };
        entries.push(LegendEntry {
            color: color(adapter),
            label: format!("{} median (median of the steps {})", adapter.as_str(), unit.show(overall)),
            band: false,
            dash: None,
        });
        entries.push(LegendEntry {
            color: color(adapter),
            label: format!("{} p10–p90", adapter.as_str()),
            band: true,
            dash: None,
        });
    }
    legend(&mut svg, &entries);
    Some(svg.finish())
}
