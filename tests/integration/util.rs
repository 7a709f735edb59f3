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
    use decode_baseline_wire::hooks::{
        HOOK_ARRIVAL_ENV, HOOK_ENV, HOOK_REQUEST_ENV, SLOWDOWN_ADAPTER_ENV, SLOWDOWN_ENV, SLOWDOWN_SITE_ENV,
    };
    let log = |name: &str| std::fs::File::create(root.join(name)).unwrap();
    let mut cmd = Command::new(binary());
    cmd.args(["run", "--job"])
        .arg(root.join("job.json"))
        .current_dir(repo_root())
        .env("DECODE_BASELINE_LEASE", root.join("lease"))
        // No noise profile of the developer's host: the tests' verdicts use their own error.
        .env("DECODE_BASELINE_PROFILE_DIR", root.join("profiles"))
        .env("HF_HUB_OFFLINE", "1")
        .env_remove("DECODE_BASELINE_WORKER_STOCK")
        .env_remove("DECODE_BASELINE_WORKER_CONTROLLED")
        .env_remove(HOOK_ENV)
        .env_remove(HOOK_REQUEST_ENV)
        .env_remove(HOOK_ARRIVAL_ENV)
        .env_remove(SLOWDOWN_ENV)
        .env_remove(SLOWDOWN_ADAPTER_ENV)
        .env_remove(SLOWDOWN_SITE_ENV)
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

use decode_baseline_launcher::conformance::fixture::{self, FixtureSource};
pub use decode_baseline_launcher::conformance::fixture::{FixtureManifest, FIXTURE_DIR};
use decode_baseline_wire::{manifest::Manifest, Adapter, Mode, RunPolicy, WorkerJob};

/// What the fixture manifests are made from: this checkout's live worker sources and
/// environment pins, computed once per test process by the same rules the guard uses (so an
/// uncommitted edit does not fail the suite), after provisioning the environment.
pub fn fixture_source() -> &'static FixtureSource {
    static SOURCE: std::sync::OnceLock<FixtureSource> = std::sync::OnceLock::new();
    SOURCE.get_or_init(|| {
        let _ = venv_python();
        let repo = repo_root();
        FixtureSource::of(&repo, &repo.join("workloads.json")).expect("the live pins of this checkout")
    })
}

/// A manifest for the tiny fixture with `policy`, every mode as a cell, the live worker
/// sources and environment, written as `dir/workloads.json` with its pin. `edit` may change
/// the manifest before it is written (tamper tests).
pub fn fixture_manifest(dir: &Path, policy: &RunPolicy, edit: impl FnOnce(&mut Manifest)) -> FixtureManifest {
    fixture::fixture_manifest(fixture_source(), dir, policy, edit).expect("write the fixture manifest")
}

/// The job a launcher would write for `adapter` and `mode` from `fixture`.
pub fn fixture_job(fixture: &FixtureManifest, adapter: Adapter, mode: Mode, run_id: &str) -> WorkerJob {
    fixture::fixture_job(fixture, &adapter, mode, run_id)
}

/// The one session folder below the output root `root`: asserts there is exactly one, and
/// nothing else beside it but the history the session appended to (`history.sqlite`).
pub fn only_session(root: &Path) -> PathBuf {
    let entries: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .collect();
    let (folders, files): (Vec<PathBuf>, Vec<PathBuf>) = entries.into_iter().partition(|p| p.is_dir());
    assert_eq!(folders.len(), 1, "one session folder in {}: {folders:?}", root.display());
    assert!(
        files.iter().all(|f| f.file_name().is_some_and(|n| n == "history.sqlite")),
        "nothing but the history beside the session in {}: {files:?}",
        root.display()
    );
    folders[0].clone()
}

