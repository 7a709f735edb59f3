//! The dense decoder shared by qwen3, qwen2 and llama: mlx_lm's `Attention`, `MLP`,
//! `TransformerBlock` and `Model`, with the architecture differences (qwen3's per-head q/k
//! norms, qwen2's q/k/v biases, llama's optional biases and RoPE scaling) reduced to the flags
//! of [`ModelConfig`]. The operation order is mlx_lm's, line for line, so that the same inputs
//! give the same MLX graph and bit-identical logits on the same backend.

use std::path::Path;

use mlx_rs::error::Exception;
use mlx_rs::fast::ScaledDotProductAttentionMask;
use mlx_rs::ops::indexing::TryIndexOp;
use mlx_rs::ops::transpose_axes;
use mlx_rs::Array;

use super::cache::KvCache;
use super::layers::{rms_norm, swiglu, Embedding, Linear};
use super::rope::Rope;
use crate::config::{ConfigError, ModelConfig};
use crate::weights::{Weights, WeightsError};

/// Why a model folder cannot be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Weights(#[from] WeightsError),
    #[error("failed to build the model from {path}")]
    Mlx {
        path: std::path::PathBuf,
        #[source]
        source: Exception,
    },
}

struct Attention {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    o_proj: Linear,
    /// qwen3's per-head RMS norms (q, k).
    qk_norm: Option<(Array, Array)>,
    rope: Rope,
    n_heads: i32,
    n_kv_heads: i32,
    scale: f32,
    eps: f32,
}

struct Mlp {
    gate_proj: Linear,
    up_proj: Linear,
    down_proj: Linear,
}

struct Block {
    self_attn: Attention,
    mlp: Mlp,
    input_layernorm: Array,
    post_attention_layernorm: Array,
}

/// The output head: its own `lm_head`, or the embedding used as a linear layer (tied).
enum Head {
    Own(Linear),
    Tied,
}

/// A loaded model: configuration and weights.
pub struct Model {
    config: ModelConfig,
    embed_tokens: Embedding,
    layers: Vec<Block>,
    norm: Array,
    head: Head,
}

impl Attention {
    fn forward(&self, x: &Array, mask: Option<ScaledDotProductAttentionMask<'_>>, cache: &mut KvCache) -> Result<Array, Exception> {
        let (b, l) = (x.dim(0), x.dim(1));
        let queries = self.q_proj.forward(x)?;
        let keys = self.k_proj.forward(x)?;
        let values = self.v_proj.forward(x)?;

        let mut queries = queries.reshape(&[b, l, self.n_heads, -1])?;
        let mut keys = keys.reshape(&[b, l, self.n_kv_heads, -1])?;
        if let Some((q_norm, k_norm)) = &self.qk_norm {
            queries = rms_norm(&queries, q_norm, self.eps)?;
            keys = rms_norm(&keys, k_norm, self.eps)?;
        }
        let queries = transpose_axes(&queries, &[0, 2, 1, 3])?;
        let keys = transpose_axes(&keys, &[0, 2, 1, 3])?;
        let values = transpose_axes(values.reshape(&[b, l, self.n_kv_heads, -1])?, &[0, 2, 1, 3])?;

        let offset = cache.offset();
        let queries = self.rope.forward(&queries, offset)?;
        let keys = self.rope.forward(&keys, offset)?;
        let (keys, values) = cache.update_and_fetch(&keys, &values)?;

        let output = mlx_rs::fast::scaled_dot_product_attention(&queries, &keys, &values, self.scale, mask, None)?;
        let output = transpose_axes(&output, &[0, 2, 1, 3])?.reshape(&[b, l, -1])?;
        self.o_proj.forward(&output)
    }
}

impl Mlp {
    fn forward(&self, x: &Array) -> Result<Array, Exception> {
        self.down_proj.forward(&swiglu(&self.gate_proj.forward(x)?, &self.up_proj.forward(x)?)?)
    }
}

impl Block {
    fn forward(&self, x: &Array, causal: bool, cache: &mut KvCache, eps: f32) -> Result<Array, Exception> {
        let mask = causal.then_some(ScaledDotProductAttentionMask::Causal);
        let r = self.self_attn.forward(&rms_norm(x, &self.input_layernorm, eps)?, mask, cache)?;
        let h = x.add(&r)?;
        let r = self.mlp.forward(&rms_norm(&h, &self.post_attention_layernorm, eps)?)?;
        h.add(&r)
    }
}

impl Model {
    /// Loads a model folder: `config.json` and every `model*.safetensors`. The weights are
    /// evaluated here, so no load work is left for the first request.
    pub fn load(dir: &Path) -> Result<Self, LoadError> {
        let config = ModelConfig::load(dir)?;
        let mut weights = Weights::load(dir)?;
        let model = Self::from_weights(config, &mut weights).map_err(|e| match e {
            BuildError::Weights(e) => LoadError::Weights(e),
            BuildError::Mlx(source) => LoadError::Mlx { path: dir.to_owned(), source },
        })?;
        weights.finish()?;
        mlx_rs::transforms::eval(model.arrays()).map_err(|source| LoadError::Mlx { path: dir.to_owned(), source })?;
        Ok(model)
    }

