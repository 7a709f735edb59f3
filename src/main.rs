//! decode-baseline: parse the command line, run, map the outcome to a documented exit code.

use clap::Parser;

use decode_baseline_pins::installed::DEFAULT_ENV_NAME;
use decode_baseline_wire::manifest::ENV_NAME_ENV;

mod cli;
mod reference;

fn main() {
    if let Err(why) = select_environment() {
        eprintln!("decode-baseline: error: {why}");
        std::process::exit(decode_baseline_wire::ExitCode::BadInput.code());
    }
    let args = cli::Cli::parse();
    if let Err(why) = cli::serve_checkout(&args) {
        eprintln!("decode-baseline: error: {why:#}");
        std::process::exit(decode_baseline_wire::ExitCode::BadInput.code());
    }
    let code = match cli::run(args) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("decode-baseline: error: {err:#}");
            decode_baseline_launcher::exit_code::of(&err)
        }
    };
    std::process::exit(code.code());
}

/// The environment this build links, if it links MLX.
const BUILT_FOR: Option<&str> = option_env!("DECODE_BASELINE_BUILD_ENV");

/// Selects the pinned environment this executable was built against, or says why the caller's
/// selection cannot be honoured. Call before any thread is started (it sets a process
/// environment variable).
///
/// A build links one environment's libmlx (`tools/env/mlxenv build NAME` builds environment
/// NAME into `target/env-NAME`). Its launcher, guard and workers must use that environment's
/// lock, virtual environment and manifest pins, so the executable sets `$DECODE_BASELINE_ENV`
/// to it for itself and every child; a different selection in the caller's environment is
/// refused rather than silently mixing two MLX versions. A build without MLX (no `controlled`
/// feature) takes the selection from `$DECODE_BASELINE_ENV` as it is.
fn select_environment() -> Result<(), String> {
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
