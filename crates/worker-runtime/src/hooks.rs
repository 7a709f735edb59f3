//! Deterministic test hooks: a worker blocks at a named site until the test releases it.
//!
//! With `DECODE_BASELINE_TEST_HOOK=<site>` set, the first time the worker arrives at `<site>`
//! (in request `DECODE_BASELINE_TEST_HOOK_REQUEST`, default 0, for the per-request sites; the
//! `DECODE_BASELINE_TEST_HOOK_ARRIVAL`-th arrival there, default 0, the first) it
//! creates `<out>/hook-<site>-reached` and waits until `<out>/hook-<site>-release` exists or
//! the cancel flag is set. Tests wait on the reached file, act (send SIGTERM, make a file), and
//! release: no sleeps. The deadline sites first move the watchdog deadline to now and wait for
//! the watchdog thread to fire, so a deadline test needs no timing either.
//!
//! Without the variable this is one `Option` check per site. An unknown site name is an error
//! (a typo would otherwise silently test nothing).

use std::{
    path::{Path, PathBuf},
    sync::atomic::{AtomicBool, AtomicU32, Ordering},
    time::Duration,
};

use decode_baseline_wire::hooks::{Site, HOOK_ARRIVAL_ENV, HOOK_ENV, HOOK_REQUEST_ENV};

use super::{cancel::CancelFlag, watchdog::Watchdog};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HookError {
    #[error("{HOOK_ENV}={0:?} names no hook site")]
    UnknownSite(String),
    #[error("{HOOK_REQUEST_ENV}={0:?} is not a request index")]
    BadRequest(String),
    #[error("{HOOK_ARRIVAL_ENV}={0:?} is not an arrival count (0 for the first)")]
    BadArrival(String),
}

/// The armed hook of this process, if any.
#[derive(Debug)]
pub struct Hooks {
    /// The site, the request and which arrival there holds the worker.
    armed: Option<(Site, u32, u32)>,
    /// Arrivals at the armed site (in the armed request) so far.
    arrivals: AtomicU32,
    spent: AtomicBool,
    dir: PathBuf,
}

impl Hooks {
    /// No hook.
    pub fn none(dir: &Path) -> Self {
        Self::new(None, dir)
    }

    fn new(armed: Option<(Site, u32, u32)>, dir: &Path) -> Self {
        Self { armed, arrivals: AtomicU32::new(0), spent: AtomicBool::new(false), dir: dir.to_owned() }
    }

    /// Reads the hook from the environment.
    pub fn from_env(dir: &Path) -> Result<Self, HookError> {
        let site = match std::env::var(HOOK_ENV) {
            Ok(name) if !name.is_empty() => {
                Site::ALL.into_iter().find(|s| s.name() == name).ok_or(HookError::UnknownSite(name))?
            }
            _ => return Ok(Self::none(dir)),
        };
        let count = |name: &str, bad: fn(String) -> HookError| match std::env::var(name) {
            Ok(text) if !text.is_empty() => text.parse().map_err(|_| bad(text)),
            _ => Ok(0),
        };
        let request = count(HOOK_REQUEST_ENV, HookError::BadRequest)?;
        let arrival = count(HOOK_ARRIVAL_ENV, HookError::BadArrival)?;
        Ok(Self::new(Some((site, request, arrival)), dir))
    }

    /// Whether any hook is armed (the hook sites cost nothing otherwise).
    pub fn is_armed(&self) -> bool {
        self.armed.is_some()
    }

    pub fn reached_path(&self, site: Site) -> PathBuf {
        self.dir.join(format!("hook-{}-reached", site.name()))
    }

    pub fn release_path(&self, site: Site) -> PathBuf {
        self.dir.join(format!("hook-{}-release", site.name()))
    }