    fn from_weights(config: ModelConfig, w: &mut Weights) -> Result<Self, BuildError> {
        let c = &config;
        let (d, hd) = (c.hidden_size, c.head_dim);
        let embed_tokens = Embedding::load(w, "model.embed_tokens", c.vocab_size, d)?;
        let mut layers = Vec::with_capacity(c.num_hidden_layers);
        for i in 0..c.num_hidden_layers {
            let p = format!("model.layers.{i}");
            let linear = |w: &mut Weights, name: &str, out_dims: i32, in_dims: i32, bias: bool| {
                Linear::load(w, &format!("{p}.{name}"), out_dims, in_dims, bias)
            };
            let qk_norm = if c.qk_norm {
                Some((
                    w.take(&format!("{p}.self_attn.q_norm.weight"), Some(&[hd]))?,
                    w.take(&format!("{p}.self_attn.k_norm.weight"), Some(&[hd]))?,
                ))
            } else {
                None
            };
            let self_attn = Attention {
                q_proj: linear(w, "self_attn.q_proj", c.num_attention_heads * hd, d, c.qkv_bias)?,
                k_proj: linear(w, "self_attn.k_proj", c.num_key_value_heads * hd, d, c.qkv_bias)?,
                v_proj: linear(w, "self_attn.v_proj", c.num_key_value_heads * hd, d, c.qkv_bias)?,
                o_proj: linear(w, "self_attn.o_proj", d, c.num_attention_heads * hd, c.o_bias)?,
                qk_norm,
                rope: Rope::new(hd, &c.rope)?,
                n_heads: c.num_attention_heads,
                n_kv_heads: c.num_key_value_heads,
                scale: (hd as f64).powf(-0.5) as f32,
                eps: c.rms_norm_eps,
            };
            let mlp = Mlp {
                gate_proj: linear(w, "mlp.gate_proj", c.intermediate_size, d, c.mlp_bias)?,
                up_proj: linear(w, "mlp.up_proj", c.intermediate_size, d, c.mlp_bias)?,
                down_proj: linear(w, "mlp.down_proj", d, c.intermediate_size, c.mlp_bias)?,
            };
            layers.push(Block {
                self_attn,
                mlp,
                input_layernorm: w.take(&format!("{p}.input_layernorm.weight"), Some(&[d]))?,
                post_attention_layernorm: w.take(&format!("{p}.post_attention_layernorm.weight"), Some(&[d]))?,
            });
            // llama's sanitize drops precomputed rotary frequencies.
            w.discard(&format!("{p}.self_attn.rotary_emb.inv_freq"));
        }
        let norm = w.take("model.norm.weight", Some(&[d]))?;
        let head = if c.tie_word_embeddings {
            // mlx_lm's sanitize pops lm_head.weight of a tied model.
            w.discard("lm_head.weight");
            w.discard("lm_head.scales");
            w.discard("lm_head.biases");
            Head::Tied
        } else {
            Head::Own(Linear::load(w, "lm_head", c.vocab_size, d, false)?)
        };
        Ok(Model { config, embed_tokens, layers, norm, head })
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// A fresh cache, one [`KvCache`] per layer.
    pub fn new_cache(&self) -> Vec<KvCache> {
        (0..self.layers.len()).map(|_| KvCache::new()).collect()
    }

    /// `Qwen3Model.__call__`: embeddings, the blocks with the "causal" mask when more than one
    /// token is fed (mlx_lm's `create_attention_mask` with a `KVCache`), the final norm.
    /// `ids` has shape `[1, L]`; returns `[1, L, hidden]`.
    pub fn hidden(&self, ids: &Array, cache: &mut [KvCache]) -> Result<Array, Exception> {
        let mut h = self.embed_tokens.forward(ids)?;
        let causal = h.dim(1) > 1;
        for (layer, c) in self.layers.iter().zip(cache.iter_mut()) {
            h = layer.forward(&h, causal, c, self.config.rms_norm_eps)?;
        }
        rms_norm(&h, &self.norm, self.config.rms_norm_eps)
    }

    /// The output head on hidden states `[1, n, hidden]` → logits `[1, n, vocab]`.
    pub fn head(&self, h: &Array) -> Result<Array, Exception> {
        match &self.head {
            Head::Own(lm_head) => lm_head.forward(h),
            Head::Tied => self.embed_tokens.as_linear(h),
        }
    }

    /// mlx_lm's `Model.__call__`: the head at every position.
    pub fn forward(&self, ids: &Array, cache: &mut [KvCache]) -> Result<Array, Exception> {
        self.head(&self.hidden(ids, cache)?)
    }

    /// The controlled loop's prompt forward: the whole prompt, the head at the last position
    /// only (`h[:, -1:, :]`); returns `[1, 1, vocab]`.
    pub fn forward_last(&self, ids: &Array, cache: &mut [KvCache]) -> Result<Array, Exception> {
        let h = self.hidden(ids, cache)?;
        let l = h.dim(1);
        self.head(&h.try_index((.., l - 1..l, ..))?)
    }

    /// Every weight array.
    pub fn arrays(&self) -> Vec<&Array> {
        let mut v = self.embed_tokens.arrays();
        for b in &self.layers {
            let a = &b.self_attn;
            for l in [&a.q_proj, &a.k_proj, &a.v_proj, &a.o_proj, &b.mlp.gate_proj, &b.mlp.up_proj, &b.mlp.down_proj] {
                v.extend(l.arrays());
            }
            if let Some((q, k)) = &a.qk_norm {
                v.extend([q, k]);
            }
            v.extend(a.rope.arrays());
            v.extend([&b.input_layernorm, &b.post_attention_layernorm]);
        }
        v.push(&self.norm);
        if let Head::Own(l) = &self.head {
            v.extend(l.arrays());
        }
        v
    }
}

enum BuildError {
    Weights(WeightsError),
    Mlx(Exception),
}

impl From<WeightsError> for BuildError {
    fn from(e: WeightsError) -> Self {
        BuildError::Weights(e)
    }
}

impl From<Exception> for BuildError {
    fn from(e: Exception) -> Self {
        BuildError::Mlx(e)
    }
}
