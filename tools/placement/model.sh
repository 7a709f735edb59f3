#!/bin/sh
# The placement on an evaluation-bound model (req/findings.md §22): the `small` shape (8 layers,
# hidden 256, about 9 ms of MLX evaluation per step on the CPU backend) written by
# tools/fixture/make_fixture.py, then `bench` of controlled against stock, headline only,
# interleaved, alternating `--cpus first` and `--cpus all` round by round. One JSON line per
# session from tools/placement/sigma.py (controlled against stock).
# usage: tools/placement/model.sh [ROUNDS] [DIR]   (after a release build; DIR: where the model goes)
set -e
rounds=${1:-2}
model=${2:-out/placement-model/small}
bin=./target/release/decode-baseline
[ -f "$model/config.json" ] || .venv/bin/python tools/fixture/make_fixture.py --shape small --variant tiny-qwen3 --out "$model" >/dev/null
for i in $(seq "$rounds"); do
    for cpus in first all; do
        root=out/placement-model/$cpus
        $bin bench "$model" -p 16 -m headline -a controlled,stock --warmup-requests 2 --measured-requests 10 \
            --cpus "$cpus" -o "$root" >/dev/null 2>&1
        s=$(ls -td "$root"/*/ | head -1)
        printf '%s\t' "--cpus $cpus"; python3 tools/placement/sigma.py "$s/session.json" controlled stock
    done
done
