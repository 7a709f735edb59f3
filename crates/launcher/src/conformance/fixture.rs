//! The tiny fixture's manifest and worker jobs: a manifest written into a scratch folder with its
//! pin beside it, every mode as a cell, the live worker sources and environment of the
//! repository, and the job a launcher would write from it.

use std::path::{Path, PathBuf};

use decode_baseline_pins::{
    self as pins,
    file_digest::DigestIoError,
    installed::{self, mlx_dir_override, venv_dir, Installed, InstalledError},
    sources::sources_root,
    PinError,
};
use decode_baseline_wire::{
    job::{token_ids_sha256, EnvironmentPins},
    manifest::{Case, Cell, Manifest, Prompt, WorkerSources, MANIFEST_SCHEMA_VERSION},
    Adapter, DeviceKind, Mode, RunPolicy, Sha256Digest, WorkerJob, WORKER_JOB_SCHEMA_VERSION,
};

/// The fixture every worker run of the conformance scenarios uses, relative to the repository.
pub const FIXTURE_DIR: &str = "fixtures/tiny-qwen3";

/// Why a fixture manifest or job could not be made.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    #[error("failed to locate the pinned environment (provision it: python3 tools/env/provision.py)")]
    Environment(#[source] InstalledError),
    #[error(transparent)]
    Pin(#[from] PinError),
    #[error("failed to hash the fixture {path}")]
    Fixture { path: PathBuf, source: DigestIoError },
    #[error("failed to write {path}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("the fixture prompt's continuation has {found} ids, expected at least {expected}")]
    Continuation { found: usize, expected: u32 },
}

/// What every fixture manifest of a run is made from: the repository the workers run from, the
/// manifest whose fixture case and prompt it takes, and the worker sources and environment pins
/// of the checkout as they are now, by the rules the guard uses (so an uncommitted edit fails
/// no scenario).
#[derive(Debug, Clone)]
pub struct FixtureSource {
    pub repo: PathBuf,
    pub manifest: PathBuf,
    /// The manifest as read: its declared adapters are declared in every fixture manifest.
    pub loaded: Manifest,
    pub sources: WorkerSources,
    pub environment: EnvironmentPins,
}

impl FixtureSource {
    /// Hashes every adapter's worker sources (the built-ins' in `repo`, the declared ones'
    /// beside `manifest`) and `repo`'s selected environment (which must exist).
    pub fn of(repo: &Path, manifest: &Path) -> Result<Self, FixtureError> {
        let installed =
            Installed::locate(&venv_dir(repo), mlx_dir_override().as_deref()).map_err(FixtureError::Environment)?;
        let (loaded, _) = pins::load_manifest(manifest)?;
        Ok(Self {
            repo: repo.to_owned(),
            manifest: manifest.to_owned(),
            sources: pins::worker_sources(repo, manifest, &loaded)?,
            environment: pins::environment_pins(repo, &installed)?,
            loaded,
        })
    }
}

/// A manifest written to disk with its pin beside it, and the ids a job uses.
#[derive(Debug, Clone)]
pub struct FixtureManifest {
    /// The repository the jobs run from (`repo_root`, and the base of relative case paths).
    pub repo: PathBuf,
    pub path: PathBuf,
    pub sha256: Sha256Digest,
    pub manifest: Manifest,
    pub case_id: String,
    pub prompt_id: String,
}

/// The fixture's case and a short prompt: from the source manifest when it has a case at
/// [`FIXTURE_DIR`], else made up here (16 prompt ids, a 32-id continuation, stop set {511}).
fn fixture_case_and_prompt(source: &FixtureSource) -> Result<(String, Case, String, Prompt), FixtureError> {
    let repo = source.repo.as_path();
    let dir = repo.join(FIXTURE_DIR);
    if let (Ok((manifest, _)), Ok(fixture)) = (pins::load_manifest(&source.manifest), dir.canonicalize()) {
        let found = manifest.cases.iter().find(|(id, case)| {
            pins::case_dir(repo, id, case).ok().and_then(|d| d.canonicalize().ok()).as_deref()
                == Some(fixture.as_path())
        });
        if let Some((case_id, case)) = found {
            let shortest = manifest.prompts.iter().filter(|(_, p)| &p.case == case_id).min_by_key(|(_, p)| p.ids.len());
            if let Some((prompt_id, prompt)) = shortest {
                return Ok((case_id.clone(), case.clone(), prompt_id.clone(), prompt.clone()));
            }
        }
    }
    let files = pins::case_files(&dir).map_err(|source| FixtureError::Fixture { path: dir.clone(), source })?;
    let case = Case { path: dir, architecture: "qwen3".into(), dtype: "float32".into(), files, stop_ids: vec![511] };
    let ids: Vec<u32> = (0..16).map(|i| (i * 37 + 11) % 500).collect();
    let continuation: Vec<u32> = (0..32).map(|i| (i * 53 + 7) % 500).collect();
    let prompt = Prompt {
        case: "tiny-qwen3".into(),
        sha256: token_ids_sha256(&ids),
        ids,
        continuation_sha256: token_ids_sha256(&continuation),
        continuation,
    };
    Ok(("tiny-qwen3".into(), case, "tiny-qwen3.short".into(), prompt))
}

/// A declared adapter's sources are pinned relative to its manifest's folder, and a fixture
/// manifest lives in `dir`: each pinned file is copied there at its relative path, byte for
/// byte, so that the worker checks the same bytes against the same pins.
fn copy_declared_sources(source: &FixtureSource, dir: &Path) -> Result<(), FixtureError> {
    for (adapter, files) in source.sources.iter().filter(|(a, _)| !a.is_built_in()) {
        let from = sources_root(adapter, &source.repo, &source.manifest);
        for rel in files.keys() {
            let to = dir.join(rel);
            let write = |source| FixtureError::Write { path: to.clone(), source };
            std::fs::create_dir_all(to.parent().unwrap_or(dir)).map_err(write)?;
            std::fs::copy(from.join(rel), &to).map_err(write)?;
        }
    }
    Ok(())
}

/// Writes `manifest` to `path` and its pin beside it; returns the manifest's digest.
pub fn write_manifest(path: &Path, manifest: &Manifest) -> Result<Sha256Digest, FixtureError> {
    let mut bytes = serde_json::to_vec_pretty(manifest).expect("a manifest serializes");
    bytes.push(b'\n');
    let write = |path: &Path, bytes: &[u8]| {
        std::fs::write(path, bytes).map_err(|source| FixtureError::Write { path: path.to_owned(), source })
    };
    write(path, &bytes)?;
    write(&pins::pin_path(path), pins::pin_text(path, &bytes).as_bytes())?;
    Ok(Sha256Digest::of_bytes(&bytes))
}

/// A manifest for the tiny fixture of `source` with `policy`, every mode as a cell, the live
/// worker sources and environment (pinned as the selected environment's), written as
/// `dir/workloads.json` with its pin. `edit` may change the manifest before it is written.
pub fn fixture_manifest(
    source: &FixtureSource,
    dir: &Path,
    policy: &RunPolicy,
    edit: impl FnOnce(&mut Manifest),
) -> Result<FixtureManifest, FixtureError> {
    let (case_id, case, prompt_id, mut prompt) = fixture_case_and_prompt(source)?;
    let steps = policy.fixed_continuation_steps;
    if prompt.continuation.len() < steps as usize {
        return Err(FixtureError::Continuation { found: prompt.continuation.len(), expected: steps });
    }
    prompt.continuation.truncate(steps as usize);
    prompt.continuation_sha256 = token_ids_sha256(&prompt.continuation);
    let mut manifest = Manifest {
        schema_version: MANIFEST_SCHEMA_VERSION,
        cells: [Mode::Headline, Mode::FixedContinuation, Mode::ReferencePair]
            .into_iter()
            .map(|mode| Cell { case: case_id.clone(), prompt: prompt_id.clone(), mode })
            .collect(),
        cases: [(case_id.clone(), case)].into_iter().collect(),
        prompts: [(prompt_id.clone(), prompt)].into_iter().collect(),
        run_policy: policy.clone(),
        environments: installed::selected_environment()
            .map(|name| (name, source.environment.clone()))
            .into_iter()
            .collect(),
        adapters: source.loaded.adapters.clone(),
        worker_sources: source.sources.clone(),
        environment: source.environment.clone(),
    };
    edit(&mut manifest);
    let path = dir.join("workloads.json");
    copy_declared_sources(source, dir)?;
    let sha256 = write_manifest(&path, &manifest)?;
    Ok(FixtureManifest { repo: source.repo.clone(), path, sha256, manifest, case_id, prompt_id })
}

/// The job a launcher would write for `adapter` and `mode` from `fixture`.
pub fn fixture_job(fixture: &FixtureManifest, adapter: &Adapter, mode: Mode, run_id: &str) -> WorkerJob {
    let repo = &fixture.repo;
    let manifest = &fixture.manifest;
    let case = &manifest.cases[&fixture.case_id];
    let prompt = &manifest.prompts[&fixture.prompt_id];
    WorkerJob {
        schema_version: WORKER_JOB_SCHEMA_VERSION,
        run_id: run_id.to_owned(),
        adapter: adapter.to_owned(),
        mode,
        repo_root: repo.clone(),
        manifest_path: fixture.path.clone(),
        manifest_sha256: fixture.sha256,
        case_id: fixture.case_id.clone(),
        // A tampered (escaping) case path still yields a job; the worker must refuse it.
        model_dir: pins::case_dir(repo, &fixture.case_id, case).unwrap_or_else(|_| repo.join(&case.path)),
        prompt_id: fixture.prompt_id.clone(),
        prompt_ids: prompt.ids.clone(),
        prompt_sha256: prompt.sha256,
        continuation: (mode == Mode::FixedContinuation).then(|| prompt.continuation.clone()),
        stop_ids: case.stop_ids.clone(),
        run_policy: manifest.run_policy.clone(),
        prefill_step_size: decode_baseline_wire::policy::PREFILL_STEP_SIZE,
        // A tampered environment table still yields a job (the manifest's default pins).
        environment: pins::selected_pins(manifest).unwrap_or(&manifest.environment).clone(),
        device: DeviceKind::Cpu,
        gate: false,
        group: None,
    }
}
