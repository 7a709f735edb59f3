//! mlx_lm `smollm3`: llama's decoder with RoPE switched off (NoPE) on the layers whose
//! `no_rope_layers` entry is 0; absent, every `no_rope_layer_interval`-th layer (default 4).
//! smollm3 has no `make_cache`, so every layer keeps a standard KVCache (a sliding layer gets
//! the windowed mask over it).

use crate::config::{CacheKind, ConfigError, Fields, ModelConfig};

pub fn resolve(f: &Fields) -> Result<ModelConfig, ConfigError> {
    let mut c = super::llama::resolve(f)?;
    let n = c.num_hidden_layers;
    let use_rope: Vec<bool> = match f.get("no_rope_layers") {
        Some(v) => {
            let list = v.as_array().ok_or_else(|| f.error("no_rope_layers", "expected a list"))?;
            if list.len() != n {
                return Err(f.error(
                    "no_rope_layers",
                    format!("{} entries for num_hidden_layers {n} (mlx_lm: length mismatch)", list.len()),
                ));
            }
            list.iter()
                .map(|x| match x.as_i64() {
                    Some(v) => Ok(v != 0),
                    None => {
                        x.as_bool().ok_or_else(|| f.error("no_rope_layers", format!("expected 0/1 entries, found {x}")))
                    }
                })
                .collect::<Result<_, _>>()?
        }
        None => {
            let interval = f.positive("no_rope_layer_interval", Some(4))? as usize;
            (0..n).map(|i| (i + 1) % interval != 0).collect()
        }
    };
    for (layer, rope) in c.layers.iter_mut().zip(use_rope) {
        if !rope {
            layer.rope = None;
        }
        layer.cache = CacheKind::Standard;
    }
    Ok(c)
}
