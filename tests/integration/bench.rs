//! `decode-baseline bench`: end to end on the tiny fixture folder, on a repo id found in a
//! Hugging Face cache laid out under a temporary `HF_HOME`, and on an architecture the controlled
//! loop does not implement; the report page parsed and checked against the session it shows.

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use decode_baseline_wire::Sha256Digest;
use serde_json::Value;

use crate::util::{self, binary, repo_root, run, stderr, stdout, venv_python};

fn digest(path: &Path) -> Sha256Digest {
    decode_baseline_pins::file_digest::of_file(path).unwrap()
}

/// Two runs a side of four requests each (one warm-up, three measured): the fewest that still
/// give a verdict its run-to-run error, for tests of what `bench` lays out rather than of what
/// it measures (the frozen policy's 3 × 11 requests took most of these tests' minute).
const SHORT: [&str; 6] = ["-r", "2", "--warmup-requests", "1", "--measured-requests", "3"];

/// `bench ARGS` with its own lease and output root below `scratch`.
fn bench(scratch: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(binary());
    cmd.arg("bench")
        .args(args)
        .arg("--output-root")
        .arg(scratch.join("out"))
        .env("DECODE_BASELINE_LEASE", scratch.join("lease"))
        .env_remove("HF_HUB_CACHE")
        .current_dir(scratch);
    for (key, value) in env {
        cmd.env(key, value);
    }
    run(&mut cmd)
}

/// The one session folder below `<scratch>/out`.
fn session_dir(scratch: &Path) -> PathBuf {
    util::only_session(&scratch.join("out"))
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

/// The session folder holds its own pinned manifest, the session names it, and the
/// repository's manifest is as it was.
fn assert_session_with_own_manifest(dir: &Path, repo_digest_before: Sha256Digest) -> (Value, Value) {
    let manifest_path = dir.join("workloads.json");
    let pin = std::fs::read_to_string(dir.join("workloads.json.sha256")).unwrap();
    assert_eq!(pin, format!("{}  workloads.json\n", digest(&manifest_path)));
    let session = read_json(&dir.join("session.json"));
    assert_eq!(session["status"], "ok", "{:#}", session["problems"]);
    assert_eq!(Path::new(session["manifest_path"].as_str().unwrap()), manifest_path.canonicalize().unwrap());
    assert_eq!(session["manifest_sha256"], digest(&manifest_path).to_string());
    assert!(dir.join("index.html").is_file());
    assert_eq!(
        digest(&repo_root().join("workloads.json")),
        repo_digest_before,
        "the repository's manifest was touched"
    );
    (session, read_json(&manifest_path))
}

/// Parses `index.html` strictly and checks that every figure of the session folder is inline in
/// it, byte for byte, and every (cell, adapter) of the analysis and every ratio has its row.
fn assert_page_shows_session(dir: &Path, session: &Value) {
    let page = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let doc = roxmltree::Document::parse_with_options(
        &page,
        roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() },
    )
    .unwrap_or_else(|e| panic!("index.html does not parse: {e}"));
    let figures: BTreeSet<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("figure"))
        .map(|n| {
            assert!(n.children().any(|c| c.tag_name().name() == "svg"), "figure without an inline svg");
            n.attribute("data-figure").unwrap().to_owned()
        })
        .collect();
    let files: BTreeSet<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|name| name.strip_suffix(".svg").map(str::to_owned))
        .collect();
    assert!(!files.is_empty());
    assert_eq!(figures, files, "every figure of the session is on the page, and nothing else");
    for name in &files {
        let svg = std::fs::read_to_string(dir.join(format!("{name}.svg"))).unwrap();
        let body = svg.split_once('\n').unwrap().1;
        assert!(page.contains(body), "{name}.svg is not inline as written");
    }
    // One file that fetches nothing: no script, image, stylesheet link or any src/href.
    assert!(!doc.descendants().any(|n| ["script", "img", "link", "iframe"].iter().any(|t| n.has_tag_name(*t))));
    assert!(!doc.descendants().any(|n| n.attributes().any(|a| a.name() == "src" || a.name() == "href")));

    let rows: BTreeSet<(String, String)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("tr") && n.attribute("data-adapter").is_some())
        .map(|n| (n.attribute("data-cell").unwrap().to_owned(), n.attribute("data-adapter").unwrap().to_owned()))
        .collect();
    let mut expected = BTreeSet::new();
    let mut ratios = BTreeSet::new();
    for cell in session["analysis"]["cells"].as_array().unwrap() {
        let name = cell["cell"].as_str().unwrap().to_owned();
        for adapter in cell["adapters"].as_object().unwrap().keys() {
            expected.insert((name.clone(), adapter.clone()));
        }
        if !cell["ratios"].as_object().unwrap().is_empty() {
            ratios.insert(name);
        }
    }
    assert!(!expected.is_empty());
    assert_eq!(rows, expected, "one summary row per cell and adapter");
    let ratio_rows: BTreeSet<String> = doc
        .descendants()
        .filter(|n| {
            n.has_tag_name("tr")
                && n.attribute("data-cell").is_some()
                && n.attribute("data-adapter").is_none()
                && n.ancestors().any(|a| a.attribute("id") == Some("ratio-table"))
        })
        .map(|n| n.attribute("data-cell").unwrap().to_owned())
        .collect();
    assert_eq!(ratio_rows, ratios, "one ratio row per cell with a ratio");
    // Each case and prompt with a headline and a fixed-continuation cell is taken apart.
    let parts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("tr") && n.ancestors().any(|a| a.attribute("id") == Some("decomposition-table")))
        .filter_map(|n| n.attribute("data-cell"))
        .collect();
    let cells: Vec<&str> =
        session["analysis"]["cells"].as_array().unwrap().iter().map(|c| c["cell"].as_str().unwrap()).collect();
    let taken_apart: Vec<&str> = cells
        .iter()
        .filter_map(|c| c.strip_suffix(".headline"))
        .filter(|stem| cells.contains(&format!("{stem}.fixed_continuation").as_str()))
        .collect();
    assert_eq!(parts, taken_apart, "one decomposition row per case and prompt with both modes (one adapter pair)");
    let sections: &[&str] = if taken_apart.is_empty() { &[] } else { &["decomposition"] };
    for section in ["summary", "warnings", "agreement", "memory", "identity", "figures"].iter().chain(sections) {
        assert!(doc.descendants().any(|n| n.attribute("id") == Some(section)), "no {section} section");
    }
    assert!(page.contains("derived from the median"));
}

