//! One bisection's folder and how a step runs: the two commits' trees exported from the loop's
//! repository, declared as the adapters `bisect-base` and `bisect-test` in a manifest of their
//! own (`bisect-<folder>.workloads.json` at the checkout's root, where a manifest's relative
//! paths resolve; one per bisection, so that two can run side by side), re-pinned, and one
//! paired interleaved session of the tested tree against the base under the sequential test
//! (`run --until-decided`), whose decision is the step's outcome.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;
use serde_json::{json, Map, Value};

use decode_baseline_wire::compare::{Quantity, Row};
use decode_baseline_wire::stats::Verdict;

use super::plan::Outcome;
use crate::{bad_input, ensure_input};

/// The adapter names the two trees run as (`--as`).
pub const BASE: &str = "bisect-base";
pub const TEST: &str = "bisect-test";

/// The loop under bisection: its repository and its worker program within it.
#[derive(Debug, Clone)]
pub struct Loop {
    pub repo: PathBuf,
    /// The worker program, relative to the repository's root.
    pub worker: PathBuf,
    /// Run the worker with the pinned environment's Python.
    pub python: bool,
    /// Run in each exported tree before its session (`sh -c`, in the tree), when the worker is
    /// built from its sources (`cargo build --release`).
    pub build: Option<String>,
}

/// A commit whose tree `--build` could not build: the step cannot measure it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("commit {commit} does not build (`{command}` failed; its output: {})", log.display())]
pub struct BuildFailed {
    pub commit: String,
    pub command: String,
    pub log: PathBuf,
}

/// How each step's session runs.
#[derive(Debug, Clone)]
pub struct StepSettings {
    pub cell: String,
    /// `run --budget`: the most pairs per cell (`200`) or the most time (`5m`).
    pub budget: String,
    /// `run --cpus`.
    pub cpus: String,
    /// The rows the session's looks decide and the step reads (`run --decide-on`).
    pub quantity: Quantity,
}

/// What one step found.
#[derive(Debug, Clone)]
pub struct StepResult {
    pub outcome: Outcome,
    /// The tested tree's row against the base: its decision, when compared.
    pub row: Option<Row>,
    /// The step's session folder; for a tested commit that did not build, its build's output.
    pub session_dir: PathBuf,
    pub wall_s: f64,
    /// Why there is no row, when no session ran (the tested commit did not build).
    pub unmeasured: Option<String>,
}

impl StepResult {
    /// The step of a tested commit that did not build: unknown, as `git bisect` skips it.
    pub fn unbuilt(failed: &BuildFailed) -> StepResult {
        StepResult {
            outcome: Outcome::Unknown,
            row: None,
            session_dir: failed.log.clone(),
            wall_s: 0.0,
            unmeasured: Some(format!("does not build: `{}` failed", failed.command)),
        }
    }
}

/// A bisection's folder in the checkout.
#[derive(Debug, Clone)]
pub struct Workspace {
    pub checkout: PathBuf,
    pub dir: PathBuf,
}

