//! The executable as the wheel installs it (`req/install.md`), laid out without maturin or the
//! network: a virtual environment of its own whose site-packages links the pinned environment's
//! packages, the program files written by `tools/wheel/build.py --package-only`, and this build
//! as `<env>/bin/decode-baseline`. From a folder outside the repository it makes a workspace,
//! names one libmlx for both workers, runs a session there that records the wheel's code
//! version, and refuses an environment with another `mlx` than it was built against.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use crate::util;

/// An installed environment in `tmp/env`; returns it and its site-packages.
fn installed_env(tmp: &Path) -> (PathBuf, PathBuf) {
    let env = tmp.join("env");
    let made = util::run(Command::new(util::venv_python()).args(["-m", "venv", "--without-pip"]).arg(&env));
    assert!(made.status.success(), "venv: {}", util::stderr(&made));
    let lib = env.join("lib");
    let python_dir = std::fs::read_dir(&lib).unwrap().map(|e| e.unwrap().path()).next().unwrap();
    let site = python_dir.join("site-packages");
    let pinned =
        util::venv_python().parent().unwrap().parent().unwrap().join("lib").join(python_dir.file_name().unwrap());
    for entry in std::fs::read_dir(pinned.join("site-packages")).unwrap() {
        let entry = entry.unwrap();
        let link = site.join(entry.file_name());
        if !link.exists() {
            std::os::unix::fs::symlink(entry.path(), link).unwrap();
        }
    }
    let staged = util::run(
        Command::new("python3").arg(util::repo_root().join("tools/wheel/build.py")).arg("--package-only").arg(&site),
    );
    assert!(staged.status.success(), "build.py --package-only: {}{}", util::stdout(&staged), util::stderr(&staged));
    std::fs::copy(util::binary(), env.join("bin/decode-baseline")).unwrap();
    (env, site)
}

/// The installed executable with `args`, from `cwd`, hermetic (its own lease and profiles, no
/// checkout or environment named by the caller's environment).
fn installed(env: &Path, cwd: &Path, args: &[&str]) -> Output {
    util::run(
        Command::new(env.join("bin/decode-baseline"))
            .args(args)
            .current_dir(cwd)
            .env("DECODE_BASELINE_LEASE", cwd.join("lease"))
            .env("DECODE_BASELINE_PROFILE_DIR", cwd.join("profiles"))
            .env("HF_HUB_OFFLINE", "1")
            .env_remove("DECODE_BASELINE_REPO")
            .env_remove("DECODE_BASELINE_VENV")
            .env_remove("DECODE_BASELINE_KIT")
            .env_remove("DECODE_BASELINE_WORKER_STOCK")
            .env_remove("DECODE_BASELINE_WORKER_CONTROLLED")
            .stdin(std::process::Stdio::null()),
    )
}

fn shown(out: &Output) -> String {
    format!("{}{}", util::stdout(out), util::stderr(out))
}

#[test]
fn the_installed_executable_works_in_a_workspace_outside_the_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let (env, site) = installed_env(tmp.path());
    let program = site.join("decode_baseline");
    let user = tmp.path().join("user");
    std::fs::create_dir_all(&user).unwrap();

    let init = installed(&env, &user, &["init", "ws"]);
    assert!(init.status.success(), "init: {}", shown(&init));
    assert!(
        util::stdout(&init).contains(&program.display().to_string()),
        "init names the program files: {}",
        shown(&init)
    );
    let ws = user.join("ws");
    let before = util::snapshot_tree(&ws);
    let again = installed(&env, &user, &["init", "ws"]);
    assert_eq!(again.status.code(), Some(2), "a second init: {}", shown(&again));
    assert!(util::stderr(&again).contains("overwrites nothing"), "{}", shown(&again));
    assert!(util::snapshot_tree(&ws) == before, "a refused init changed the workspace");
    let guard = installed(&env, &ws, &["guard"]);
    assert!(guard.status.success(), "guard in the workspace: {}", shown(&guard));

    // One libmlx for both workers: the one in the installing environment.
    let facts = installed(&env, &user, &["env"]);
    assert!(facts.status.success(), "env: {}", shown(&facts));
    let facts: serde_json::Value = serde_json::from_slice(&facts.stdout).unwrap();
    assert_eq!(facts["one_libmlx"], true, "{facts}");
    assert_eq!(facts["stock"]["python"], env.join("bin/python").display().to_string(), "{facts}");

    // A session of the workspace's own: its manifest, its output root, the wheel's code version.
    let job = ws.join("jobs/one.json");
    let body = serde_json::json!({
        "schema_version": 1, "manifest": null, "cells": ["tiny-qwen3.tiny-qwen3-L16.headline"],
        "adapters": ["controlled", "stock"], "output_root": "../out", "repetitions": 1,
        "order": "interleaved", "aa_pair": false
    });
    std::fs::write(&job, body.to_string()).unwrap();
    let run = installed(&env, &user, &["run", "--job", "ws/jobs/one.json"]);
    assert!(run.status.success(), "run: {}", shown(&run));
    let session = util::only_session(&ws.join("out"));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(session.join("session.json")).unwrap()).unwrap();
    let marker: serde_json::Value =
        serde_json::from_slice(&std::fs::read(program.join("installed.json")).unwrap()).unwrap();
    let wheel_version = marker["code_version"].as_str().unwrap();
    assert!(wheel_version.ends_with("+wheel-0.1.0"), "{wheel_version}");
    let workers = report["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 2);
    for worker in workers {
        assert_eq!(worker["report"]["identity"]["code_version"], wheel_version, "{worker}");
    }
    assert_eq!(report["manifest_path"].as_str(), Some(ws.join("workloads.json").to_str().unwrap()));

    // An environment with another mlx than the wheel was built against: refused before
    // anything runs, with the fix.
    let mut edited = marker.clone();
    edited["mlx_version"] = "0.0.1".into();
    std::fs::write(program.join("installed.json"), edited.to_string()).unwrap();
    let refused = installed(&env, &user, &["run", "--job", "ws/jobs/one.json"]);
    assert_eq!(refused.status.code(), Some(2), "{}", shown(&refused));
    let message = util::stderr(&refused);
    for part in ["built against mlx 0.0.1", "has mlx 0.32", "pip install 'mlx[cpu]==0.0.1'"] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    assert_eq!(util::only_session(&ws.join("out")), session, "nothing new in the output root");
}
