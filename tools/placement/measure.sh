#!/bin/sh
# Per-pair σ of the within-session yardstick per placement (req/findings.md §18): two
# sessions each of jobs/yardstick.json (controlled against controlled-b, L16 headline cell,
# interleaved, 2 repetitions, 40 pairs), one JSON line per session from tools/placement/sigma.py.
# usage: tools/placement/measure.sh [ROUNDS]   (from the checkout root, after a release build)
set -e
rounds=${1:-2}
bin=./target/release/decode-baseline
one() {
    label=$1; shift
    "$@" run --job jobs/yardstick.json $RUN_FLAGS >/dev/null 2>&1
    s=$(ls -td out/yardstick/*/ | head -1)
    printf '%s ' "$label"; python3 tools/placement/sigma.py "$s/session.json"
}
for i in $(seq "$rounds"); do
    RUN_FLAGS="--cpus all" one "all (left to the OS)" $bin
    RUN_FLAGS="--cpus 0" one "workers on CPU 0, launcher free" $bin
    RUN_FLAGS="--cpus all" one "everything on CPU 0 (taskset -c 0)" taskset -c 0 $bin
    RUN_FLAGS="--cpus 0" one "launcher on CPU 1, workers on CPU 0" taskset -c 1 $bin
    RUN_FLAGS="--cpus 1" one "workers on CPU 1, launcher free" $bin
done
