#!/usr/bin/env bash
# Issue 42's series with a profile: `calibrate --job JOB` (K sessions, default 8, into
# OUT/profile.json), then ROUNDS times (default 7) two clean sessions of JOB back to back (A A)
# and one with the controlled worker slowed by the test-only spin (B, SPIN µs per step,
# default 55), everything on CPU 0 (`--cpus first`). One line per session in OUT/sessions.log:
# round, kind, exit code, wall seconds, session folder. Then:
#   PROFILE=OUT/profile.json tools/measure/compare_series.py target/release/decode-baseline A1 A2 ...
#
# JOB defaults to jobs/smoke.json (the main job), OUT to out/series; REPO (a checkout served
# with `--repo`, e.g. a worktree with a case added) to the current one.
set -u
cd "$(dirname "$0")/../.."
job=${JOB:-jobs/smoke.json}
out=${OUT:-out/series}
mkdir -p "$out"
log=$out/sessions.log
bin=./target/release/decode-baseline
repo_args=()
if [ -n "${REPO:-}" ]; then repo_args=(--repo "$REPO"); fi
started=$(date +%s.%N)
taskset -c 0 $bin "${repo_args[@]}" calibrate --job "$job" --sessions "${K:-8}" --out "$out/profile.json" \
  --output-root "$out/calibrate" >"$out/calibrate.txt" 2>"$out/calibrate.stderr"
echo "calibrate exit $? $(echo "$(date +%s.%N) - $started" | bc) s" >>"$log"
for i in $(seq 1 "${ROUNDS:-7}"); do
  for kind in A A B; do
    started=$(date +%s.%N)
    if [ "$kind" = B ]; then
      DECODE_BASELINE_TEST_SLOWDOWN_US=${SPIN:-55} DECODE_BASELINE_TEST_SLOWDOWN_ADAPTER=controlled \
        taskset -c 0 $bin "${repo_args[@]}" run --job "$job" >/dev/null 2>&1
    else
      taskset -c 0 $bin "${repo_args[@]}" run --job "$job" >/dev/null 2>&1
    fi
    code=$?
    root=$(python3 -c 'import json,os,sys; j=sys.argv[1]; print(os.path.normpath(os.path.join(os.path.dirname(j), json.load(open(j))["output_root"])))' "$job")
    echo "$i $kind $code $(echo "$(date +%s.%N) - $started" | bc) $(ls -td "$root"/2026* | head -1)" >>"$log"
  done
done
