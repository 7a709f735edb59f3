//! Reading a session job: schema, version, every field checked before anything is created.

use std::path::{Path, PathBuf};

use decode_baseline_wire::{
    manifest::{Cell, Manifest},
    session::{SessionJob, SESSION_JOB_SCHEMA_VERSION},
    Adapter,
};

#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("failed to read session job {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    // The source (with line and column) is printed by the error chain.
    #[error("invalid session job {path}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("session job {path}: schema_version must be {expected}, found {found}")]
    Version { path: PathBuf, expected: u32, found: u32 },
    #[error("session job {path}: {field} {problem}")]
    Field { path: PathBuf, field: &'static str, problem: String },
}

/// The most worker runs per adapter and cell one session may ask for: a typo such as
/// `4294967295` must not create billions of folders.
pub const MAX_REPETITIONS: u32 = 1000;

/// A session job with its paths resolved and its cells looked up in the manifest.
#[derive(Debug, Clone)]
pub struct ResolvedJob {
    pub job: SessionJob,
    pub job_path: PathBuf,
    pub manifest_path: PathBuf,
    pub output_root: PathBuf,
}

/// Reads the session job at `path` and [`resolve`]s it.
pub fn load(path: &Path) -> Result<ResolvedJob, JobError> {
    let bytes = std::fs::read(path).map_err(|source| JobError::Read { path: path.to_owned(), source })?;
    let job: SessionJob =
        serde_json::from_slice(&bytes).map_err(|source| JobError::Parse { path: path.to_owned(), source })?;
    resolve(job, path)
}

/// Checks a session job's fields and resolves its paths against the folder of `path` (where
/// the job is, or stands for: `bench` resolves the job it made in memory against the session
/// folder it writes the job into).
pub fn resolve(job: SessionJob, path: &Path) -> Result<ResolvedJob, JobError> {
    let field = |field, problem: String| JobError::Field { path: path.to_owned(), field, problem };
    if job.schema_version != SESSION_JOB_SCHEMA_VERSION {
        return Err(JobError::Version {
            path: path.to_owned(),
            expected: SESSION_JOB_SCHEMA_VERSION,
            found: job.schema_version,
        });
    }
    if !(1..=MAX_REPETITIONS).contains(&job.repetitions) {
        return Err(field(
            "repetitions",
            format!("must be between 1 and {MAX_REPETITIONS}, found {}", job.repetitions),
        ));
    }
    if job.prefill_step_size == Some(0) {
        return Err(field("prefill_step_size", "must be at least 1 token, or null for mlx_lm's 2048".into()));
    }
    if let Some(cells) = &job.cells {
        if cells.is_empty() {
            return Err(field("cells", "must name at least one cell, or be null for all of them".into()));
        }
        if let Some((i, name)) = cells.iter().enumerate().find(|(i, name)| cells[..*i].contains(name)) {
            return Err(field("cells", format!("names {name:?} twice (again at index {i}); each cell at most once")));
        }
    }
    if job.adapters.is_empty() {
        return Err(field(
            "adapters",
            "must name at least one adapter: \"controlled\", \"stock\" or one the manifest declares".into(),
        ));
    }
    let mut seen = job.adapters.clone();
    seen.sort();
    seen.dedup();
    if seen.len() != job.adapters.len() {
        return Err(field("adapters", format!("lists an adapter twice: {:?}", job.adapters)));
    }
    if let Some(reference) = job.reference.as_ref().filter(|r| !job.adapters.contains(r)) {
        return Err(field("reference", format!("names {reference:?}, which is not in adapters {:?}", job.adapters)));
    }
    let base = path.parent().unwrap_or(Path::new(".")).to_owned();
    let resolve = |p: &Path| if p.is_absolute() { p.to_owned() } else { base.join(p) };
    let manifest_path = match &job.manifest {
        Some(p) => resolve(p),
        None => crate::workspace::default_manifest(path),
    };
    let output_root = resolve(&job.output_root);
    Ok(ResolvedJob { job, job_path: path.to_owned(), manifest_path, output_root })
}

/// The cells the job selects, in manifest order; an unknown name is an error naming it.
pub fn select_cells(job: &ResolvedJob, manifest: &Manifest) -> Result<Vec<Cell>, JobError> {
    let Some(names) = &job.job.cells else {
        return Ok(manifest.cells.clone());
    };
    names
        .iter()
        .map(|name| {
            manifest.cells.iter().find(|cell| &cell.name() == name).cloned().ok_or_else(|| JobError::Field {
                path: job.job_path.clone(),
                field: "cells",
                problem: format!(
                    "names unknown cell {name:?}; expected one of: {}",
                    manifest.cells.iter().map(Cell::name).collect::<Vec<_>>().join(", ")
                ),
            })
        })
        .collect()
}

/// Checks that the manifest can run every adapter the job names: a built-in, or one it declares
/// in `adapters`.
pub fn check_adapters(job: &ResolvedJob, manifest: &Manifest) -> Result<(), JobError> {
    match job.job.adapters.iter().find(|a| !manifest.knows(a)) {
        None => Ok(()),
        Some(unknown) => Err(JobError::Field {
            path: job.job_path.clone(),
            field: "adapters",
            problem: format!(
                "names {unknown:?}, which the manifest {} does not declare; expected one of: {}",
                job.manifest_path.display(),
                manifest.all_adapters().iter().map(Adapter::as_str).collect::<Vec<_>>().join(", ")
            ),
        }),
    }
}

/// The repository this executable serves, found at run time (`crate::checkout`).
pub fn repo_root() -> PathBuf {
    crate::checkout::repo_root()
}
