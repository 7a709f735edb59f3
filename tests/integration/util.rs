//! Shared helpers for the integration tests: where things are, how to run them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root (the root package's manifest folder).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pinned environment's interpreter, provisioning the environment if needed.
pub fn venv_python() -> PathBuf {
    let out =
        Command::new("python3").arg(repo_root().join("tools/env/provision.py")).output().expect("run provision.py");
    assert!(out.status.success(), "provisioning failed: {}", String::from_utf8_lossy(&out.stderr));
    let line = String::from_utf8(out.stdout).unwrap();
    let python =
        line.split_whitespace().find_map(|kv| kv.strip_prefix("python=")).expect("python= in provision output");
    PathBuf::from(python)
}

/// The decode-baseline binary of this build.
pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_decode-baseline"))
}

/// `decode-baseline run --job <root>/job.json` from the repository root, hermetic: its own lease
/// file in `root`, offline, no worker override, test hook or test slowdown inherited from the
/// environment, and its output to `root/launcher.stdout` and `root/launcher.stderr` (nothing to
/// drain, nothing to block on).
pub fn launcher_in(root: &Path) -> Command {
    use decode_baseline_protocol::worker::{HOOK_ENV, HOOK_REQUEST_ENV, SLOWDOWN_ADAPTER_ENV, SLOWDOWN_ENV};
    let log = |name: &str| std::fs::File::create(root.join(name)).unwrap();
    let mut cmd = Command::new(binary());
    cmd.args(["run", "--job"])
        .arg(root.join("job.json"))
        .current_dir(repo_root())
        .env("DECODE_BASELINE_LEASE", root.join("lease"))
        .env("HF_HUB_OFFLINE", "1")
        .env_remove("DECODE_BASELINE_WORKER_STOCK")
        .env_remove("DECODE_BASELINE_WORKER_CONTROLLED")
        .env_remove(HOOK_ENV)
        .env_remove(HOOK_REQUEST_ENV)
        .env_remove(SLOWDOWN_ENV)
        .env_remove(SLOWDOWN_ADAPTER_ENV)
        .stdin(std::process::Stdio::null())
        .stdout(log("launcher.stdout"))
        .stderr(log("launcher.stderr"));
    cmd
}

/// Runs a command, returning its output; panics only if it cannot start.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|err| panic!("failed to start {cmd:?}: {err}"))
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every file below `dir`, relative, sorted, with its bytes.
pub fn snapshot_tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = walk(dir)
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            (path.strip_prefix(dir).unwrap().to_owned(), bytes)
        })
        .collect();
    files.sort();
    files
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Worker jobs on the tiny fixture (the conformance suite, and anyone who needs a valid job)
// ---------------------------------------------------------------------------------------------

use decode_baseline_protocol::{
    installed::{self, mlx_dir_override, venv_dir, Installed},
    job::{token_ids_sha256, EnvironmentPins},
    manifest::{Case, Cell, Manifest, Prompt, WorkerSources, MANIFEST_SCHEMA_VERSION},
    pins, Adapter, DeviceKind, Mode, RunPolicy, Sha256Digest, WorkerJob, WORKER_JOB_SCHEMA_VERSION,
};

/// The fixture every worker test runs on.
pub const FIXTURE_DIR: &str = "fixtures/tiny-qwen3";

/// A manifest written to disk with its pin beside it, and the ids a job uses.
#[derive(Debug, Clone)]
pub struct FixtureManifest {
    pub path: PathBuf,
    pub sha256: Sha256Digest,
    pub manifest: Manifest,
    pub case_id: String,
    pub prompt_id: String,
}

/// The live worker sources and environment pins of this checkout, computed once per test
/// process by the same rules the guard uses (so an uncommitted edit does not fail the suite).
pub fn live_pins() -> &'static (WorkerSources, EnvironmentPins) {
    static PINS: std::sync::OnceLock<(WorkerSources, EnvironmentPins)> = std::sync::OnceLock::new();
    PINS.get_or_init(|| {
        let repo = repo_root();
        let _ = venv_python();
        let installed =
            Installed::locate(&venv_dir(&repo), mlx_dir_override().as_deref()).expect("locate the pinned environment");
        let sources = pins::built_in_sources(&repo).expect("hash the worker sources");
        let environment = pins::environment_pins(&repo, &installed).expect("pin the environment");
        (sources, environment)
    })
}

/// The fixture's case and a short prompt: from `workloads.json` when it has a case at
/// [`FIXTURE_DIR`], else made up here (16 prompt ids, a 32-id continuation, stop set {511}).
fn fixture_case_and_prompt() -> (String, Case, String, Prompt) {
    let repo = repo_root();
    if let Ok((manifest, _)) = pins::load_manifest(&repo.join("workloads.json")) {
        let fixture = repo.join(FIXTURE_DIR).canonicalize().unwrap();
        let found = manifest.cases.iter().find(|(id, case)| {
            pins::case_dir(&repo, id, case).ok().and_then(|d| d.canonicalize().ok()).as_deref()
                == Some(fixture.as_path())
        });
        if let Some((case_id, case)) = found {
            let shortest = manifest.prompts.iter().filter(|(_, p)| &p.case == case_id).min_by_key(|(_, p)| p.ids.len());
            if let Some((prompt_id, prompt)) = shortest {
                return (case_id.clone(), case.clone(), prompt_id.clone(), prompt.clone());
            }
        }
    }
    let dir = repo.join(FIXTURE_DIR);
    let case = Case {
        path: dir.clone(),
        architecture: "qwen3".into(),
        dtype: "float32".into(),
        files: pins::case_files(&dir).expect("hash the fixture"),
        stop_ids: vec![511],
    };
    let ids: Vec<u32> = (0..16).map(|i| (i * 37 + 11) % 500).collect();
    let continuation: Vec<u32> = (0..32).map(|i| (i * 53 + 7) % 500).collect();
    let prompt = Prompt {
        case: "tiny-qwen3".into(),
        sha256: token_ids_sha256(&ids),
        ids,
        continuation_sha256: token_ids_sha256(&continuation),
        continuation,
    };
    ("tiny-qwen3".into(), case, "tiny-qwen3.short".into(), prompt)
}

