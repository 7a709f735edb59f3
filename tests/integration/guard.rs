//! The manifest guard: tamper tests, each failing with its own error, on a throw-away copy of the
//! repository's pinned files and a fake environment; `manifest add-case` then `pin` on a freshly
//! generated fixture. The real tree is only ever read.
//!
//! Every tamper runs the same way: snapshot the tree it touches, tamper, assert the specific
//! error, restore, assert the tree is byte-identical to the snapshot and the guard passes again.

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use decode_baseline_pins::{self as pins, EnvironmentCheck, PinError, PinProblem};
use decode_baseline_wire::Sha256Digest;

use crate::util::{binary, repo_root, run, snapshot_tree, stderr, stdout, venv_python};

/// What is copied from the real repository: everything the manifest pins or its rules scan.
const COPIED: &[&str] =
    &["workloads.json", "workloads.json.sha256", "Cargo.toml", "Cargo.lock", "fixtures", "tools", "crates", "src"];

/// A copy of the repository's pinned files and a fake environment, pinned afresh (the real
/// manifest's worker-source pins may lag behind work in progress; the copy's never do).
struct Sandbox {
    _dir: tempfile::TempDir,
    root: PathBuf,
    repo: PathBuf,
    venv: PathBuf,
}

fn copy_tree(from: &Path, to: &Path) {
    let meta = fs::symlink_metadata(from).unwrap();
    if meta.is_dir() {
        fs::create_dir_all(to).unwrap();
        for entry in fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            if entry.file_name() != "target" {
                copy_tree(&entry.path(), &to.join(entry.file_name()));
            }
        }
    } else if meta.is_file() {
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(from, to).unwrap();
    }
}

/// Every file and symbolic link below `dir`, relative; links are listed, not followed.
fn entries_nofollow(dir: &Path, prefix: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        let rel = prefix.join(entry.file_name());
        if kind.is_dir() {
            entries_nofollow(&entry.path(), &rel, out);
        } else {
            out.push(rel);
        }
    }
}

/// The real environment's site-packages folder.
fn real_site_packages() -> PathBuf {
    let python = venv_python();
    let venv = python.parent().unwrap().parent().unwrap().to_owned();
    let lib = venv.join("lib");
    let pythons: Vec<_> = fs::read_dir(&lib)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("python3"))
        .collect();
    assert_eq!(pythons.len(), 1, "{pythons:?}");
    pythons[0].join("site-packages")
}

fn real_venv() -> PathBuf {
    real_site_packages().ancestors().nth(3).unwrap().to_owned()
}

