//! How the launcher waits between two looks at an interleaved group while a granted request
//! runs: blocked until a file appears in one of the members' folders (the request's done file,
//! on Linux by inotify), or at the latest after [`BLOCK_TIMEOUT`] for the supervision's other
//! duties; elsewhere, and while no request runs, it sleeps [`GATE_TICK`] and looks again.
//!
//! Blocking keeps the launcher off the CPUs while a request runs: polling woke it 1000 times a
//! second, on whichever CPU the OS chose (`req/findings.md` §22 measures both).

use std::{path::Path, time::Duration};

/// How long the launcher sleeps between looks while no request runs (before the first grant,
/// between a done file and the next grant). The grant latency is added between requests,
/// outside every measured interval.
pub const GATE_TICK: Duration = Duration::from_millis(1);

/// The longest a blocked wait lasts: the watchdog, Ctrl-C and a member that died are looked at
/// at least this often (the supervision tick of `supervise.rs`).
const BLOCK_TIMEOUT: Duration = Duration::from_millis(20);

/// `DECODE_BASELINE_GATE_WAIT=poll` makes the launcher poll every [`GATE_TICK`] while a request
/// runs as well (the behaviour before §22, kept to measure against).
pub const GATE_WAIT_ENV: &str = "DECODE_BASELINE_GATE_WAIT";

/// The waiter of one interleaved group.
pub struct GateWait {
    #[cfg(target_os = "linux")]
    inotify: Option<nix::sys::inotify::Inotify>,
}

impl GateWait {
    /// Watches `dirs` (the members' folders) for new files; without inotify, or when asked to
    /// poll, every wait is a [`GATE_TICK`] sleep.
    pub fn new(dirs: &[&Path]) -> Self {
        let poll = std::env::var(GATE_WAIT_ENV).is_ok_and(|v| v == "poll");
        #[cfg(target_os = "linux")]
        {
            use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
            let watch = || -> nix::Result<Inotify> {
                let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)?;
                for dir in dirs {
                    inotify.add_watch(*dir, AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO)?;
                }
                Ok(inotify)
            };
            GateWait { inotify: if poll { None } else { watch().ok() } }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (dirs, poll);
            GateWait {}
        }
    }

    /// Waits before the next look: blocked while `request_running` (see the module docs), else
    /// one [`GATE_TICK`].
    pub fn wait(&self, request_running: bool) {
        #[cfg(target_os = "linux")]
        if let (true, Some(inotify)) = (request_running, &self.inotify) {
            use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
            use std::os::fd::AsFd;
            let timeout = PollTimeout::try_from(BLOCK_TIMEOUT).unwrap_or(PollTimeout::NONE);
            let mut fds = [PollFd::new(inotify.as_fd(), PollFlags::POLLIN)];
            // An interrupted or failed wait only makes the next look come sooner.
            if poll(&mut fds, timeout).is_ok_and(|ready| ready > 0) {
                let _ = inotify.read_events();
            }
            return;
        }
        let _ = request_running;
        std::thread::sleep(GATE_TICK);
    }
}
