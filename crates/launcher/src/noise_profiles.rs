//! Noise profile files: where they live, reading and writing them, a session's design, and the
//! profile that matches it.
//!
//! The default file is `$DECODE_BASELINE_PROFILE_DIR/<host>.json` when that variable is set,
//! else `$XDG_CACHE_HOME/decode-baseline/profiles/<host>.json`, else
//! `~/.cache/decode-baseline/profiles/<host>.json`: per user and host, outside any checkout,
//! because a profile describes the machine, not a session or a repository.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use crate::stats::NoiseProfile;
use decode_baseline_wire::{
    profile::{Design, NoiseProfileFile, ProfiledDesign, NOISE_PROFILE_SCHEMA_VERSION},
    session::SessionReport,
    Adapter,
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
    #[error(
        "noise profile {path}: schema version {found}, this build reads {NOISE_PROFILE_SCHEMA_VERSION}; make it again \
         with `decode-baseline calibrate`"
    )]
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

/// Puts `entry` into `file`, replacing the entry of the same design, pair and size.
pub fn upsert(file: &mut NoiseProfileFile, entry: ProfiledDesign) {
    let key = |d: &ProfiledDesign| (d.design.clone(), d.pair.clone(), d.repetitions);
    file.designs.retain(|d| key(d) != key(&entry));
    file.designs.push(entry);
    file.designs.sort_by_key(key);
}

/// `1 repetition`, `6 repetitions`: a session's size in words.
pub fn repetitions(n: u32) -> String {
    if n == 1 {
        "1 repetition".to_owned()
    } else {
        format!("{n} repetitions")
    }
}

/// Whether an entry's pair (`numerator/reference`) is of `adapter`'s runs.
fn covers(pair: &str, adapter: &Adapter) -> bool {
    pair.split('/').any(|a| a == adapter.as_str())
}

/// The error bound an entry gives a session of `runs` runs per adapter, and its factor. An
/// entry of `R` runs per session has `sd² = a² + b²/R` (a session-level part `a`, a part that
/// shrinks with the runs, `req/findings.md` §21); for `j < R` runs `a² + b²/j ≤ sd²·R/j`, for
/// `j ≥ R` `≤ sd²`: `sd · √max(1, R/j)` holds whatever `a` and `b` are.
fn sized(entry: &ProfiledDesign, runs: usize) -> (f64, f64) {
    let factor = (f64::from(entry.repetitions) / runs.max(1) as f64).max(1.0).sqrt();
    (entry.sd * factor, factor)
}

/// The noise profiles the rows of one comparison may use: one profile file, and the design of
/// each cell that every session compared shares.
#[derive(Debug, Clone)]
pub struct Profiles {
    path: PathBuf,
    file: NoiseProfileFile,
    designs: BTreeMap<String, Design>,
}

impl Profiles {
    /// The profile of the row `adapter` against `reference` in `cell`, for sessions of `runs`
    /// runs per adapter. Per pair of the cell's design, the entry whose size gives the smallest
    /// bound (`sized`). A pair with both adapters is used alone; else the pairs of each side
    /// combine as `√((sd_x² + sd_r²)/2)` (an A/A pair's spread is twice one side's variance),
    /// on the smaller `K`; one side profiled alone stands for both, and its label says so.
    pub fn for_row(&self, cell: &str, adapter: &Adapter, reference: &Adapter, runs: usize) -> Option<NoiseProfile> {
        let design = self.designs.get(cell)?;
        let best = |pred: &dyn Fn(&str) -> bool| {
            self.file
                .designs
                .iter()
                .filter(|e| &e.design == design && pred(&e.pair))
                .map(|e| (e, sized(e, runs)))
                .min_by(|(a, (x, _)), (b, (y, _))| {
                    x.total_cmp(y).then(b.log_estimates.len().cmp(&a.log_estimates.len()))
                })
        };
        let describe = |(e, (_, factor)): (&ProfiledDesign, (f64, f64))| {
            let scaled = if factor > 1.0 {
                format!(", ×{factor:.2} for sessions of {runs}")
            } else if e.repetitions as usize != runs {
                format!(", applied to sessions of {runs}")
            } else {
                String::new()
            };
            format!("{} A/A sessions of {} with {}{scaled}", e.log_estimates.len(), e.pair, repetitions(e.repetitions))
        };
        let profile = |sd: f64, sessions: usize, what: String| NoiseProfile {
            sd,
            sessions,
            label: format!("{} ({what}, on {} {})", self.path.display(), design.case_id, design.mode),
        };
        if let Some(both @ (e, (sd, _))) = best(&|p| covers(p, adapter) && covers(p, reference)) {
            return Some(profile(sd, e.log_estimates.len(), describe(both)));
        }
        match (best(&|p| covers(p, adapter)), best(&|p| covers(p, reference))) {
            (Some(x @ (ex, (sx, _))), Some(r @ (er, (sr, _)))) => Some(profile(
                ((sx * sx + sr * sr) / 2.0).sqrt(),
                ex.log_estimates.len().min(er.log_estimates.len()),
                format!("{} and {}, combined", describe(x), describe(r)),
            )),
            (Some(one @ (e, (sd, _))), None) | (None, Some(one @ (e, (sd, _)))) => Some(profile(
                sd,
                e.log_estimates.len(),
                format!(
                    "{}, standing for both: {} against {} is not profiled",
                    describe(one),
                    adapter.as_str(),
                    reference.as_str()
                ),
            )),
            (None, None) => None,
        }
    }
}

