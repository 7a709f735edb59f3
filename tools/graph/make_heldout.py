"""Writes a model of one of the generator's architectures at held-out dimensions.

    .venv/bin/python tools/graph/make_heldout.py KIND --variant VARIANT --out DIR

The model is `tools/fixture/reference_logits.py --make-tiny KIND --variant VARIANT`, written
by mlx_lm's own `Model` class and quantized by its own `quantize_model` (seed 0, the same
code path), with the layer stack replaced by `HELDOUT`: dimensions that no fixture, no
`--shape` and no test of this repository uses (hidden 192, 3 layers, 6 query / 2 KV heads
of 32, MLP 384, vocabulary 768; a sliding window of 48 where the architecture has one). Every
dimension is a multiple of 64, so every group size up to 64 quantizes every matrix. The
architecture's own settings (RoPE scaling, norms, sliding pattern, experts) are the
generator's; phi3's longrope factors are re-sized to the new rotary width.

Only `config.json` and `model.safetensors` are written: the graph comparison needs no
tokenizer. Copy `fixtures/tiny-qwen3/tokenizer*.json` beside them for a session.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixture"))

import reference_logits  # noqa: E402

HELDOUT = {
    "hidden_size": 192,
    "num_hidden_layers": 3,
    "intermediate_size": 384,
    "num_attention_heads": 6,
    "num_key_value_heads": 2,
    "vocab_size": 768,
}
HEAD_DIM = 32
WINDOW = 48

_generator_config = reference_logits.tiny_config


def heldout_config(kind: str) -> dict:
    """The generator's config of KIND with the held-out stack in place of its tiny one."""
    config = _generator_config(kind)
    text = config["text_config"] if kind == "gemma3" else config
    text.update(HELDOUT)
    if kind == "gemma3":
        text.pop("vocab_size")
        config["vocab_size"] = HELDOUT["vocab_size"]
    if "head_dim" in text:
        text["head_dim"] = HEAD_DIM
    if "query_pre_attn_scalar" in text:
        text["query_pre_attn_scalar"] = HEAD_DIM
    if text.get("sliding_window"):
        text["sliding_window"] = WINDOW
    if isinstance(text.get("layer_types"), list):
        # The generator's pattern, repeated over the held-out stack (one entry per layer).
        pattern = text["layer_types"]
        text["layer_types"] = [pattern[i % len(pattern)] for i in range(HELDOUT["num_hidden_layers"])]
    if "moe_intermediate_size" in text:
        text["moe_intermediate_size"] = 128
    if text["model_type"] == "phi3":
        half = int(HELDOUT["hidden_size"] // HELDOUT["num_attention_heads"] * text["partial_rotary_factor"]) // 2
        text["rope_scaling"]["short_factor"] = [1.0 + 0.05 * i for i in range(half)]
        text["rope_scaling"]["long_factor"] = [1.0 + 0.5 * i for i in range(half)]
    return config


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", help="a --make-tiny KIND of tools/fixture/reference_logits.py")
    ap.add_argument("--variant", default="float32", help="float32, bfloat16, qBgG, mixed_3_6, mxfp4, ...")
    ap.add_argument("--out", type=Path, required=True, help="an existing, empty directory")
    args = ap.parse_args(argv)
    if not args.out.is_dir() or any(args.out.iterdir()):
        ap.error(f"--out {args.out} must be an existing, empty directory")
    # make_tiny reads the config through the module's tiny_config: the held-out stack replaces
    # the tiny one there, and every other step (weights, sanitize, quantization) is the generator's.
    reference_logits.tiny_config = heldout_config
    try:
        reference_logits.make_tiny(args.kind, args.out, args.variant)
    finally:
        reference_logits.tiny_config = _generator_config
    return 0


if __name__ == "__main__":
    sys.exit(main())
