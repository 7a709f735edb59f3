//! The worker conformance suite, run as a third party runs it: `decode-baseline conformance`
//! against the stock worker, the declared example adapter `python-sync` and (in a build with the
//! `controlled` feature, the default) the controlled worker, each of which must pass every
//! scenario; and against a deliberately broken
//! worker, which must fail exactly the scenarios its defect breaks, with a non-zero exit.
//!
//! The scenarios themselves live in the library (`crates/launcher/src/conformance/`); the list below is declared
//! here independently, so a scenario dropped, added or renamed there fails this suite.

use std::process::{Command, Output};

use decode_baseline_wire::hooks::{HOOK_ENV, HOOK_REQUEST_ENV};

use crate::util;

/// Every scenario, in the order the command runs them.
const SCENARIOS: [&str; 21] = [
    "missing_out_dir_is_refused",
    "file_in_place_of_out_dir_is_refused",
    "existing_claim_is_refused_and_nothing_written",
    "second_worker_on_a_running_folder_is_refused",
    "preseeded_report_survives_and_the_run_fails",
    "preseeded_ready_gives_a_failed_report",
    "deadline_inside_the_request_loop_times_out",
    "deadline_inside_the_final_request_times_out",
    "stuck_main_loop_is_reported_by_the_backstop",
    "sigterm_before_a_prefill_chunk_cancels",
    "sigterm_before_the_seed_forward_cancels",
    "sigterm_before_a_decode_step_cancels",
    "report_write_failure_leaves_no_temp_and_no_report",
    "validation_failures_name_the_field",
    "headline_on_the_fixture",
    "fixed_continuation_on_the_fixture",
    "reference_pair_on_the_fixture",
    "a_group_job_is_run_or_refused_naming_the_group",
    "a_rank_whose_peer_never_starts_never_signals_ready_and_stops",
    "sigterm_in_a_group_cancels_every_rank",
    "a_rank_with_a_wrong_environment_is_refused_naming_it",
];

/// `decode-baseline conformance ARGS`, hermetic: no worker replacement or test hook inherited.
fn conformance(args: &[&str]) -> Output {
    let _ = util::venv_python();
    let mut cmd = Command::new(util::binary());
    cmd.arg("conformance")
        .args(args)
        .current_dir(util::repo_root())
        .env_remove("DECODE_BASELINE_WORKER_STOCK")
        .env_remove("DECODE_BASELINE_WORKER_CONTROLLED")
        .env_remove(HOOK_ENV)
        .env_remove(HOOK_REQUEST_ENV);
    util::run(&mut cmd)
}

/// The scenario lines of the output: (name, None) for a pass, (name, Some(reason)) for a
/// failure; and the summary line.
fn results(out: &Output) -> (Vec<(String, Option<String>)>, String) {
    let stdout = util::stdout(out);
    let mut lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.first().is_some_and(|l| l.starts_with("conformance of adapter ")), "header: {stdout}");
    let summary = lines.pop().expect("a summary line").to_owned();
    let scenarios = lines[1..]
        .iter()
        .map(|line| {
            if let Some(name) = line.strip_prefix("pass  ") {
                (name.to_owned(), None)
            } else if let Some(rest) = line.strip_prefix("FAIL  ") {
                let (name, reason) = rest.split_once(": ").unwrap_or_else(|| panic!("a reason in {line:?}"));
                (name.to_owned(), Some(reason.to_owned()))
            } else {
                panic!("not a scenario line: {line:?}\n{stdout}")
            }
        })
        .collect();
    (scenarios, summary)
}

fn assert_all_pass(args: &[&str]) {
    let out = conformance(args);
    let (scenarios, summary) = results(&out);
    let failed: Vec<_> = scenarios.iter().filter(|(_, reason)| reason.is_some()).collect();
    assert!(failed.is_empty(), "failed scenarios: {failed:#?}\nstderr: {}", util::stderr(&out));
    let names: Vec<&str> = scenarios.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, SCENARIOS, "every scenario ran, in order");
    assert_eq!(summary, "21 scenarios, 21 passed, 0 failed");
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
}

