//! The exit code of a command that ended in an error: a [`Refused`]'s own code, bad input (2)
//! only when the error says so, anything unexpected 9 (`Internal`), so that a failed
//! `create_dir` of the session folder or a worker that could not be spawned is not reported as
//! the user's mistake.
//!
//! Bad input is marked where it is found: by returning one of the typed readers' errors (a
//! session, a session job, a manifest, a noise profile, a hub id, a lease file) or by wrapping the
//! message in `exit::BadInput`. This module names those types, so it sits above every command
//! and nothing in the library depends on it (the executable's `main` calls it).

use decode_baseline_wire::ExitCode;

use crate::exit::{BadInput, Refused};

/// The exit code `err` ends its command with: a [`Refused`]'s own code, 2 when anything in its
/// chain is bad input, else 9.
pub fn of(err: &anyhow::Error) -> ExitCode {
    use crate::{launcher::LeaseError, noise_profiles::ProfileFileError, plot::PlotError};
    if let Some(refused) = err.chain().find_map(|cause| cause.downcast_ref::<Refused>()) {
        return refused.code;
    }
    let bad_input = err.chain().any(|cause| {
        cause.is::<BadInput>()
            || cause.is::<crate::session::ReadError>()
            || cause.is::<crate::compare::CompareError>()
            || cause.is::<crate::launcher::session_job::JobError>()
            || cause.is::<crate::bench::HubError>()
            // A manifest or pinned file that cannot be read (its mismatches are the guard's 6).
            || cause.is::<decode_baseline_pins::PinError>()
            // Reading what the user named is their input; writing our own files is not.
            || cause.downcast_ref::<ProfileFileError>().is_some_and(|e| !matches!(e, ProfileFileError::Write { .. }))
            || cause.downcast_ref::<PlotError>().is_some_and(|e| !matches!(e, PlotError::Write { .. }))
            // A lease file that is not safe to use (a link, a FIFO, another user's file).
            || cause.downcast_ref::<LeaseError>().is_some_and(|e| !matches!(e, LeaseError::Lock { .. }))
    });
    if bad_input {
        ExitCode::BadInput
    } else {
        ExitCode::Internal
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::refused;

    fn refuse(flag: &str) -> anyhow::Result<()> {
        crate::bad_input!("{flag}: must be at least 1")
    }

    #[test]
    fn bad_input_is_2_and_anything_else_is_9() {
        let err = refuse("--pairs").unwrap_err();
        assert_eq!(err.to_string(), "--pairs: must be at least 1");
        assert_eq!(of(&err), ExitCode::BadInput);
        assert_eq!(of(&err.context("bench")), ExitCode::BadInput, "a context keeps the cause");
        let io = std::fs::create_dir("/nonexistent-root-of-decode-baseline/session").unwrap_err();
        let err = anyhow::Error::new(io).context("failed to create the session folder");
        assert_eq!(of(&err), ExitCode::Internal);
        let read = crate::session::load_session(std::path::Path::new("/nonexistent/session.json")).unwrap_err();
        assert_eq!(of(&anyhow::Error::new(read)), ExitCode::BadInput, "a session given that cannot be read");
        let busy = refused(ExitCode::LeaseBusy, "the benchmark lease is held");
        assert_eq!(of(&busy.context("bench")), ExitCode::LeaseBusy);
        assert_eq!(of(&refused(ExitCode::GuardMismatch, "out of its pin")), ExitCode::GuardMismatch);
    }
}
