//! `manifest pin`: re-hash the worker sources and the installed environment into the manifest,
//! write its digest beside it, and update the pin line cited in `req/manifest.md`.

use std::{fs, path::Path};

use anyhow::{ensure, Context};
use decode_baseline_pins::{
    self as pins, environment_pins,
    installed::{mlx_dir_override, selected_environment, venv_dir, Installed, DEFAULT_ENV_NAME},
    load_manifest, pin_path, pin_text, worker_sources,
};
use decode_baseline_wire::ExitCode;

use super::{write_atomically, write_manifest, PinArgs};
use crate::guard::{chain, locate_manifest};

pub fn installed(repo: &Path) -> anyhow::Result<Installed> {
    let venv = venv_dir(repo);
    ensure!(venv.is_dir(), "no environment at {} (provision it with `python3 tools/env/provision.py`)", venv.display());
    Installed::locate(&venv, mlx_dir_override().as_deref())
        .with_context(|| format!("failed to locate the installed environment in {}", venv.display()))
}

pub(super) fn pin(args: PinArgs) -> anyhow::Result<ExitCode> {
    let (repo, manifest_path) = locate_manifest(args.manifest.as_deref())?;
    let (mut manifest, _) = load_manifest(&manifest_path).map_err(|e| anyhow::anyhow!(chain(&e)))?;
    let installed = installed(&repo)?;
    manifest.worker_sources =
        worker_sources(&repo, &manifest_path, &manifest).map_err(|e| anyhow::anyhow!(chain(&e)))?;
    let pinned = environment_pins(&repo, &installed).map_err(|e| anyhow::anyhow!(chain(&e)))?;
    let environment = selected_environment();
    match &environment {
        None => manifest.environment = pinned.clone(),
        Some(name) => {
            manifest.environments.insert(name.clone(), pinned.clone());
        }
    }
    for (adapter, files) in &manifest.worker_sources {
        if files.is_empty() {
            eprintln!("manifest pin: warning: no {adapter} worker source matches the rule; the guard will fail");
        }
    }
    let bytes = write_manifest(&manifest_path, &manifest)?;
    let pin = pin_path(&manifest_path);
    let pin_line = pin_text(&manifest_path, &bytes);
    write_atomically(&pin, pin_line.as_bytes())?;
    let citation = repo.join(CITATION);
    if cite_pin(&citation, pin_line.trim_end())? {
        println!("manifest pin: updated the pin cited in {}", citation.display());
    }
    println!(
        "manifest pin: {} sha256 {} ({} worker sources, environment {}: mlx {} / mlx_lm {} at {})",
        manifest_path.display(),
        decode_baseline_wire::Sha256Digest::of_bytes(&bytes),
        manifest.worker_sources.iter().map(|(a, files)| format!("{} {a}", files.len())).collect::<Vec<_>>().join(" + "),
        environment.as_deref().unwrap_or(DEFAULT_ENV_NAME),
        pinned.mlx_version,
        pinned.mlx_lm_version,
        installed.venv.display(),
    );
    Ok(ExitCode::Ok)
}

/// The document that cites the pin, relative to the repository.
pub const CITATION: &str = "req/manifest.md";

/// Replaces the one line of `doc` that is a pin line (`<64 hex>  <name>`) with `pin_line`.
/// Returns whether the file changed; a missing document (a copy of the repository without
/// `req/`) is left alone, and a document without exactly one pin line is an error.
fn cite_pin(doc: &Path, pin_line: &str) -> anyhow::Result<bool> {
    let text = match fs::read_to_string(doc) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(err).with_context(|| format!("failed to read {}", doc.display())),
    };
    let name = pin_line.split_once("  ").map(|(_, name)| name).unwrap_or_default();
    let is_pin_line = |line: &str| pins::parse_pin(line, name).is_some();
    let count = text.lines().filter(|line| is_pin_line(line)).count();
    ensure!(count == 1, "{} must cite the pin on exactly one line, found {count}", doc.display());
    let updated: String = text
        .split_inclusive('\n')
        .map(|line| if is_pin_line(line.trim_end_matches('\n')) { format!("{pin_line}\n") } else { line.to_owned() })
        .collect();
    if updated == text {
        return Ok(false);
    }
    write_atomically(doc, updated.as_bytes())?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cited_pin_line_is_replaced_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let doc = dir.path().join("manifest.md");
        let old = format!("{}  workloads.json", "a".repeat(64));
        let new = format!("{}  workloads.json", "b".repeat(64));
        fs::write(&doc, format!("# t\n\n```\n{old}\n```\nsee {old} inline\n")).unwrap();
        assert!(cite_pin(&doc, &new).unwrap());
        assert_eq!(fs::read_to_string(&doc).unwrap(), format!("# t\n\n```\n{new}\n```\nsee {old} inline\n"));
        assert!(!cite_pin(&doc, &new).unwrap(), "an up-to-date citation is left alone");
        assert!(!cite_pin(&dir.path().join("missing.md"), &new).unwrap());
        fs::write(&doc, "no pin here\n").unwrap();
        assert!(cite_pin(&doc, &new).is_err());
    }
}
