//! Running one worker process: its own process group, logs to files, the ready wait, the
//! deadline backstop, and escalation from SIGTERM to SIGKILL. Nothing outlives [`supervise`]:
//! on every path the whole process group is killed and the child reaped before it returns.
//!
//! stdout and stderr go straight to files in the worker's folder, not through pipes, so a worker
//! that prints megabytes cannot block on a full pipe, and a grandchild that keeps the
//! descriptors open cannot keep the launcher waiting for an end-of-file.

use std::{
    fs::File,
    os::unix::process::{CommandExt, ExitStatusExt},
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    time::{Duration, Instant},
};

use decode_baseline_wire::session;
use nix::{
    sys::signal::{killpg, Signal},
    unistd::Pid,
};

use super::signals::Interrupts;

/// How often the launcher looks at the child, the ready file and the interrupt counter.
const TICK: Duration = Duration::from_millis(20);

/// Limits for one worker.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// From spawn to `worker-ready`.
    pub ready_timeout: Duration,
    /// From `worker-ready` to exit: the worker's own deadline plus its backstop, plus slack.
    pub run_timeout: Duration,
    /// Between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// The CPUs the worker may run on, applied in the child before `exec`.
    pub placement: super::placement::Mask,
}

/// Why the launcher stepped in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intervention {
    None,
    /// No `worker-ready` within the ready timeout.
    NeverReady,
    /// Still running past the deadline backstop.
    PastDeadline,
    /// The user pressed Ctrl-C (or sent SIGTERM) once: graceful cancel.
    Cancelled,
    /// A second Ctrl-C: killed at once.
    Killed,
    /// Another rank of its group ended first, failed or killed: stopped with the group.
    RankStopped,
}

/// What became of the worker.
#[derive(Debug)]
pub struct Outcome {
    pub pid: u32,
    pub status: ExitStatus,
    pub intervention: Intervention,
    /// The signal the launcher escalated to, if any.
    pub sent: Option<Signal>,
    pub wall: Duration,
    /// The CPUs the worker was allowed on, read back once it started (`None` without an
    /// affinity call).
    pub cpus: Option<String>,
    /// In a group: ranks 1 and up, in order (this outcome is rank 0's); empty otherwise.
    pub ranks: Vec<Outcome>,
}

impl Outcome {
    /// Whether the process exited 0 by itself.
    pub fn succeeded(&self) -> bool {
        self.status.success() && self.intervention == Intervention::None
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SuperviseError {
    #[error("failed to create log file {path}")]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to start worker `{program}`")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to wait for worker pid {pid}")]
    Wait {
        pid: u32,
        #[source]
        source: std::io::Error,
    },
}

/// Starts `argv` in `out_dir` in a new process group with its output in `stdout.log` and
/// `stderr.log`, with `env` added to the launcher's environment, and supervises it to the end.
pub fn supervise(
    argv: &[String],
    out_dir: &Path,
    env: &[(String, String)],
    limits: Limits,
    interrupts: &Interrupts,
    mut on_tick: impl FnMut(),
) -> Result<Outcome, SuperviseError> {
    let mut worker = Supervised::spawn(argv, out_dir, env, limits)?;
    loop {
        if let Some(outcome) = worker.poll(interrupts)? {
            return Ok(outcome);
        }
        on_tick();
        std::thread::sleep(TICK);
    }
}

/// A started worker, looked at by [`Supervised::poll`]: one call does what one tick of the
/// supervision does, so that one loop can watch several workers at once (interleaved order).
#[derive(Debug)]
pub struct Supervised {
    child: Child,
    pid: u32,
    ready_file: PathBuf,
    limits: Limits,
    started: Instant,
    ready_since: Option<Instant>,
    intervention: Intervention,
    sent: Option<Signal>,
    term_at: Option<Instant>,
    seen_interrupts: usize,
    outcome_taken: bool,
    cpus: Option<String>,
}

impl Supervised {
    /// Starts `argv` in `out_dir` in a new process group with its output in `stdout.log` and
    /// `stderr.log`, with `env` added to the launcher's environment.
    pub fn spawn(
        argv: &[String],
        out_dir: &Path,
        env: &[(String, String)],
        limits: Limits,
    ) -> Result<Self, SuperviseError> {
        let log = |name: &str| {
            let path = out_dir.join(name);
            File::create(&path).map_err(|source| SuperviseError::Log { path, source })
        };
        let started = Instant::now();
        let mut command = Command::new(&argv[0]);
        command
            .args(&argv[1..])
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log("stdout.log")?)
            .stderr(log("stderr.log")?)
            .process_group(0);
        let placement = limits.placement;
        // SAFETY: the closure runs in the forked child before exec and only makes two
        // async-signal-safe system calls (prctl, sched_setaffinity), with no allocation.
        unsafe {
            command.pre_exec(move || {
                // If the launcher dies (even by SIGKILL), the worker is told to cancel; it then
                // stops at its next poll site and reports `cancelled`.
                nix::sys::prctl::set_pdeathsig(Signal::SIGTERM).map_err(std::io::Error::from)?;
                placement.apply_to_self()
            });
        }
        let child = command.spawn().map_err(|source| SuperviseError::Spawn { program: argv[0].clone(), source })?;
        // `spawn` returns once `exec` succeeded, so this is the worker's own mask.
        let cpus = super::placement::read_back(child.id());
        Ok(Self {
            pid: child.id(),
            child,
            ready_file: out_dir.join("worker-ready"),
            limits,
            started,
            ready_since: None,
            intervention: Intervention::None,
            sent: None,
            term_at: None,
            seen_interrupts: 0,
            outcome_taken: false,
            cpus,
        })
    }

    /// Whether `worker-ready` has been seen.
    pub fn is_ready(&self) -> bool {
        self.ready_since.is_some()
    }

    /// One look at the worker: the ready file, Ctrl-C, the limits, escalation. Returns the
    /// outcome once the worker has exited (its process group killed, the child reaped), and
    /// only once.
    pub fn poll(&mut self, interrupts: &Interrupts) -> Result<Option<Outcome>, SuperviseError> {
        if self.outcome_taken {
            return Ok(None);
        }
        if let Some(status) = try_wait(&mut self.child)? {
            // Whatever the worker left in its group (a forked grandchild holding its files) goes too.
            let _ = killpg(Pid::from_raw(self.pid as i32), Signal::SIGKILL);
            self.outcome_taken = true;
            return Ok(Some(Outcome {
                pid: self.pid,
                status,
                intervention: self.intervention,
                sent: self.sent,
                wall: self.started.elapsed(),
                cpus: self.cpus.clone(),
                ranks: Vec::new(),
            }));
        }
        let now = Instant::now();
        if self.ready_since.is_none() && self.ready_file.exists() {
            self.ready_since = Some(now);
        }
        let interrupts_now = interrupts.count();
        if interrupts_now > self.seen_interrupts {
            self.seen_interrupts = interrupts_now;
            if interrupts_now == 1 {
                self.intervention = Intervention::Cancelled;
                signal_group(self.pid, Signal::SIGTERM, &mut self.sent);
                self.term_at.get_or_insert(now);
            } else {
                self.intervention = Intervention::Killed;
                signal_group(self.pid, Signal::SIGKILL, &mut self.sent);
            }
        }
        if self.intervention == Intervention::None {
            let overdue = match self.ready_since {
                None => (now - self.started > self.limits.ready_timeout).then_some(Intervention::NeverReady),
                Some(ready) => (now - ready > self.limits.run_timeout).then_some(Intervention::PastDeadline),
            };
            if let Some(reason) = overdue {
                self.intervention = reason;
                signal_group(self.pid, Signal::SIGTERM, &mut self.sent);
                self.term_at = Some(now);
            }
        }
        if let Some(at) = self.term_at {
            if now - at > self.limits.grace && self.sent != Some(Signal::SIGKILL) {
                signal_group(self.pid, Signal::SIGKILL, &mut self.sent);
            }
        }
        Ok(None)
    }
}

impl Supervised {
    /// Kills the worker's process group at once and reaps it (a group that could not be
    /// started whole).
    pub fn kill(&mut self) {
        signal_group(self.pid, Signal::SIGKILL, &mut self.sent);
        let _ = self.child.wait();
        self.outcome_taken = true;
    }

