//! The roofline figure: how close each adapter's decode comes to the memory-bandwidth ceiling.
//!
//! A decode step must read every weight once and the KV cache up to its position, so with a peak
//! bandwidth `B` (bytes/s) a step at position `p` takes at least `bytes(p) / B`, and
//! `ceiling(p) = B / bytes(p)` tokens/s, where
//! `bytes(p) = W + 2 · layers · kv_heads · head_dim · e · p`: `W` the total size of the model's
//! `*.safetensors` files, the factor 2 for keys and values, `e` the bytes per cache element
//! (4 for float32, 2 for float16/bfloat16, from config.json's `torch_dtype`/`dtype`). Achieved
//! tokens/s at a step is `1e9 / median step ns`; its fraction of the ceiling is how close the loop
//! comes. A fraction above 100 % is impossible, so it marks the cell invalid: the bandwidth given
//! is too low, or the byte count misses something (e.g. weights cached on chip).

use std::path::{Path, PathBuf};

use decode_baseline_protocol::{manifest::Manifest, Adapter};
use serde::Serialize;

use super::{
    error::PlotError,
    steps::{color, profile},
    svg::{legend, Axis, Frame, LegendEntry, Svg, FIGURE, INK, INVALID},
};
use crate::compare::CellData;

/// What one token's step must move from memory, for one model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ModelBytes {
    /// Total size of the `*.safetensors` files.
    pub weight_bytes: u64,
    /// KV-cache bytes per cached position, over all layers (keys and values).
    pub kv_bytes_per_position: u64,
}

impl ModelBytes {
    pub fn at(&self, position: f64) -> f64 {
        self.weight_bytes as f64 + self.kv_bytes_per_position as f64 * position
    }

    /// Reads the model folder of `case_id` from the manifest at `manifest_path`.
    pub fn of_case(manifest_path: &Path, case_id: &str) -> Result<Self, PlotError> {
        let model = |detail: String| PlotError::Model { path: manifest_path.to_owned(), detail };
        let bytes = std::fs::read(manifest_path).map_err(|e| model(format!("unreadable: {e}")))?;
        let manifest: Manifest = serde_json::from_slice(&bytes).map_err(|e| model(format!("unparsable: {e}")))?;
        let case = manifest.cases.get(case_id).ok_or_else(|| model(format!("cases: no case `{case_id}`")))?;
        let dir: PathBuf = if case.path.is_absolute() {
            case.path.clone()
        } else {
            manifest_path.parent().unwrap_or(Path::new(".")).join(&case.path)
        };
        Self::of_dir(&dir)
    }

    /// Reads config.json and the `*.safetensors` sizes of a model folder.
    pub fn of_dir(dir: &Path) -> Result<Self, PlotError> {
        let err = |detail: String| PlotError::Model { path: dir.to_owned(), detail };
        let config_path = dir.join("config.json");
        let config: serde_json::Value = std::fs::read(&config_path)
            .map_err(|e| err(format!("config.json unreadable: {e}")))
            .and_then(|b| serde_json::from_slice(&b).map_err(|e| err(format!("config.json unparsable: {e}"))))?;
        let int = |key: &str| config.get(key).and_then(serde_json::Value::as_u64);
        let need =
            |key: &str| int(key).ok_or_else(|| err(format!("config.json: `{key}`: expected a positive integer")));
        let layers = need("num_hidden_layers")?;
        let heads = need("num_attention_heads")?;
        let kv_heads = int("num_key_value_heads").unwrap_or(heads);
        let head_dim = match int("head_dim") {
            Some(d) => d,
            None => need("hidden_size")? / heads.max(1),
        };
        let dtype = config.get("torch_dtype").or_else(|| config.get("dtype")).and_then(|v| v.as_str()).unwrap_or("");
        let element = match dtype {
            "float32" => 4,
            "float16" | "bfloat16" => 2,
            other => {
                return Err(err(format!(
                    "config.json: `torch_dtype`: expected float32, float16 or bfloat16, got `{other}`"
                )))
            }
        };
        let mut weight_bytes = 0;
        let entries = std::fs::read_dir(dir).map_err(|e| err(format!("unreadable: {e}")))?;
        for entry in entries {
            let entry = entry.map_err(|e| err(format!("unreadable: {e}")))?;
            if entry.file_name().to_string_lossy().ends_with(".safetensors") {
                weight_bytes += entry.metadata().map_err(|e| err(format!("unreadable: {e}")))?.len();
            }
        }
        if weight_bytes == 0 {
            return Err(err("no *.safetensors file".to_owned()));
        }
        Ok(ModelBytes { weight_bytes, kv_bytes_per_position: 2 * layers * kv_heads * head_dim * element })
    }
}

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
pub fn figure(cell: &CellData, bytes: ModelBytes, peak_bandwidth_gbs: f64) -> Option<(String, CellRoof)> {
    let bandwidth = peak_bandwidth_gbs * 1e9;
    let series: Vec<(Adapter, Vec<f64>, Vec<f64>)> = cell
        .adapters
        .iter()
        .filter_map(|(a, reqs)| profile(reqs).map(|p| (*a, p.positions, p.median)))
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
            adapter: *adapter,
            median_fraction: super::svg::quantile(&fractions, 0.5),
            max_fraction: fractions[fractions.len() - 1],
        });
    }
    let invalid = adapters.iter().any(|a| a.max_fraction > 1.0);
    let roof = CellRoof { cell: cell.cell.clone(), bytes, peak_bandwidth_gbs, adapters, invalid };

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
        svg.polyline(&pts, color(*adapter), 1.6, None);
        entries.push(LegendEntry {
            color: color(*adapter),
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
    legend(&mut svg, (w - 36.0, frame.y.map(y_lo) - 20.0 - entries.len() as f64 * 18.0), &entries);
    Some((svg.finish(), roof))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_of_the_fixture_model() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/tiny-qwen3");
        let b = ModelBytes::of_dir(&dir).unwrap();
        // 2 (K, V) · 2 layers · 2 kv heads · 16 head_dim · 4 bytes (float32) = 512 bytes/position.
        assert_eq!(b.kv_bytes_per_position, 512);
        assert_eq!(b.weight_bytes, std::fs::metadata(dir.join("model.safetensors")).unwrap().len());
        assert_eq!(b.at(10.0), b.weight_bytes as f64 + 5120.0);
    }
}
