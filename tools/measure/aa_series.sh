#!/usr/bin/env bash
# Issue 42's series: ROUNDS times (default 7) two clean sessions of JOB (default jobs/smoke.json,
# the main job) back to back (A A), then one with the controlled worker slowed by the test-only
# spin (B: SPIN µs, default 40, at SITE, default before_decode_step: every decode step), the
# launcher on CPU 0 like its workers (`--cpus first`). One line per session in LOG (default
# out/aa-series.log): round, kind, exit code, wall seconds, session folder (the newest under
# OUT, the job's output root, default out). KINDS (default "A A B") is one round's sessions.
# Then compare the pairs:
#   tools/measure/compare_series.py target/release/decode-baseline A1 A2 A3 A4 ...   (A/A)
#   tools/measure/compare_series.py target/release/decode-baseline A2 B1 A4 B2 ...   (slowdown)
set -u
cd "$(dirname "$0")/../.."
job=${JOB:-jobs/smoke.json}
log=${LOG:-out/aa-series.log}
mkdir -p out
for i in $(seq 1 "${ROUNDS:-7}"); do
  for kind in ${KINDS:-A A B}; do
    started=$(date +%s.%N)
    if [ "$kind" = B ]; then
      DECODE_BASELINE_TEST_SLOWDOWN_US=${SPIN:-40} DECODE_BASELINE_TEST_SLOWDOWN_ADAPTER=controlled \
        DECODE_BASELINE_TEST_SLOWDOWN_SITE=${SITE:-before_decode_step} \
        taskset -c 0 ./target/release/decode-baseline run --job "$job" >/dev/null 2>&1
    else
      taskset -c 0 ./target/release/decode-baseline run --job "$job" >/dev/null 2>&1
    fi
    code=$?
    echo "$i $kind $code $(echo "$(date +%s.%N) - $started" | bc) $(ls -td "${OUT:-out}"/2026* | head -1)" >>"$log"
  done
done
