//! `decode-baseline init [DIR]`: a new workspace (`crate::workspace`) on the program
//! files this executable serves, the wheel's or a checkout's (`req/install.md`).
//!
//! It writes, and overwrites nothing:
//! * `workloads.json` and its pin: the served manifest's cases (the embedded fixtures, which
//!   stay in the program files), prompts, cells and run policy, with the built-in workers'
//!   sources and the environment re-pinned as they are installed here. Declared adapters stay
//!   behind: their sources are relative to the manifest's folder, which is no longer theirs.
//! * `jobs/`: the main job (`smoke.json`) and the long-prompt job (`ttft.json`), whose null
//!   `manifest` is the workspace's and whose sessions go into `out/`;
//! * `out/`, the output root of those jobs (and of `history`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use decode_baseline_pins::load_manifest;
use decode_baseline_wire::ExitCode;

use crate::{
    checkout::repo_root,
    guard::{chain, MANIFEST_NAME},
    manifest_cli::{installed, repin, write_pinned},
    workspace::{JOBS_DIR, OUT_DIR},
};

/// The served checkout's jobs a new workspace gets (they run the built-in workers only).
pub const INIT_JOBS: [&str; 2] = ["smoke.json", "ttft.json"];

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// The folder to make a workspace: created if missing; it must hold no manifest or jobs of
    /// those names yet.
    #[arg(default_value = ".", value_name = "DIR")]
    pub dir: PathBuf,
}

pub fn run(args: InitArgs) -> anyhow::Result<ExitCode> {
    let repo = repo_root();
    let dir = std::path::absolute(&args.dir).with_context(|| format!("failed to resolve {}", args.dir.display()))?;
    let manifest_path = dir.join(MANIFEST_NAME);
    let jobs: Vec<(PathBuf, PathBuf)> =
        INIT_JOBS.iter().map(|name| (repo.join(JOBS_DIR).join(name), dir.join(JOBS_DIR).join(name))).collect();
    for path in std::iter::once(&manifest_path).chain(jobs.iter().map(|(_, to)| to)) {
        crate::ensure_input!(
            !path.exists(),
            "{} exists: init writes a new workspace and overwrites nothing (choose another folder)",
            path.display()
        );
    }
    let source = repo.join(MANIFEST_NAME);
    let (mut manifest, _) = load_manifest(&source).map_err(|e| crate::exit::bad_input(chain(&e)))?;
    manifest.adapters.clear();
    manifest.environments.clear();
    let environment = decode_baseline_pins::installed::selected_environment();
    let installed = installed(&repo, environment.as_deref())?;
    let pinned = repin(&repo, &manifest_path, &mut manifest, environment.as_deref(), &installed)?;

    for folder in [dir.join(JOBS_DIR), dir.join(OUT_DIR)] {
        std::fs::create_dir_all(&folder).with_context(|| format!("failed to create {}", folder.display()))?;
    }
    for (from, to) in &jobs {
        copy_new(from, to)?;
    }
    write_pinned(&manifest_path, &manifest)?;
    println!(
        "init: workspace {} on the program files {}\n  {MANIFEST_NAME}: {} cases, {} cells; environment mlx {} / \
         mlx_lm {} at {}\n  {JOBS_DIR}/: {} (the main job)\n  {OUT_DIR}/: the sessions\nnext: decode-baseline run --job {}",
        dir.display(),
        repo.display(),
        manifest.cases.len(),
        manifest.cells.len(),
        pinned.mlx_version,
        pinned.mlx_lm_version,
        installed.venv.display(),
        INIT_JOBS.join(", "),
        shown(&args.dir.join(JOBS_DIR).join(INIT_JOBS[0])),
    );
    Ok(ExitCode::Ok)
}

/// Copies `from` to `to`, refusing to replace anything there.
fn copy_new(from: &Path, to: &Path) -> anyhow::Result<()> {
    let bytes = std::fs::read(from).with_context(|| format!("failed to read {}", from.display()))?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)
        .with_context(|| format!("failed to create {} (it must not exist)", to.display()))?;
    std::io::Write::write_all(&mut file, &bytes).with_context(|| format!("failed to write {}", to.display()))
}

fn shown(path: &Path) -> String {
    path.strip_prefix(".").unwrap_or(path).display().to_string()
}