    /// Stops the worker because another rank of its group ended first: SIGTERM now, SIGKILL
    /// after the grace, as for a deadline. Nothing when the launcher stepped in already.
    pub fn stop_with_group(&mut self) {
        if self.outcome_taken || self.intervention != Intervention::None {
            return;
        }
        self.intervention = Intervention::RankStopped;
        signal_group(self.pid, Signal::SIGTERM, &mut self.sent);
        self.term_at = Some(Instant::now());
    }
}

fn try_wait(child: &mut Child) -> Result<Option<ExitStatus>, SuperviseError> {
    child.try_wait().map_err(|source| SuperviseError::Wait { pid: child.id(), source })
}

fn signal_group(pid: u32, signal: Signal, sent: &mut Option<Signal>) {
    // ESRCH (the group is already gone) is the only expected failure and means nothing to do.
    let _ = killpg(Pid::from_raw(pid as i32), signal);
    *sent = Some(signal);
}

/// The exit code, or `None` if a signal ended the process.
pub fn exit_code(status: &ExitStatus) -> Option<i32> {
    status.code()
}

/// The signal that ended the process, if any.
pub fn exit_signal(status: &ExitStatus) -> Option<i32> {
    status.signal()
}

/// The record of what the supervisor did; `None` when it only watched.
pub fn describe(intervention: Intervention, sent: Option<Signal>) -> Option<session::Intervention> {
    use session::{InterventionReason as Reason, InterventionSignal as Sent};
    let reason = match intervention {
        Intervention::None => return None,
        Intervention::NeverReady => Reason::NeverReady,
        Intervention::PastDeadline => Reason::PastDeadline,
        Intervention::Cancelled => Reason::Cancelled,
        Intervention::Killed => Reason::Killed,
        Intervention::RankStopped => Reason::RankStopped,
    };
    let signal = sent.map(|s| match s {
        Signal::SIGTERM => Sent::Sigterm,
        Signal::SIGKILL => Sent::Sigkill,
        other => unreachable!("the supervisor sends only SIGTERM and SIGKILL, not {other}"),
    });
    Some(session::Intervention { reason, signal })
}

/// One process of a member of a group: its command, its folder and what it adds to the
/// launcher's environment.
#[derive(Debug, Clone)]
pub struct Process<'a> {
    pub argv: &'a [String],
    pub out_dir: &'a Path,
    /// Added to the launcher's environment (the adapter's own MLX environment; a rank's
    /// `MLX_RANK`, `MLX_HOSTFILE`).
    pub env: Vec<(String, String)>,
}
