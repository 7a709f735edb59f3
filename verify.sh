#!/usr/bin/env bash
# Full verification, the README's test command: provisions the pinned Python environment (first
# run only), builds everything, runs every test, and checks that the launcher, guard and compare
# also build without MLX (into target/mlx-free), and that the code is formatted and clippy-clean.
# Prints VERIFIED at the end; any failure stops it with a non-zero exit.
set -euo pipefail
cd "$(dirname "$0")"

step() { printf '\n== %s\n' "$*"; }

step "format (cargo fmt --check, rustfmt.toml)"
cargo fmt --all --check

step "pinned Python environment"
python3 tools/env/provision.py >/dev/null

step "build (release, with the controlled worker)"
cargo build --release --workspace --all-targets

step "lints (clippy, warnings are errors)"
cargo clippy --release --workspace --all-targets -- -D warnings

step "tests"
cargo test --release --workspace

step "build without MLX (launcher, guard, compare only)"
# In its own target folder, so that target/release keeps the launcher with the controlled worker.
cargo build --release --no-default-features --bin decode-baseline --target-dir target/mlx-free

printf '\nVERIFIED\n'
