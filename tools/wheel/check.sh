#!/usr/bin/env bash
# The wheel as a user gets it: build it, install it into a new virtual environment in an empty
# folder outside the repository, and from there, with no Rust on PATH and no checkout: `init`, a
# session, `compare` of it, `env`, and the stock worker's conformance. Prints each step's time,
# the wheel's size and the table. Needs a release build (`cargo build --release`).
#
#   tools/wheel/check.sh            the main job (jobs/smoke.json, a few minutes on 2 cores)
#   tools/wheel/check.sh --quick    one cell, one repetition, and one conformance scenario
#                                   (what ./verify.sh runs)
#
# The environment is installed from the pinned lock (pip --require-hashes), then the wheel with
# --no-deps: the same files the checkout's .venv holds, so the wheel's libmlx is the pinned one.
# `pip install <wheel>` alone resolves the same mlx and mlx-lm from the registry.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
quick=0
[ "${1:-}" = --quick ] && quick=1
python="${DECODE_BASELINE_PYTHON:-python3}"
work="$(mktemp -d -t decode-baseline-wheel.XXXXXX)"
trap 'rm -rf "$work"' EXIT
t0=$SECONDS
timed() { # NAME COMMAND...: runs it, prints its time
  local name=$1 started=$SECONDS
  shift
  "$@"
  printf '   (%s: %d s)\n' "$name" $((SECONDS - started))
}

echo "== build the wheel"
# Not `tee /dev/stderr`: opening it truncates a log file that stderr is redirected to (a CI log
# lost everything written before this line that way).
built=$(timed build "$python" "$repo/tools/wheel/build.py" --out "$work/wheels")
printf '%s\n' "$built"
wheel=$(grep '\.whl$' <<<"$built")
printf 'wheel: %s, %s bytes\n' "$(basename "$wheel")" "$(stat -c %s "$wheel")"

echo "== install into a new environment in $work/user"
mkdir "$work/user"
cd "$work/user"
install_started=$SECONDS
timed venv "$python" -m venv env
timed "install the pinned environment" env/bin/pip install --quiet --require-hashes --no-deps \
  -r "$repo/tools/env/requirements-linux.lock"
timed "install the wheel" env/bin/pip install --quiet --no-deps "$wheel"
# Only the environment's own programs and the system's: no cargo, no checkout.
export PATH="$work/user/env/bin:/usr/bin:/bin"
unset DECODE_BASELINE_REPO DECODE_BASELINE_VENV DECODE_BASELINE_KIT DECODE_BASELINE_WORKSPACE
! command -v cargo >/dev/null || { echo "cargo is on PATH" >&2; exit 1; }
export DECODE_BASELINE_LEASE="$work/lease" DECODE_BASELINE_PROFILE_DIR="$work/profiles" HF_HUB_OFFLINE=1

echo "== decode-baseline init ws"
timed init decode-baseline init ws
echo "== decode-baseline env"
timed env decode-baseline env | tee "$work/env.json"
grep -q '"one_libmlx": true' "$work/env.json"
job=ws/jobs/smoke.json
if [ "$quick" = 1 ]; then
  job=ws/jobs/quick.json
  cat >"$job" <<'EOF'
{"schema_version": 1, "manifest": null, "cells": ["tiny-qwen3.tiny-qwen3-L16.headline"],
 "adapters": ["controlled", "stock"], "output_root": "../out", "repetitions": 1,
 "order": "interleaved", "aa_pair": false}
EOF
fi
echo "== decode-baseline run --job $job"
timed run decode-baseline run --job "$job"
printf 'from the new environment to the first table: %d s\n' $((SECONDS - install_started))
session=$(ls -d ws/out/*/ | head -n 1)
grep -q '+wheel-' "$session/session.json" || { echo "the session does not record the wheel's code version" >&2; exit 1; }
echo "== decode-baseline compare $session"
code=0
timed compare decode-baseline compare "$session" || code=$?
# 0 no difference, 10 faster, 11 slower, 13 inconclusive: a verdict, not a failure of the install.
case $code in 0 | 10 | 11 | 13) ;; *) echo "compare exited $code" >&2; exit 1 ;; esac
echo "== decode-baseline conformance --adapter stock"
scenarios=()
[ "$quick" = 1 ] && scenarios=(--scenario headline_on_the_fixture)
timed conformance decode-baseline conformance --adapter stock "${scenarios[@]}"
printf '\nWHEEL CHECKED in %d s\n' $((SECONDS - t0))
