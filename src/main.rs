//! decode-baseline: parse the command line, run, map the outcome to a documented exit code.

use clap::Parser;

mod bench;
mod build_env;
mod calibrate;
mod cli;
mod compare;
mod conformance;
mod duration;
mod environment;
#[cfg(test)]
mod generated;
mod guard;
mod launcher;
mod manifest_cli;
mod plot;
mod report;
mod safetensors_header;
mod worker;

fn main() {
    if let Err(why) = build_env::select() {
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
            decode_baseline_wire::ExitCode::BadInput
        }
    };
    std::process::exit(code.code());
}
