#!/usr/bin/env bash
# Full verification, the README's test command: provisions the pinned Python environment (first
# run only), builds everything, runs every test, and checks that the launcher, guard and compare
# also build without MLX. Prints VERIFIED at the end; any failure stops it with a non-zero exit.
set -euo pipefail
cd "$(dirname "$0")"

step() { printf '\n== %s\n' "$*"; }

step "pinned Python environment"
python3 tools/env/provision.py >/dev/null

step "build (release, with the controlled worker)"
cargo build --release --workspace --all-targets

step "tests"
cargo test --release --workspace

step "build without MLX (launcher, guard, compare only)"
cargo build --release --no-default-features --bin decode-baseline

printf '\nVERIFIED\n'
