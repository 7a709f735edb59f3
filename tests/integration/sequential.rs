//! `run --until-decided` with the real workers: the decision is recorded in `session.json`
//! (`sequential`), agrees with the launcher's `until-decided:` lines, and each look uses the
//! host's noise profile when the profile holds the cell's design.

use std::path::Path;

use decode_baseline_wire::hooks::{SLOWDOWN_ADAPTER_ENV, SLOWDOWN_ENV};
use serde_json::{json, Value};

use crate::util;

const CELL: &str = "tiny-qwen3.tiny-qwen3-L16.headline";

/// The yardstick (`controlled-b` against `controlled`, interleaved, one repetition) in `root`,
/// its sessions in `root/out/<name>`.
fn yardstick_job(root: &Path, name: &str) {
    let job = json!({
        "schema_version": 1, "manifest": util::repo_root().join("workloads.json"), "cells": [CELL],
        "adapters": ["controlled", "controlled-b"], "reference": "controlled",
        "output_root": root.join("out").join(name), "repetitions": 1, "order": "interleaved", "aa_pair": false
    });
    std::fs::write(root.join("job.json"), job.to_string()).unwrap();
}

#[test]
fn an_until_decided_session_records_its_looks_and_uses_the_hosts_noise_profile() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // Two A/A sessions, then a profile of them in the folder the launcher reads this host's
    // profile from (`util::launcher_in` points it into `root/profiles`).
    for name in ["aa-0", "aa-1"] {
        yardstick_job(root, name);
        let out = util::run(&mut util::launcher_in(root));
        assert_eq!(out.status.code(), Some(0), "{}", std::fs::read_to_string(root.join("launcher.stderr")).unwrap());
    }
    let sessions = [util::only_session(&root.join("out/aa-0")), util::only_session(&root.join("out/aa-1"))];
    let out = util::run(
        std::process::Command::new(util::binary())
            .arg("calibrate")
            .arg("--from")
            .args(&sessions)
            .env("DECODE_BASELINE_PROFILE_DIR", root.join("profiles"))
            .current_dir(util::repo_root()),
    );
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let profile_file = util::only_entry(&root.join("profiles"));
    let profile: Value = serde_json::from_slice(&std::fs::read(&profile_file).unwrap()).unwrap();
    // The row's entry: controlled-b's pairs with controlled. A look of one run is sized at the
    // calibration's own size (`S²`), a look of more runs never above it or the run part.
    let entry = profile["designs"].as_array().unwrap().iter().find(|d| d["pair"] == "controlled-b/controlled");
    let fit = &entry.unwrap_or_else(|| panic!("{profile:#}"))["fit"];
    let bound = fit["estimate_var"].as_f64().unwrap().max(fit["run_var"].as_f64().unwrap()).sqrt();

    // An `--until-decided` session, `controlled-b` slowed far beyond the noise: 2 looks of 8 pairs planned
    // (the frozen policy's measured requests per run).
    yardstick_job(root, "sequential");
    let mut cmd = util::launcher_in(root);
    cmd.args(["--until-decided", "--budget", "16"]).env(SLOWDOWN_ENV, "2000").env(SLOWDOWN_ADAPTER_ENV, "controlled-b");
    let out = util::run(&mut cmd);
    let stderr = std::fs::read_to_string(root.join("launcher.stderr")).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let folder = util::only_session(&root.join("out/sequential"));
    let session: Value = serde_json::from_slice(&std::fs::read(folder.join("session.json")).unwrap()).unwrap();
    let record = &session["sequential"];
    assert_eq!(record["budget"], "16 pairs", "{record:#}");
    assert_eq!(record["alpha"], 0.05);
    assert_eq!(record["rows"], 1, "one adapter against the reference in one cell");
    let cell = &record["cells"][0];
    assert_eq!(cell["cell"], CELL);
    assert_eq!(cell["looks_planned"], 2);
    let used = cell["profile_sd"].as_f64().unwrap_or_else(|| panic!("the look used no profile: {cell:#}"));
    assert!(used > 0.0 && used <= bound + 1e-12, "the look used the host's profile ({bound}): {cell:#}");
    // A 2 ms spin on a step of about 1 ms is decided as soon as the error allows: at the first
    // look on a quiet host, at the second when the host is loaded (a profile of two sessions
    // refers the statistic to t on 1 degree of freedom); either way the record, the workers that
    // ran and the printed line agree.
    let looks = cell["looks_done"].as_u64().unwrap();
    assert!((1..=2).contains(&looks), "{cell:#}");
    assert_eq!(cell["pairs"], 8 * looks, "{cell:#}");
    let ran = session["workers"].as_array().unwrap().len() as u64;
    assert_eq!(ran, 2 * looks, "one group of two workers per look, none after the decision");
    let row = &cell["rows"][0];
    assert_eq!(row["adapter"], "controlled-b");
    assert!(row["ratio"].as_f64().unwrap() > 1.5, "{cell:#}");
    let level = cell["nominal_level"].as_f64().unwrap();
    let line = stderr
        .lines()
        .find(|l| l.contains("until-decided: ") && l.contains(CELL))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.contains(&format!("noise profile sd {used:.4}")), "{line}");
    // The report page says the same: the profile its verdicts used, and the record's lines.
    let page = std::fs::read_to_string(folder.join("index.html")).unwrap();
    assert!(page.contains("controlled-b/controlled fitted on 2 sessions of 1 runs"), "{page}");
    let said = line.trim_start_matches("decode-baseline: ");
    assert!(page.contains(said), "the page carries the printed line: {said}");
    if cell["end"] == "decided" {
        assert_eq!(row["verdict"], "slower", "{cell:#}");
        assert!(row["p_value"].as_f64().unwrap() < level, "{cell:#}");
        assert!(line.contains(&format!("decided after look {looks} of 2 ({} pairs;", 8 * looks)), "{line}");
        assert!(line.contains("controlled-b slower"), "{line}");
    } else {
        assert_eq!(cell["end"], "last_look", "{cell:#}");
        assert_eq!(looks, 2, "{cell:#}");
        assert_eq!(row["verdict"], "undecided", "{cell:#}");
        assert!(row["p_value"].as_f64().unwrap() >= level, "{cell:#}");
        assert!(line.contains("not decided after look 2 of 2 (16 pairs; the planned last look"), "{line}");
    }
}

