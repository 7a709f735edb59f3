#!/usr/bin/env bash
# Issue 48's series: ROUNDS times (default 2) two clean sessions of jobs/ttft.json back to back
# (A A: the fixture's L512 headline cell, six interleaved runs a side), then one with the
# controlled worker's time to first token slowed by the test-only spin at its seed forward (B,
# SPIN µs per request, default 3100: 5 % of the fixture's 62 ms). One line per session in
# out/ttft-series.log: round, kind, exit code, wall seconds, session folder. Then compare:
#   QUANTITY=first_token tools/measure/compare_series.py target/release/decode-baseline A1 A2 ...  (A/A)
#   QUANTITY=first_token tools/measure/compare_series.py target/release/decode-baseline A2 B1 ...  (slowed)
set -u
cd "$(dirname "$0")/../.."
log=out/ttft-series.log
mkdir -p out
for i in $(seq 1 "${ROUNDS:-2}"); do
  for kind in A A B; do
    started=$(date +%s.%N)
    if [ "$kind" = B ]; then
      DECODE_BASELINE_TEST_SLOWDOWN_US=${SPIN:-3100} DECODE_BASELINE_TEST_SLOWDOWN_ADAPTER=controlled \
        DECODE_BASELINE_TEST_SLOWDOWN_SITE=before_seed_forward \
        ./target/release/decode-baseline run --job jobs/ttft.json >/dev/null 2>&1
    else
      ./target/release/decode-baseline run --job jobs/ttft.json >/dev/null 2>&1
    fi
    code=$?
    echo "$i $kind $code $(echo "$(date +%s.%N) - $started" | bc) $(ls -td out/ttft/2026* | head -1)" >>"$log"
  done
done