#[test]
fn stock_passes_every_scenario() {
    assert_all_pass(&["--adapter", "stock"]);
}

/// The example adapter the repository's manifest declares (`examples/adapters/python-sync`),
/// started as the launcher starts a declared adapter.
#[test]
fn the_declared_python_sync_example_passes_every_scenario() {
    assert_all_pass(&["--adapter", "python-sync"]);
}

// The controlled worker is part of this build only with the `controlled` feature.
#[cfg(feature = "controlled")]
#[test]
fn controlled_passes_every_scenario() {
    assert_all_pass(&["--adapter", "controlled"]);
}

/// The real stock worker with SIGTERM ignored (`tests/fixtures/workers/deaf_to_sigterm.py`),
/// run as any program under the name `stock`: the four SIGTERM scenarios (one of them in a rank
/// group) fail, each saying the worker did not exit after the signal; every other scenario
/// passes (a rank whose peer never starts is ended by the SIGKILL after the grace); exit 15.
#[test]
fn a_worker_deaf_to_sigterm_fails_the_sigterm_scenarios() {
    let python = util::venv_python();
    let script = util::repo_root().join("tests/fixtures/workers/deaf_to_sigterm.py");
    let out = conformance(&["--name", "stock", "--", python.to_str().unwrap(), script.to_str().unwrap()]);
    let (scenarios, summary) = results(&out);
    let names: Vec<&str> = scenarios.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, SCENARIOS, "every scenario ran, in order");
    for (name, reason) in &scenarios {
        if name.starts_with("sigterm_") {
            let reason = reason.as_deref().unwrap_or_else(|| panic!("{name} passed for a worker deaf to SIGTERM"));
            assert!(reason.contains("after SIGTERM") && reason.contains("did not exit within 10s"), "{name}: {reason}");
        } else {
            assert_eq!(reason, &None, "{name} fails for a defect it does not test");
        }
    }
    assert_eq!(summary, "21 scenarios, 17 passed, 4 failed");
    assert_eq!(out.status.code(), Some(15), "{}", util::stderr(&out));
}

#[test]
fn an_unknown_scenario_or_a_used_keep_folder_is_bad_input() {
    let out = conformance(&["--adapter", "stock", "--scenario", "no_such_scenario"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(util::stderr(&out).contains("no scenario \"no_such_scenario\""), "{}", util::stderr(&out));

    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("mine"), b"kept").unwrap();
    let out = conformance(&["--adapter", "stock", "--keep", tmp.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(util::stderr(&out).contains("not empty"), "{}", util::stderr(&out));
    assert_eq!(util::snapshot_tree(tmp.path()), vec![("mine".into(), b"kept".to_vec())], "nothing written there");

    let out = conformance(&["--", "/bin/true"]);
    assert_eq!(out.status.code(), Some(2), "a worker program needs --name: {}", util::stderr(&out));
}

#[test]
fn keep_leaves_every_scenario_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let keep = tmp.path().join("kept");
    let out = conformance(&[
        "--adapter",
        "stock",
        "--scenario",
        "existing_claim_is_refused_and_nothing_written",
        "--keep",
        keep.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", util::stdout(&out), util::stderr(&out));
    let (scenarios, summary) = results(&out);
    assert_eq!(scenarios, [("existing_claim_is_refused_and_nothing_written".to_owned(), None)]);
    assert_eq!(summary, "1 scenarios, 1 passed, 0 failed");
    assert!(util::stderr(&out).contains(&format!("scenario folders kept in {}", keep.display())));
    assert!(util::find_file(&keep, "worker-claim").is_some(), "the scenario's folder is kept");
    assert!(util::find_file(&keep, "job.json").is_some());
}