/// Which profiles a comparison of `sessions` uses: the one file asked for (`--noise-profile`,
/// which must read) or else the host's default file when it exists; each cell (`cells`: name
/// and case) is matched by the design every session gives it. Returns the profiles and a line
/// saying what was looked at when a cell has none.
pub fn resolve(
    asked: Option<&Path>,
    sessions: &[&SessionReport],
    cells: &[(String, String)],
) -> Result<(Option<Profiles>, Option<String>), ProfileFileError> {
    let path = match asked {
        Some(path) => path.to_owned(),
        None => match default_path().filter(|p| p.is_file()) {
            Some(path) => path,
            None => return Ok((None, None)),
        },
    };
    let file = read(&path)?;
    let mut designs = BTreeMap::new();
    let mut unmatched = Vec::new();
    for (cell, case) in cells {
        let mut of_cell: Vec<Design> = sessions.iter().map(|s| design_of(s, cell, case)).collect();
        of_cell.dedup();
        match of_cell.as_slice() {
            [design] if file.designs.iter().any(|e| &e.design == design) => {
                designs.insert(cell.clone(), design.clone());
            }
            [design] => unmatched.push(format!(
                "{cell}: no entry for its design ({} {}, {}, placement {})",
                design.case_id, design.mode, design.order, design.placement
            )),
            _ => unmatched.push(format!("{cell}: the sessions' designs differ")),
        }
    }
    let note = (!unmatched.is_empty()).then(|| {
        format!(
            "noise profile {}: not used for {}; run `decode-baseline calibrate` for a design",
            path.display(),
            unmatched.join("; ")
        )
    });
    let profiles = (!designs.is_empty()).then_some(Profiles { path, file, designs });
    Ok((profiles, note))
}