    /// Called at `site` (in request `request` for per-request sites). Holds the worker there
    /// if this is the armed site's armed arrival; returns at once otherwise.
    pub fn reach(&self, site: Site, request: Option<u32>, cancel: &CancelFlag, watchdog: Option<&Watchdog>) {
        let Some((armed, armed_request, arrival)) = self.armed else { return };
        if armed != site || (site.per_request() && request != Some(armed_request)) {
            return;
        }
        if self.arrivals.fetch_add(1, Ordering::SeqCst) != arrival || self.spent.swap(true, Ordering::SeqCst) {
            return;
        }
        if site.forces_deadline() {
            if let Some(dog) = watchdog {
                dog.force_deadline();
                dog.wait_fired();
            }
        }
        // Best effort: a hook that cannot signal simply holds until released or cancelled.
        let _ = std::fs::write(self.reached_path(site), b"");
        let release = self.release_path(site);
        loop {
            if site == Site::Stall {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            if release.exists() || cancel.is_cancelled() {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{
        mpsc::{self, RecvTimeoutError},
        Arc,
    };

    use super::*;
    use crate::bounded::{wait_for_file, within, BOUND};

    fn armed(site: Site, request: u32, dir: &Path) -> Arc<Hooks> {
        Arc::new(Hooks::new(Some((site, request, 0)), dir))
    }

    /// `hooks.reach(site, request, ..)` on a thread of its own; the channel says when it returned.
    fn reach_on_a_thread(
        hooks: &Arc<Hooks>,
        site: Site,
        request: Option<u32>,
        cancel: &CancelFlag,
    ) -> mpsc::Receiver<()> {
        let (tx, rx) = mpsc::channel();
        let (hooks, cancel) = (Arc::clone(hooks), cancel.clone());
        std::thread::spawn(move || {
            hooks.reach(site, request, &cancel, None);
            let _ = tx.send(());
        });
        rx
    }

    /// How long a held worker is watched to see that it stays held.
    const HELD: Duration = Duration::from_millis(50);

    #[test]
    fn holds_until_released_once_and_only_at_the_armed_request() {
        let tmp = tempfile::tempdir().unwrap();
        let hooks = armed(Site::BeforeDecodeStep, 1, tmp.path());
        let cancel = CancelFlag::new();
        // Another site, or the same site in another request: no hold, no file.
        within("another site and another request pass straight through", {
            let (hooks, cancel) = (Arc::clone(&hooks), cancel.clone());
            move || {
                hooks.reach(Site::BeforeSeedForward, Some(1), &cancel, None);
                hooks.reach(Site::BeforeDecodeStep, Some(0), &cancel, None);
            }
        });
        assert!(!hooks.reached_path(Site::BeforeDecodeStep).exists());

        let returned = reach_on_a_thread(&hooks, Site::BeforeDecodeStep, Some(1), &cancel);
        wait_for_file(&hooks.reached_path(Site::BeforeDecodeStep), "the armed site was reached");
        assert_eq!(returned.recv_timeout(HELD), Err(RecvTimeoutError::Timeout), "returned before its release");
        std::fs::write(hooks.release_path(Site::BeforeDecodeStep), b"").unwrap();
        returned.recv_timeout(BOUND).expect("the release file did not release the held worker");

        // Spent: a second arrival passes straight through even after the release is removed.
        std::fs::remove_file(hooks.release_path(Site::BeforeDecodeStep)).unwrap();
        within("a spent hook passes straight through", {
            let (hooks, cancel) = (Arc::clone(&hooks), cancel.clone());
            move || hooks.reach(Site::BeforeDecodeStep, Some(1), &cancel, None)
        });
    }

    #[test]
    fn an_armed_arrival_holds_at_that_arrival_in_the_armed_request_only() {
        let tmp = tempfile::tempdir().unwrap();
        let hooks = Arc::new(Hooks::new(Some((Site::BeforePrefillChunk, 1, 1)), tmp.path()));
        let cancel = CancelFlag::new();
        within("the first chunk, and the chunks of another request, pass straight through", {
            let (hooks, cancel) = (Arc::clone(&hooks), cancel.clone());
            move || {
                hooks.reach(Site::BeforePrefillChunk, Some(0), &cancel, None);
                hooks.reach(Site::BeforePrefillChunk, Some(0), &cancel, None);
                hooks.reach(Site::BeforePrefillChunk, Some(1), &cancel, None);
            }
        });
        assert!(!hooks.reached_path(Site::BeforePrefillChunk).exists());
        let returned = reach_on_a_thread(&hooks, Site::BeforePrefillChunk, Some(1), &cancel);
        wait_for_file(&hooks.reached_path(Site::BeforePrefillChunk), "the second chunk was reached");
        assert_eq!(returned.recv_timeout(HELD), Err(RecvTimeoutError::Timeout), "returned before its release");
        cancel.cancel();
        returned.recv_timeout(BOUND).expect("the cancel did not release the held worker");
    }

    #[test]
    fn an_arrival_that_is_not_a_count_is_refused_by_name() {
        let err = HookError::BadArrival("second".into()).to_string();
        assert_eq!(err, "DECODE_BASELINE_TEST_HOOK_ARRIVAL=\"second\" is not an arrival count (0 for the first)");
    }

    #[test]
    fn cancel_releases_a_held_worker() {
        let tmp = tempfile::tempdir().unwrap();
        let hooks = armed(Site::AfterReady, 0, tmp.path());
        let cancel = CancelFlag::new();
        let returned = reach_on_a_thread(&hooks, Site::AfterReady, None, &cancel);
        wait_for_file(&hooks.reached_path(Site::AfterReady), "the armed site was reached");
        assert_eq!(returned.recv_timeout(HELD), Err(RecvTimeoutError::Timeout), "returned before the cancel");

        cancel.cancel();
        returned.recv_timeout(BOUND).expect("the cancel did not release the held worker");
        // Released by the cancel alone: no release file was made, and the flag stays set for
        // the check that follows the hook in `RequestContext::poll`.
        assert!(!hooks.release_path(Site::AfterReady).exists());
        assert!(cancel.is_cancelled());
        // The hook is spent: a later arrival, with no cancel and no release, passes through.
        within("a hook spent by a cancel passes straight through", {
            let hooks = Arc::clone(&hooks);
            move || hooks.reach(Site::AfterReady, None, &CancelFlag::new(), None)
        });
    }

    #[test]
    fn site_names_round_trip_and_are_unique() {
        let mut names: Vec<_> = Site::ALL.iter().map(|s| s.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Site::ALL.len());
    }
}
