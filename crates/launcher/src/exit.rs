//! The errors that say what exit code they end a command with: [`BadInput`] (2; `bad_input!`
//! and `ensure_input!` in place of `anyhow::bail!` and `anyhow::ensure!`) and [`Refused`] (its
//! own code). `exit_code::of` reads them, with the typed readers' errors, off an error's chain.

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
