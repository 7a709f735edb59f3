//! The conformance scenarios: the frozen protocol (`req/protocol.md`) seen from outside, each a
//! function of the suite that passes or fails with a one-line reason, in one table.

use std::time::Instant;

use decode_baseline_wire::{
    outdir::{CLAIM_FILE, LAUNCHER_MESSAGE, READY_FILE, REPORT_FILE},
    Mode, RequestRecord, RunPolicy, Status,
};

use super::{
    checks::check_report,
    group_scenarios::{
        a_group_job_is_run_or_refused_naming_the_group, a_rank_whose_peer_never_starts_never_signals_ready_and_stops,
        a_rank_with_a_wrong_environment_is_refused_naming_it, sigterm_in_a_group_cancels_every_rank,
    },
    harness::{marker, names, no_temp, snapshot_tree, spawn, test_policy, wait, Outcome, Setup, Suite},
    harness::{CANCEL_RELEASE_BOUND, RUN_BOUND},
    tampers::validation_failures_name_the_field,
};
use crate::{ensure, ensure_eq};

/// A named scenario.
pub struct Scenario {
    pub name: &'static str,
    pub run: fn(&Suite) -> Outcome,
}

/// Every scenario, in the order they run.
pub const SCENARIOS: &[Scenario] = &[
    Scenario { name: "missing_out_dir_is_refused", run: missing_out_dir_is_refused },
    Scenario { name: "file_in_place_of_out_dir_is_refused", run: file_in_place_of_out_dir_is_refused },
    Scenario {
        name: "existing_claim_is_refused_and_nothing_written",
        run: existing_claim_is_refused_and_nothing_written,
    },
    Scenario {
        name: "second_worker_on_a_running_folder_is_refused",
        run: second_worker_on_a_running_folder_is_refused,
    },
    Scenario { name: "preseeded_report_survives_and_the_run_fails", run: preseeded_report_survives_and_the_run_fails },
    Scenario { name: "preseeded_ready_gives_a_failed_report", run: preseeded_ready_gives_a_failed_report },
    Scenario { name: "deadline_inside_the_request_loop_times_out", run: deadline_inside_the_request_loop_times_out },
    Scenario { name: "deadline_inside_the_final_request_times_out", run: deadline_inside_the_final_request_times_out },
    Scenario { name: "stuck_main_loop_is_reported_by_the_backstop", run: stuck_main_loop_is_reported_by_the_backstop },
    Scenario { name: "sigterm_before_a_prefill_chunk_cancels", run: sigterm_before_a_prefill_chunk_cancels },
    Scenario { name: "sigterm_before_the_seed_forward_cancels", run: sigterm_before_the_seed_forward_cancels },
    Scenario { name: "sigterm_before_a_decode_step_cancels", run: sigterm_before_a_decode_step_cancels },
    Scenario {
        name: "report_write_failure_leaves_no_temp_and_no_report",
        run: report_write_failure_leaves_no_temp_and_no_report,
    },
    Scenario { name: "validation_failures_name_the_field", run: validation_failures_name_the_field },
    Scenario { name: "headline_on_the_fixture", run: headline_on_the_fixture },
    Scenario { name: "fixed_continuation_on_the_fixture", run: fixed_continuation_on_the_fixture },
    Scenario { name: "reference_pair_on_the_fixture", run: reference_pair_on_the_fixture },
    Scenario {
        name: "a_group_job_is_run_or_refused_naming_the_group",
        run: a_group_job_is_run_or_refused_naming_the_group,
    },
    Scenario {
        name: "a_rank_whose_peer_never_starts_never_signals_ready_and_stops",
        run: a_rank_whose_peer_never_starts_never_signals_ready_and_stops,
    },
    Scenario { name: "sigterm_in_a_group_cancels_every_rank", run: sigterm_in_a_group_cancels_every_rank },
    Scenario {
        name: "a_rank_with_a_wrong_environment_is_refused_naming_it",
        run: a_rank_with_a_wrong_environment_is_refused_naming_it,
    },
];

fn missing_out_dir_is_refused(suite: &Suite) -> Outcome {
    let dir = suite.folder("missing-out-dir")?;
    let missing = dir.join("never-created");
    let finished = wait(suite.spawn_on(&missing)?, RUN_BOUND)?;
    finished.expect_code(1)?;
    finished.expect_stderr(LAUNCHER_MESSAGE)?;
    ensure!(!missing.exists(), "the missing out dir was created");
    ensure!(names(&dir)?.is_empty(), "something was written beside the missing out dir: {:?}", names(&dir)?);
    Ok(())
}

