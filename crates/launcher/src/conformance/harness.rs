//! The conformance harness: the worker under test, its scratch folders, spawning it with or
//! without a test hook, waiting for it with bounds, and the outcome of a scenario.
//!
//! Synchronisation is by the worker's test hooks (`DECODE_BASELINE_TEST_HOOK`, `req/protocol.md`
//! section 7): a worker blocks at a named site until the harness creates the release file; the
//! deadline sites force the watchdog to fire. Nothing here sleeps to make something happen; the
//! only waits are for a file to appear or a process to exit, each with a bound that only a broken
//! worker reaches.

use std::{
    collections::BTreeSet,
    io::Read,
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use decode_baseline_wire::{
    group::{HOSTFILE_ENV, RANK_ENV},
    hooks::{HOOK_ARRIVAL_ENV, HOOK_ENV, HOOK_REQUEST_ENV},
    manifest::Manifest,
    marker::Marker,
    outdir::{REPORT_FILE, REPORT_TEMP_PREFIX},
    Adapter, Mode, RunPolicy, WorkerJob, WorkerReport,
};
use serde_json::Value;

use super::fixture::{fixture_job, fixture_manifest, FixtureManifest, FixtureSource};

/// How long a worker may take from SIGTERM (sent while it is held at a hook before a forward)
/// to exit. It covers: seeing the flag at the hook, the re-poll, draining work already
/// dispatched (stock: the look-ahead forward in flight), writing the report and process exit.
/// It does not bound a forward that is running when the signal arrives: that residual is one
/// prefill chunk, one seed forward or one decode step, and scales with the model.
pub const CANCEL_RELEASE_BOUND: Duration = Duration::from_secs(10);

/// Only a broken worker reaches these.
pub const RUN_BOUND: Duration = Duration::from_secs(300);

/// Why a scenario failed: one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure(String);

impl Failure {
    /// A reason, folded onto one line.
    pub fn new(reason: impl AsRef<str>) -> Self {
        Self(reason.as_ref().split_whitespace().collect::<Vec<_>>().join(" "))
    }

    pub fn reason(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Any error of the harness's own work (a folder it could not write) fails the scenario with
/// the error's whole chain.
impl<E: std::error::Error> From<E> for Failure {
    fn from(err: E) -> Self {
        let mut text = err.to_string();
        let mut source = err.source();
        while let Some(cause) = source {
            text.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        Self::new(text)
    }
}

/// A scenario's result.
pub type Outcome = Result<(), Failure>;

/// Fails the scenario with a formatted reason unless `cond` holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($reason:tt)+) => {
        if !$cond {
            return Err($crate::conformance::harness::Failure::new(format!($($reason)+)));
        }
    };
}

/// Fails the scenario unless `found == expected`, naming `what` and both values.
#[macro_export]
macro_rules! ensure_eq {
    ($found:expr, $expected:expr, $($what:tt)+) => {{
        let (found, expected) = (&$found, &$expected);
        if found != expected {
            return Err($crate::conformance::harness::Failure::new(format!(
                "{}: expected {:?}, found {:?}",
                format!($($what)+),
                expected,
                found
            )));
        }
    }};
}

/// A worker's command line (argv) for an out dir, `--out-dir <dir>` included.
pub type WorkerCommand = Box<dyn Fn(&Path) -> Vec<String>>;

/// The worker under test: its adapter name (the job's `adapter`) and its command line.
pub struct Target {
    pub adapter: Adapter,
    pub command: WorkerCommand,
}

/// One run of the scenarios: the worker, what its fixture manifests are made from (the
/// repository it runs from among them), and the scratch folder every scenario makes its
/// folders in.
pub struct Suite {
    pub target: Target,
    pub source: FixtureSource,
    scratch: PathBuf,
    next: std::cell::Cell<u32>,
}

impl Suite {
    /// A suite for `target` on `source`'s fixture, with its folders below `scratch` (which
    /// exists).
    pub fn new(target: Target, source: FixtureSource, scratch: PathBuf) -> Self {
        Self { target, source, scratch, next: std::cell::Cell::new(0) }
    }

    /// A new, empty folder below the scratch folder, named after `what`.
    pub fn folder(&self, what: &str) -> Result<PathBuf, Failure> {
        let n = self.next.get();
        self.next.set(n + 1);
        let dir = self.scratch.join(format!("{n:03}-{what}"));
        std::fs::create_dir(&dir).map_err(|err| Failure::new(format!("failed to create {}: {err}", dir.display())))?;
        Ok(dir)
    }

    /// The worker's command for `out_dir`, as the launcher starts it (from the repository,
    /// offline, no test hook or rank environment inherited), with its output piped.
    pub fn command(&self, out_dir: &Path) -> Command {
        let argv = (self.target.command)(out_dir);
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .current_dir(&self.source.repo)
            .env("HF_HUB_OFFLINE", "1")
            .env_remove(HOOK_ENV)
            .env_remove(HOOK_REQUEST_ENV)
            .env_remove(HOOK_ARRIVAL_ENV)
            .env_remove(RANK_ENV)
            .env_remove(HOSTFILE_ENV)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Starts the worker on `out_dir`.
    pub fn spawn_on(&self, out_dir: &Path) -> Result<Child, Failure> {
        spawn(self.command(out_dir))
    }

    /// A fixture manifest in `dir`, edited by `edit`.
    pub fn fixture(
        &self,
        dir: &Path,
        policy: &RunPolicy,
        edit: impl FnOnce(&mut Manifest),
    ) -> Result<FixtureManifest, Failure> {
        Ok(fixture_manifest(&self.source, dir, policy, edit)?)
    }
}

/// Starts `cmd`, failing the scenario if it cannot start.
pub fn spawn(mut cmd: Command) -> Result<Child, Failure> {
    cmd.spawn().map_err(|err| Failure::new(format!("failed to start the worker {:?}: {err}", cmd.get_program())))
}

/// The policy of the conformance scenarios: the frozen shape, fewer requests, fast watchdog
/// polls.
pub fn test_policy() -> RunPolicy {
    RunPolicy {
        first_requests: 1,
        warmup_requests: 1,
        measured_requests: 1,
        watchdog_poll_ms: 20,
        backstop_grace_s: 2,
        ..RunPolicy::frozen()
    }
}

/// One worker run's folder, manifest and job, and what its environment adds (a rank's
/// `MLX_RANK` and `MLX_HOSTFILE`).
pub struct Setup<'s> {
    pub suite: &'s Suite,
    pub out: PathBuf,
    pub fixture: FixtureManifest,
    pub job: WorkerJob,
    pub env: Vec<(String, String)>,
}

impl<'s> Setup<'s> {
    pub fn new(suite: &'s Suite, mode: Mode) -> Result<Self, Failure> {
        Self::with(suite, mode, &test_policy(), |_| {})
    }

    pub fn with(
        suite: &'s Suite,
        mode: Mode,
        policy: &RunPolicy,
        edit: impl FnOnce(&mut Manifest),
    ) -> Result<Self, Failure> {
        let root = suite.folder(mode.as_str())?;
        let out = root.join("out");
        std::fs::create_dir(&out)?;
        let fixture = suite.fixture(&root, policy, edit)?;
        let job = fixture_job(&fixture, &suite.target.adapter, mode, "conformance/cell/worker-0");
        let setup = Self { suite, out, fixture, job, env: Vec::new() };
        setup.write_job()?;
        Ok(setup)
    }

    pub fn write_job(&self) -> Result<(), Failure> {
        write_job(&self.out, &self.job)
    }

    pub fn command(&self) -> Command {
        let mut cmd = self.suite.command(&self.out);
        cmd.envs(self.env.iter().map(|(name, value)| (name, value)));
        cmd
    }

    /// The worker's command, held at `hook` (site, request) if given.
    pub fn hooked(&self, hook: Option<(&str, u32)>) -> Command {
        let mut cmd = self.command();
        if let Some((site, request)) = hook {
            cmd.env(HOOK_ENV, site).env(HOOK_REQUEST_ENV, request.to_string());
        }
        cmd
    }

    /// Starts the worker, held at `hook` (site, request) if given.
    pub fn spawn(&self, hook: Option<(&str, u32)>) -> Result<Child, Failure> {
        spawn(self.hooked(hook))
    }

    /// Runs the worker to its end.
    pub fn run(&self) -> Result<Finished, Failure> {
        wait(self.spawn(None)?, RUN_BOUND)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.out.join(name)
    }

    /// Lets a worker held at `site` go on (or, for a deadline site, makes it not wait).
    pub fn release(&self, site: &str) -> Result<(), Failure> {
        Ok(std::fs::write(self.path(&format!("hook-{site}-release")), b"")?)
    }

    /// Waits until the worker reports that it reached `site`.
    pub fn wait_for_hook(&self, site: &str, child: &mut Child) -> Result<(), Failure> {
        wait_for_file(&self.path(&format!("hook-{site}-reached")), child)
            .map_err(|why| Failure::new(format!("hook site {site}: {why}")))
    }

    /// The report, parsed as the typed report and as plain JSON.
    pub fn report(&self) -> Result<(WorkerReport, Value), Failure> {
        let path = self.path(REPORT_FILE);
        let bytes = std::fs::read(&path).map_err(|err| Failure::new(format!("no readable {REPORT_FILE}: {err}")))?;
        let value: Value =
            serde_json::from_slice(&bytes).map_err(|err| Failure::new(format!("{REPORT_FILE} is not JSON: {err}")))?;
        let report: WorkerReport = serde_json::from_slice(&bytes)
            .map_err(|err| Failure::new(format!("{REPORT_FILE} does not parse as a worker report: {err}")))?;
        Ok((report, value))
    }

    pub fn total_requests(&self) -> usize {
        self.job.run_policy.requests(self.job.mode) as usize
    }
}

/// Writes `job` as `out/job.json`.
pub fn write_job(out: &Path, job: &WorkerJob) -> Result<(), Failure> {
    let bytes = serde_json::to_vec_pretty(job).expect("a job serializes");
    Ok(std::fs::write(out.join("job.json"), bytes)?)
}

/// A finished worker.
pub struct Finished {
    pub status: ExitStatus,
    pub stderr: String,
    pub pid: u32,
}

impl Finished {
    /// The exit code; a worker killed by a signal fails the scenario.
    pub fn code(&self) -> Result<i32, Failure> {
        self.status.code().ok_or_else(|| {
            Failure::new(format!("the worker died by a signal ({}); stderr: {}", self.status, tail(&self.stderr)))
        })
    }

    /// Fails unless the worker exited with `expected`.
    pub fn expect_code(&self, expected: i32) -> Outcome {
        let code = self.code()?;
        ensure!(code == expected, "exit {code}, expected {expected}; stderr: {}", tail(&self.stderr));
        Ok(())
    }

    /// Fails unless stderr contains `text`.
    pub fn expect_stderr(&self, text: &str) -> Outcome {
        ensure!(self.stderr.contains(text), "stderr does not say {text:?}: {}", tail(&self.stderr));
        Ok(())
    }
}

/// The last non-empty line of a worker's stderr, shortened: enough to say why on one line.
pub fn tail(stderr: &str) -> String {
    const MAX: usize = 300;
    let line = stderr.lines().rev().map(str::trim).find(|l| !l.is_empty()).unwrap_or("(empty)");
    match line.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// Waits for `child` to exit within `bound`, draining its pipes. Kills it on overrun.
pub fn wait(mut child: Child, bound: Duration) -> Result<Finished, Failure> {
    let pid = child.id();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let drain_out = std::thread::spawn(move || {
        if let Some(mut stdout) = stdout {
            let _ = std::io::copy(&mut stdout, &mut std::io::sink());
        }
    });
    let drain_err = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut stderr) = stderr {
            let _ = stderr.read_to_string(&mut text);
        }
        text
    });
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let status = child.wait();
        let _ = tx.send(());
        status
    });
    if rx.recv_timeout(bound).is_err() {
        signal(pid, nix::sys::signal::Signal::SIGKILL);
        let _ = waiter.join();
        let stderr = drain_err.join().unwrap_or_default();
        return Err(Failure::new(format!(
            "the worker did not exit within {bound:?} (killed); stderr: {}",
            tail(&stderr)
        )));
    }
    let status = waiter.join().expect("the waiter thread").map_err(|err| Failure::new(format!("wait: {err}")))?;
    let _ = drain_out.join();
    let stderr = drain_err.join().unwrap_or_default();
    Ok(Finished { status, stderr, pid })
}

