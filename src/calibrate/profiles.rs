//! Noise profile files: where they live, reading and writing them, a session's design, and the
//! profile that matches it.
//!
//! The default file is `$DECODE_BASELINE_PROFILE_DIR/<host>.json` when that variable is set,
//! else `$XDG_CACHE_HOME/decode-baseline/profiles/<host>.json`, else
//! `~/.cache/decode-baseline/profiles/<host>.json`: per user and host, outside any checkout,
//! because a profile describes the machine, not a session or a repository.

use std::path::{Path, PathBuf};

use decode_baseline::stats::NoiseProfile;
use decode_baseline_wire::{
    profile::{Design, NoiseProfileFile, ProfiledDesign, NOISE_PROFILE_SCHEMA_VERSION},
    session::SessionReport,
};

/// Overrides the folder of the default profile files (tests set it to a fresh folder).
pub const PROFILE_DIR_ENV: &str = "DECODE_BASELINE_PROFILE_DIR";

#[derive(Debug, thiserror::Error)]
pub enum ProfileFileError {
    #[error("failed to read noise profile {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to parse noise profile {path}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("noise profile {path}: schema version {found}, this build reads {NOISE_PROFILE_SCHEMA_VERSION}")]
    Version { path: PathBuf, found: u32 },
    #[error("failed to write noise profile {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The default profile file of this host (see the module docs); `None` without a home.
pub fn default_path() -> Option<PathBuf> {
    let dir = match std::env::var_os(PROFILE_DIR_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?
            .join("decode-baseline/profiles"),
    };
    Some(dir.join(format!("{}.json", hostname())))
}

/// This host's name as the launcher records it (`unknown` when it cannot be read).
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .filter(|h| !h.is_empty() && !h.contains('/'))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Reads and checks a profile file.
pub fn read(path: &Path) -> Result<NoiseProfileFile, ProfileFileError> {
    let bytes = std::fs::read(path).map_err(|source| ProfileFileError::Read { path: path.to_owned(), source })?;
    // The version first, so a file of another version says so rather than failing on a field.
    #[derive(serde::Deserialize)]
    struct Versioned {
        schema_version: u32,
    }
    let versioned: Versioned =
        serde_json::from_slice(&bytes).map_err(|source| ProfileFileError::Parse { path: path.to_owned(), source })?;
    if versioned.schema_version != NOISE_PROFILE_SCHEMA_VERSION {
        return Err(ProfileFileError::Version { path: path.to_owned(), found: versioned.schema_version });
    }
    serde_json::from_slice(&bytes).map_err(|source| ProfileFileError::Parse { path: path.to_owned(), source })
}

/// Writes `file` atomically (a temp file beside it, renamed over it).
pub fn write(path: &Path, file: &NoiseProfileFile) -> Result<(), ProfileFileError> {
    let err = |source| ProfileFileError::Write { path: path.to_owned(), source };
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(err)?;
    let mut bytes = serde_json::to_vec_pretty(file).expect("a profile serializes");
    bytes.push(b'\n');
    let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(err)?;
    std::io::Write::write_all(&mut temp, &bytes).map_err(err)?;
    temp.as_file().sync_all().map_err(err)?;
    temp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}

/// The design of `cell` (`<case>.<prompt>.<mode>`) in `session`.
pub fn design_of(session: &SessionReport, cell: &str, case_id: &str) -> Design {
    let host = session.host.as_ref().map_or("unknown".to_owned(), |h| {
        format!(
            "{} ({} {}, {} CPUs, {})",
            h.hostname,
            h.os,
            h.arch,
            h.cpus,
            h.cpu_model.as_deref().unwrap_or("unknown CPU")
        )
    });
    let device = session.device.as_ref().map_or("unknown".to_owned(), |d| format!("{} {}", d.backend.as_str(), d.name));
    let mut libmlx: Vec<String> = session
        .workers
        .iter()
        .filter_map(|w| w.report.as_ref()?.identity.as_ref().map(|i| i.libmlx_sha256.to_hex()))
        .collect();
    libmlx.sort();
    libmlx.dedup();
    let placement = session
        .placement
        .as_ref()
        .map_or("unrecorded".to_owned(), |p| p.effective.clone().unwrap_or_else(|| "left to the OS".to_owned()));
    Design {
        host,
        device,
        libmlx_sha256: libmlx.join(","),
        case_id: case_id.to_owned(),
        mode: cell.rsplit('.').next().unwrap_or(cell).to_owned(),
        order: format!("{:?}", session.job.order).to_lowercase(),
        placement,
    }
}

/// Puts `entry` into `file`, replacing the entry of the same design.
pub fn upsert(file: &mut NoiseProfileFile, entry: ProfiledDesign) {
    file.designs.retain(|d| d.design != entry.design);
    file.designs.push(entry);
    file.designs.sort_by(|a, b| a.design.cmp(&b.design));
}

/// The stats profile of `design` in `file`, if it was calibrated.
pub fn find(file: &NoiseProfileFile, design: &Design, path: &Path) -> Option<NoiseProfile> {
    let entry = file.designs.iter().find(|d| &d.design == design)?;
    Some(NoiseProfile {
        sd: entry.sd,
        sessions: entry.log_estimates.len(),
        label: format!(
            "{} ({} A/A sessions of {} on {}, {})",
            path.display(),
            entry.log_estimates.len(),
            entry.pair,
            design.case_id,
            design.mode
        ),
    })
}

/// Which profile a comparison of `sessions` uses: the one file asked for (`--noise-profile`,
/// which must read) or else the host's default file when it exists; the profile is the entry
/// whose design every cell of the sessions shares. Returns the profile and a line saying what
/// was looked at when none is used.
pub fn resolve(
    asked: Option<&Path>,
    sessions: &[&SessionReport],
    cells: &[(String, String)],
) -> Result<(Option<NoiseProfile>, Option<String>), ProfileFileError> {
    let path = match asked {
        Some(path) => path.to_owned(),
        None => match default_path().filter(|p| p.is_file()) {
            Some(path) => path,
            None => return Ok((None, None)),
        },
    };
    let file = read(&path)?;
    let mut designs: Vec<Design> =
        sessions.iter().flat_map(|s| cells.iter().map(|(cell, case)| design_of(s, cell, case))).collect();
    designs.sort();
    designs.dedup();
    match designs.as_slice() {
        [design] => match find(&file, design, &path) {
            Some(profile) => Ok((Some(profile), None)),
            None => Ok((
                None,
                Some(format!(
                    "noise profile {}: no entry for this design ({} {}, {}, placement {}); run `decode-baseline calibrate`",
                    path.display(),
                    design.case_id,
                    design.mode,
                    design.order,
                    design.placement
                )),
            )),
        },
        _ => Ok((
            None,
            Some(format!(
                "noise profile {}: not used, the rows are of {} designs (a profile stands for one)",
                path.display(),
                designs.len()
            )),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn design(placement: &str) -> Design {
        Design {
            host: "box (linux x86_64, 2 CPUs, AMD EPYC)".into(),
            device: "cpu AMD EPYC".into(),
            libmlx_sha256: "ab".repeat(32),
            case_id: "tiny-qwen3".into(),
            mode: "headline".into(),
            order: "interleaved".into(),
            placement: placement.into(),
        }
    }

    fn entry(placement: &str, estimates: Vec<f64>) -> ProfiledDesign {
        let sd = NoiseProfile::from_aa_estimates(&estimates, "x").unwrap().sd;
        ProfiledDesign {
            design: design(placement),
            log_estimates: estimates,
            sd,
            sessions: vec!["out/a".into()],
            pair: "controlled-b/controlled".into(),
        }
    }

    #[test]
    fn a_profile_file_round_trips_and_replaces_a_design() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("profiles/box.json");
        let mut file = NoiseProfileFile {
            schema_version: NOISE_PROFILE_SCHEMA_VERSION,
            written_utc: "now".into(),
            designs: vec![],
        };
        upsert(&mut file, entry("0", vec![0.01, -0.02, 0.005]));
        upsert(&mut file, entry("0-1", vec![0.3, -0.2]));
        upsert(&mut file, entry("0", vec![0.01, -0.01]));
        write(&path, &file).unwrap();
        let back = read(&path).unwrap();
        assert_eq!(back, file);
        assert_eq!(back.designs.len(), 2);
        let found = find(&back, &design("0"), &path).unwrap();
        assert_eq!(found.sessions, 2);
        assert!((found.sd - 0.02f64.hypot(0.0) / 2f64.sqrt()).abs() < 1e-12, "{}", found.sd);
        assert!(find(&back, &design("1"), &path).is_none());
    }

    #[test]
    fn unknown_fields_and_versions_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("p.json");
        std::fs::write(&path, r#"{"schema_version": 2, "written_utc": "x", "designs": []}"#).unwrap();
        assert!(matches!(read(&path), Err(ProfileFileError::Version { found: 2, .. })));
        std::fs::write(&path, r#"{"schema_version": 1, "written_utc": "x", "designs": [], "extra": 1}"#).unwrap();
        assert!(matches!(read(&path), Err(ProfileFileError::Parse { .. })));
    }
}