impl Sandbox {
    /// A copy with a fake environment: the real installed mlx_lm (bytecode caches included),
    /// the mlx and mlx_lm dist-info, and a small stand-in for libmlx.
    fn new() -> Self {
        let sb = Self::copy_only();
        let real = real_site_packages();
        let site = sb.venv.join("lib/python3.11/site-packages");
        copy_tree(&real.join("mlx_lm"), &site.join("mlx_lm"));
        for entry in fs::read_dir(&real).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            if (name.starts_with("mlx-") || name.starts_with("mlx_lm-")) && name.ends_with(".dist-info") {
                fs::create_dir_all(site.join(&name)).unwrap();
                fs::copy(real.join(&name).join("METADATA"), site.join(&name).join("METADATA")).unwrap();
            }
        }
        fs::create_dir_all(site.join("mlx/lib")).unwrap();
        fs::write(site.join("mlx/lib/libmlx.so"), b"a stand-in for libmlx in the guard tests\n").unwrap();
        sb.pin();
        sb.assert_passes();
        sb
    }

    /// A copy with no environment of its own (callers point `venv` at one).
    fn copy_only() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_owned();
        let repo = root.join("repo");
        for item in COPIED {
            copy_tree(&repo_root().join(item), &repo.join(item));
        }
        Self { venv: root.join("venv"), _dir: dir, root, repo }
    }

    fn manifest(&self) -> PathBuf {
        self.repo.join("workloads.json")
    }

    fn cli(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(binary());
        cmd.args(args).current_dir(&self.repo).env("DECODE_BASELINE_VENV", &self.venv).env_remove("MLX_DIR");
        run(&mut cmd)
    }

    fn pin(&self) {
        let out = self.cli(&["manifest", "pin", "--manifest", self.manifest().to_str().unwrap()]);
        assert!(out.status.success(), "pin failed: {}", stderr(&out));
    }

    /// Writes a correct pin for the manifest as it is now (a hand re-pin, as a careless or
    /// malicious edit would), so that only the specific check can catch the edit.
    fn pin_by_hand(&self) {
        let bytes = fs::read(self.manifest()).unwrap();
        fs::write(pins::pin_path(&self.manifest()), pins::pin_text(&self.manifest(), &bytes)).unwrap();
    }

    fn failures(&self) -> Vec<PinError> {
        let check = EnvironmentCheck::Required { venv: self.venv.clone(), mlx_dir: None };
        pins::guard(&self.repo, &self.manifest(), &check).expect("the manifest parses").failures
    }

    fn assert_passes(&self) {
        let failures = self.failures();
        assert!(failures.is_empty(), "expected the guard to pass, got {failures:#?}");
    }

    /// Edits the manifest as JSON (re-serialized; the pin no longer matches).
    fn edit_manifest(&self, edit: impl FnOnce(&mut serde_json::Value)) {
        let mut value: serde_json::Value = serde_json::from_slice(&fs::read(self.manifest()).unwrap()).unwrap();
        edit(&mut value);
        fs::write(self.manifest(), serde_json::to_string_pretty(&value).unwrap()).unwrap();
    }

    /// Snapshot `tree`, tamper, check the failures, restore, and prove the restore.
    fn tamper(&self, tree: &Path, act: impl FnOnce(), check: impl FnOnce(&[PinError])) {
        let before = snapshot_tree(tree);
        act();
        let failures = self.failures();
        assert!(!failures.is_empty(), "the tamper went unnoticed");
        check(&failures);
        restore(tree, &before);
        assert!(snapshot_tree(tree) == before, "{} was not restored byte-identical", tree.display());
        self.assert_passes();
    }
}

/// Puts `tree` back to `snapshot`: removes files and links that were not there, rewrites every
/// file.
fn restore(tree: &Path, snapshot: &[(PathBuf, Vec<u8>)]) {
    let mut now = Vec::new();
    entries_nofollow(tree, Path::new(""), &mut now);
    for rel in now {
        if !snapshot.iter().any(|(r, _)| *r == rel) {
            fs::remove_file(tree.join(&rel)).unwrap();
        }
    }
    for (rel, bytes) in snapshot {
        fs::create_dir_all(tree.join(rel).parent().unwrap()).unwrap();
        fs::write(tree.join(rel), bytes).unwrap();
    }
}

fn flip_byte(path: &Path, at: usize) {
    let mut bytes = fs::read(path).unwrap();
    let at = at.min(bytes.len() - 1);
    bytes[at] ^= 0x01;
    fs::write(path, bytes).unwrap();
}

fn first_stock_source(repo: &Path) -> String {
    let (manifest, _) = pins::load_manifest(&repo.join("workloads.json")).unwrap();
    // A file of the stock worker's own folder: the kit's files are also pinned by the declared
    // example adapter, so a change there fails three sets (stock, stock-b, python-sync).
    manifest.worker_sources[&decode_baseline_wire::Adapter::Stock]
        .keys()
        .find(|path| path.starts_with("tools/stock/"))
        .expect("the stock worker has sources")
        .clone()
}

/// The stock worker's own files are pinned twice, as `stock` and as `stock-b` (the same worker
/// under a second name): the one failure of each, `stock`'s first.
fn stock_and_stock_b<'a>(failures: &'a [PinError], what: &str) -> &'a PinError {
    let fields: Vec<String> =
        failures.iter().map(|f| f.field.to_string().split('[').next().unwrap_or("").to_owned()).collect();
    assert_eq!(fields, ["worker_sources.stock", "worker_sources.stock-b"], "expected {what} twice, got {failures:#?}");
    assert_eq!(format!("{:?}", failures[0].problem), format!("{:?}", failures[1].problem), "{failures:#?}");
    &failures[0]
}

