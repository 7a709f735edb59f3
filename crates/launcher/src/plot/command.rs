//! The `plot` subcommand: read a session, write its figures, list them (and the roofline
//! fractions when a bandwidth was given).

use std::path::PathBuf;

use decode_baseline_wire::ExitCode;

use super::write::{write_plots, PlotOptions};
use crate::session::load_session;

#[derive(Debug, clap::Args)]
pub struct PlotArgs {
    /// The session: a `session.json` or the session folder.
    pub session: PathBuf,
    /// Where to write the SVG files (default: the session folder, next to session.json).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Peak memory bandwidth in GB/s (10^9 bytes/s): adds a roofline figure per cell.
    #[arg(long)]
    pub peak_bandwidth_gbs: Option<f64>,
}

pub fn run(args: PlotArgs) -> anyhow::Result<ExitCode> {
    let session = load_session(&args.session)?;
    let dir = args.out.clone().unwrap_or_else(|| session.dir().to_owned());
    let written = write_plots(&session.report, &dir, PlotOptions { peak_bandwidth_gbs: args.peak_bandwidth_gbs })?;
    for file in &written.files {
        println!("{}", file.display());
    }
    for roof in &written.rooflines {
        let b = &roof.bytes;
        let windows: String =
            b.windowed.iter().map(|(bytes, w)| format!(", {bytes} B per position up to {w}")).collect();
        println!(
            "roofline {}: {:.3} MB of weights per step ({:.3} MB in the files), KV {} B per position{windows}",
            roof.cell,
            b.weight_bytes as f64 / 1e6,
            b.file_bytes as f64 / 1e6,
            b.kv_bytes_per_position,
        );
        for a in &roof.adapters {
            println!(
                "roofline {} {}: {:.2} % of the ceiling (median), {:.2} % max{}",
                roof.cell,
                a.adapter.as_str(),
                a.median_fraction * 100.0,
                a.max_fraction * 100.0,
                if a.max_fraction > 1.0 { " INVALID" } else { "" }
            );
        }
    }
    if written.files.is_empty() {
        eprintln!("decode-baseline: no cell of {} has valid measured steps; no plot written", session.path.display());
        return Ok(ExitCode::BadInput);
    }
    Ok(ExitCode::Ok)
}
