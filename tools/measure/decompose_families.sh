#!/bin/sh
# One bench per architecture family at held-out dimensions (tools/graph/make_heldout.py), each
# at one CPU and at every CPU, so that every headline ratio is printed taken apart (the same
# synchronous work, the headline-only part, the placement's effect: req/bench.md, "Where each
# headline ratio comes from") with its argmax agreement (req/findings.md §27).
#
# usage: tools/measure/decompose_families.sh OUT [KIND:VARIANT ...]   (after a release build)
# default families: qwen3:float32 llama:bfloat16 gemma3_text:q3g32 phi3:mixed_3_6
#                   qwen3_moe:q4g32 (gpt_oss is left out: its held-out stack of 3 layers
#                   is odd, which the controlled loop refuses, as mlx_lm would skip a layer)
set -e
out=${1:?usage: decompose_families.sh OUT [KIND:VARIANT ...]}
shift
[ $# -gt 0 ] || set -- qwen3:float32 llama:bfloat16 gemma3_text:q3g32 phi3:mixed_3_6 qwen3_moe:q4g32
mkdir -p "$out"
for family in "$@"; do
    kind=${family%%:*}
    variant=${family#*:}
    model=$(tools/measure/heldout_model.sh "$family" "$out/models")
    echo "== $kind $variant"
    ./target/release/decode-baseline bench "$model" -p 16 --cpus 0 --cpus all -o "$out/sessions" \
        >"$out/$kind-$variant.txt" 2>"$out/$kind-$variant.err" || echo "exit $? (see $out/$kind-$variant.err)"
    sed -n '/^where each headline ratio/,/^energy/p;/^by placement/,$p' "$out/$kind-$variant.txt" | grep -v '^energy'
    grep -h "argmax controlled/stock\|reference streams" "$out/$kind-$variant.txt" | sort -u
done
