//! A copied checkout serves itself (`crates/launcher/src/launcher/checkout.rs`): the copy's own executable reads
//! the copy's manifest, runs the copy's workers on the copy's `.venv` (its `$ORIGIN`-relative
//! rpath), and the original's executable, started in the copy, refuses, naming both checkouts.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use crate::util;

/// A copy of the repository as a user makes one: every file git would commit (tracked and
/// untracked-but-not-ignored, as they are now), committed in a git repository of its own, the
/// `.venv` (hard links: the same files, cheaply) and the built executable in its `target/`.
fn copied_checkout(root: &Path) -> PathBuf {
    let _ = util::venv_python();
    let repo = util::repo_root();
    let copy = root.join("copy");
    let listed =
        util::run(Command::new("git").args(["ls-files", "-co", "--exclude-standard", "-z"]).current_dir(&repo));
    assert!(listed.status.success(), "git ls-files: {}", util::stderr(&listed));
    for file in listed.stdout.split(|b| *b == 0).filter(|f| !f.is_empty()) {
        let rel = Path::new(std::str::from_utf8(file).unwrap());
        if !repo.join(rel).is_file() {
            continue; // deleted in the working tree, not yet in the index
        }
        std::fs::create_dir_all(copy.join(rel).parent().unwrap()).unwrap();
        std::fs::copy(repo.join(rel), copy.join(rel)).unwrap();
    }
    let git = |args: &[&str]| {
        let out = util::run(
            Command::new("git")
                .args(["-c", "user.name=copy", "-c", "user.email=copy@localhost", "-c", "commit.gpgsign=false"])
                .args(args)
                .current_dir(&copy),
        );
        assert!(out.status.success(), "git {args:?}: {}", util::stderr(&out));
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "copy"]);
    let venv = util::run(Command::new("cp").arg("-al").arg(repo.join(".venv")).arg(copy.join(".venv")));
    assert!(venv.status.success(), "cp -al .venv: {}", util::stderr(&venv));
    std::fs::create_dir_all(copy.join("target/release")).unwrap();
    std::fs::copy(util::binary(), copy.join("target/release/decode-baseline")).unwrap();
    copy
}

fn in_copy(exe: &Path, copy: &Path, args: &[&str]) -> Output {
    util::run(
        Command::new(exe)
            .args(args)
            .current_dir(copy)
            .env("DECODE_BASELINE_LEASE", copy.with_file_name("lease"))
            .env("HF_HUB_OFFLINE", "1")
            .env_remove("DECODE_BASELINE_REPO")
            .env_remove("DECODE_BASELINE_KIT")
            .env_remove("DECODE_BASELINE_VENV")
            .env_remove("DECODE_BASELINE_WORKER_STOCK")
            .env_remove("DECODE_BASELINE_WORKER_CONTROLLED"),
    )
}

#[test]
fn a_copied_checkout_serves_itself_and_another_build_refuses_it() {
    let tmp = tempfile::tempdir().unwrap();
    let copy = copied_checkout(tmp.path());
    let own = copy.join("target/release/decode-baseline");
    let original = util::repo_root();

    let guard = in_copy(&own, &copy, &["guard"]);
    assert!(guard.status.success(), "guard in the copy: {}{}", util::stdout(&guard), util::stderr(&guard));

    // The copy's executable loads the copy's libmlx, through its $ORIGIN-relative rpath.
    let env = in_copy(&own, &copy, &["env"]);
    assert!(env.status.success(), "env: {}", util::stderr(&env));
    let facts: serde_json::Value = serde_json::from_slice(&env.stdout).unwrap();
    let libmlx = PathBuf::from(facts["libmlx_path"].as_str().unwrap());
    assert!(libmlx.starts_with(copy.canonicalize().unwrap()), "libmlx {} is not the copy's", libmlx.display());
    assert_eq!(facts["stock"]["libmlx_path"], facts["libmlx_path"], "the stock worker's Python maps another libmlx");
    assert_eq!(facts["one_libmlx"], true);

    let dry = in_copy(&own, &copy, &["run", "--job", "jobs/smoke.json", "--dry-run"]);
    let printed = format!("{}{}", util::stdout(&dry), util::stderr(&dry));
    assert!(dry.status.success(), "run --dry-run in the copy: {printed}");
    assert!(printed.contains(copy.to_str().unwrap()), "the dry run names the copy: {printed}");
    assert!(!printed.contains(&format!("{}/", original.display())), "the dry run names the original: {printed}");

    for adapter in ["python-sync", "controlled"] {
        let run = in_copy(&own, &copy, &["conformance", "--adapter", adapter, "--scenario", "headline_on_the_fixture"]);
        assert!(
            run.status.success(),
            "conformance --adapter {adapter} in the copy: {}{}",
            util::stdout(&run),
            util::stderr(&run)
        );
    }

    // The original's executable in the copy: refused before anything runs, naming both.
    for args in [&["run", "--job", "jobs/smoke.json", "--dry-run"][..], &["conformance", "--adapter", "stock"][..]] {
        let refused = in_copy(&util::binary(), &copy, args);
        let message = util::stderr(&refused);
        assert_eq!(refused.status.code(), Some(2), "{args:?}: {message}");
        assert!(message.contains(&original.display().to_string()) && message.contains(&copy.display().to_string()));
        assert!(message.contains("--repo"), "{message}");
    }
    // Named explicitly, the original's executable serves the copy.
    let named = in_copy(
        &util::binary(),
        &copy,
        &["--repo", copy.to_str().unwrap(), "run", "--job", "jobs/smoke.json", "--dry-run"],
    );
    assert!(named.status.success(), "--repo: {}", util::stderr(&named));
}
