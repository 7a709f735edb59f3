#!/usr/bin/env bash
# Full verification, the README's test command: provisions the pinned Python environment (first
# run only), builds everything, runs every test, and checks that the code is formatted and
# clippy-clean, with and without MLX (the launcher, guard and compare build without it).
# Prints each step's time and VERIFIED at the end; any failure stops it with a non-zero exit.
#
# One build serves the tests; the controlled loop's tests (the long bit-identity ones, against
# mlx_lm in a Python subprocess) run beside the rest of the workspace's, which spend much of their
# time waiting on workers; the MLX-free build is checked by clippy on clippy's own artifacts
# instead of being built a second time in a target folder of its own.
set -euo pipefail
cd "$(dirname "$0")"

started=$SECONDS
step_started=$SECONDS
step() {
  if [ -n "${step_name:-}" ]; then printf '   (%s: %d s)\n' "$step_name" $((SECONDS - step_started)); fi
  step_name=$1
  step_started=$SECONDS
  printf '\n== %s\n' "$1"
}

step "format (cargo fmt --check, rustfmt.toml)"
cargo fmt --all --check

step "pinned Python environment"
python3 tools/env/provision.py >/dev/null

step "build (release, every target, with the controlled worker)"
cargo build --release --workspace --all-targets

step "tests"
# The controlled loop's test executables, from the build above (asking Cargo to build them alone
# would resolve features for that package alone and rebuild half the workspace).
controlled_tests=$(cargo test --release --workspace --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"] \
            and m["package_id"].split("#")[0].endswith("crates/controlled"):
        print(m["executable"])')
[ -n "$controlled_tests" ] || { echo "no test executable of decode-baseline-controlled found" >&2; exit 1; }
controlled_log=target/verify-controlled-tests.log
(cd crates/controlled && for exe in $controlled_tests; do echo "     Running $exe"; "$exe" || exit 1; done) \
  >"$controlled_log" 2>&1 &
controlled=$!
rest=0
cargo test --release --workspace --exclude decode-baseline-controlled || rest=$?
controlled_rc=0
wait "$controlled" || controlled_rc=$?
printf '\n-- decode-baseline-controlled (run beside the tests above):\n'
cat "$controlled_log"
if [ "$rest" -ne 0 ] || [ "$controlled_rc" -ne 0 ]; then
  echo "tests failed (workspace exit $rest, decode-baseline-controlled exit $controlled_rc)" >&2
  exit 1
fi

step "lints (clippy, warnings are errors)"
cargo clippy --release --workspace --all-targets -- -D warnings

step "without MLX (the launcher, guard and compare: clippy, warnings are errors)"
cargo clippy --release --no-default-features -p decode-baseline --lib --bins --benches --examples -- -D warnings

printf '   (%s: %d s)\n' "$step_name" $((SECONDS - step_started))
printf '\nVERIFIED in %d s\n' $((SECONDS - started))
