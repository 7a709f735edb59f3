//! Running the scenarios: each in turn against one worker, a panic in the harness's own work
//! taken as that scenario's failure, and the tally.

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::{
    harness::{Failure, Outcome, Suite},
    scenarios::{Scenario, SCENARIOS},
};

/// The scenarios named in `only` (all when empty), in table order; an unknown name is an error
/// naming it and the known ones.
pub fn select(only: &[String]) -> Result<Vec<&'static Scenario>, String> {
    if let Some(unknown) = only.iter().find(|name| !SCENARIOS.iter().any(|s| s.name == name.as_str())) {
        let known: Vec<_> = SCENARIOS.iter().map(|s| s.name).collect();
        return Err(format!("no scenario {unknown:?}; the scenarios are: {}", known.join(", ")));
    }
    Ok(SCENARIOS.iter().filter(|s| only.is_empty() || only.iter().any(|n| n == s.name)).collect())
}

/// Runs `scenario`; a panic (a harness step that could not be done) fails it with its message.
pub fn run_one(suite: &Suite, scenario: &Scenario) -> Outcome {
    match catch_unwind(AssertUnwindSafe(|| (scenario.run)(suite))) {
        Ok(outcome) => outcome,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            Err(Failure::new(format!("the harness panicked: {message}")))
        }
    }
}

/// Runs `scenarios` in order, handing each outcome to `done` as soon as it is known.
pub fn run_all(suite: &Suite, scenarios: &[&Scenario], mut done: impl FnMut(&Scenario, &Outcome)) -> Tally {
    let mut tally = Tally::default();
    for scenario in scenarios {
        let outcome = run_one(suite, scenario);
        done(scenario, &outcome);
        match outcome {
            Ok(()) => tally.passed += 1,
            Err(_) => tally.failed += 1,
        }
    }
    tally
}

/// How many scenarios passed and failed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub passed: usize,
    pub failed: usize,
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} scenarios, {} passed, {} failed", self.passed + self.failed, self.passed, self.failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_keeps_table_order_and_names_an_unknown_scenario() {
        let picked = select(&["reference_pair_on_the_fixture".into(), "missing_out_dir_is_refused".into()]).unwrap();
        let names: Vec<_> = picked.iter().map(|s| s.name).collect();
        assert_eq!(names, ["missing_out_dir_is_refused", "reference_pair_on_the_fixture"]);
        assert_eq!(select(&[]).unwrap().len(), SCENARIOS.len());
        let err = select(&["nope".into()]).err().unwrap();
        assert!(err.starts_with("no scenario \"nope\"; the scenarios are: missing_out_dir_is_refused, "), "{err}");
    }

    #[test]
    fn the_tally_reads_as_documented() {
        assert_eq!(Tally { passed: 17, failed: 4 }.to_string(), "21 scenarios, 17 passed, 4 failed");
    }

    #[test]
    fn a_reason_is_one_line() {
        assert_eq!(
            Failure::new("exit 2, expected 1;\n  stderr:\tno job\n").reason(),
            "exit 2, expected 1; stderr: no job"
        );
    }
}
