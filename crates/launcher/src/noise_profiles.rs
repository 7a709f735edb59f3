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
    compare::Quantity,
    profile::{Design, NoiseProfileFile, ProfiledDesign, NOISE_PROFILE_READABLE_VERSIONS},
    session::SessionReport,
    Adapter, Mode,
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
        "noise profile {path}: schema version {found}, this build reads {NOISE_PROFILE_READABLE_VERSIONS:?}; make it \
         again with `decode-baseline calibrate`"
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
    if !NOISE_PROFILE_READABLE_VERSIONS.contains(&versioned.schema_version) {
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
pub fn design_of(session: &SessionReport, cell: &str) -> Design {
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
    Design { host, device, libmlx_sha256: libmlx.join(","), cell: cell.to_owned(), order: session.job.order, placement }
}

/// Puts `entry` into `file`, replacing the entry of the same design, row and quantity.
pub fn upsert(file: &mut NoiseProfileFile, entry: ProfiledDesign) {
    let key = |d: &ProfiledDesign| (d.design.clone(), d.pair.clone(), d.quantity);
    file.designs.retain(|d| key(d) != key(&entry));
    file.designs.push(entry);
    file.designs.sort_by_key(key);
}

/// The profile entry's row of `adapter` against `reference`: `adapter/reference` for their
/// pairs, the adapter's name alone for its own times.
pub fn row_key(adapter: &Adapter, reference: Option<&Adapter>) -> String {
    match reference {
        Some(reference) => format!("{}/{}", adapter.as_str(), reference.as_str()),
        None => adapter.as_str().to_owned(),
    }
}

/// One part of a row's error to look up: the entry's row ([`row_key`]) and the size of the
/// sessions judged, worker runs and units per run.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub key: String,
    pub runs: usize,
    pub units: f64,
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
    /// The profile file these profiles were read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The profile of a row of `cell` and `quantity` made of `parts` (its pairs' entry, or one
    /// entry per side of a row without pairs), each sized to its sessions (`stats::profile`):
    /// `None` unless every part has an entry of the cell's design and the row's quantity. A
    /// side never borrows another's entry, nor a row another quantity's.
    pub fn for_row(&self, cell: &str, quantity: Quantity, parts: &[Part]) -> Option<NoiseProfile> {
        let design = self.designs.get(cell)?;
        let entry_of = |part: &Part| {
            self.file.designs.iter().find(|e| &e.design == design && e.pair == part.key && e.quantity == quantity)
        };
        let entries: Vec<(&ProfiledDesign, &Part)> =
            parts.iter().map(|part| Some((entry_of(part)?, part))).collect::<Option<_>>()?;
        if entries.is_empty() {
            return None;
        }
        let what: Vec<String> = entries
            .iter()
            .map(|(e, part)| {
                format!(
                    "{} fitted on {} sessions of {:.0} runs × {:.0} units, sized to {} × {:.0}",
                    e.quantity.label(&e.pair),
                    e.fit.sessions,
                    e.fit.runs_per_session,
                    e.fit.units_per_run,
                    part.runs,
                    part.units
                )
            })
            .collect();
        let fitted: Vec<_> = entries.iter().map(|(e, part)| (&e.fit, part.runs, part.units)).collect();
        Some(crate::stats::profile_of(&fitted, format!("{} ({}, on {})", self.path.display(), what.join("; "), cell)))
    }
}

/// The cells of `session` whose rows are timed and tested, the ones a profile is for (a
/// reference pair is one request a run, for the agreement check).
pub fn timed_cells(session: &SessionReport) -> Vec<String> {
    crate::session::cells(session).into_iter().filter(|c| c.mode != Mode::ReferencePair).map(|c| c.cell).collect()
}

