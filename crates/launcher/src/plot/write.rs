//! Writing a session's figures into a folder: per cell `<cell>.steps.svg` and
//! `<cell>.distribution.svg`, and `<cell>.roofline.svg` when a peak bandwidth is given. Each file
//! is written to a temp file in the same folder and renamed into place, so a reader never sees a
//! half-written figure; figures are derived data, so an existing one is replaced.

use std::{
    io::Write,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
};

use decode_baseline_wire::{row::Quantity, session::SessionReport};

use super::{
    depth, distribution, energy,
    error::PlotError,
    roofline::{self, CellRoof, ModelBytes},
    steps,
};

/// Optional figures.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlotOptions {
    /// Peak memory bandwidth in GB/s (10^9 bytes/s); enables the roofline figure.
    pub peak_bandwidth_gbs: Option<f64>,
}

/// What was written.
#[derive(Debug, Clone, Default)]
pub struct Written {
    pub files: Vec<PathBuf>,
    pub rooflines: Vec<CellRoof>,
}

/// The per-step and distribution figures of every cell of `session`, into `dir` (the session
/// folder, when called by `run` after writing `session.json`).
pub fn write_session_plots(session: &SessionReport, dir: &Path) -> Result<Written, PlotError> {
    write_plots(session, dir, PlotOptions::default())
}

/// As [`write_session_plots`], with the optional figures of `options`.
pub fn write_plots(session: &SessionReport, dir: &Path, options: PlotOptions) -> Result<Written, PlotError> {
    if let Some(gbs) = options.peak_bandwidth_gbs {
        if !(gbs > 0.0 && gbs.is_finite()) {
            return Err(PlotError::Bandwidth(gbs));
        }
    }
    std::fs::create_dir_all(dir).map_err(|source| PlotError::Write { path: dir.to_owned(), source })?;
    let mut written = Written::default();
    let mut figures = session_figures(session);
    if let Some(gbs) = options.peak_bandwidth_gbs {
        for cell in &crate::session::cells(session) {
            // In a rank group each rank reads its share of the weights (`req/distributed.md`).
            let ranks = session.job.group.as_ref().map_or(1, |g| g.ranks);
            let bytes = ModelBytes::of_case(&session.manifest_path, &cell.case_id)?.per_rank(ranks);
            if let Some((svg, roof)) = roofline::figure(cell, &bytes, gbs) {
                figures.push(Figure { name: format!("{}.roofline", cell.cell), svg });
                written.rooflines.push(roof);
            }
        }
    }
    for figure in figures {
        let path = dir.join(format!("{}.svg", figure.name));
        write_atomic(&path, figure.svg.as_bytes())?;
        written.files.push(path);
    }
    Ok(written)
}

/// One figure of a session: its name (the file stem, `<cell>.steps`) and the SVG document.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub name: String,
    pub svg: String,
}

/// Every figure a session gets without options: per case with two or more headline context
/// lengths the decode time against context length (`<case>.context`) and the time to first
/// token against prompt length beside it (`<case>.first-token`), then per cell the step
/// times by position (`<cell>.steps`) and the distribution (`<cell>.distribution`), then per
/// cell and domain with energy readings its energy against time (`<cell>.energy-<domain>`).
pub fn session_figures(session: &SessionReport) -> Vec<Figure> {
    let cells = crate::session::cells(session);
    let rows = crate::session::Rows::of(session);
    let mut out = Vec::new();
    for case in rows.cases() {
        for (quantity, name) in [(Quantity::PerToken, "context"), (Quantity::FirstToken, "first-token")] {
            if let Some(svg) = depth::figure(&case, &rows.depth_series(&case, quantity), quantity) {
                out.push(Figure { name: format!("{case}.{name}"), svg });
            }
        }
    }
    for cell in &cells {
        out.extend(steps::figure(cell).map(|svg| Figure { name: format!("{}.steps", cell.cell), svg }));
        out.extend(distribution::figure(cell).map(|svg| Figure { name: format!("{}.distribution", cell.cell), svg }));
    }
    for cell in session.energy.iter().flat_map(|e| &e.cells) {
        for d in &cell.domains {
            let svg = energy::figure(session, &cell.cell, &d.domain);
            out.extend(svg.map(|svg| Figure { name: energy::name(&cell.cell, &d.domain), svg }));
        }
    }
    out
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), PlotError> {
    let wrap = |source| PlotError::Write { path: path.to_owned(), source };
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut temp = tempfile::Builder::new().prefix(".plot.").suffix(".svg").tempfile_in(dir).map_err(wrap)?;
    temp.write_all(bytes).map_err(wrap)?;
    // A temp file is created 0600; a figure is for anyone who can read the session folder.
    temp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644)).map_err(wrap)?;
    temp.persist(path).map_err(|e| wrap(e.error))?;
    Ok(())
}
