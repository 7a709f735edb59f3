//! `decode-baseline-controlled`: the controlled worker as an executable of its own.
//!
//! A launcher built without MLX (the CUDA build, `tools/env/mlxenv build cuda`) runs this
//! program, found beside itself, instead of its own `worker` subcommand: the launcher then
//! starts on any machine, and checks with `probe` that this program can start (that the dynamic
//! loader finds libmlx and everything libmlx needs, the NVIDIA driver among them) before it
//! spawns it as a worker.
//!
//! * `decode-baseline-controlled worker [--as ADAPTER] --out-dir DIR`: the frozen worker
//!   protocol on `DIR`, as `controlled` or as the declared adapter `ADAPTER`.
//! * `decode-baseline-controlled probe`: prints the MLX version and the libmlx it mapped as
//!   one JSON line, exits 0.
//!
//! Exit codes are the protocol's (`req/protocol.md`); a bad command line is 2.

use std::path::Path;

use decode_baseline_controlled::{identity, worker::serve};
use decode_baseline_wire::{Adapter, ExitCode};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["worker", "--out-dir", dir] => serve(Path::new(dir), Adapter::Controlled),
        ["worker", "--as", name, "--out-dir", dir] => match Adapter::parse(name) {
            Ok(adapter) => serve(Path::new(dir), adapter),
            Err(problem) => {
                eprintln!("decode-baseline-controlled: error: --as: {problem}");
                ExitCode::BadInput
            }
        },
        ["probe"] => probe(),
        _ => {
            eprintln!("decode-baseline-controlled: error: expected `worker [--as ADAPTER] --out-dir DIR` or `probe`, got {args:?}");
            ExitCode::BadInput
        }
    };
    std::process::exit(code.code());
}

fn probe() -> ExitCode {
    match identity::facts(false) {
        Ok(facts) => {
            println!("{facts}");
            ExitCode::Ok
        }
        Err(err) => {
            eprintln!("decode-baseline-controlled: error: {err}");
            ExitCode::Failed
        }
    }
}