/// Which profiles a comparison of `sessions` uses: the one file asked for (`--noise-profile`,
/// which must read) or else the host's default file when it exists; each cell (`cells`: name
/// and case) is matched by the design every session gives it. Returns the profiles and a line
/// saying what was looked at when a cell has none.
pub fn resolve(
    asked: Option<&Path>,
    sessions: &[&SessionReport],
    cells: &[String],
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
    for cell in cells {
        let mut of_cell: Vec<Design> = sessions.iter().map(|s| design_of(s, cell)).collect();
        of_cell.dedup();
        match of_cell.as_slice() {
            [design] if file.designs.iter().any(|e| &e.design == design) => {
                designs.insert(cell.clone(), design.clone());
            }
            [design] => unmatched.push(format!("{cell}: {}", why_unmatched(&file, design))),
            _ => unmatched.push(format!("{cell}: the sessions' designs differ")),
        }
    }
    let note = (!unmatched.is_empty()).then(|| {
        format!(
            "noise profile {}: not used for {}; run `decode-baseline calibrate --job` with the job of these sessions",
            path.display(),
            unmatched.join("; ")
        )
    });
    let profiles = (!designs.is_empty()).then_some(Profiles { path, file, designs });
    Ok((profiles, note))
}

/// Why no entry of `file` is for `design`, in words: what differs between the design and its
/// cell's closest entry (host, device, libmlx, order, placement: a host whose CPU count changed
/// is another host), or that the file has no entry of its cell.
fn why_unmatched(file: &NoiseProfileFile, design: &Design) -> String {
    let differences = |entry: &Design| -> Vec<String> {
        [
            ("host", entry.host.as_str(), design.host.as_str()),
            ("device", &entry.device, &design.device),
            ("libmlx", &entry.libmlx_sha256, &design.libmlx_sha256),
            ("placement", &entry.placement, &design.placement),
            ("order", entry.order.as_str(), design.order.as_str()),
        ]
        .into_iter()
        .filter(|(_, theirs, ours)| theirs != ours)
        .map(|(what, theirs, ours)| format!("{what} {ours}, the profile's {theirs}"))
        .collect()
    };
    let closest = file
        .designs
        .iter()
        .filter(|e| e.design.cell == design.cell)
        .map(|e| differences(&e.design))
        .min_by_key(Vec::len);
    match closest {
        Some(differs) => format!("no entry for its design ({})", differs.join("; ")),
        None => format!(
            "no entry for its design (none for this cell; its order {}, placement {})",
            design.order.as_str(),
            design.placement
        ),
    }
}

/// [`resolve`] for the cells of `session`, and what it has to say: the note of a cell without a
/// profile (`note: …`), or a file that cannot be read as a warning (the verdicts then use their
/// own error) rather than an error (`run`'s table and the report page).
pub fn resolve_for_session(asked: Option<&Path>, session: &SessionReport) -> (Option<Profiles>, Option<String>) {
    let cells = timed_cells(session);
    match resolve(asked, &[session], &cells) {
        Ok((profiles, note)) => (profiles, note.map(|note| format!("note: {note}"))),
        Err(err) => (None, Some(format!("warning: {:#}; verdicts use their own error", anyhow::Error::from(err)))),
    }
}

/// [`resolve_for_session`], with what it has to say printed on stderr unless `quiet`.
pub fn resolve_or_warn(asked: Option<&Path>, session: &SessionReport, quiet: bool) -> Option<Profiles> {
    let (profiles, said) = resolve_for_session(asked, session);
    if let Some(said) = said.filter(|_| !quiet) {
        eprintln!("decode-baseline: {said}");
    }
    profiles
}

#[cfg(test)]
mod tests {
    use super::*;
    use decode_baseline_wire::profile::{TwoLevelFit, NOISE_PROFILE_SCHEMA_VERSION};

    fn design(placement: &str) -> Design {
        Design {
            host: "box (linux x86_64, 2 CPUs, AMD EPYC)".into(),
            device: "cpu AMD EPYC".into(),
            libmlx_sha256: "ab".repeat(32),
            cell: "cell".into(),
            order: decode_baseline_wire::session::WorkerOrder::Interleaved,
            placement: placement.into(),
        }
    }

