//! A minimal SVG writer for the plots: shapes, text, linear and log scales, 1-2-5 ticks, axes
//! and a legend below the data. Hand-written rather than `plotters`: the figures need a dozen primitives, the
//! output is byte-for-byte deterministic (coordinates printed with two decimals), text is left to
//! the browser's fonts (plotters' SVG backend needs a font crate to measure text), and nothing is
//! added to a build that two cores share.

use std::fmt::Write;

use crate::duration::Unit;

/// The colour of each adapter, and of everything else.
pub const CONTROLLED: &str = "#1f77b4";
pub const STOCK: &str = "#e6550d";
/// Declared adapters' colours, picked by name so that one adapter keeps its colour across
/// figures and sessions.
pub const DECLARED: [&str; 5] = ["#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
pub const INK: &str = "#222222";
pub const GRID: &str = "#dddddd";
pub const INVALID: &str = "#c00000";

/// An SVG document being drawn.
pub struct Svg {
    width: f64,
    height: f64,
    body: String,
}

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn points(pts: &[(f64, f64)]) -> String {
    pts.iter().map(|(x, y)| format!("{x:.2},{y:.2}")).collect::<Vec<_>>().join(" ")
}

impl Svg {
    pub fn new(width: f64, height: f64) -> Self {
        Svg { width, height, body: String::new() }
    }

    pub fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), stroke: &str, width: f64, dash: Option<&str>) {
        let dash = dash.map_or(String::new(), |d| format!(r#" stroke-dasharray="{d}""#));
        let _ = writeln!(
            self.body,
            r#"<line x1="{x1:.2}" y1="{y1:.2}" x2="{x2:.2}" y2="{y2:.2}" stroke="{stroke}" stroke-width="{width}"{dash}/>"#
        );
    }

    pub fn polyline(&mut self, pts: &[(f64, f64)], stroke: &str, width: f64, dash: Option<&str>) {
        if pts.is_empty() {
            return;
        }
        let dash = dash.map_or(String::new(), |d| format!(r#" stroke-dasharray="{d}""#));
        let _ = writeln!(
            self.body,
            r#"<polyline fill="none" stroke="{stroke}" stroke-width="{width}" stroke-linejoin="round"{dash} points="{}"/>"#,
            points(pts)
        );
    }

    /// A filled area between `upper` (left to right) and `lower` (left to right).
    pub fn band(&mut self, upper: &[(f64, f64)], lower: &[(f64, f64)], fill: &str, opacity: f64) {
        if upper.is_empty() {
            return;
        }
        let mut pts = upper.to_vec();
        pts.extend(lower.iter().rev());
        let _ = writeln!(
            self.body,
            r#"<polygon fill="{fill}" fill-opacity="{opacity}" stroke="none" points="{}"/>"#,
            points(&pts)
        );
    }

    pub fn rect(&mut self, (x, y): (f64, f64), (w, h): (f64, f64), fill: &str, stroke: &str) {
        let _ = writeln!(
            self.body,
            r#"<rect x="{x:.2}" y="{y:.2}" width="{w:.2}" height="{h:.2}" fill="{fill}" stroke="{stroke}"/>"#
        );
    }

    /// Text at (x, y); `anchor` is `start`, `middle` or `end`; `rotate` turns it about its anchor.
    pub fn text(&mut self, (x, y): (f64, f64), s: &str, size: f64, anchor: &str, fill: &str, rotate: Option<f64>) {
        let rotate = rotate.map_or(String::new(), |r| format!(r#" transform="rotate({r} {x:.2} {y:.2})""#));
        let _ = writeln!(
            self.body,
            r#"<text x="{x:.2}" y="{y:.2}" font-size="{size}" text-anchor="{anchor}" fill="{fill}"{rotate}>{}</text>"#,
            esc(s)
        );
    }

    pub fn finish(self) -> String {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n{}</svg>\n",
            self.body,
            w = self.width,
            h = self.height
        )
    }
}

/// Maps data values on [lo, hi] to pixels on [a, b], linearly or by log10.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    pub lo: f64,
    pub hi: f64,
    a: f64,
    b: f64,
    log: bool,
}

impl Scale {
    pub fn linear(lo: f64, hi: f64, a: f64, b: f64) -> Self {
        let hi = if hi > lo { hi } else { lo + 1.0 };
        Scale { lo, hi, a, b, log: false }
    }

    /// A log10 scale; `lo` and `hi` must be positive.
    pub fn log(lo: f64, hi: f64, a: f64, b: f64) -> Self {
        let hi = if hi > lo { hi } else { lo * 10.0 };
        Scale { lo, hi, a, b, log: true }
    }

    pub fn map(&self, v: f64) -> f64 {
        let t = if self.log {
            (v.max(f64::MIN_POSITIVE).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        self.a + t * (self.b - self.a)
    }

    /// Tick values inside the range: 1-2-5 steps (linear) or 1-2-5 per decade (log).
    pub fn ticks(&self) -> Vec<f64> {
        if self.log {
            let mut out = Vec::new();
            let mut decade = 10f64.powf(self.lo.log10().floor());
            while decade <= self.hi {
                for m in [1.0, 2.0, 5.0] {
                    let v = decade * m;
                    if v >= self.lo * 0.999_999 && v <= self.hi * 1.000_001 {
                        out.push(v);
                    }
                }
                decade *= 10.0;
            }
            return out;
        }
        let step = nice_step((self.hi - self.lo) / 8.0);
        let mut v = (self.lo / step).ceil() * step;
        let mut out = Vec::new();
        while v <= self.hi + step * 1e-9 {
            out.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
            v += step;
        }
        out
    }
}

/// The 1-2-5 number nearest above `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if raw.is_nan() || raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let magnitude = 10f64.powf(raw.log10().floor());
    let f = raw / magnitude;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// `lo`, `hi` widened outward to multiples of a nice step (for an axis range).
pub fn nice_range(lo: f64, hi: f64) -> (f64, f64) {
    let step = nice_step((hi - lo).max(hi.abs() * 1e-3).max(1e-12) / 6.0);
    ((lo / step).floor() * step, (hi / step).ceil() * step)
}

/// A tick label: integers without decimals, others with as few as the value needs (≤ 3).
pub fn tick_label(v: f64) -> String {
    if v == 0.0 {
        return "0".to_owned();
    }
    let a = v.abs();
    if !(1e-3..1e6).contains(&a) {
        return format!("{v:.0e}");
    }
    for decimals in 0..=3 {
        let s = format!("{v:.decimals$}");
        if (s.parse::<f64>().unwrap_or(v) - v).abs() <= a * 1e-9 {
            return s;
        }
    }
    format!("{v:.3}")
}

/// A time unit for an axis: µs below 5 ms, ms above, so that tick labels stay short. Values
/// are in microseconds; they are shown by [`crate::duration`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeUnit(Unit);

impl TimeUnit {
    /// The unit for values up to `max_us` microseconds.
    pub fn for_max_us(max_us: f64) -> Self {
        TimeUnit(if max_us >= 5_000.0 { Unit::Millis } else { Unit::Micros })
    }

    pub fn name(&self) -> &'static str {
        self.0.name()
    }

    pub fn of(&self, us: f64) -> f64 {
        match self.0 {
            Unit::Micros => us,
            Unit::Millis | Unit::Seconds => us / (self.0.ns() / 1e3),
        }
    }

    /// `1.67 ms`, `612.3 µs`.
    pub fn show(&self, us: f64) -> String {
        self.0.show(us * 1e3)
    }
}

/// The plot area and its two scales.
pub struct Frame {
    pub left: f64,
    pub top: f64,
    pub width: f64,
    pub height: f64,
    pub x: Scale,
    pub y: Scale,
}

/// The size of every figure, in SVG units.
pub const FIGURE: (f64, f64) = (860.0, 480.0);

/// How the y axis maps values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    Linear,
    Log,
}

impl Frame {
    /// The plotting area every figure uses inside a [`FIGURE`]-sized canvas: a linear x axis over
    /// `x`, and a y axis over `y`.
    pub fn standard(x: (f64, f64), y: (f64, f64), y_axis: Axis) -> Self {
        let (w, h) = FIGURE;
        let y = match y_axis {
            Axis::Linear => Scale::linear(y.0, y.1, h - 60.0, 64.0),
            Axis::Log => Scale::log(y.0, y.1, h - 60.0, 64.0),
        };
        Frame {
            left: 80.0,
            top: 64.0,
            width: w - 110.0,
            height: h - 124.0,
            x: Scale::linear(x.0, x.1, 80.0, w - 30.0),
            y,
        }
    }

    pub fn at(&self, x: f64, y: f64) -> (f64, f64) {
        (self.x.map(x), self.y.map(y))
    }

    /// Grid, axes, ticks and their labels, axis titles.
    pub fn draw_axes(&self, svg: &mut Svg, x_title: &str, y_title: &str) {
        let (l, t, r, b) = (self.left, self.top, self.left + self.width, self.top + self.height);
        for v in self.y.ticks() {
            let y = self.y.map(v);
            svg.line((l, y), (r, y), GRID, 1.0, None);
            svg.text((l - 6.0, y + 4.0), &tick_label(v), 11.0, "end", INK, None);
        }
        for v in self.x.ticks() {
            let x = self.x.map(v);
            svg.line((x, t), (x, b), GRID, 1.0, None);
            svg.text((x, b + 16.0), &tick_label(v), 11.0, "middle", INK, None);
        }
        svg.line((l, b), (r, b), INK, 1.0, None);
        svg.line((l, t), (l, b), INK, 1.0, None);
        svg.text(((l + r) / 2.0, b + 36.0), x_title, 12.0, "middle", INK, None);
        let (yx, yy) = (l - 52.0, (t + b) / 2.0);
        svg.text((yx, yy), y_title, 12.0, "middle", INK, Some(-90.0));
    }
}

/// One legend entry: colour, label, and whether it is drawn as a band (filled) or a line.
pub struct LegendEntry<'a> {
    pub color: &'a str,
    pub label: String,
    pub band: bool,
    pub dash: Option<&'a str>,
}

/// The legend, below the plotting area and its axis title, where it covers no data: the canvas
/// grows to hold it, entries in as many columns as fit the width (labels estimated at 6.4 px a
/// character at 11 px), read row by row.
pub fn legend(svg: &mut Svg, entries: &[LegendEntry<'_>]) {
    const ROW: f64 = 18.0;
    const LEFT: f64 = 80.0;
    let column = entries.iter().map(|e| e.label.chars().count()).max().unwrap_or(0) as f64 * 6.4 + 48.0;
    let columns = (((svg.width - LEFT - 30.0) / column).floor() as usize).clamp(1, entries.len().max(1));
    let rows = entries.len().div_ceil(columns);
    let top = svg.height;
    svg.height += rows as f64 * ROW + 12.0;
    for (i, e) in entries.iter().enumerate() {
        let (x, cy) = (LEFT + (i % columns) as f64 * column, top + 6.0 + (i / columns) as f64 * ROW);
        if e.band {
            svg.band(
                &[(x + 8.0, cy - 5.0), (x + 30.0, cy - 5.0)],
                &[(x + 8.0, cy + 5.0), (x + 30.0, cy + 5.0)],
                e.color,
                0.25,
            );
        } else {
            svg.line((x + 8.0, cy), (x + 30.0, cy), e.color, 2.0, e.dash);
        }
        svg.text((x + 36.0, cy + 4.0), &e.label, 11.0, "start", INK, None);
    }
}

/// The suite's one quantile (type 7, of sorted values), as the statistics compute it.
pub use crate::stats::quantile_sorted as quantile;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_and_labels() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(1.3), 2.0);
        assert_eq!(nice_step(33.0), 50.0);
        let s = Scale::linear(0.0, 600.0, 0.0, 100.0);
        assert_eq!(s.ticks(), vec![0.0, 100.0, 200.0, 300.0, 400.0, 500.0, 600.0]);
        assert_eq!(Scale::linear(17.0, 143.0, 0.0, 1.0).ticks(), vec![20.0, 40.0, 60.0, 80.0, 100.0, 120.0, 140.0]);
        assert_eq!(TimeUnit::for_max_us(6000.0).show(1670.6), "1.67 ms");
        assert_eq!(TimeUnit::for_max_us(900.0).show(612.34), "612.3 µs");
        assert_eq!(s.map(300.0), 50.0);
        let l = Scale::log(100.0, 10_000.0, 0.0, 100.0);
        assert_eq!(l.ticks(), vec![100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0, 10_000.0]);
        assert!((l.map(1000.0) - 50.0).abs() < 1e-9);
        assert_eq!(tick_label(0.5), "0.5");
        assert_eq!(tick_label(600.0), "600");
        assert_eq!(nice_range(583.0, 712.0), (550.0, 750.0));
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.5);
        assert_eq!(quantile(&[7.0], 0.9), 7.0);
    }

    /// The legend goes below everything drawn before it, on a canvas grown to hold it, in as
    /// many columns as fit: it can cover no data.
    #[test]
    fn the_legend_lies_below_the_data_on_a_taller_canvas() {
        let (w, h) = FIGURE;
        let mut svg = Svg::new(w, h);
        svg.polyline(&[(80.0, 64.0), (w - 30.0, h - 60.0)], CONTROLLED, 1.0, None);
        let entries: Vec<LegendEntry<'_>> = (0..5)
            .map(|i| LegendEntry { color: STOCK, label: format!("entry {i}"), band: i % 2 == 0, dash: None })
            .collect();
        legend(&mut svg, &entries);
        let out = svg.finish();
        let ys = |tag: &str, attr: &str| -> Vec<f64> {
            out.lines()
                .filter(|l| l.starts_with(tag))
                .filter_map(|l| l.split(&format!(" {attr}=\"")).nth(1)?.split('"').next()?.parse().ok())
                .collect()
        };
        let labels = ys("<text", "y");
        assert_eq!(labels.len(), 5, "{out}");
        assert!(labels.iter().all(|&y| y > h), "every label below the old canvas: {labels:?}");
        assert!(ys("<line", "y1").iter().all(|&y| y > h), "every swatch below it too");
        // Short labels share rows: five fit on one.
        assert!(labels.iter().all(|&y| y == labels[0]), "{labels:?}");
        assert!(out.contains(&format!("height=\"{}\"", h + 18.0 + 12.0)), "the canvas grew by one row");
    }

    #[test]
    fn text_is_escaped() {
        let mut svg = Svg::new(10.0, 10.0);
        svg.text((0.0, 0.0), "a<b & \"c\"", 10.0, "start", INK, None);
        let out = svg.finish();
        assert!(out.contains("a&lt;b &amp; &quot;c&quot;"), "{out}");
    }
}