fn git(repo: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .with_context(|| format!("failed to run git in {}", repo.display()))?;
    ensure_input!(
        out.status.success(),
        "git {} in {}: {}",
        args.join(" "),
        repo.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The full commit id `rev` names in `repo` (bad input naming `flag` when it names none).
pub fn resolve(repo: &Path, flag: &str, rev: &str) -> anyhow::Result<String> {
    git(repo, &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")])
        .map_err(|_| crate::exit::bad_input(format!("{flag} {rev}: not a commit of {}", repo.display())))
}

/// The commits from `good` to `bad` along the first parents, oldest first, both included;
/// `named` are the revisions as the user gave them, for the message.
pub fn commits(repo: &Path, good: &str, bad: &str, named: (&str, &str)) -> anyhow::Result<Vec<String>> {
    let after: Vec<String> = git(repo, &["rev-list", "--reverse", "--first-parent", &format!("{good}..{bad}")])?
        .lines()
        .map(str::to_owned)
        .collect();
    if after.last().map(String::as_str) != Some(bad) {
        bad_input!(
            "--bad {} ({bad}): not a descendant of --good {} ({good}) along the first parents in {}",
            named.1,
            named.0,
            repo.display()
        );
    }
    Ok(std::iter::once(good.to_owned()).chain(after).collect())
}

/// `abc1234 the commit's subject`.
pub fn describe(repo: &Path, commit: &str) -> String {
    git(repo, &["log", "-1", "--format=%h %s", commit]).unwrap_or_else(|_| commit.to_owned())
}

impl Workspace {
    /// A new folder under `root` (relative to the checkout unless absolute), which must lie in
    /// the checkout: the bisection manifest's paths are relative to it.
    pub fn create(checkout: &Path, root: &Path) -> anyhow::Result<Workspace> {
        let root = std::path::absolute(checkout.join(root))?;
        ensure_input!(
            root.starts_with(checkout),
            "--out {}: expected a folder inside the checkout {} (the bisection manifest names the trees relative to it)",
            root.display(),
            checkout.display()
        );
        let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string().replace([':', '-'], "");
        let dir = root.join(format!("{stamp}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("failed to create {}", dir.display()))?;
        Ok(Workspace { checkout: checkout.to_path_buf(), dir })
    }

    /// This bisection's manifest, at the checkout's root, named after its folder.
    pub fn manifest_path(&self) -> PathBuf {
        let folder = self.dir.file_name().unwrap_or_default().to_string_lossy();
        self.checkout.join(format!("bisect-{folder}.workloads.json"))
    }

    fn tree(&self, adapter: &str) -> PathBuf {
        self.dir.join("trees").join(adapter)
    }

    /// `path` relative to the checkout (where the manifest's paths resolve).
    fn relative(&self, path: &Path) -> anyhow::Result<String> {
        Ok(path
            .strip_prefix(&self.checkout)
            .with_context(|| format!("{} is not inside the checkout {}", path.display(), self.checkout.display()))?
            .display()
            .to_string())
    }

    /// Exports `commit` of the loop's repository as the tree of `adapter`, replacing the last.
    fn export(&self, the_loop: &Loop, commit: &str, adapter: &str) -> anyhow::Result<()> {
        let tree = self.tree(adapter);
        if tree.exists() {
            std::fs::remove_dir_all(&tree)?;
        }
        std::fs::create_dir_all(&tree)?;
        let mut archive = Command::new("git")
            .arg("-C")
            .arg(&the_loop.repo)
            .args(["archive", "--format=tar", commit])
            .stdout(Stdio::piped())
            .spawn()
            .context("failed to run git archive")?;
        let unpacked = Command::new("tar")
            .arg("-x")
            .arg("-C")
            .arg(&tree)
            .stdin(archive.stdout.take().context("git archive gave no output")?)
            .status()
            .context("failed to run tar")?;
        ensure_input!(
            archive.wait()?.success() && unpacked.success(),
            "could not export {commit} to {}",
            tree.display()
        );
        Ok(())
    }

    /// Runs the loop's `--build` in `adapter`'s tree of `commit`, its output in `log`.
    fn build(&self, command: &str, commit: &str, adapter: &str, log: PathBuf) -> anyhow::Result<()> {
        let out = std::fs::File::create(&log).with_context(|| format!("failed to create {}", log.display()))?;
        let status = Command::new("sh")
            .args(["-c", command])
            .current_dir(self.tree(adapter))
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .status()
            .with_context(|| format!("failed to run sh -c {command:?}"))?;
        if !status.success() {
            return Err(BuildFailed { commit: commit.to_owned(), command: command.to_owned(), log }.into());
        }
        Ok(())
    }

    /// Exports `base` and `tested` of the loop's repository as the trees of [`BASE`] and
    /// [`TEST`], builds each with the loop's `--build` (its output in `step-<number>-build-
    /// <name>.log`; a tree that does not build is a [`BuildFailed`]), and declares each as its
    /// adapter: `<tree>/<worker> --as <name>` (under the pinned environment's Python unless the
    /// loop is native), its sources the tree (what was built included) and the kit.
    pub fn loop_adapters(
        &self,
        the_loop: &Loop,
        (base, tested): (&str, &str),
        number: usize,
    ) -> anyhow::Result<Map<String, Value>> {
        let mut adapters = Map::new();
        for (name, commit) in [(BASE, base), (TEST, tested)] {
            self.export(the_loop, commit, name)?;
            if let Some(command) = &the_loop.build {
                self.build(command, commit, name, self.dir.join(format!("step-{number}-build-{name}.log")))?;
            }
            ensure_input!(
                self.tree(name).join(&the_loop.worker).is_file(),
                "--worker {}: no such file in commit {commit} of {}{}",
                the_loop.worker.display(),
                the_loop.repo.display(),
                if the_loop.build.is_some() { " after --build" } else { "" }
            );
            let tree = self.relative(&self.tree(name))?;
            let program = format!("{tree}/{}", the_loop.worker.display());
            adapters.insert(
                name.to_owned(),
                json!({
                    "command": [program, "--as", name],
                    "interpreter": if the_loop.python { json!("python") } else { Value::Null },
                    "sources": [tree, "tools/kit/python"],
                }),
            );
        }
        Ok(adapters)
    }

    /// The checkout's manifest with `adapters` declared instead of its own.
    fn manifest(&self, adapters: &Map<String, Value>) -> anyhow::Result<Value> {
        let own = self.checkout.join("workloads.json");
        let text = std::fs::read_to_string(&own).with_context(|| format!("failed to read {}", own.display()))?;
        let mut manifest: Value = serde_json::from_str(&text).with_context(|| format!("{}", own.display()))?;
        let declared: Vec<String> =
            manifest["adapters"].as_object().map(|a| a.keys().cloned().collect()).unwrap_or_default();
        if let Some(pinned) = manifest["worker_sources"].as_object_mut() {
            for name in &declared {
                pinned.remove(name);
            }
        }
        manifest["adapters"] = Value::Object(adapters.clone());
        Ok(manifest)
    }

    /// Runs one step: [`TEST`] against [`BASE`] as `adapters` declares them, pinned, in one
    /// session.
    pub fn step(
        &self,
        adapters: &Map<String, Value>,
        settings: &StepSettings,
        number: usize,
    ) -> anyhow::Result<StepResult> {
        let manifest = self.manifest_path();
        std::fs::write(&manifest, serde_json::to_string_pretty(&self.manifest(adapters)?)? + "\n")?;
        let exe = std::env::current_exe()?;
        let log = self.dir.join(format!("step-{number}.log"));
        let pinned = Command::new(&exe)
            .args(["manifest", "pin", "--manifest"])
            .arg(&manifest)
            .current_dir(&self.checkout)
            .output()?;
        ensure_input!(
            pinned.status.success(),
            "manifest pin of {} failed: {}",
            manifest.display(),
            String::from_utf8_lossy(&pinned.stderr).trim()
        );
        let sessions = self.dir.join(format!("step-{number}"));
        let job = self.dir.join(format!("step-{number}.job.json"));
        let job_text = json!({
            "schema_version": 1,
            "manifest": manifest,
            "cells": [settings.cell],
            "adapters": [BASE, TEST],
            "reference": BASE,
            "output_root": sessions,
            "repetitions": 2,
            "order": "interleaved",
            "aa_pair": false,
        });
        std::fs::write(&job, serde_json::to_string_pretty(&job_text)?)?;
        let started = std::time::Instant::now();
        let status = Command::new(&exe)
            .arg("run")
            .arg("--job")
            .arg(&job)
            .args(["--until-decided", "--budget", &settings.budget, "--cpus", &settings.cpus])
            .args(["--decide-on", settings.quantity.as_str()])
            .current_dir(&self.checkout)
            .stdout(std::fs::File::create(&log)?)
            .stderr(std::fs::File::options().append(true).open(&log)?)
            .status()?;
        let wall_s = started.elapsed().as_secs_f64();
        let session_dir = std::fs::read_dir(&sessions)
            .ok()
            .and_then(|entries| {
                entries.filter_map(Result::ok).map(|e| e.path()).find(|p| p.join("session.json").is_file())
            })
            .with_context(|| {
                format!("step {number}: the session left no session.json ({status}); see {}", log.display())
            })?;
        let loaded = crate::session::load_session(&session_dir)?;
        ensure_input!(
            loaded.report.status == decode_baseline_wire::session::SessionStatus::Ok,
            "step {number}: the session ended {:?} (a worker failed or was refused): see {} and {}",
            loaded.report.status,
            log.display(),
            session_dir.join("session.json").display()
        );
        let rows = crate::compare::default_rows(&loaded.report);
        let row = rows
            .into_iter()
            .find(|r| r.cell == settings.cell && r.quantity == settings.quantity && r.numerator.label == TEST);
        let outcome = match row.as_ref().and_then(Row::verdict) {
            Some(Verdict::Faster | Verdict::Slower) => Outcome::Different,
            Some(Verdict::NoDifference) => Outcome::Same,
            Some(Verdict::Inconclusive) | None => Outcome::Unknown,
        };
        Ok(StepResult { outcome, row, session_dir, wall_s, unmeasured: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bisection_has_a_manifest_of_its_own_at_the_checkout_root() {
        let tmp = tempfile::tempdir().unwrap();
        let checkout = tmp.path();
        let one = Workspace { checkout: checkout.to_owned(), dir: checkout.join("out/bisect/20261206T001500Z-11") };
        let two = Workspace { checkout: checkout.to_owned(), dir: checkout.join("out/bisect/20261206T001500Z-12") };
        assert_ne!(one.manifest_path(), two.manifest_path());
        assert_eq!(one.manifest_path(), checkout.join("bisect-20261206T001500Z-11.workloads.json"));
        let ignored = std::fs::read_to_string(crate::checkout::built_in().join(".gitignore")).unwrap();
        assert!(ignored.lines().any(|l| l == "/bisect-*.workloads.json*"), "git ignores the bisection manifests");
    }
}