/// Writes `manifest` to `path` and its pin beside it; returns the manifest's digest.
pub fn write_manifest(path: &Path, manifest: &Manifest) -> Sha256Digest {
    let mut bytes = serde_json::to_vec_pretty(manifest).unwrap();
    bytes.push(b'\n');
    std::fs::write(path, &bytes).unwrap();
    std::fs::write(pins::pin_path(path), pins::pin_text(path, &bytes)).unwrap();
    Sha256Digest::of_bytes(&bytes)
}

/// A manifest for the tiny fixture with `policy`, every mode as a cell, the live worker
/// sources and environment (pinned as the selected environment's), written as `dir/workloads.json` with its pin. `edit` may change
/// the manifest before it is written (tamper tests).
pub fn fixture_manifest(dir: &Path, policy: &RunPolicy, edit: impl FnOnce(&mut Manifest)) -> FixtureManifest {
    let (case_id, case, prompt_id, mut prompt) = fixture_case_and_prompt();
    assert_eq!(prompt.continuation.len(), 32, "the fixture prompt's continuation");
    prompt.continuation.truncate(policy.fixed_continuation_steps as usize);
    prompt.continuation_sha256 = token_ids_sha256(&prompt.continuation);
    let (sources, environment) = live_pins().clone();
    let mut manifest = Manifest {
        schema_version: MANIFEST_SCHEMA_VERSION,
        cells: [Mode::Headline, Mode::FixedContinuation, Mode::ReferencePair]
            .into_iter()
            .map(|mode| Cell { case: case_id.clone(), prompt: prompt_id.clone(), mode })
            .collect(),
        cases: [(case_id.clone(), case)].into_iter().collect(),
        prompts: [(prompt_id.clone(), prompt)].into_iter().collect(),
        run_policy: policy.clone(),
        environments: installed::selected_environment().map(|name| (name, environment.clone())).into_iter().collect(),
        adapters: Default::default(),
        worker_sources: sources,
        environment,
    };
    edit(&mut manifest);
    let path = dir.join("workloads.json");
    let sha256 = write_manifest(&path, &manifest);
    FixtureManifest { path, sha256, manifest, case_id, prompt_id }
}

/// The job a launcher would write for `adapter` and `mode` from `fixture`.
pub fn fixture_job(fixture: &FixtureManifest, adapter: Adapter, mode: Mode, run_id: &str) -> WorkerJob {
    let repo = repo_root();
    let manifest = &fixture.manifest;
    let case = &manifest.cases[&fixture.case_id];
    let prompt = &manifest.prompts[&fixture.prompt_id];
    WorkerJob {
        schema_version: WORKER_JOB_SCHEMA_VERSION,
        run_id: run_id.to_owned(),
        adapter,
        mode,
        repo_root: repo.clone(),
        manifest_path: fixture.path.clone(),
        manifest_sha256: fixture.sha256,
        case_id: fixture.case_id.clone(),
        // A tampered (escaping) case path still yields a job; the worker must refuse it.
        model_dir: pins::case_dir(&repo, &fixture.case_id, case).unwrap_or_else(|_| repo.join(&case.path)),
        prompt_id: fixture.prompt_id.clone(),
        prompt_ids: prompt.ids.clone(),
        prompt_sha256: prompt.sha256,
        continuation: (mode == Mode::FixedContinuation).then(|| prompt.continuation.clone()),
        stop_ids: case.stop_ids.clone(),
        run_policy: manifest.run_policy.clone(),
        environment: pins::selected_pins(manifest).expect("the selected environment's pins").clone(),
        device: DeviceKind::Cpu,
        gate: false,
    }
}

/// The first file called `name` below `dir`, depth first.
pub fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.filter_map(|e| e.ok()) {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == name) {
            return Some(path);
        }
        if path.is_dir() {
            if let Some(found) = find_file(&path, name) {
                return Some(found);
            }
        }
    }
    None
}

/// Whether `pid` is a live process. A zombie counts as dead: it runs nothing, and an orphan's
/// zombie waits on whatever reaps orphans here (in a container, possibly nothing).
pub fn pid_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// The one worker run of a session report.
pub fn the_worker(session: &serde_json::Value) -> &serde_json::Value {
    let workers = session["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 1, "one worker run");
    &workers[0]
}

/// The two workers, as the tests start them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worker {
    Stock,
    Controlled,
}

impl Worker {
    pub fn adapter(self) -> decode_baseline_protocol::Adapter {
        match self {
            Worker::Stock => decode_baseline_protocol::Adapter::Stock,
            Worker::Controlled => decode_baseline_protocol::Adapter::Controlled,
        }
    }

    /// The worker's command line as the launcher builds it, run from the repository, offline;
    /// callers add what their test needs (standard streams, hooks, process group).
    pub fn command(self, out_dir: &Path) -> Command {
        let mut cmd = match self {
            Worker::Stock => {
                let mut cmd = Command::new(venv_python());
                cmd.arg(repo_root().join("tools/stock/worker.py"));
                cmd
            }
            Worker::Controlled => {
                let mut cmd = Command::new(binary());
                cmd.arg("worker");
                cmd
            }
        };
        cmd.arg("--out-dir").arg(out_dir).current_dir(repo_root()).env("HF_HUB_OFFLINE", "1");
        cmd
    }
}
