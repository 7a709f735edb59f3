#!/bin/sh
# One `bench --ranks 2` per architecture that both loops shard (req/distributed.md), at held-out
# dimensions (tools/graph/make_heldout.py), plus the fixture: each model as one process and as
# two ranks over MLX's ring backend on loopback, every cell's argmax agreement and reference
# streams, and the table of what the second rank buys (req/findings.md §28).
#
# usage: tools/measure/rank_families.sh OUT [KIND:VARIANT ...]   (after a release build)
# default: qwen3:float32 qwen2:q4g32 llama:bfloat16 ministral3:float32, and fixtures/tiny-qwen3
set -e
out=${1:?usage: rank_families.sh OUT [KIND:VARIANT ...]}
shift
[ $# -gt 0 ] || set -- fixture qwen3:float32 qwen2:q4g32 llama:bfloat16 ministral3:float32
mkdir -p "$out"
for family in "$@"; do
    if [ "$family" = fixture ]; then
        model=fixtures/tiny-qwen3
    else
        model=$(tools/measure/heldout_model.sh "$family" "$out/models")
    fi
    name=$(basename "$model")
    echo "== $name"
    ./target/release/decode-baseline bench "$model" -p 16 --prompt-source seeded --ranks 2 -o "$out/sessions" \
        >"$out/$name.txt" 2>"$out/$name.err" || echo "exit $? (see $out/$name.err)"
    grep -h "^session:\|^group:" "$out/$name.err" "$out/$name.txt" | sort -u
    grep -h "argmax controlled/stock\|reference streams" "$out/$name.txt" | sort | uniq -c
    sed -n '/^by ranks/,/^bench to table/p' "$out/$name.txt"
done