/// Waits until `path` exists; fails fast if `child` exits first, and after [`RUN_BOUND`].
pub fn wait_for_file(path: &Path, child: &mut Child) -> Outcome {
    let start = Instant::now();
    while !path.exists() {
        if let Some(status) = child.try_wait()? {
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                let _ = pipe.read_to_string(&mut stderr);
            }
            return Err(Failure::new(format!(
                "the worker exited ({status}) before {} appeared; stderr: {}",
                file_name(path),
                tail(&stderr)
            )));
        }
        if start.elapsed() >= RUN_BOUND {
            signal(child.id(), nix::sys::signal::Signal::SIGKILL);
            let _ = child.wait();
            return Err(Failure::new(format!("{} never appeared within {RUN_BOUND:?} (killed)", file_name(path))));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(())
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Sends `signal` to the worker; a worker already gone is not an error here (the wait says).
pub fn signal(pid: u32, signal: nix::sys::signal::Signal) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal);
}

/// The names in `dir`.
pub fn names(dir: &Path) -> Result<BTreeSet<String>, Failure> {
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(dir)? {
        out.insert(entry?.file_name().to_string_lossy().into_owned());
    }
    Ok(out)
}

/// Fails if a report temp file is left in `dir`.
pub fn no_temp(dir: &Path) -> Outcome {
    let temps: Vec<_> = names(dir)?.into_iter().filter(|n| n.starts_with(REPORT_TEMP_PREFIX)).collect();
    ensure!(temps.is_empty(), "temp files left: {temps:?}");
    Ok(())
}

/// A claim or ready marker.
pub fn marker(path: &Path) -> Result<Marker, Failure> {
    let bytes = std::fs::read(path).map_err(|err| Failure::new(format!("no readable {}: {err}", file_name(path))))?;
    serde_json::from_slice(&bytes).map_err(|err| Failure::new(format!("{} is not a marker: {err}", file_name(path))))
}

/// Every file below `dir`, relative, sorted, with its bytes.
pub fn snapshot_tree(dir: &Path) -> Result<Vec<(PathBuf, Vec<u8>)>, Failure> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder)? {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path)?;
                files.push((path.strip_prefix(dir).expect("below dir").to_owned(), bytes));
            }
        }
    }
    files.sort();
    Ok(files)
}
