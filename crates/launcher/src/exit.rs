//! The exit code of a command that ended in an error: bad input (2) only when the error says so,
//! anything unexpected 9 (`Internal`), so that a failed `create_dir` of the session folder or a
//! worker that could not be spawned is not reported as the user's mistake.
//!
//! Bad input is marked where it is found: by returning one of the typed readers' errors (a
//! session, a session job, a manifest, a noise profile, a compare setting) or by wrapping the message in
//! [`BadInput`] (`bad_input!` and `ensure_input!`, in place of `anyhow::bail!` and
//! `anyhow::ensure!`).

use decode_baseline_wire::ExitCode;

/// An error that is the input's fault: a flag, a job, a manifest, a session or a folder given
/// that cannot be used. Its message says which and what was expected.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// A command refused before it did anything, with the exit code that says why (a manifest out
/// of its pin: 6; the lease held with `--no-wait`: 7). Its message is the whole explanation.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Refused {
    pub code: ExitCode,
    pub message: String,
}

/// A [`Refused`] error.
pub fn refused(code: ExitCode, message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Refused { code, message: message.into() })
}

/// A [`BadInput`] error with `message`.
pub fn bad_input(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(message.into()))
}

/// Returns early with a [`BadInput`] error made as `format!` makes a string.
#[macro_export]
macro_rules! bad_input {
    ($($arg:tt)*) => {
        return Err($crate::exit::bad_input(format!($($arg)*)))
    };
}

/// Returns early with a [`BadInput`] error unless `cond` holds, as `anyhow::ensure!` does.
#[macro_export]
macro_rules! ensure_input {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            $crate::bad_input!($($arg)*);
        }
    };
}

/// The exit code `err` ends its command with: a [`Refused`]'s own code, 2 when anything in its
/// chain is bad input, else 9.
pub fn code_of(err: &anyhow::Error) -> ExitCode {
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

    fn refuse(flag: &str) -> anyhow::Result<()> {
        bad_input!("{flag}: must be at least 1")
    }

    #[test]
    fn bad_input_is_2_and_anything_else_is_9() {
        let err = refuse("--pairs").unwrap_err();
        assert_eq!(err.to_string(), "--pairs: must be at least 1");
        assert_eq!(code_of(&err), ExitCode::BadInput);
        assert_eq!(code_of(&err.context("bench")), ExitCode::BadInput, "a context keeps the cause");
        let io = std::fs::create_dir("/nonexistent-root-of-decode-baseline/session").unwrap_err();
        let err = anyhow::Error::new(io).context("failed to create the session folder");
        assert_eq!(code_of(&err), ExitCode::Internal);
        let read = crate::session::load_session(std::path::Path::new("/nonexistent/session.json")).unwrap_err();
        assert_eq!(code_of(&anyhow::Error::new(read)), ExitCode::BadInput, "a session given that cannot be read");
        let busy = refused(ExitCode::LeaseBusy, "the benchmark lease is held");
        assert_eq!(code_of(&busy.context("bench")), ExitCode::LeaseBusy);
        assert_eq!(code_of(&refused(ExitCode::GuardMismatch, "out of its pin")), ExitCode::GuardMismatch);
    }
}
