//! The pinned environment this executable was built against, selected at start-up.
//!
//! A build links one environment's libmlx (`tools/env/mlxenv build NAME` builds environment
//! NAME into `target/env-NAME`). Its launcher, guard and workers must use that environment's
//! lock, virtual environment and manifest pins, so the executable sets `$DECODE_BASELINE_ENV`
//! to it for itself and every child; a different selection in the caller's environment is
//! refused rather than silently mixing two MLX versions. A build without MLX (no `controlled`
//! feature) takes the selection from `$DECODE_BASELINE_ENV` as it is.

use decode_baseline_pins::installed::DEFAULT_ENV_NAME;
use decode_baseline_wire::manifest::ENV_NAME_ENV;

/// The environment this build links, if it links MLX.
pub const BUILT_FOR: Option<&str> = option_env!("DECODE_BASELINE_BUILD_ENV");

/// Selects the build's environment, or says why the caller's selection cannot be honoured.
/// Call before any thread is started (it sets a process environment variable).
pub fn select() -> Result<(), String> {
    let Some(built) = BUILT_FOR else {
        return Ok(());
    };
    let asked = std::env::var(ENV_NAME_ENV).ok().filter(|v| !v.is_empty()).unwrap_or_else(|| built.to_owned());
    if asked != built {
        let how = if asked == DEFAULT_ENV_NAME {
            "cargo run --release -- ...".to_owned()
        } else {
            format!("tools/env/mlxenv run {asked} ...")
        };
        return Err(format!(
            "${ENV_NAME_ENV} selects environment {asked:?}, but this build links environment {built:?}'s libmlx; \
             run that environment's build instead: `{how}`"
        ));
    }
    std::env::set_var(ENV_NAME_ENV, built);
    Ok(())
}
