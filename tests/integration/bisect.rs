//! `decode-baseline bisect`: bad input is refused before any session runs, naming the flag and
//! what was expected. (A whole bisection runs sessions of minutes each: it is measured, with
//! `tools/measure/bisect_demo.sh`, in `req/findings.md`; the halving itself is unit-tested in
//! `crates/launcher/src/bisect/plan.rs`.)

use std::path::Path;
use std::process::Command;

use crate::util;

fn git(repo: &Path, args: &[&str]) {
    let status = Command::new("git").arg("-C").arg(repo).args(args).status().unwrap();
    assert!(status.success(), "git {args:?}");
}

fn bisect(args: &[&dyn AsRef<std::ffi::OsStr>]) -> (i32, String) {
    let out = Command::new(util::binary()).arg("bisect").args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn bad_revisions_and_ranges_are_refused_before_any_session() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("loop");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    for (i, name) in ["first", "second"].iter().enumerate() {
        std::fs::write(repo.join("worker.py"), format!("# {i}\n")).unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", name]);
    }
    let outside = tmp.path().join("work");
    let common: [&dyn AsRef<std::ffi::OsStr>; 4] = [&"--loop", &repo, &"--worker", &"worker.py"];

    let (code, stderr) = bisect(&[&common[..], &[&"--good", &"no-such-rev", &"--bad", &"HEAD"]].concat());
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--good no-such-rev: not a commit of"), "{stderr}");

    let (code, stderr) = bisect(&[&common[..], &[&"--good", &"HEAD", &"--bad", &"HEAD~1"]].concat());
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--bad HEAD~1") && stderr.contains("not a descendant of --good"), "{stderr}");

    let (code, stderr) = bisect(&[&common[..], &[&"--good", &"HEAD~1"]].concat());
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("expected --bad REV"), "{stderr}");

    let (code, stderr) = bisect(&[&"--worker", &"worker.py", &"--good", &"HEAD~1", &"--bad", &"HEAD"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("expected --loop REPO, --worker PATH and --good REV"), "{stderr}");

    // The release form takes none of the loop's flags, and only pinned, provisioned
    // environments, named before anything runs.
    let (code, stderr) = bisect(&[&"--environments", &"default,mlx-0.31.2", &"--good", &"HEAD"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("'--environments <ENV,ENV,...>' cannot be used with '--good <GOOD>'"), "{stderr}");
    let (code, stderr) = bisect(&[&"--environments", &"default,mlx-9.9.9"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("environment \"mlx-9.9.9\" is not pinned") && stderr.contains("mlxenv add"), "{stderr}");

    let (code, stderr) =
        bisect(&[&common[..], &[&"--good", &"HEAD~1", &"--bad", &"HEAD", &"--out", &outside]].concat());
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("expected a folder inside the checkout"), "{stderr}");
    assert!(!outside.exists(), "nothing is made outside the checkout");
}

#[test]
fn a_tested_commit_that_does_not_build_is_skipped_and_a_good_one_must_build() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("loop");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    // The first commit builds (its build writes the worker), the second's build fails.
    for (name, build) in [("builds", "cp worker.src worker.py"), ("breaks", "echo broken >&2; exit 3")] {
        std::fs::write(repo.join("worker.src"), "# a worker\n").unwrap();
        std::fs::write(repo.join("build.sh"), format!("{build}\n")).unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", name]);
    }
    let out = util::repo_root().join("out/test-bisect-build");
    let common: [&dyn AsRef<std::ffi::OsStr>; 8] =
        [&"--loop", &repo, &"--worker", &"worker.py", &"--build", &"sh build.sh", &"--out", &out];

    // `bisect step` on the broken HEAD: unknown, 125 for `git bisect run`, before any session.
    let run = Command::new(util::binary())
        .args(["bisect", "step"])
        .args(common)
        .args(["--good", "HEAD~1"])
        .current_dir(util::repo_root())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(125), "{stdout}{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("unknown (does not build: `sh build.sh` failed; 0 s;"), "{stdout}");
    let log = stdout.trim_end().rsplit("; ").next().unwrap().trim_end_matches(')');
    assert_eq!(std::fs::read_to_string(log).unwrap(), "broken\n", "the step names its build's output");

    // The known good commit must build: bad input, naming it.
    let (code, stderr) =
        bisect(&[&[&"step" as &dyn AsRef<std::ffi::OsStr>][..], &common[..], &[&"--good", &"HEAD"]].concat());
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--good: commit") && stderr.contains("does not build"), "{stderr}");
    std::fs::remove_dir_all(&out).unwrap();
}
