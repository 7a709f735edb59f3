#!/bin/sh
# Prints the folder of a generated model at held-out dimensions (tools/graph/make_heldout.py)
# with the fixture's tokenizer beside it, ready for a session, writing it first if it is not
# there yet.
#
# usage: tools/measure/heldout_model.sh KIND:VARIANT DIR   (the model goes to DIR/KIND-VARIANT)
set -e
family=${1:?usage: heldout_model.sh KIND:VARIANT DIR}
kind=${family%%:*}
variant=${family#*:}
model="${2:?usage: heldout_model.sh KIND:VARIANT DIR}/$kind-$variant"
if [ ! -f "$model/config.json" ]; then
    mkdir -p "$model"
    .venv/bin/python tools/graph/make_heldout.py "$kind" --variant "$variant" --out "$model" >&2
    cp fixtures/tiny-qwen3/tokenizer*.json "$model/"
fi
echo "$model"
