#!/usr/bin/env bash
# Issue 42's series with a profile: `calibrate --job jobs/smoke.json` (K sessions, default 8,
# into out/series/profile.json), then ROUNDS times (default 7) two clean main-job sessions back
# to back (A A) and one with the controlled worker slowed by the test-only spin (B, SPIN µs per
# step, default 55), everything on CPU 0 (`--cpus first`). One line per session in
# out/series/sessions.log: round, kind, exit code, wall seconds, session folder. Then:
#   PROFILE=out/series/profile.json tools/measure/compare_series.py target/release/decode-baseline A1 A2 ...
set -u
cd "$(dirname "$0")/../.."
mkdir -p out/series
log=out/series/sessions.log
bin=./target/release/decode-baseline
started=$(date +%s.%N)
taskset -c 0 $bin calibrate --job jobs/smoke.json --sessions "${K:-8}" --out out/series/profile.json \
  --output-root out/series/calibrate >out/series/calibrate.txt 2>out/series/calibrate.stderr
echo "calibrate exit $? $(echo "$(date +%s.%N) - $started" | bc) s" >>"$log"
for i in $(seq 1 "${ROUNDS:-7}"); do
  for kind in A A B; do
    started=$(date +%s.%N)
    if [ "$kind" = B ]; then
      DECODE_BASELINE_TEST_SLOWDOWN_US=${SPIN:-55} DECODE_BASELINE_TEST_SLOWDOWN_ADAPTER=controlled \
        taskset -c 0 $bin run --job jobs/smoke.json >/dev/null 2>&1
    else
      taskset -c 0 $bin run --job jobs/smoke.json >/dev/null 2>&1
    fi
    code=$?
    echo "$i $kind $code $(echo "$(date +%s.%N) - $started" | bc) $(ls -td out/2026* | head -1)" >>"$log"
  done
done
