"""Derive a model case's stop set and canonical prompts through the pinned environment.

Run by ``decode-baseline manifest add-case`` with the pinned environment's interpreter
(``.venv/bin/python``); prints one JSON object on stdout and nothing else:

    {"stop_ids": [511],
     "prompt_source": "seeded",
     "prompts": [{"length": 16, "ids": [...], "continuation": [...]}, ...]}

Stop set
--------
Exactly what ``mlx_lm.load`` resolves: ``mlx_lm.utils.load_config`` (config.json, whose
``eos_token_id`` is replaced by a truthy one from generation_config.json), then
``mlx_lm.utils.load_tokenizer(path, eos_token_ids=config["eos_token_id"])``; the stop set is the
TokenizerWrapper's ``eos_token_ids`` (which adds the tokenizer's own eos), sorted ascending.

Prompts and continuations
-------------------------
For each length L the prompt is ``stream[:L]`` and the continuation ``stream[L:L + C]`` of one
deterministic id stream of ``max(L) + C`` ids, so a shorter prompt is a prefix of a longer one.
The stream comes from one of two sources:

``text`` (the default; for real tokenizers)
    ``TEXT`` below, repeated (joined by one space) until it encodes to enough ids, encoded once
    with ``add_special_tokens=False`` (no BOS, no chat template) and truncated. Refused when the
    encoding contains the unknown-token id, a special id or a stop id: the tokenizer does not
    cover the text, so the ids would not be a real prompt (the fixtures' made-up vocabulary is
    such a case; use ``seeded``).

``seeded`` (for tokenizers that cannot encode English text, such as the fixtures')
    ``allowed`` = the ids ``0 .. min(len(tokenizer), config vocab_size) - 1`` minus the special
    ids, the added-token ids and the stop set, ascending. Stream id ``k`` (k = 0, 1, ...) is
    ``allowed[int.from_bytes(sha256(b"decode-baseline-prompt:%d" % k).digest()[:8], "big") %
    len(allowed)]``: a counter-mode hash, fully specified here, independent of any random
    number generator's version, the same for every case with the same vocabulary.

Both sources are pure functions of the tokenizer files and the pinned library versions.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

# Plain prose written for this suite; any change moves every text-sourced prompt digest.
TEXT = (
    "The surveyors left the village before sunrise and followed the river north, counting "
    "their steps between the stone markers that an earlier crew had set along the bank. Each "
    "evening they compared the day's figures, argued about the bends where the water had "
    "moved since the last survey, and wrote the agreed numbers into a ledger that would be "
    "copied twice before the winter. Nobody trusted a number that only one person had read "
    "from the chain, and nobody trusted a copy that had not been checked against the "
    "original. By the end of the month the ledger held the length of the river, the height "
    "of every ford, and a careful note of each place where two measurements had disagreed."
)

SEED_DOMAIN = b"decode-baseline-prompt:"


def stop_set(model_dir: Path):
    from mlx_lm.utils import load_config, load_tokenizer

    config = load_config(model_dir)
    tokenizer = load_tokenizer(model_dir, eos_token_ids=config.get("eos_token_id", None))
    return config, tokenizer, sorted(int(i) for i in tokenizer.eos_token_ids)


def special_ids(tokenizer) -> set[int]:
    ids = set(int(i) for i in getattr(tokenizer, "all_special_ids", []) or [])
    try:
        ids.update(int(i) for i in tokenizer.get_added_vocab().values())
    except AttributeError:
        pass
    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is not None:
        ids.add(int(unk))
    return ids


def text_stream(tokenizer, n: int, refused: set[int]) -> list[int]:
    repeats = 1
    while True:
        ids = list(tokenizer.encode(" ".join([TEXT] * repeats), add_special_tokens=False))
        bad = sorted(set(ids) & refused)
        if bad:
            raise SystemExit(
                f"derive_case: the tokenizer encodes the canonical text to unknown, special or "
                f"stop ids {bad[:5]}: it does not cover the text; use --prompt-source seeded"
            )
        if len(ids) >= n:
            return ids[:n]
        repeats += 1


def seeded_stream(vocab: int, n: int, refused: set[int]) -> list[int]:
    allowed = [i for i in range(vocab) if i not in refused]
    if not allowed:
        raise SystemExit("derive_case: no ordinary token ids to draw prompts from")
    out = []
    for k in range(n):
        h = hashlib.sha256(SEED_DOMAIN + str(k).encode()).digest()
        out.append(allowed[int.from_bytes(h[:8], "big") % len(allowed)])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-dir", required=True, type=Path)
    parser.add_argument("--lengths", default="16,512", help="prompt lengths, comma-separated")
    parser.add_argument("--continuation", type=int, default=32, help="continuation length")
    parser.add_argument("--prompt-source", choices=["text", "seeded"], default="text")
    args = parser.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    lengths = [int(x) for x in args.lengths.split(",") if x]
    if not lengths or min(lengths) < 1 or args.continuation < 1:
        raise SystemExit("derive_case: lengths and continuation must be positive")

    config, tokenizer, stops = stop_set(args.model_dir)
    refused = special_ids(tokenizer) | set(stops)
    n = max(lengths) + args.continuation
    if args.prompt_source == "text":
        stream = text_stream(tokenizer, n, refused)
    else:
        vocab = len(tokenizer)
        if isinstance(config.get("vocab_size"), int):
            vocab = min(vocab, config["vocab_size"])
        stream = seeded_stream(vocab, n, refused)

    prompts = [
        {"length": L, "ids": stream[:L], "continuation": stream[L : L + args.continuation]}
        for L in lengths
    ]
    json.dump({"stop_ids": stops, "prompt_source": args.prompt_source, "prompts": prompts}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
