//! Set-up: the pinned environment's bad-input messages, and the fixture generator's determinism.

use std::process::Command;

use crate::util::{repo_root, run, snapshot_tree, stderr, venv_python};

/// A copy of tools/env in a scratch repository layout, so edits never touch the real tree.
fn scratch_env() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let env_dir = dir.path().join("tools/env");
    std::fs::create_dir_all(&env_dir).unwrap();
    for name in [
        "provision.py",
        "requirements-linux.lock",
        "requirements-linux.lock.sha256",
        "requirements-macos.lock",
        "requirements-macos.lock.sha256",
    ] {
        std::fs::copy(repo_root().join("tools/env").join(name), env_dir.join(name)).unwrap();
    }
    dir
}

fn provision_in(scratch: &std::path::Path) -> Command {
    let mut cmd = Command::new("python3");
    cmd.arg(scratch.join("tools/env/provision.py"))
        .env("DECODE_BASELINE_VENV", scratch.join("venv"))
        .env_remove("MLX_DIR")
        .env_remove("DECODE_BASELINE_PYTHON");
    cmd
}

#[test]
fn edited_lock_is_refused_with_the_fix() {
    let scratch = scratch_env();
    let lock = scratch.path().join("tools/env/requirements-linux.lock");
    let mut text = std::fs::read_to_string(&lock).unwrap();
    text = text.replacen("numpy==", "numpy>=", 1);
    std::fs::write(&lock, text).unwrap();

    let out = run(&mut provision_in(scratch.path()));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let msg = stderr(&out);
    assert!(msg.contains("requirements-linux.lock was edited"), "{msg}");
    assert!(msg.contains("git checkout --"), "{msg}");
    assert!(!scratch.path().join("venv").exists(), "nothing may be installed");
}

#[test]
fn too_old_python_is_refused_with_the_fix() {
    let scratch = scratch_env();
    let fake = scratch.path().join("python3.8");
    std::fs::write(&fake, "#!/bin/sh\necho 3.8\n").unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();

    let out = run(provision_in(scratch.path()).env("DECODE_BASELINE_PYTHON", &fake));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let msg = stderr(&out);
    assert!(msg.contains("python 3.8"), "{msg}");
    assert!(msg.contains("too old: expected 3.11 or newer"), "{msg}");
    assert!(msg.contains("DECODE_BASELINE_PYTHON"), "{msg}");
}

#[test]
fn unusable_mlx_dir_is_refused_with_the_fix() {
    // The real environment, so that only MLX_DIR is wrong.
    venv_python();
    let bogus = tempfile::tempdir().unwrap();
    let out = run(Command::new("python3").arg(repo_root().join("tools/env/provision.py")).env("MLX_DIR", bogus.path()));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let msg = stderr(&out);
    assert!(msg.contains("MLX_DIR points at"), "{msg}");
    assert!(msg.contains("include/mlx/mlx.h"), "{msg}");
    assert!(msg.contains("unset MLX_DIR"), "{msg}");
}

#[test]
fn provisioning_is_a_no_op_when_current() {
    venv_python();
    let stamp = repo_root().join(".venv/decode-baseline-lock.sha256");
    let before = std::fs::metadata(&stamp).unwrap().modified().unwrap();
    let out = run(Command::new("python3").arg(repo_root().join("tools/env/provision.py")));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "a current environment is not reinstalled: {}", stderr(&out));
    assert_eq!(std::fs::metadata(&stamp).unwrap().modified().unwrap(), before);
}

#[test]
fn committed_fixtures_equal_what_the_generator_writes() {
    let python = venv_python();
    let out_dir = tempfile::tempdir().unwrap();
    let out = run(Command::new(&python)
        .arg(repo_root().join("tools/fixture/make_fixture.py"))
        .arg("--out")
        .arg(out_dir.path())
        .env("HF_HUB_OFFLINE", "1"));
    assert!(out.status.success(), "{}", stderr(&out));
    let generated = snapshot_tree(out_dir.path());
    let committed = snapshot_tree(&repo_root().join("fixtures"));
    let names = |tree: &[(std::path::PathBuf, Vec<u8>)]| tree.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
    assert_eq!(names(&generated), names(&committed), "same file set");
    for ((path, fresh), (_, kept)) in generated.iter().zip(&committed) {
        assert!(fresh == kept, "fixtures/{} differs from the generator's output", path.display());
    }
}