fn only<'a>(failures: &'a [PinError], what: &str) -> &'a PinError {
    assert_eq!(failures.len(), 1, "expected only {what}, got {failures:#?}");
    &failures[0]
}

// ---------------------------------------------------------------------------------------------

#[test]
fn guard_exit_codes() {
    let sb = Sandbox::new();
    let manifest = sb.manifest();
    let m = manifest.to_str().unwrap();

    let ok = sb.cli(&["guard", "--manifest", m]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert!(stdout(&ok).contains("guard: ok"), "{}", stdout(&ok));
    // The repository is found from the current folder too.
    let ok = sb.cli(&["guard"]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));

    let original = fs::read(&manifest).unwrap();
    fs::write(&manifest, b"{ not json").unwrap();
    let bad = sb.cli(&["guard", "--manifest", m]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    fs::write(&manifest, br#"{"schema_version": 99}"#).unwrap();
    let bad = sb.cli(&["guard", "--manifest", m]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("schema_version") && stderr(&bad).contains("expected 1, found 99"),
        "{}",
        stderr(&bad)
    );
    let missing = sb.cli(&["guard", "--manifest", sb.root.join("nowhere.json").to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(2));

    fs::write(&manifest, &original).unwrap();
    flip_byte(&sb.repo.join("fixtures/tiny-qwen3/config.json"), 10);
    let mismatch = sb.cli(&["guard", "--manifest", m]);
    assert_eq!(mismatch.status.code(), Some(6), "{}", stderr(&mismatch));
    assert!(stderr(&mismatch).contains(r#"cases["tiny-qwen3"].files["config.json"]"#), "{}", stderr(&mismatch));
    flip_byte(&sb.repo.join("fixtures/tiny-qwen3/config.json"), 10);

    // --no-environment skips the installed checks even when the named venv is broken.
    fs::write(sb.venv.join("lib/python3.11/site-packages/mlx/lib/libmlx.so"), b"other").unwrap();
    assert_eq!(sb.cli(&["guard", "--manifest", m]).status.code(), Some(6));
    let skipped = sb.cli(&["guard", "--manifest", m, "--no-environment"]);
    assert_eq!(skipped.status.code(), Some(0), "{}", stderr(&skipped));
}

#[test]
fn run_policy_value_changed() {
    let sb = Sandbox::new();
    sb.tamper(
        &sb.repo,
        || {
            sb.edit_manifest(|m| m["run_policy"]["warmup_requests"] = 4.into());
            sb.pin_by_hand();
        },
        |failures| match only(failures, "the policy error") {
            PinError { field, problem: PinProblem::PolicyNotFrozen { expected, actual } } => {
                assert_eq!(
                    (field.to_string().as_str(), expected.as_str(), actual.as_str()),
                    ("run_policy.warmup_requests", "2", "4")
                )
            }
            other => panic!("{other:?}"),
        },
    );
    sb.tamper(
        &sb.repo,
        || {
            sb.edit_manifest(|m| m["run_policy"]["watchdog_poll_ms"] = 0.into());
            sb.pin_by_hand();
        },
        |failures| {
            assert!(failures.iter().any(|f| matches!(f.problem, PinProblem::PolicyNotPositive { value: 0 })
                && f.field == "run_policy.watchdog_poll_ms"));
        },
    );
}

#[test]
fn worker_source_byte_changed() {
    let sb = Sandbox::new();
    let stock = first_stock_source(&sb.repo);
    sb.tamper(
        &sb.repo,
        || flip_byte(&sb.repo.join(&stock), 0),
        |failures| match stock_and_stock_b(failures, "the stock digest") {
            PinError { field, problem: PinProblem::Digest { path, expected, actual } } => {
                assert_eq!(*field, format!("worker_sources.stock[{stock:?}]"));
                assert_eq!(*path, sb.repo.join(&stock));
                assert_ne!(expected, actual);
            }
            other => panic!("{other:?}"),
        },
    );
    sb.tamper(
        &sb.repo,
        || flip_byte(&sb.repo.join("crates/wire/src/job.rs"), 100),
        |failures| {
            // `controlled-b` and `controlled-compiled` (the same build under other names) pin
            // the same file.
            assert!(
                failures.iter().all(|f| matches!(f, PinError { problem: PinProblem::Digest { .. }, .. })),
                "{failures:#?}"
            );
            assert_eq!(
                failures.iter().map(|f| f.field.to_string()).collect::<Vec<_>>(),
                [
                    r#"worker_sources.controlled["crates/wire/src/job.rs"]"#,
                    r#"worker_sources.controlled-b["crates/wire/src/job.rs"]"#,
                    r#"worker_sources.controlled-compiled["crates/wire/src/job.rs"]"#
                ]
            );
        },
    );
}

#[test]
fn worker_file_added() {
    let sb = Sandbox::new();
    sb.tamper(
        &sb.repo,
        || fs::write(sb.repo.join("tools/stock/extra_helper.py"), b"print('unpinned')\n").unwrap(),
        |failures| {
            assert!(matches!(stock_and_stock_b(failures, "an unpinned stock file"),
                PinError { field, problem: PinProblem::UnpinnedSource { path } } if field == "worker_sources.stock" && path.ends_with("tools/stock/extra_helper.py")));
        },
    );
    sb.tamper(
        &sb.repo,
        || fs::write(sb.repo.join("crates/controlled/src/sneaky.rs"), b"// unpinned\n").unwrap(),
        |failures| {
            // `controlled-b` and `controlled-compiled` (the same build under other names) cover
            // the same folder.
            let unpinned: Vec<String> = failures
                .iter()
                .filter_map(|f| match f {
                    PinError { field, problem: PinProblem::UnpinnedSource { path } }
                        if path.ends_with("crates/controlled/src/sneaky.rs") =>
                    {
                        Some(field.to_string())
                    }
                    _ => None,
                })
                .collect();
            assert_eq!(
                unpinned,
                ["worker_sources.controlled", "worker_sources.controlled-b", "worker_sources.controlled-compiled"],
                "{failures:#?}"
            );
            assert_eq!(failures.len(), 3, "{failures:#?}");
        },
    );
}

#[test]
fn worker_file_removed() {
    let sb = Sandbox::new();
    let stock = first_stock_source(&sb.repo);
    sb.tamper(
        &sb.repo,
        || fs::remove_file(sb.repo.join(&stock)).unwrap(),
        |failures| {
            assert!(matches!(stock_and_stock_b(failures, "a missing stock file"),
                PinError { field, problem: PinProblem::Missing { .. } } if *field == format!("worker_sources.stock[{stock:?}]")));
        },
    );
}

#[test]
fn stray_safetensors_beside_a_case() {
    let sb = Sandbox::new();
    let dir = sb.repo.join("fixtures/tiny-qwen3");
    sb.tamper(
        &sb.repo,
        || fs::copy(dir.join("model.safetensors"), dir.join("model-extra.safetensors")).map(drop).unwrap(),
        |failures| {
            let failure = only(failures, "the stray weights");
            assert!(matches!(failure,
                PinError { field, problem: PinProblem::StrayArtifact { path, .. } } if field == r#"cases["tiny-qwen3"].files"# && *path == dir.join("model-extra.safetensors")));
            assert!(failure.to_string().contains("mlx_lm would load these weights"), "{failure}");
        },
    );
    // A missing weights file is as much an error as a stray one.
    sb.tamper(
        &sb.repo,
        || fs::remove_file(dir.join("model.safetensors")).unwrap(),
        |failures| {
            assert!(matches!(only(failures, "the missing weights"),
                PinError { field, problem: PinProblem::Missing { .. } } if field == r#"cases["tiny-qwen3"].files["model.safetensors"]"#));
        },
    );
}

#[test]
fn artifact_byte_flipped() {
    let sb = Sandbox::new();
    let weights = sb.repo.join("fixtures/tiny-qwen3-q4/model.safetensors");
    let len = fs::metadata(&weights).unwrap().len() as usize;
    sb.tamper(
        &sb.repo,
        || flip_byte(&weights, len / 2),
        |failures| match only(failures, "the weights digest") {
            PinError { field, problem: PinProblem::Digest { path, expected, actual } } => {
                assert_eq!(field, r#"cases["tiny-qwen3-q4"].files["model.safetensors"]"#);
                assert_eq!(*path, weights);
                assert_ne!(expected, actual);
            }
            other => panic!("{other:?}"),
        },
    );
}

#[test]
fn prompt_id_changed() {
    let sb = Sandbox::new();
    // Unpinned: the pin catches it, and so does the prompt digest.
    sb.tamper(
        &sb.repo,
        || sb.edit_manifest(|m| m["prompts"]["tiny-qwen3-L16"]["ids"][3] = 7.into()),
        |failures| {
            assert_eq!(failures.len(), 2, "{failures:#?}");
            assert!(failures.iter().any(|f| matches!(f, PinError { problem: PinProblem::ManifestPin { .. }, .. })));
            assert!(failures.iter().any(
                |f| matches!(f, PinError { field, problem: PinProblem::TokenDigest { .. } } if field == r#"prompts["tiny-qwen3-L16"].sha256"#)
            ));
        },
    );
    // Re-pinned by hand: the prompt digest alone catches it.
    sb.tamper(
        &sb.repo,
        || {
            sb.edit_manifest(|m| m["prompts"]["tiny-qwen3-L512"]["continuation"][31] = 8.into());
            sb.pin_by_hand();
        },
        |failures| {
            assert!(matches!(only(failures, "the continuation digest"),
                PinError { field, problem: PinProblem::TokenDigest { .. } } if field == r#"prompts["tiny-qwen3-L512"].continuation_sha256"#));
        },
    );
}

#[test]
fn lock_file_edited() {
    let sb = Sandbox::new();
    let lock = sb.repo.join(decode_baseline_pins::installed::lock_path());
    sb.tamper(
        &sb.repo,
        || {
            let mut text = fs::read(&lock).unwrap();
            text.extend_from_slice(b"# an edit\n");
            fs::write(&lock, text).unwrap();
        },
        |failures| {
            assert!(matches!(only(failures, "the lock digest"),
                PinError { field, problem: PinProblem::Digest { path, .. } } if field == "environment.lock_sha256" && *path == lock));
        },
    );
}

#[test]
fn installed_mlx_lm_file_edited() {
    let sb = Sandbox::new();
    let mlx_lm = sb.venv.join("lib/python3.11/site-packages/mlx_lm");
    let site = sb.venv.join("lib/python3.11/site-packages");
    sb.tamper(
        &site,
        || {
            let mut text = fs::read(mlx_lm.join("generate.py")).unwrap();
            text.extend_from_slice(b"\n# patched\n");
            fs::write(mlx_lm.join("generate.py"), text).unwrap();
        },
        |failures| match only(failures, "the freeze") {
            PinError { field, problem: PinProblem::Freeze { path, files, expected, actual } } => {
                assert_eq!(field, "environment.mlx_lm_freeze_sha256");
                assert_eq!(*path, mlx_lm);
                assert!(*files > 100, "{files}");
                assert_ne!(expected, actual);
            }
            other => panic!("{other:?}"),
        },
    );
    // An added module is a change of the package too.
    sb.tamper(
        &site,
        || fs::write(mlx_lm.join("models/extra.py"), b"x = 1\n").unwrap(),
        |failures| assert!(matches!(only(failures, "the freeze"), PinError { problem: PinProblem::Freeze { .. }, .. })),
    );
    // Bytecode caches are not part of the freeze (they are rewritten by imports).
    let cache = fs::read_dir(mlx_lm.join("__pycache__")).ok().and_then(|mut d| d.next()).map(|e| e.unwrap().path());
    if let Some(cache) = cache {
        let before = fs::read(&cache).unwrap();
        flip_byte(&cache, 20);
        sb.assert_passes();
        fs::write(&cache, before).unwrap();
    }
    // A different libmlx and a different version are their own errors.
    sb.tamper(
        &site,
        || fs::write(site.join("mlx/lib/libmlx.so"), b"another build\n").unwrap(),
        |failures| {
            assert!(matches!(only(failures, "the libmlx digest"), PinError { field, problem: PinProblem::Digest { .. } } if field == "environment.libmlx_sha256"));
        },
    );
    let metadata = fs::read_dir(&site)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("mlx_lm-"))
        .unwrap()
        .join("METADATA");
    sb.tamper(
        &site,
        || {
            let text = fs::read_to_string(&metadata).unwrap();
            let edited: String = text
                .lines()
                .map(|l| if l.starts_with("Version:") { "Version: 9.9.9\n".to_owned() } else { format!("{l}\n") })
                .collect();
            fs::write(&metadata, edited).unwrap();
        },
        |failures| {
            assert!(matches!(only(failures, "the version"),
                PinError { field, problem: PinProblem::Version { actual, .. } } if field == "environment.mlx_lm_version" && actual == "9.9.9"));
        },
    );
}

#[test]
fn paths_escaping_the_repository() {
    let sb = Sandbox::new();
    fs::create_dir_all(sb.root.join("outside")).unwrap();
    fs::write(sb.root.join("outside/outside.py"), b"print('outside')\n").unwrap();
    let digest = Sha256Digest::of_bytes(b"print('outside')\n").to_string();
    // A worker source that climbs out.
    sb.tamper(
        &sb.repo,
        || {
            sb.edit_manifest(|m| m["worker_sources"]["stock"]["../outside/outside.py"] = digest.clone().into());
            sb.pin_by_hand();
        },
        |failures| {
            assert!(matches!(only(failures, "the escape"),
                PinError { field, problem: PinProblem::PathEscape { path, .. } } if field == r#"worker_sources.stock["../outside/outside.py"]"# && path == "../outside/outside.py"));
        },
    );
    // An absolute worker source.
    let absolute = sb.root.join("outside/outside.py").to_str().unwrap().to_owned();
    sb.tamper(
        &sb.repo,
        || {
            sb.edit_manifest(|m| m["worker_sources"]["controlled"][absolute.as_str()] = digest.clone().into());
            sb.pin_by_hand();
        },
        |failures| {
            assert!(
                matches!(only(failures, "the escape"), PinError { problem: PinProblem::PathEscape { reason, .. }, .. } if *reason == "is absolute")
            );
        },
    );
    // A worker source reached through a symbolic link that leaves the repository.
    sb.tamper(
        &sb.repo,
        || {
            std::os::unix::fs::symlink(sb.root.join("outside"), sb.repo.join("escape")).unwrap();
            sb.edit_manifest(|m| m["worker_sources"]["stock"]["escape/outside.py"] = digest.clone().into());
            sb.pin_by_hand();
        },
        |failures| {
            assert!(matches!(only(failures, "the escape"),
                PinError { field, problem: PinProblem::PathEscape { reason, .. } } if field == r#"worker_sources.stock["escape/outside.py"]"# && reason.contains("symbolic link")));
        },
    );
    // A relative case folder that climbs out of the repository.
    copy_tree(&sb.repo.join("fixtures/tiny-qwen3"), &sb.root.join("model"));
    sb.tamper(
        &sb.repo,
        || {
            sb.edit_manifest(|m| m["cases"]["tiny-qwen3"]["path"] = "../model".into());
            sb.pin_by_hand();
        },
        |failures| {
            assert!(matches!(only(failures, "the escape"),
                PinError { field, problem: PinProblem::PathEscape { path, .. } } if field == r#"cases["tiny-qwen3"].path"# && path == "../model"));
        },
    );
}

#[test]
fn manifest_edited_without_repinning() {
    let sb = Sandbox::new();
    sb.tamper(
        &sb.repo,
        || {
            let mut bytes = fs::read(sb.manifest()).unwrap();
            bytes.push(b'\n');
            fs::write(sb.manifest(), bytes).unwrap();
        },
        |failures| match only(failures, "the pin") {
            err @ PinError { problem: PinProblem::ManifestPin { path, expected, actual }, .. } => {
                assert_eq!(*path, sb.manifest());
                let pin = sb.repo.join("workloads.json.sha256");
                assert!(err.to_string().contains(&format!("does not match its pin {}:", pin.display())), "{err}");
                assert_ne!(expected, actual);
            }
            other => panic!("{other:?}"),
        },
    );
    sb.tamper(
        &sb.repo,
        || fs::remove_file(sb.repo.join("workloads.json.sha256")).unwrap(),
        |failures| {
            assert!(matches!(only(failures, "the missing pin"), PinError { problem: PinProblem::PinRead { .. }, .. }))
        },
    );
}

#[test]
fn add_case_on_a_fresh_fixture_then_pin_then_guard_passes() {
    let mut sb = Sandbox::copy_only();
    sb.venv = real_venv();
    sb.pin();
    sb.assert_passes();

    // A variant generated now, outside the repository: recorded by absolute path.
    let fresh = sb.root.join("models/fresh-tied");
    let out = run(Command::new(venv_python())
        .arg(repo_root().join("tools/fixture/make_fixture.py"))
        .args(["--variant", "tiny-qwen3-tied", "--out"])
        .arg(&fresh));
    assert!(out.status.success(), "make_fixture failed: {}", stderr(&out));

    // The fixture's made-up words are not English: the text source refuses, naming the fix.
    let args = ["manifest", "add-case", "--id", "fresh-tied", "--model-dir", fresh.to_str().unwrap()];
    let refused = sb.cli(&args);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("--prompt-source seeded"), "{}", stderr(&refused));

    let seeded: Vec<&str> = args.iter().copied().chain(["--prompt-source", "seeded"]).collect();
    let added = sb.cli(&seeded);
    assert!(added.status.success(), "add-case failed: {}", stderr(&added));
    // The controlled loop's own config reader is asked at add-case time.
    assert!(stdout(&added).contains("the controlled loop reads it (qwen3, 2 layers)"), "{}", stdout(&added));
    // Added but not pinned: only the pin fails.
    assert!(matches!(only(&sb.failures(), "the pin"), PinError { problem: PinProblem::ManifestPin { .. }, .. }));
    let again = sb.cli(&seeded);
    assert!(!again.status.success() && stderr(&again).contains("--replace"), "{}", stderr(&again));

    sb.pin();
    let ok = sb.cli(&["guard"]);
    assert_eq!(ok.status.code(), Some(0), "{}{}", stdout(&ok), stderr(&ok));
    sb.assert_passes();

    let (manifest, _) = pins::load_manifest(&sb.manifest()).unwrap();
    let case = &manifest.cases["fresh-tied"];
    assert_eq!(case.path, fresh.canonicalize().unwrap());
    assert_eq!(case.architecture, "qwen3");
    assert_eq!(case.dtype, "float32");
    assert_eq!(case.stop_ids, [511]);
    let names: Vec<_> = case.files.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
    );
    // The same tokenizer gives the same canonical prompts as the committed tied fixture, and
    // the regenerated weights are byte-identical to the committed ones.
    for length in ["L16", "L512"] {
        assert_eq!(
            manifest.prompts[&format!("fresh-tied-{length}")].ids,
            manifest.prompts[&format!("tiny-qwen3-tied-{length}")].ids
        );
    }
    assert_eq!(case.files, manifest.cases["tiny-qwen3-tied"].files);
    assert_eq!(manifest.cells.iter().filter(|c| c.case == "fresh-tied").count(), 6);

    // The external artifact is pinned like any other: a stray weights file is refused.
    fs::write(fresh.join("model-extra.safetensors"), b"x").unwrap();
    assert!(
        matches!(only(&sb.failures(), "the stray"), PinError { field, problem: PinProblem::StrayArtifact { .. } } if field == r#"cases["fresh-tied"].files"#)
    );
}

#[test]
fn committed_manifest_is_pinned_and_its_artifacts_and_prompts_match() {
    // Worker sources and the environment move with everyone's work and are the guard's job in
    // verify.sh; what only this manifest's author changes is checked here.
    let repo = repo_root();
    let path = repo.join("workloads.json");
    let (manifest, bytes) = pins::load_manifest(&path).unwrap();
    pins::verify_pin(&path, &bytes).unwrap();
    let mut failures = pins::check_structure(&manifest);
    failures.extend(pins::check_confinement(&repo, &repo.join("workloads.json"), &manifest));
    for (id, case) in &manifest.cases {
        failures.extend(pins::check_case(&repo, id, case));
    }
    assert!(failures.is_empty(), "{failures:#?}");
    for fixture in ["tiny-qwen3", "tiny-qwen3-tied", "tiny-qwen3-bf16", "tiny-qwen3-q4"] {
        assert!(manifest.cases.contains_key(fixture), "{fixture} is not a case");
        for length in [16, 512] {
            assert_eq!(manifest.prompts[&format!("{fixture}-L{length}")].ids.len(), length);
        }
    }
    assert_eq!(manifest.run_policy, decode_baseline_wire::RunPolicy::frozen());
}

#[test]
fn add_case_with_the_default_text_prompts_for_a_tokenizer_that_covers_the_text() {
    // What a user with a real model gets: prompts encoded from the fixed text. A real tokenizer
    // cannot be downloaded here, so the q4 fixture gets a word-level tokenizer whose vocabulary
    // is the text's words (ids below the fixture's special ids).
    let mut sb = Sandbox::copy_only();
    sb.venv = real_venv();
    sb.pin();
    let model = sb.root.join("models/worded-q4");
    copy_tree(&sb.repo.join("fixtures/tiny-qwen3-q4"), &model);
    let script = r#"
import json, sys
sys.path.insert(0, sys.argv[1])
from derive_case import TEXT
path = sys.argv[2] + "/tokenizer.json"
tok = json.load(open(path))
vocab = {w: i for i, w in enumerate(sorted(set(TEXT.split())))}
vocab.update({t["content"]: t["id"] for t in tok["added_tokens"]})
tok["model"]["vocab"] = vocab
json.dump(tok, open(path, "w"))
"#;
    let out = run(Command::new(venv_python()).args(["-c", script]).arg(sb.repo.join("tools/manifest")).arg(&model));
    assert!(out.status.success(), "{}", stderr(&out));

    let added = sb.cli(&["manifest", "add-case", "--id", "worded-q4", "--model-dir", model.to_str().unwrap()]);
    assert!(added.status.success(), "add-case failed: {}", stderr(&added));
    assert!(stdout(&added).contains("(text source)"), "{}", stdout(&added));
    assert!(stdout(&added).contains("the controlled loop reads it (qwen3, "), "{}", stdout(&added));
    sb.pin();
    sb.assert_passes();
    let (manifest, _) = pins::load_manifest(&sb.manifest()).unwrap();
    assert_eq!(manifest.cases["worded-q4"].dtype, "affine-q4-g64");
    let short = &manifest.prompts["worded-q4-L16"];
    let long = &manifest.prompts["worded-q4-L512"];
    assert_eq!((short.ids.len(), long.ids.len(), long.continuation.len()), (16, 512, 32));
    assert_eq!(short.ids[..], long.ids[..16], "the short prompt is a prefix of the long one");
    assert!(long.ids.iter().chain(&long.continuation).all(|id| *id < 509), "no special or stop id");
}
