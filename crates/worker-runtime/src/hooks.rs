//! Deterministic test hooks: a worker blocks at a named site until the test releases it.
//!
//! With `DECODE_BASELINE_TEST_HOOK=<site>` set, the first time the worker arrives at `<site>`
//! (in request `DECODE_BASELINE_TEST_HOOK_REQUEST`, default 0, for the per-request sites) it
//! creates `<out>/hook-<site>-reached` and waits until `<out>/hook-<site>-release` exists or
//! the cancel flag is set. Tests wait on the reached file, act (send SIGTERM, make a file), and
//! release: no sleeps. The deadline sites first move the watchdog deadline to now and wait for
//! the watchdog thread to fire, so a deadline test needs no timing either.
//!
//! Without the variable this is one `Option` check per site. An unknown site name is an error
//! (a typo would otherwise silently test nothing).

use std::{
    path::{Path, PathBuf},
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use decode_baseline_wire::hooks::{Site, HOOK_ENV, HOOK_REQUEST_ENV};

use super::{cancel::CancelFlag, watchdog::Watchdog};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HookError {
    #[error("{HOOK_ENV}={0:?} names no hook site")]
    UnknownSite(String),
    #[error("{HOOK_REQUEST_ENV}={0:?} is not a request index")]
    BadRequest(String),
}

/// The armed hook of this process, if any.
#[derive(Debug)]
pub struct Hooks {
    armed: Option<(Site, u32)>,
    spent: AtomicBool,
    dir: PathBuf,
}

impl Hooks {
    /// No hook.
    pub fn none(dir: &Path) -> Self {
        Self { armed: None, spent: AtomicBool::new(false), dir: dir.to_owned() }
    }

    /// Reads the hook from the environment.
    pub fn from_env(dir: &Path) -> Result<Self, HookError> {
        let site = match std::env::var(HOOK_ENV) {
            Ok(name) if !name.is_empty() => {
                Site::ALL.into_iter().find(|s| s.name() == name).ok_or(HookError::UnknownSite(name))?
            }
            _ => return Ok(Self::none(dir)),
        };
        let request = match std::env::var(HOOK_REQUEST_ENV) {
            Ok(text) if !text.is_empty() => text.parse().map_err(|_| HookError::BadRequest(text))?,
            _ => 0,
        };
        Ok(Self { armed: Some((site, request)), spent: AtomicBool::new(false), dir: dir.to_owned() })
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
    /// if this is the armed site's first match; returns at once otherwise.
    pub fn reach(&self, site: Site, request: Option<u32>, cancel: &CancelFlag, watchdog: Option<&Watchdog>) {
        let Some((armed, armed_request)) = self.armed else { return };
        if armed != site || (site.per_request() && request != Some(armed_request)) {
            return;
        }
        if self.spent.swap(true, Ordering::SeqCst) {
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
    use super::*;

    #[test]
    fn holds_until_released_once_and_only_at_the_armed_request() {
        let tmp = tempfile::tempdir().unwrap();
        let hooks = Hooks {
            armed: Some((Site::BeforeDecodeStep, 1)),
            spent: AtomicBool::new(false),
            dir: tmp.path().to_owned(),
        };
        let cancel = CancelFlag::new();
        // Another site, or the same site in another request: no hold, no file.
        hooks.reach(Site::BeforeSeedForward, Some(1), &cancel, None);
        hooks.reach(Site::BeforeDecodeStep, Some(0), &cancel, None);
        assert!(!hooks.reached_path(Site::BeforeDecodeStep).exists());

        std::thread::scope(|scope| {
            let held = scope.spawn(|| hooks.reach(Site::BeforeDecodeStep, Some(1), &cancel, None));
            let reached = hooks.reached_path(Site::BeforeDecodeStep);
            while !reached.exists() {
                std::thread::yield_now();
            }
            assert!(!held.is_finished());
            std::fs::write(hooks.release_path(Site::BeforeDecodeStep), b"").unwrap();
            held.join().unwrap();
        });
        // Spent: a second arrival passes straight through even after the release is removed.
        std::fs::remove_file(hooks.release_path(Site::BeforeDecodeStep)).unwrap();
        hooks.reach(Site::BeforeDecodeStep, Some(1), &cancel, None);
    }

    #[test]
    fn cancel_releases_a_held_worker() {
        let tmp = tempfile::tempdir().unwrap();
        let hooks =
            Hooks { armed: Some((Site::AfterReady, 0)), spent: AtomicBool::new(false), dir: tmp.path().to_owned() };
        let cancel = CancelFlag::new();
        std::thread::scope(|scope| {
            let held = scope.spawn(|| hooks.reach(Site::AfterReady, None, &cancel, None));
            while !hooks.reached_path(Site::AfterReady).exists() {
                std::thread::yield_now();
            }
            cancel.cancel();
            held.join().unwrap();
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