#[test]
fn looks_at_the_first_token_decide_a_slowed_prefill_and_leave_the_per_token_row_inconclusive() {
    use decode_baseline_wire::hooks::SLOWDOWN_SITE_ENV;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // `controlled-b` spins 30 ms once per request, before its seed forward (inside its time to
    // the first token, about 3 ms here), and not at all per decode step.
    yardstick_job(root, "ttft");
    let mut cmd = util::launcher_in(root);
    cmd.args(["--until-decided", "--budget", "16", "--decide-on", "first-token"])
        .env(SLOWDOWN_ENV, "30000")
        .env(SLOWDOWN_ADAPTER_ENV, "controlled-b")
        .env(SLOWDOWN_SITE_ENV, "before_seed_forward");
    let out = util::run(&mut cmd);
    let stderr = std::fs::read_to_string(root.join("launcher.stderr")).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let folder = util::only_session(&root.join("out/ttft"));
    let session: Value = serde_json::from_slice(&std::fs::read(folder.join("session.json")).unwrap()).unwrap();
    let record = &session["sequential"];
    assert_eq!(record["quantity"], "first_token", "{record:#}");
    let cell = &record["cells"][0];
    let looked = &cell["rows"][0];
    // The looks tested the first-token row: its ratio is the spin's, far above a per-token one.
    assert!(looked["ratio"].as_f64().unwrap() > 3.0, "{cell:#}");
    if cell["end"] == "decided" {
        assert_eq!(looked["verdict"], "slower", "{cell:#}");
    } else {
        assert_eq!((&cell["end"], &looked["verdict"]), (&json!("last_look"), &json!("undecided")), "{cell:#}");
    }
    // The stored decisions: the first-token row carries the looks' verdict, the per-token row of
    // the same pairs is left inconclusive whatever its fixed-sample test says.
    let rows = session["decisions"]["rows"].as_array().unwrap();
    let row = |quantity: &str| {
        rows.iter()
            .find(|r| r["quantity"] == quantity && r["cell"] == CELL)
            .unwrap_or_else(|| panic!("no {quantity} row: {rows:#?}"))
    };
    let verdict = |r: &Value| r["outcome"]["decision"]["verdict"].clone();
    let expected = if cell["end"] == "decided" { "slower" } else { "inconclusive" };
    assert_eq!(verdict(row("first_token")), expected, "{:#}", row("first_token"));
    assert_eq!(verdict(row("per_token")), "inconclusive", "{:#}", row("per_token"));

    // Looks at the first token cannot be asked of a job with a cell that has no first-token
    // row: bad input, before any folder is made.
    let job = json!({
        "schema_version": 1, "manifest": util::repo_root().join("workloads.json"),
        "cells": ["tiny-qwen3.tiny-qwen3-L16.fixed_continuation"],
        "adapters": ["controlled", "controlled-b"], "reference": "controlled",
        "output_root": root.join("out/refused"), "repetitions": 1, "order": "interleaved", "aa_pair": false
    });
    std::fs::write(root.join("job.json"), job.to_string()).unwrap();
    let out = util::run(util::launcher_in(root).args(["--until-decided", "--decide-on", "first-token"]));
    let stderr = std::fs::read_to_string(root.join("launcher.stderr")).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is not a headline cell"), "{stderr}");
    assert!(std::fs::read_dir(root.join("out/refused")).map_or(true, |mut d| d.next().is_none()), "no session folder");
}
