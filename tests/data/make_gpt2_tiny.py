"""Write a tiny random GPT-2 model with mlx_lm's own classes into OUT, with the tiny fixture's
tokenizer files: an architecture the controlled loop does not implement, for `bench` tests.

    .venv/bin/python tests/data/make_gpt2_tiny.py OUT
"""

import json
import shutil
import sys
from pathlib import Path

import mlx.core as mx
from mlx.utils import tree_flatten, tree_map
from mlx_lm.models import gpt2

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
mx.random.seed(0)
config = {
    "model_type": "gpt2",
    "n_ctx": 1024,
    "n_embd": 64,
    "n_head": 4,
    "n_layer": 2,
    "n_positions": 1024,
    "layer_norm_epsilon": 1e-5,
    "vocab_size": 512,
}
model = gpt2.Model(gpt2.ModelArgs.from_dict(config))
model.update(tree_map(lambda p: mx.random.normal(p.shape, dtype=p.dtype) * 0.2, model.parameters()))
mx.save_safetensors(str(out / "model.safetensors"), dict(tree_flatten(model.parameters())))
(out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
fixture = Path(__file__).resolve().parents[2] / "fixtures" / "tiny-qwen3"
for name in ["tokenizer.json", "tokenizer_config.json", "generation_config.json"]:
    shutil.copy(fixture / name, out / name)
