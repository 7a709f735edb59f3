#!/bin/sh
# Per-pair σ of the within-session yardstick after each candidate of issue 28, part 4
# (req/findings.md §22): the launcher blocked while a request runs (the default) against
# polling every 1 ms (DECODE_BASELINE_GATE_WAIT=poll), and the A B / B A switch (the default)
# against a fixed A B order in every round (DECODE_BASELINE_GRANT_ORDER=fixed, an experiment
# knob of the measuring build only). `eval_ns` against `build_ns` and even against odd pairs
# come from the same sessions (tools/placement/sigma.py). The variants alternate within each
# round, so a drift of the host lands on all of them.
# usage: tools/placement/candidates.sh [ROUNDS] [CPUS]   (after a release build; CPUS: first)
set -e
rounds=${1:-4}
cpus=${2:-first}
bin=./target/release/decode-baseline
one() {
    label=$1; shift
    env "$@" $bin run --job jobs/yardstick.json --cpus "$cpus" >/dev/null 2>&1
    s=$(ls -td out/yardstick/*/ | head -1)
    printf '%s\t' "$label"; python3 tools/placement/sigma.py "$s/session.json"
}
for i in $(seq "$rounds"); do
    one "blocked, A B / B A" DECODE_BASELINE_GATE_WAIT=block
    one "polling, A B / B A" DECODE_BASELINE_GATE_WAIT=poll
    one "blocked, fixed A B" DECODE_BASELINE_GRANT_ORDER=fixed
done