fn file_in_place_of_out_dir_is_refused(suite: &Suite) -> Outcome {
    let dir = suite.folder("file-as-out-dir")?;
    let file = dir.join("out");
    std::fs::write(&file, b"not a folder")?;
    let finished = wait(suite.spawn_on(&file)?, RUN_BOUND)?;
    finished.expect_code(1)?;
    finished.expect_stderr(LAUNCHER_MESSAGE)?;
    ensure!(std::fs::read(&file)? == b"not a folder", "the file in place of the out dir was changed");
    ensure_eq!(names(&dir)?, std::collections::BTreeSet::from(["out".to_owned()]), "the names beside it");
    Ok(())
}

fn existing_claim_is_refused_and_nothing_written(suite: &Suite) -> Outcome {
    let setup = Setup::new(suite, Mode::Headline)?;
    std::fs::write(setup.path(CLAIM_FILE), br#"{"utc":"2020-01-01T00:00:00.000000Z","pid":1}"#)?;
    let before = snapshot_tree(&setup.out)?;
    let finished = setup.run()?;
    finished.expect_code(1)?;
    finished.expect_stderr("already claimed")?;
    ensure!(snapshot_tree(&setup.out)? == before, "the claimed folder is not byte-identical after the refusal");
    Ok(())
}

fn second_worker_on_a_running_folder_is_refused(suite: &Suite) -> Outcome {
    let setup = Setup::new(suite, Mode::Headline)?;
    let mut first = setup.spawn(Some(("after_ready", 0)))?;
    let outcome = second_worker_while_the_first_is_held(&setup, &mut first);
    // The first worker goes on whatever the second did, so that it never outlives the scenario.
    let released = setup.release("after_ready");
    let finished = wait(first, RUN_BOUND)?;
    outcome?;
    released?;
    finished.expect_code(0)?;
    let report = check_report(&setup, &finished)?;
    ensure_eq!(report.status, Status::Ok, "status of the first worker");
    ensure_eq!(report.requests.len(), setup.total_requests(), "requests of the first worker");
    ensure_eq!(marker(&setup.path(READY_FILE))?.pid, finished.pid, "ready pid vs the first worker");
    ensure_eq!(marker(&setup.path(CLAIM_FILE))?.pid, finished.pid, "claim pid vs the first worker");
    Ok(())
}

/// A second worker with the valid job, then with an invalid one, while the first is held after
/// ready: both refused, the folder untouched.
fn second_worker_while_the_first_is_held(setup: &Setup, first: &mut std::process::Child) -> Outcome {
    setup.wait_for_hook("after_ready", first)?;
    let claim = std::fs::read(setup.path(CLAIM_FILE))?;
    let ready = std::fs::read(setup.path(READY_FILE))?;
    let valid = setup.run()?;
    valid.expect_code(1)?;
    valid.expect_stderr("already claimed")?;
    let mut invalid = setup.job.clone();
    invalid.run_policy.warmup_requests = 0;
    super::harness::write_job(&setup.out, &invalid)?;
    let refused = setup.run()?;
    refused.expect_code(1)?;
    refused.expect_stderr("already claimed")?;
    ensure!(std::fs::read(setup.path(CLAIM_FILE))? == claim, "the claim is not byte-identical");
    ensure!(std::fs::read(setup.path(READY_FILE))? == ready, "worker-ready is not byte-identical");
    ensure!(!setup.path(REPORT_FILE).exists(), "a refused worker wrote a report");
    no_temp(&setup.out)?;
    setup.write_job()
}

fn preseeded_report_survives_and_the_run_fails(suite: &Suite) -> Outcome {
    let setup = Setup::new(suite, Mode::ReferencePair)?;
    let seeded = b"{\"seeded\": true}\n";
    std::fs::write(setup.path(REPORT_FILE), seeded)?;
    let finished = setup.run()?;
    finished.expect_code(1)?;
    ensure!(std::fs::read(setup.path(REPORT_FILE))? == seeded, "the preseeded report was replaced");
    finished.expect_stderr("downgraded to failed")?;
    no_temp(&setup.out)
}

fn preseeded_ready_gives_a_failed_report(suite: &Suite) -> Outcome {
    let setup = Setup::new(suite, Mode::ReferencePair)?;
    std::fs::write(setup.path(READY_FILE), b"seeded")?;
    let finished = setup.run()?;
    finished.expect_code(1)?;
    let report = check_report(&setup, &finished)?;
    ensure_eq!(report.status, Status::Failed, "status");
    ensure!(
        report.error.as_deref().is_some_and(|e| e.contains(READY_FILE)),
        "the error does not name {READY_FILE}: {:?}",
        report.error
    );
    ensure!(report.requests.is_empty(), "{} requests recorded, expected none", report.requests.len());
    ensure!(std::fs::read(setup.path(READY_FILE))? == b"seeded", "the preseeded worker-ready was replaced");
    Ok(())
}

fn deadline_inside_the_request_loop_times_out(suite: &Suite) -> Outcome {
    let setup = Setup::new(suite, Mode::Headline)?;
    setup.release("request_loop")?;
    let finished = wait(setup.spawn(Some(("request_loop", 1)))?, RUN_BOUND)?;
    finished.expect_code(3)?;
    let report = check_report(&setup, &finished)?;
    ensure_eq!(report.status, Status::Timeout, "status");
    ensure_eq!(report.requests.len(), 1, "requests (request 0 complete and kept, request 1 not recorded)");
    Ok(())
}

fn deadline_inside_the_final_request_times_out(suite: &Suite) -> Outcome {
    let setup = Setup::new(suite, Mode::Headline)?;
    setup.release("final_request")?;
    let finished = wait(setup.spawn(Some(("final_request", 0)))?, RUN_BOUND)?;
    finished.expect_code(3)?;
    let report = check_report(&setup, &finished)?;
    ensure_eq!(report.status, Status::Timeout, "status (never ok after a fired deadline)");
    ensure_eq!(report.requests.len(), setup.total_requests(), "requests (every complete record kept)");
    Ok(())
}

fn stuck_main_loop_is_reported_by_the_backstop(suite: &Suite) -> Outcome {
    let setup = Setup::new(suite, Mode::FixedContinuation)?;
    let finished = wait(setup.spawn(Some(("stall", 1)))?, RUN_BOUND)?;
    finished.expect_code(3)?;
    let report = check_report(&setup, &finished)?;
    ensure_eq!(report.status, Status::Timeout, "status");
    ensure!(
        report.error.as_deref().is_some_and(|e| e.contains("watchdog")),
        "the error does not name the watchdog: {:?}",
        report.error
    );
    ensure_eq!(report.requests.len(), 1, "requests (the record completed before the stall is kept)");
    Ok(())
}

/// SIGTERM while the worker is held before a forward of request 1: exit 4 within
/// [`CANCEL_RELEASE_BOUND`], request 0 kept, nothing of request 1.
fn sigterm_at(suite: &Suite, site: &str) -> Outcome {
    let setup = Setup::new(suite, Mode::Headline)?;
    let mut child = setup.spawn(Some((site, 1)))?;
    if let Err(why) = setup.wait_for_hook(site, &mut child) {
        super::harness::signal(child.id(), nix::sys::signal::Signal::SIGKILL);
        let _ = child.wait();
        return Err(why);
    }
    let sent = Instant::now();
    super::harness::signal(child.id(), nix::sys::signal::Signal::SIGTERM);
    let finished = wait(child, CANCEL_RELEASE_BOUND)
        .map_err(|why| super::harness::Failure::new(format!("after SIGTERM at {site}: {why}")))?;
    let released = sent.elapsed();
    finished.expect_code(4)?;
    ensure!(released <= CANCEL_RELEASE_BOUND, "released {released:?} after SIGTERM, bound {CANCEL_RELEASE_BOUND:?}");
    let report = check_report(&setup, &finished)?;
    ensure_eq!(report.status, Status::Cancelled, "status");
    ensure_eq!(report.requests.len(), 1, "requests (zero tokens from the interrupted request 1)");
    Ok(())
}

fn sigterm_before_a_prefill_chunk_cancels(suite: &Suite) -> Outcome {
    sigterm_at(suite, "before_prefill_chunk")
}

fn sigterm_before_the_seed_forward_cancels(suite: &Suite) -> Outcome {
    sigterm_at(suite, "before_seed_forward")
}

fn sigterm_before_a_decode_step_cancels(suite: &Suite) -> Outcome {
    sigterm_at(suite, "before_decode_step")
}

fn report_write_failure_leaves_no_temp_and_no_report(suite: &Suite) -> Outcome {
    use std::os::unix::process::CommandExt;
    let setup = Setup::new(suite, Mode::Headline)?;
    let mut cmd = setup.command();
    // SAFETY: setrlimit and signal are async-signal-safe; nothing else runs in the child.
    unsafe {
        cmd.pre_exec(|| {
            use nix::sys::{
                resource::{setrlimit, Resource},
                signal::{signal, SigHandler, Signal},
            };
            // Claim and ready fit; the report (tens of kB) does not. SIGXFSZ is ignored so the
            // write fails with EFBIG instead of killing the worker.
            setrlimit(Resource::RLIMIT_FSIZE, 4096, 4096).map_err(std::io::Error::from)?;
            signal(Signal::SIGXFSZ, SigHandler::SigIgn).map_err(std::io::Error::from)?;
            Ok(())
        });
    }
    let finished = wait(spawn(cmd)?, RUN_BOUND)?;
    finished.expect_code(1)?;
    ensure!(!setup.path(REPORT_FILE).exists(), "a report was written past the file-size limit");
    no_temp(&setup.out)?;
    finished.expect_stderr("no report was left")
}

fn headline_on_the_fixture(suite: &Suite) -> Outcome {
    let policy = RunPolicy { measured_requests: 2, ..test_policy() };
    let setup = Setup::with(suite, Mode::Headline, &policy, |_| {})?;
    let finished = setup.run()?;
    finished.expect_code(0)?;
    let report = check_report(&setup, &finished)?;
    ensure_eq!(report.status, Status::Ok, "status");
    ensure_eq!(report.requests.len(), 4, "requests");
    for request in &report.requests {
        ensure_eq!(request.steps.len() + 1, 128, "tokens of request {} (the first plus 127 steps)", request.index);
    }
    // Greedy on identical inputs: every request generates the same stream.
    let stream =
        |r: &RequestRecord| std::iter::once(r.first_token).chain(r.steps.iter().map(|s| s.argmax)).collect::<Vec<_>>();
    let first = stream(&report.requests[0]);
    ensure!(report.requests.iter().all(|r| stream(r) == first), "greedy requests on identical inputs differ");
    let Some(identity) = report.identity else {
        return Err(super::harness::Failure::new("an ok report without identity"));
    };
    ensure_eq!(identity.manifest_sha256, setup.fixture.sha256, "identity.manifest_sha256");
    ensure_eq!(identity.mlx_version, setup.job.environment.mlx_version, "identity.mlx_version");
    ensure_eq!(identity.libmlx_sha256, setup.job.environment.libmlx_sha256, "identity.libmlx_sha256");
    ensure!(
        identity.libmlx_path.ends_with("libmlx.so") || identity.libmlx_path.ends_with("libmlx.dylib"),
        "identity.libmlx_path {:?} is not a libmlx",
        identity.libmlx_path
    );
    ensure!(
        !identity.code_version.is_empty() && identity.code_version != "unknown",
        "identity.code_version {:?}",
        identity.code_version
    );
    let (ready, load) = (report.start_to_ready_ns, report.load_ns);
    ensure!(ready.zip(load).is_some_and(|(r, l)| r >= l), "start_to_ready_ns {ready:?} must be >= load_ns {load:?}");
    Ok(())
}

fn fixed_continuation_on_the_fixture(suite: &Suite) -> Outcome {
    let setup = Setup::new(suite, Mode::FixedContinuation)?;
    let finished = setup.run()?;
    finished.expect_code(0)?;
    let report = check_report(&setup, &finished)?;
    ensure_eq!(report.status, Status::Ok, "status");
    ensure_eq!(report.requests.len(), 3, "requests");
    for request in &report.requests {
        ensure_eq!(request.steps.len(), 32, "fed steps of request {} (L+1..L+32)", request.index);
    }
    // Identical inputs, identical argmax streams, wherever the loop takes its argmax.
    let argmaxes = |r: &RequestRecord| r.steps.iter().map(|s| s.argmax).collect::<Vec<_>>();
    let first = argmaxes(&report.requests[0]);
    ensure!(
        report.requests.iter().all(|r| argmaxes(r) == first),
        "fixed-continuation requests on identical inputs give different argmax streams"
    );
    Ok(())
}

fn reference_pair_on_the_fixture(suite: &Suite) -> Outcome {
    let setup = Setup::new(suite, Mode::ReferencePair)?;
    let finished = setup.run()?;
    finished.expect_code(0)?;
    let report = check_report(&setup, &finished)?;
    ensure_eq!(report.status, Status::Ok, "status");
    ensure_eq!(report.requests.len(), 1, "requests");
    ensure_eq!(report.requests[0].steps.len(), 127, "steps");
    Ok(())
}