/// [`resolve`] for the cells of `session`, with what it has to say printed unless `quiet`: the
/// note of a cell without a profile, and a file that cannot be read as a warning (the verdicts
/// then use their own error) rather than an error (`run`'s table and the report page).
pub fn resolve_or_warn(asked: Option<&Path>, session: &SessionReport, quiet: bool) -> Option<Profiles> {
    let cells: Vec<(String, String)> =
        crate::session::cells(session).into_iter().map(|c| (c.cell, c.case_id)).collect();
    match resolve(asked, &[session], &cells) {
        Ok((profiles, note)) => {
            if let Some(note) = note.filter(|_| !quiet) {
                eprintln!("decode-baseline: note: {note}");
            }
            profiles
        }
        Err(err) => {
            if !quiet {
                eprintln!("decode-baseline: warning: {:#}; verdicts use their own error", anyhow::Error::from(err));
            }
            None
        }
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

    fn entry(placement: &str, pair: &str, repetitions: u32, estimates: Vec<f64>) -> ProfiledDesign {
        let sd = crate::stats::profile_of(&estimates, "x").unwrap().sd;
        ProfiledDesign {
            design: design(placement),
            pair: pair.into(),
            repetitions,
            log_estimates: estimates,
            sd,
            sessions: vec!["out/a".into()],
        }
    }

    fn profiles(entries: Vec<ProfiledDesign>) -> Profiles {
        Profiles {
            path: "p.json".into(),
            file: NoiseProfileFile {
                schema_version: NOISE_PROFILE_SCHEMA_VERSION,
                written_utc: "x".into(),
                designs: entries,
            },
            designs: [("cell".to_owned(), design("0"))].into(),
        }
    }

    fn adapter(name: &str) -> Adapter {
        name.parse().unwrap()
    }

    const CC: &str = "controlled-b/controlled";

    #[test]
    fn a_profile_file_round_trips_and_replaces_only_the_same_design_pair_and_size() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("profiles/box.json");
        let mut file = NoiseProfileFile {
            schema_version: NOISE_PROFILE_SCHEMA_VERSION,
            written_utc: "now".into(),
            designs: vec![],
        };
        upsert(&mut file, entry("0", CC, 1, vec![0.01, -0.02, 0.005]));
        upsert(&mut file, entry("0-1", CC, 1, vec![0.3, -0.2]));
        upsert(&mut file, entry("0", CC, 6, vec![0.3, -0.2]));
        upsert(&mut file, entry("0", "stock-b/stock", 1, vec![0.3, -0.2]));
        upsert(&mut file, entry("0", CC, 1, vec![0.01, -0.01]));
        write(&path, &file).unwrap();
        let back = read(&path).unwrap();
        assert_eq!(back, file);
        assert_eq!(back.designs.len(), 4);
        let replaced = back.designs.iter().find(|e| e.design == design("0") && e.pair == CC && e.repetitions == 1);
        assert_eq!(replaced.unwrap().log_estimates, [0.01, -0.01]);
    }

    #[test]
    fn a_row_gets_its_pairs_profile_sized_to_its_session() {
        let p = profiles(vec![entry("0", CC, 6, vec![0.01, -0.01]), entry("1", CC, 1, vec![0.5, -0.5])]);
        let (b, c) = (adapter("controlled-b"), adapter("controlled"));
        let sd6 = 0.02 / 2f64.sqrt();
        let same = p.for_row("cell", &b, &c, 6).unwrap();
        assert!((same.sd - sd6).abs() < 1e-12 && same.sessions == 2, "{same:?}");
        assert!(same.label.contains("2 A/A sessions of controlled-b/controlled with 6 repetitions,"), "{}", same.label);
        // Fewer runs than profiled: a² + b²/j ≤ sd²·R/j; more: ≤ sd².
        let fewer = p.for_row("cell", &b, &c, 2).unwrap();
        assert!((fewer.sd - sd6 * 3f64.sqrt()).abs() < 1e-12 && fewer.label.contains("×1.73 for sessions of 2"));
        let more = p.for_row("cell", &b, &c, 12).unwrap();
        assert!((more.sd - sd6).abs() < 1e-12 && more.label.contains("applied to sessions of 12"));
        // Of two sizes, the smaller bound: the 6-run entry scaled, or the 1-run entry as it is.
        let p = profiles(vec![entry("0", CC, 6, vec![0.01, -0.01]), entry("0", CC, 1, vec![0.03, -0.03])]);
        assert!((p.for_row("cell", &b, &c, 1).unwrap().sd - sd6 * 6f64.sqrt()).abs() < 1e-12);
        assert!((p.for_row("cell", &b, &c, 3).unwrap().sd - sd6 * 2f64.sqrt()).abs() < 1e-12);
        let p = profiles(vec![entry("0", CC, 6, vec![0.01, -0.01]), entry("0", CC, 1, vec![0.012, -0.012])]);
        assert!((p.for_row("cell", &b, &c, 1).unwrap().sd - 0.024 / 2f64.sqrt()).abs() < 1e-12);
        assert!(p.for_row("other", &b, &c, 6).is_none());
        assert!(profiles(vec![entry("1", CC, 6, vec![0.01, -0.01])]).for_row("cell", &b, &c, 6).is_none());
    }

    #[test]
    fn a_row_across_two_profiled_loops_combines_them_and_one_side_alone_says_so() {
        let both = profiles(vec![
            entry("0", CC, 2, vec![0.03, -0.03]),
            entry("0", "stock-b/stock", 2, vec![0.04, -0.04, 0.0]),
        ]);
        let (s, c, other) = (adapter("stock"), adapter("controlled"), adapter("python-sync"));
        let combined = both.for_row("cell", &s, &c, 2).unwrap();
        let (sc, ss) = (0.06 / 2f64.sqrt(), 0.04);
        assert!((combined.sd - ((sc * sc + ss * ss) / 2.0).sqrt()).abs() < 1e-12, "{combined:?}");
        assert_eq!(combined.sessions, 2);
        assert!(combined.label.contains("combined"), "{}", combined.label);
        let alone = both.for_row("cell", &other, &c, 2).unwrap();
        assert!((alone.sd - sc).abs() < 1e-12);
        assert!(alone.label.contains("standing for both: python-sync against controlled is not profiled"));
        assert!(both.for_row("cell", &other, &adapter("outside"), 2).is_none());
    }

    #[test]
    fn unknown_fields_and_versions_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("p.json");
        std::fs::write(&path, r#"{"schema_version": 1, "written_utc": "x", "designs": []}"#).unwrap();
        assert!(matches!(read(&path), Err(ProfileFileError::Version { found: 1, .. })));
        std::fs::write(&path, r#"{"schema_version": 2, "written_utc": "x", "designs": [], "extra": 1}"#).unwrap();
        assert!(matches!(read(&path), Err(ProfileFileError::Parse { .. })));
    }
}