/// The one entry of `dir` (a profile file in its folder): asserts there is exactly one.
pub fn only_entry(dir: &Path) -> PathBuf {
    let entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 1, "one entry in {}: {entries:?}", dir.display());
    entries[0].clone()
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
    pub fn adapter(self) -> decode_baseline_wire::Adapter {
        match self {
            Worker::Stock => decode_baseline_wire::Adapter::Stock,
            Worker::Controlled => decode_baseline_wire::Adapter::Controlled,
        }
    }

    /// The worker's command line as the launcher builds it, run from the repository, offline;
    /// callers add what their test needs (standard streams, hooks, process group).
    pub fn command(self, out_dir: &Path) -> Command {
        let program = self.program();
        let mut cmd = Command::new(&program[0]);
        cmd.args(&program[1..]);
        cmd.arg("--out-dir").arg(out_dir).current_dir(repo_root()).env("HF_HUB_OFFLINE", "1");
        cmd
    }

    /// The worker's program as the launcher starts it, before `--out-dir`.
    pub fn program(self) -> Vec<PathBuf> {
        match self {
            Worker::Stock => vec![venv_python(), repo_root().join("tools/stock/worker.py")],
            Worker::Controlled => vec![binary(), PathBuf::from("worker")],
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Waiting on processes and files, signalling, and what a process group left behind
// ---------------------------------------------------------------------------------------------

use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use nix::{sys::signal::Signal, unistd::Pid};

/// Only a broken build reaches this.
pub const BOUND: Duration = Duration::from_secs(300);

/// Waits until `path` exists (a file written by a process the test is not waiting on).
pub fn wait_for_path(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(start.elapsed() < BOUND, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Waits for `child` within `bound`; SIGKILLs it and fails on overrun.
pub fn wait_bounded(mut child: Child, bound: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            panic!("pid {} did not exit within {bound:?}", child.id());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

pub fn read_json(path: &Path) -> serde_json::Value {
    let bytes = std::fs::read(path).unwrap_or_else(|err| panic!("read {}: {err}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|err| panic!("parse {}: {err}", path.display()))
}

/// The pid a worker wrote into its claim in `worker_dir`.
pub fn claim_pid(worker_dir: &Path) -> i32 {
    read_json(&worker_dir.join(decode_baseline_wire::outdir::CLAIM_FILE))["pid"].as_i64().unwrap() as i32
}

pub fn signal(pid: i32, sig: Signal) {
    nix::sys::signal::kill(Pid::from_raw(pid), sig).unwrap();
}

/// The fields of `/proc/<pid>/stat` after the command name (state first); `None` once the
/// process is gone.
fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// The process group of a live process.
pub fn pgid_of(pid: i32) -> Option<i32> {
    stat_fields(pid)?.get(2)?.parse().ok()
}

/// Live (non-zombie) processes whose process group is `pgid`. A zombie runs nothing; an
/// orphan's zombie waits on whatever reaps orphans here (in a container, possibly nothing).
pub fn live_in_group(pgid: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            stat_fields(pid).is_some_and(|fields| {
                fields.first().map(String::as_str) != Some("Z")
                    && fields.get(2).and_then(|g| g.parse().ok()) == Some(pgid)
            })
        })
        .collect()
}

pub fn assert_group_gone(pgid: i32) {
    let left = live_in_group(pgid);
    assert!(left.is_empty(), "processes left in worker group {pgid}: {left:?}");
}

/// One `#[test]` per worker for each `name => body` (`body` takes the [`Worker`]), in modules
/// `stock` and `controlled`; the caller's module must have `Worker` in scope.
macro_rules! both_workers {
    ($($name:ident => $body:expr;)*) => {
        mod stock {
            #[allow(unused_imports)]
            use super::*;
            $( #[test] fn $name() { let worker = Worker::Stock; $body(worker) } )*
        }
        mod controlled {
            #[allow(unused_imports)]
            use super::*;
            $( #[test] fn $name() { let worker = Worker::Controlled; $body(worker) } )*
        }
    };
}
pub(crate) use both_workers;
