//! How long the full guard takes on this repository: manifest and pin, structure, confinement,
//! every case artifact, the worker sources by rule, the lock file, and the installed environment
//! (the mlx_lm source freeze of every file and the libmlx digest). Target: under one second.
//!
//! Also measures the installed freeze alone, the biggest single piece after libmlx.

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use decode_baseline_pins::{
    self as pins,
    installed::{mlx_dir_override, venv_dir, Installed},
    EnvironmentCheck,
};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn full_guard(c: &mut Criterion) {
    let repo = repo();
    let manifest = repo.join("workloads.json");
    let check = EnvironmentCheck::Required { venv: venv_dir(&repo), mlx_dir: mlx_dir_override() };
    // Report (not fail on) stale pins: work in progress moves worker sources, and a mismatch
    // costs the same hashing as a match.
    let outcome = pins::guard(&repo, &manifest, &check).expect("the manifest parses");
    let installed = outcome.environment.as_ref().expect("the guard benchmark needs the installed environment");
    eprintln!(
        "guard on {}: {} failure(s); environment at {}",
        manifest.display(),
        outcome.failures.len(),
        installed.venv.display()
    );
    c.bench_function("guard_full_with_installed_freeze", |b| {
        b.iter(|| {
            let outcome = pins::guard(&repo, &manifest, &check).unwrap();
            std::hint::black_box(outcome.failures.len())
        })
    });

    let installed = Installed::locate(&venv_dir(&repo), mlx_dir_override().as_deref()).unwrap();
    c.bench_function("mlx_lm_freeze_only", |b| b.iter(|| pins::mlx_lm_freeze(&installed).unwrap()));
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = full_guard
}
criterion_main!(benches);