    /// An entry fitted from two sessions of `runs` runs whose run means sit at ±`run` about
    /// sessions at ±`session`, each run two units ±0.01 about its mean.
    fn entry(placement: &str, pair: &str, runs: usize, run: f64, session: f64) -> ProfiledDesign {
        let one = |mu: f64| -> Vec<Vec<f64>> {
            (0..runs)
                .map(|r| {
                    let m = mu + if r % 2 == 0 { run } else { -run };
                    vec![m - 0.01, m + 0.01]
                })
                .collect()
        };
        let (fit, log_estimates) = crate::stats::fit_profile(&[one(session), one(-session)], 0.0).unwrap();
        ProfiledDesign {
            design: design(placement),
            pair: pair.into(),
            quantity: PT,
            fit,
            log_estimates,
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

    fn part(key: &str, runs: usize, units: f64) -> Part {
        Part { key: key.into(), runs, units }
    }

    const CS: &str = "controlled/stock";
    const PT: Quantity = Quantity::PerToken;
    const FT: Quantity = Quantity::FirstToken;

    fn fit_of(p: &Profiles, key: &str) -> TwoLevelFit {
        p.file.designs.iter().find(|e| e.pair == key).unwrap().fit.clone()
    }

    #[test]
    fn a_profile_file_round_trips_and_replaces_only_the_same_design_and_row() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("profiles/box.json");
        let mut file = NoiseProfileFile {
            schema_version: NOISE_PROFILE_SCHEMA_VERSION,
            written_utc: "now".into(),
            designs: vec![],
        };
        upsert(&mut file, entry("0", CS, 2, 0.01, 0.0));
        upsert(&mut file, entry("0-1", CS, 2, 0.01, 0.0));
        upsert(&mut file, entry("0", "stock", 2, 0.01, 0.0));
        upsert(&mut file, entry("0", CS, 3, 0.02, 0.05));
        write(&path, &file).unwrap();
        let back = read(&path).unwrap();
        assert_eq!(back, file);
        assert_eq!(back.designs.len(), 3);
        let replaced = back.designs.iter().find(|e| e.design == design("0") && e.pair == CS);
        assert_eq!(replaced.unwrap().fit.runs_per_session, 3.0);
    }

    #[test]
    fn a_row_gets_its_own_entry_sized_to_its_session_and_a_side_never_borrows() {
        let p = profiles(vec![
            entry("0", CS, 2, 0.01, 0.0),
            entry("0", "stock", 2, 0.02, 0.0),
            entry("1", "controlled", 2, 0.0, 0.0),
        ]);
        let f = fit_of(&p, CS);
        // Sessions at one estimate (S² = 0): held to the run part, which more runs shrink.
        assert_eq!(f.estimate_var, 0.0, "{f:?}");
        let two = p.for_row("cell", PT, &[part(CS, 2, 2.0)]).unwrap();
        let six = p.for_row("cell", PT, &[part(CS, 6, 2.0)]).unwrap();
        assert!((two.sd - (f.run_var / 2.0).sqrt()).abs() < 1e-12, "{two:?}");
        assert!((six.sd - two.sd / 3f64.sqrt()).abs() < 1e-12, "{six:?}");
        assert!(
            two.label.contains("controlled/stock fitted on 2 sessions of 2 runs × 2 units, sized to 2 × 2"),
            "{}",
            two.label
        );
        // The sides of a row without pairs add; one side without its entry gives none.
        let sides = p.for_row("cell", PT, &[part("stock", 2, 2.0), part("stock", 2, 2.0)]).unwrap();
        assert!((sides.sd - (2.0 * sized_var(&fit_of(&p, "stock"), 2, 2.0)).sqrt()).abs() < 1e-12);
        assert!(p.for_row("cell", PT, &[part("controlled", 2, 2.0), part("stock", 2, 2.0)]).is_none());
        assert!(p.for_row("cell", PT, &[part("controlled/stock-b", 2, 2.0)]).is_none());
        assert!(p.for_row("other", PT, &[part(CS, 2, 2.0)]).is_none());
    }

    /// A TTFT row uses the entry of its row fitted on first tokens, and a per-token row the one
    /// fitted on decode steps: neither borrows the other's, even of the same pairs, and a file
    /// holds both under one design and row.
    #[test]
    fn a_row_uses_only_an_entry_of_its_own_quantity() {
        let first_token = ProfiledDesign { quantity: FT, ..entry("0", CS, 2, 0.05, 0.1) };
        let mut file = profiles(vec![]).file;
        upsert(&mut file, entry("0", CS, 2, 0.01, 0.0));
        upsert(&mut file, first_token.clone());
        assert_eq!(file.designs.len(), 2, "one entry per quantity of one design and row");
        let p = Profiles { file, ..profiles(vec![]) };
        let per_token = p.for_row("cell", PT, &[part(CS, 2, 2.0)]).unwrap();
        let ttft = p.for_row("cell", FT, &[part(CS, 2, 2.0)]).unwrap();
        assert!((ttft.sd - first_token.fit.estimate_var.sqrt()).abs() < 1e-12, "{ttft:?}");
        assert!(ttft.sd > 2.0 * per_token.sd, "{ttft:?} {per_token:?}");
        assert!(ttft.label.contains("controlled/stock TTFT fitted on 2 sessions"), "{}", ttft.label);
        assert!(!per_token.label.contains("TTFT"), "{}", per_token.label);
        let only_per_token = profiles(vec![entry("0", CS, 2, 0.01, 0.0)]);
        assert!(only_per_token.for_row("cell", FT, &[part(CS, 2, 2.0)]).is_none());
    }

    /// A version-3 file (before entries had a quantity) reads as per-token entries; another
    /// version is refused with the versions this build reads.
    #[test]
    fn a_version_3_file_reads_as_per_token_and_another_version_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let mut value = serde_json::to_value(profiles(vec![entry("0", CS, 2, 0.01, 0.0)]).file).unwrap();
        value["schema_version"] = 3.into();
        value["designs"][0].as_object_mut().unwrap().remove("quantity");
        let path = tmp.path().join("v3.json");
        std::fs::write(&path, value.to_string()).unwrap();
        let read_back = read(&path).unwrap();
        assert_eq!(read_back.designs[0].quantity, PT);
        assert_eq!(read_back.designs[0].fit, entry("0", CS, 2, 0.01, 0.0).fit);
        value["schema_version"] = 2.into();
        std::fs::write(&path, value.to_string()).unwrap();
        let refused = read(&path).unwrap_err().to_string();
        assert!(refused.contains("schema version 2, this build reads [3, 4]"), "{refused}");
    }

