#!/usr/bin/env bash
# Full verification, the README's test command: provisions the pinned Python environment (first
# run only), builds everything, runs every test, and checks that the code is formatted and
# clippy-clean, with and without MLX (the launcher, guard and compare build without it).
# Prints each step's time and VERIFIED at the end; any failure stops it with a non-zero exit.
#
# One build serves the tests; the controlled loop's tests (the long bit-identity ones, against
# mlx_lm in a Python subprocess), the wheel's check and the lints run beside the rest of the
# workspace's tests, the two lanes about as long; the MLX-free build is checked by
# clippy on clippy's own artifacts instead of being built a second time in a target folder of
# its own.
set -euo pipefail
cd "$(dirname "$0")"

started=$SECONDS
step_started=$SECONDS
step_end() {
  if [ -n "${step_name:-}" ]; then printf '   (%s: %d s)\n' "$step_name" $((SECONDS - step_started)); fi
}
step() {
  step_end
  step_name=$1
  step_started=$SECONDS
  printf '\n== %s\n' "$1"
}

step "format (cargo fmt --check, rustfmt.toml)"
cargo fmt --all --check

step "build (release, what the tests run, with the controlled worker), the pinned Python environment and Chromium beside it"
# Provisioning mostly downloads and unpacks; the compiler has the cores meanwhile. The MLX
# bindings' build script provisions too and waits on the same lock, then finds it done.
mkdir -p target
python3 tools/env/provision.py >target/verify-provision.log 2>&1 &
provisioning=$!
# Debian's chromium for the report page's browser test, where no Chromium is found.
tools/env/chromium.sh >target/verify-chromium.log 2>&1 &
browser=$!
# Everything the tests run (the benches are left to clippy's check below: compiling them, with
# criterion optimized, is about 40 CPU-s that no test uses). --timings writes where the time went
# to target/cargo-timings/.
cargo build --release --workspace --lib --bins --tests --examples --timings
wait "$provisioning" || { cat target/verify-provision.log >&2; exit 1; }
wait "$browser" || { cat target/verify-chromium.log >&2; exit 1; }

# maturin runs Cargo on the root package alone. crates/workspace-hack gives that build the
# workspace build's features, so it finds every artifact current; a dependency added without
# `cargo hakari generate` would make it recompile crates (four minutes of this suite, once) and
# relink the executable the tests are about to run. This checks now, as maturin will build, before
# any test starts, and says so.
stale=$(cargo build --release -p decode-baseline --bins --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and not m["fresh"]:
        print(m["package_id"].split("#")[-1], m["target"]["name"])')
if [ -n "$stale" ]; then
  printf 'the root package built alone recompiled what the workspace build had built:\n%s\n' "$stale" >&2
  echo 'regenerate crates/workspace-hack: cargo install cargo-hakari; cargo hakari generate' >&2
  exit 1
fi

step "tests, and the wheel and the lints beside them"
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
# Two lanes on the machine's cores, which end within seconds of each other (338 s each, fresh,
# 2026-12-06). The rest of the workspace's tests; beside them the controlled loop's tests (the
# long bit-identity ones, against mlx_lm in a Python subprocess), the wheel installed into a new
# environment (with its own lease and folder), then the lints, which check on clippy's own
# artifacts and need no lock the running tests hold.
side_log=target/verify-side-lane.log
# Runs in a subshell: its steps are timed on their own, the main lane's step is left alone.
side_lane() {
  step_name=
  step "decode-baseline-controlled tests"
  (cd crates/controlled && for exe in $controlled_tests; do echo "     Running $exe"; "$exe" || exit 1; done) \
    || { echo "decode-baseline-controlled's tests failed"; return 1; }
  step "the wheel, installed into a new environment outside the repository (tools/wheel/check.sh --quick)"
  tools/wheel/check.sh --quick || return 1
  step "lints (clippy, warnings are errors)"
  cargo clippy --release --workspace --all-targets -- -D warnings || return 1
  step "without MLX (the launcher, guard and compare: clippy, warnings are errors)"
  cargo clippy --release --no-default-features -p decode-baseline -p decode-baseline-launcher --lib --bins --benches --examples -- -D warnings \
    || return 1
  step_end
}
side_lane >"$side_log" 2>&1 &
side=$!
rest=0
cargo test --release --workspace --exclude decode-baseline-controlled || rest=$?
side_rc=0
wait "$side" || side_rc=$?
printf '\n-- decode-baseline-controlled tests, the wheel, then the lints (run beside the tests above):\n'
cat "$side_log"
if [ "$rest" -ne 0 ] || [ "$side_rc" -ne 0 ]; then
  echo "failed (workspace tests exit $rest; controlled tests, the wheel and the lints exit $side_rc)" >&2
  exit 1
fi

step_end
printf '\nVERIFIED in %d s\n' $((SECONDS - started))