#[test]
fn bench_on_a_fixture_folder_runs_a_session_on_its_own_manifest_and_writes_the_page() {
    venv_python();
    let scratch = tempfile::tempdir().unwrap();
    let before = digest(&repo_root().join("workloads.json"));
    let model = repo_root().join("fixtures/tiny-qwen3");
    let out = bench(
        scratch.path(),
        &[&[model.to_str().unwrap(), "-p", "16", "-d", "64", "-m", "headline,fixed_continuation"][..], &SHORT].concat(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("tokens/s"), "{text}");
    assert!(text.contains("argmax controlled/stock: 0 of 32 steps differ"), "{text}");
    let dir = session_dir(scratch.path());
    let (session, manifest) = assert_session_with_own_manifest(&dir, before);
    assert_eq!(
        manifest["cases"]["tiny-qwen3"]["path"], "fixtures/tiny-qwen3",
        "inside the repository: relative, as add-case"
    );
    let cells: Vec<String> = session["analysis"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cell"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        cells,
        [
            "tiny-qwen3.tiny-qwen3-L16.headline",
            "tiny-qwen3.tiny-qwen3-L16.fixed_continuation",
            "tiny-qwen3.tiny-qwen3-L64.headline"
        ]
    );
    assert!(dir.join("tiny-qwen3.context.svg").is_file(), "two context lengths give the context figure");
    assert_page_shows_session(&dir, &session);

    // `report` writes the same page again from session.json.
    let page = std::fs::read(dir.join("index.html")).unwrap();
    std::fs::remove_file(dir.join("index.html")).unwrap();
    let again = run(Command::new(binary()).arg("report").arg(&dir));
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(std::fs::read(dir.join("index.html")).unwrap(), page);
}

/// A `huggingface_hub` cache with one repo: blobs by digest, a snapshot of links into them,
/// `refs/main` naming the snapshot's commit.
fn hub_cache(hub: &Path, repo: &str, commit: &str, model: &Path) -> PathBuf {
    let root = hub.join(format!("models--{}", repo.replace('/', "--")));
    let snapshot = root.join("snapshots").join(commit);
    std::fs::create_dir_all(root.join("blobs")).unwrap();
    std::fs::create_dir_all(root.join("refs")).unwrap();
    std::fs::create_dir_all(&snapshot).unwrap();
    for entry in std::fs::read_dir(model).unwrap() {
        let path = entry.unwrap().path();
        let blob = digest(&path).to_string();
        std::fs::copy(&path, root.join("blobs").join(&blob)).unwrap();
        std::os::unix::fs::symlink(format!("../../blobs/{blob}"), snapshot.join(path.file_name().unwrap())).unwrap();
    }
    std::fs::write(root.join("refs/main"), commit).unwrap();
    snapshot
}

#[test]
fn bench_on_a_repo_id_resolves_it_from_the_hf_cache_and_pins_the_snapshot() {
    venv_python();
    let scratch = tempfile::tempdir().unwrap();
    let hf_home = scratch.path().join("hf-home");
    let commit = "3c1d5e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d";
    let snapshot =
        hub_cache(&hf_home.join("hub"), "test-org/tiny-qwen3", commit, &repo_root().join("fixtures/tiny-qwen3"));
    let before = digest(&repo_root().join("workloads.json"));

    let missing = bench(scratch.path(), &["test-org/absent"], &[("HF_HOME", &hf_home)]);
    assert_eq!(missing.status.code(), Some(2), "{}", stderr(&missing));
    let err = stderr(&missing);
    assert!(err.contains("not in the Hugging Face cache"), "{err}");
    assert!(err.contains(&format!("HF_HUB_CACHE={}", hf_home.join("hub").display())), "{err}");
    assert!(err.contains("_download('test-org/absent', revision='main')"), "{err}");
    assert!(!scratch.path().join("out").exists(), "nothing is created for a model that is not there");

    let out = bench(
        scratch.path(),
        &[&["test-org/tiny-qwen3", "-p", "16", "-m", "headline"][..], &SHORT].concat(),
        &[("HF_HOME", &hf_home)],
    );
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("tokens/s"));
    let dir = session_dir(scratch.path());
    let (session, manifest) = assert_session_with_own_manifest(&dir, before);
    let case = &manifest["cases"]["test-org--tiny-qwen3"];
    assert_eq!(
        Path::new(case["path"].as_str().unwrap()),
        snapshot.canonicalize().unwrap(),
        "the snapshot of the commit"
    );
    assert_eq!(
        case["files"]["model.safetensors"],
        digest(&repo_root().join("fixtures/tiny-qwen3/model.safetensors")).to_string()
    );
    let record = read_json(&dir.join("bench.json"));
    assert_eq!(record["source"]["kind"], "hub");
    assert_eq!(record["source"]["commit"], commit);
    assert_eq!(record["source"]["repo_id"], "test-org/tiny-qwen3");
    assert!(std::fs::read_to_string(dir.join("index.html")).unwrap().contains(commit));
    assert_page_shows_session(&dir, &session);
}