    fn sized_var(fit: &TwoLevelFit, runs: usize, units: f64) -> f64 {
        crate::stats::profile_of(&[(fit, runs, units)], "x").sd.powi(2)
    }

    /// A session that finds no entry is told what differs from the closest one: a host whose
    /// CPU count changed (the launcher counts the CPUs it may use) is another host.
    #[test]
    fn a_design_without_an_entry_is_told_what_differs_from_the_closest() {
        let file = profiles(vec![entry("0", CS, 2, 0.01, 0.0), entry("0-1", CS, 2, 0.01, 0.0)]).file;
        let one_cpu = Design { host: "box (linux x86_64, 1 CPUs, AMD EPYC)".into(), ..design("0") };
        assert_eq!(
            why_unmatched(&file, &one_cpu),
            "no entry for its design (host box (linux x86_64, 1 CPUs, AMD EPYC), the profile's box (linux x86_64, \
             2 CPUs, AMD EPYC))"
        );
        let alternate = Design { order: decode_baseline_wire::session::WorkerOrder::Alternate, ..design("1") };
        let said = why_unmatched(&file, &alternate);
        assert!(
            said.contains("placement 1, the profile's 0") && said.contains("order alternate, the profile's"),
            "{said}"
        );
        let elsewhere = Design { cell: "other".into(), ..design("0") };
        assert!(why_unmatched(&file, &elsewhere).contains("none for this cell"));
    }

    #[test]
    fn unknown_fields_and_versions_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("p.json");
        std::fs::write(&path, r#"{"schema_version": 2, "written_utc": "x", "designs": []}"#).unwrap();
        assert!(matches!(read(&path), Err(ProfileFileError::Version { found: 2, .. })));
        std::fs::write(&path, r#"{"schema_version": 3, "written_utc": "x", "designs": [], "extra": 1}"#).unwrap();
        assert!(matches!(read(&path), Err(ProfileFileError::Parse { .. })));
    }
}
