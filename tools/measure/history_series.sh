#!/usr/bin/env bash
# Issue 45's recorded history: AA (default 20) clean sessions of JOB (default jobs/history.json),
# then STEP (default 16) with the controlled worker slowed by the test-only spin (SPIN µs,
# default 57: about 5 % of the fixture's 1.14 ms per token here, at every decode step), all on
# CPU 0 (`taskset -c 0`, as `--cpus first` puts the workers). BIN (default
# target/release/decode-baseline; copy it elsewhere to keep building meanwhile) runs them. One
# line per session in LOG (default out/history-series.log): index, kind, exit code, wall seconds.
# Then: decode-baseline history out/history (the job's output root).
set -u
cd "$(dirname "$0")/../.."
bin=${BIN:-target/release/decode-baseline}
job=${JOB:-jobs/history.json}
log=${LOG:-out/history-series.log}
mkdir -p "$(dirname "$log")"
i=0
# (`printf 'A %.0s' $(seq 1 0)` would still print one A: the kinds are listed by loops.)
kinds=()
for _ in $(seq 1 "${AA:-20}"); do kinds+=(A); done
for _ in $(seq 1 "${STEP:-16}"); do kinds+=(B); done
for kind in "${kinds[@]}"; do
  i=$((i + 1))
  started=$(date +%s.%N)
  if [ "$kind" = B ]; then
    DECODE_BASELINE_TEST_SLOWDOWN_US=${SPIN:-57} DECODE_BASELINE_TEST_SLOWDOWN_ADAPTER=controlled \
      taskset -c 0 "$bin" run --job "$job" >/dev/null 2>&1
  else
    taskset -c 0 "$bin" run --job "$job" >/dev/null 2>&1
  fi
  echo "$i $kind $? $(echo "$(date +%s.%N) - $started" | bc)" >>"$log"
done
echo done >>"$log"