#[test]
fn bench_on_an_architecture_the_controlled_loop_lacks_runs_stock_only_with_the_reason() {
    let python = venv_python();
    let scratch = tempfile::tempdir().unwrap();
    let model = scratch.path().join("tiny-gpt2");
    let made = run(Command::new(&python).arg(repo_root().join("tests/data/make_gpt2_tiny.py")).arg(&model));
    assert!(made.status.success(), "{}", stderr(&made));
    let before = digest(&repo_root().join("workloads.json"));
    let out =
        bench(scratch.path(), &[&[model.to_str().unwrap(), "-p", "16", "-m", "headline"][..], &SHORT].concat(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    let note = text
        .lines()
        .find(|l| l.starts_with("note: stock only"))
        .unwrap_or_else(|| panic!("no stock-only note: {text}"));
    assert!(note.contains("gpt2"), "{note}");
    let dir = session_dir(scratch.path());
    let (session, _) = assert_session_with_own_manifest(&dir, before);
    assert_eq!(session["job"]["adapters"], serde_json::json!(["stock"]));
    assert!(session["workers"].as_array().unwrap().iter().all(|w| w["adapter"] == "stock"));
    let page = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(
        page.contains("stock only: the controlled loop does not implement this model"),
        "the reason is on the page"
    );
    assert_page_shows_session(&dir, &session);
}

/// `--ranks 2`: the fixture as one process, then as two ranks, each its own session; the table
/// of what the second rank buys on stdout and on the group session's page.
#[test]
fn bench_with_ranks_sets_one_process_beside_the_group_on_stdout_and_the_page() {
    venv_python();
    let scratch = tempfile::tempdir().unwrap();
    let model = repo_root().join("fixtures/tiny-qwen3");
    let args = [model.to_str().unwrap(), "-p", "16", "-m", "fixed_continuation", "--ranks", "2"];
    let out = bench(scratch.path(), &[&args[..], &SHORT].concat(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("by ranks (1 process against 2 ranks over ring):"), "{text}");
    for adapter in ["controlled ", "stock "] {
        let line =
            text.lines().find(|l| l.contains(".fixed_continuation ") && l.contains(adapter) && l.contains("per token"));
        assert!(line.is_some_and(|l| l.contains("(2 ranks / 1: ")), "{adapter}: {text}");
    }
    // The session folders (the output root also holds the history, history.sqlite).
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(scratch.path().join("out"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let [one, group] = &dirs[..] else { panic!("two sessions: {dirs:?}") };
    let (one, group_session) = (read_json(&one.join("session.json")), read_json(&group.join("session.json")));
    assert!(one["job"]["group"].is_null());
    assert_eq!(group_session["job"]["group"]["ranks"], 2);
    for worker in group_session["workers"].as_array().unwrap() {
        assert_eq!(worker["ranks"].as_array().unwrap().len(), 1, "{worker}");
        assert_eq!(worker["report"]["group"]["rank"], 0);
    }
    let table = std::fs::read_to_string(group.join("by-ranks.txt")).unwrap();
    assert!(text.contains(table.trim()), "the file is the table printed");
    let page = std::fs::read_to_string(group.join("index.html")).unwrap();
    assert!(page.contains("<section id=\"ranks\">") && page.contains("2 ranks / 1: "), "the page shows it");
    assert!(page.contains("2 ranks per worker over ring"), "the page names the group");
}
