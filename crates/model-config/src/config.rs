//! The model folder's `config.json`, read the way mlx_lm's `ModelArgs` classes read it, and
//! resolved into one [`ModelConfig`]: the decoder's shape and the variant of every part (norm,
//! attention, MLP, RoPE per layer, cache per layer, head) that the controlled worker's one
//! decoder implements.
//!
//! What each `model_type` reads, with which defaults, lives in its own file under
//! [`crate::arch`], and so does the entry ([`ModelConfig::load`], [`ModelConfig::parse`]), which
//! dispatches on `model_type` through that module's table; this module holds what the
//! architectures share and depends on none of them: typed field access with errors naming the
//! field, the RoPE scaling kinds of mlx_lm's `initialize_rope`, and the `quantization` block of
//! mlx_lm's `load_model`. Anything the decoder does not implement (another `model_type`, a RoPE
//! kind, a quantization setting, a field that changes the computation) is refused with a
//! [`ConfigError`] naming the field, so a worker reports it at validation, before any model is
//! loaded or any time is measured.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Why a `config.json` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("failed to read model config {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to parse model config {path}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("unsupported model_type in {path}: expected one of {expected}, found {found:?}")]
    UnsupportedModelType { path: PathBuf, found: String, expected: String },
    #[error("field `{field}` in {path}: {reason}")]
    Field { path: PathBuf, field: String, reason: String },
    #[error(
        "unsupported quantization in {path}: field `{field}` is {found}; supported: modes affine \
         (bits 2, 3, 4, 5, 6, 8; group sizes 32, 64, 128), mxfp4, nvfp4, mxfp8, per-module overrides"
    )]
    UnsupportedQuantization { path: PathBuf, field: String, found: String },
    #[error(
        "unsupported rope scaling in {path}: field `{field}` is {found:?}; supported: default, linear, \
         llama3, yarn, longrope"
    )]
    UnsupportedRope { path: PathBuf, field: String, found: String },
}

/// A quantization mode of `mx.quantize` (the string mlx passes on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantMode {
    Affine,
    Mxfp4,
    Nvfp4,
    Mxfp8,
}

impl QuantMode {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "affine" => QuantMode::Affine,
            "mxfp4" => QuantMode::Mxfp4,
            "nvfp4" => QuantMode::Nvfp4,
            "mxfp8" => QuantMode::Mxfp8,
            _ => return None,
        })
    }

    /// The name mlx takes, NUL-terminated for the C API.
    pub fn c_name(self) -> &'static std::ffi::CStr {
        match self {
            QuantMode::Affine => c"affine",
            QuantMode::Mxfp4 => c"mxfp4",
            QuantMode::Nvfp4 => c"nvfp4",
            QuantMode::Mxfp8 => c"mxfp8",
        }
    }

    /// `mlx.nn`'s `_defaults_for_mode`: (group size, bits) when a setting is null.
    pub fn defaults(self) -> (i32, i32) {
        match self {
            QuantMode::Affine => (64, 4),
            QuantMode::Mxfp4 => (32, 4),
            QuantMode::Nvfp4 => (16, 4),
            QuantMode::Mxfp8 => (32, 8),
        }
    }
}

/// One layer's packing: what `to_quantized(group_size, bits, mode)` builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuantParams {
    pub group_size: i32,
    pub bits: i32,
    pub mode: QuantMode,
}

/// `config.json`'s `quantization` as mlx_lm's `load_model` applies it: a per-module entry
/// (`"model.layers.0.mlp.down_proj": {...}` or `false`) decides first; a module without one is
/// quantized when its `.scales` exist, with the packing inferred from the tensor shapes
/// (`infer_quant_config`); `default` is the top level, used for entries that are `true`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quantization {
    pub default: QuantParams,
    /// Module path → its packing, or `None` for an entry `false` (left dense).
    pub modules: BTreeMap<String, Option<QuantParams>>,
}

/// How rotary position embedding frequencies are chosen (mlx_lm `initialize_rope`).
#[derive(Debug, Clone, PartialEq)]
pub enum RopeScaling {
    /// `nn.RoPE(dims, traditional, base, scale)`; `scale` is 1 for "default", 1/factor for
    /// "linear".
    Plain { scale: f32 },
    /// mlx_lm's `Llama3RoPE`: precomputed frequencies, `base=None`, `scale=1`.
    Llama3 { factor: f64, low_freq_factor: f64, high_freq_factor: f64, original_max_position_embeddings: f64 },
    /// mlx_lm's `SuScaledRoPE` (phi3 "su"/"longrope"): frequencies `long_factor * base^(2i/d)`,
    /// the input's rotated part multiplied by `scale` first. `long_factor` has one entry per
    /// frequency, or one for all (`scalar`).
    SuScaled { long_factor: Vec<f64>, scalar: bool, scale: f64 },
    /// mlx_lm's `YarnRoPE`.
    Yarn {
        factor: f64,
        original_max_position_embeddings: f64,
        beta_fast: f64,
        beta_slow: f64,
        mscale: f64,
        mscale_all_dim: f64,
    },
}

/// Rotary position embedding settings of one layer.
#[derive(Debug, Clone, PartialEq)]
pub struct Rope {
    /// Features rotated (the head dim, or a fraction of it).
    pub dims: i32,
    pub base: f32,
    pub traditional: bool,
    pub scaling: RopeScaling,
}

/// Where the output head comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    /// Its own `lm_head`.
    Own,
    /// The embedding used as a linear layer (a tied `lm_head.weight` is dropped, as sanitize does).
    Tied,
    /// gemma3's sanitize: tied exactly when the folder has no `lm_head.weight`.
    TiedUnlessPresent,
}

/// The q/k/v projections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Qkv {
    /// `q_proj`, `k_proj`, `v_proj`, with or without biases.
    Separate { bias: bool },
    /// phi3's `qkv_proj`, split after the matmul.
    Fused,
}

/// Per-head RMS norms on queries and keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QkNorm {
    None,
    /// qwen3: on `[B, L, heads, head_dim]`, before the transpose.
    BeforeTranspose,
    /// gemma3: on `[B, heads, L, head_dim]`, after it.
    AfterTranspose,
}

/// The RMS norm's weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Norm {
    /// `nn.RMSNorm`: `rms_norm(x, w, eps)`.
    Plain,
    /// gemma3's `RMSNorm`: `rms_norm(x, 1 + w, eps)`.
    OnePlus,
}

/// The residual block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block {
    /// `h = x + attn(norm(x)); out = h + mlp(norm(h))`.
    PreNorm,
    /// gemma3: pre- and post-norms around attention and MLP, `clip_residual` additions.
    Sandwich,
}

/// The feed-forward network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mlp {
    /// `down(silu(gate(x)) * up(x))`.
    SwiGlu { bias: bool },
    /// phi3: `gate_up_proj`, split in two, then as above.
    FusedSwiGlu,
    /// gemma3: `down(gelu_approx(gate(x)) * up(x))`.
    GeluApprox,
}

/// ministral3's llama-4 attention scaling: queries times
/// `1 + beta * log(1 + floor(position / original_max_position_embeddings))`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Llama4Scaling {
    pub beta: f64,
    pub original_max_position_embeddings: f64,
}

/// How a mixture-of-experts block chooses and weighs its experts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Router {
    /// qwen3_moe: `softmax(gate(x), precise)`, the top k of those probabilities, divided by
    /// their sum when `norm_topk_prob`.
    SoftmaxTopK { norm_topk_prob: bool },
    /// gpt_oss: the top k of `router(x)`, then `softmax(precise)` over those k.
    TopKSoftmax,
}

/// The experts' activation (`SwitchGLU`'s `activation(x_up, x_gate)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpertActivation {
    /// `swiglu(gate, x) = silu(gate) * x`.
    SwiGlu,
    /// gpt_oss's `swiglu_oai`: gate clipped above at 7, x clipped to +-7,
    /// `(x + 1) * gate * sigmoid(1.702 * gate)`.
    SwigluOai,
}

/// A sparse (mixture-of-experts) MLP: a router, then `SwitchGLU` over the chosen experts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moe {
    pub num_experts: i32,
    /// Experts per token.
    pub top_k: i32,
    /// Each expert's hidden size.
    pub intermediate_size: i32,
    pub router: Router,
    pub activation: ExpertActivation,
    /// Biases on the router and the experts (gpt_oss).
    pub bias: bool,
    /// Weight names under `<layer>.mlp.`: the router (`gate`, `router`) and the stacked experts
    /// (`switch_mlp`, `experts`).
    pub router_name: &'static str,
    pub experts_name: &'static str,
    /// qwen3_moe's sanitize: per-expert weights under `<layer>.mlp.<name>.<e>.` are stacked.
    pub per_expert: Option<&'static str>,
}

/// One layer's cache (mlx_lm's `make_cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheKind {
    /// `KVCache`.
    Standard,
    /// `RotatingKVCache(max_size)`.
    Rotating { max_size: i32 },
}

/// One decoder layer.
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    /// `None`: no RoPE (smollm3's NoPE layers).
    pub rope: Option<Rope>,
    /// Takes the sliding-window mask instead of the full one.
    pub sliding: bool,
    pub cache: CacheKind,
    /// The sparse MLP of [`ModelConfig::moe`] instead of the dense one.
    pub moe: bool,
}

/// Which layer's cache each mask is made from (mlx_lm builds each once per forward from one
/// layer's cache: `create_attention_mask(h, cache[i], window_size)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Masks {
    pub full: usize,
    /// Layer index and window size of the sliding-window mask.
    pub sliding: Option<(usize, i32)>,
}

/// Everything the decoder needs, resolved from `config.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    /// The `model_type` named in config.json.
    pub model_type: String,
    pub hidden_size: i32,
    pub num_hidden_layers: usize,
    pub intermediate_size: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub head_dim: i32,
    pub rms_norm_eps: f32,
    pub vocab_size: i32,
    /// Weight-name prefix of the decoder (`model`, or gemma3's `language_model.model`).
    pub prefix: &'static str,
    /// Weight-name prefix of the head (`lm_head`, or `language_model.lm_head`).
    pub head_prefix: &'static str,
    /// Weight-name prefixes the architecture's sanitize drops (a vision tower, ...).
    pub dropped: &'static [&'static str],
    pub head: Head,
    pub qkv: Qkv,
    pub o_bias: bool,
    pub qk_norm: QkNorm,
    /// The attention scale passed to SDPA.
    pub attention_scale: f32,
    pub llama4_scaling: Option<Llama4Scaling>,
    /// gpt_oss: a learned per-head attention sink (`self_attn.sinks`) passed to SDPA.
    pub attention_sinks: bool,
    pub norm: Norm,
    pub block: Block,
    pub mlp: Mlp,
    /// The sparse MLP of the layers marked `moe`.
    pub moe: Option<Moe>,
    /// gemma3: embeddings times `sqrt(hidden_size)` rounded to bfloat16.
    pub embed_scale: bool,
    pub layers: Vec<Layer>,
    pub masks: Masks,
    pub quantization: Option<Quantization>,
}

pub(crate) fn field_error(path: &Path, field: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Field { path: path.to_owned(), field: field.to_owned(), reason: reason.into() }
}

/// Typed access to the config's fields (or a nested object's), with errors naming them.
pub struct Fields<'a> {
    map: &'a Map<String, Value>,
    path: &'a Path,
    /// `text_config.` for a nested object, so errors name the full field.
    prefix: String,
}

impl<'a> Fields<'a> {
    /// The fields of the whole config, read from `path` (named in errors).
    pub(crate) fn root(map: &'a Map<String, Value>, path: &'a Path) -> Self {
        Fields { map, path, prefix: String::new() }
    }

    /// The full name of a field, for errors.
    pub fn name(&self, field: &str) -> String {
        format!("{}{field}", self.prefix)
    }

    pub fn error(&self, field: &str, reason: impl Into<String>) -> ConfigError {
        field_error(self.path, &self.name(field), reason)
    }

    /// A field that is absent or `null` reads as `None`.
    pub fn get(&self, field: &str) -> Option<&'a Value> {
        self.map.get(field).filter(|v| !v.is_null())
    }

    /// A nested object (gemma3's `text_config`).
    pub fn object(&self, field: &str) -> Result<Fields<'a>, ConfigError> {
        match self.get(field) {
            Some(Value::Object(map)) => Ok(Fields { map, path: self.path, prefix: format!("{}{field}.", self.prefix) }),
            Some(other) => Err(self.error(field, format!("expected an object, found {other}"))),
            None => Err(self.error(field, "required and missing")),
        }
    }

    /// A copy of this object with some fields replaced (gemma3 writes into its text_config).
    pub fn with(&self, edits: &[(&str, Value)]) -> Map<String, Value> {
        let mut m = self.map.clone();
        for (k, v) in edits {
            m.insert((*k).to_owned(), v.clone());
        }
        m
    }

    /// Fields over another map, errors under this one's names.
    pub fn over<'b>(&self, map: &'b Map<String, Value>) -> Fields<'b>
    where
        'a: 'b,
    {
        Fields { map, path: self.path, prefix: self.prefix.clone() }
    }

    pub fn req_str(&self, field: &str) -> Result<&'a str, ConfigError> {
        match self.get(field) {
            Some(Value::String(s)) => Ok(s.as_str()),
            Some(other) => Err(self.error(field, format!("expected a string, found {other}"))),
            None => Err(self.error(field, "required and missing")),
        }
    }

    pub fn int(&self, field: &str) -> Result<Option<i64>, ConfigError> {
        self.get(field)
            .map(|v| v.as_i64().ok_or_else(|| self.error(field, format!("expected an integer, found {v}"))))
            .transpose()
    }

    /// A positive 32-bit integer, `default` when absent (an error naming the field when `None`).
    pub fn positive(&self, field: &str, default: Option<i64>) -> Result<i32, ConfigError> {
        let value = match (self.int(field)?, default) {
            (Some(v), _) | (None, Some(v)) => v,
            (None, None) => return Err(self.error(field, "required and missing")),
        };
        i32::try_from(value)
            .ok()
            .filter(|v| *v > 0)
            .ok_or_else(|| self.error(field, format!("expected a positive 32-bit integer, found {value}")))
    }

    pub fn float(&self, field: &str) -> Result<Option<f64>, ConfigError> {
        self.get(field)
            .map(|v| v.as_f64().ok_or_else(|| self.error(field, format!("expected a number, found {v}"))))
            .transpose()
    }

    pub fn req_float(&self, field: &str) -> Result<f64, ConfigError> {
        self.float(field)?.ok_or_else(|| self.error(field, "required and missing"))
    }

    pub fn boolean(&self, field: &str) -> Result<Option<bool>, ConfigError> {
        self.get(field)
            .map(|v| v.as_bool().ok_or_else(|| self.error(field, format!("expected a boolean, found {v}"))))
            .transpose()
    }

    /// The shape fields every dense decoder shares, with the architecture's defaults.
    pub fn dims(&self, defaults: &DimDefaults) -> Result<Dims, ConfigError> {
        let hidden_size = self.positive("hidden_size", defaults.hidden_size)?;
        let num_attention_heads = self.positive("num_attention_heads", defaults.num_attention_heads)?;
        let kv_default = match defaults.num_key_value_heads {
            KvDefault::Required => None,
            KvDefault::Heads => Some(num_attention_heads as i64),
            KvDefault::Value(n) => Some(n),
        };
        let num_key_value_heads = self.positive("num_key_value_heads", kv_default)?;
        if num_attention_heads % num_key_value_heads != 0 {
            return Err(self.error(
                "num_key_value_heads",
                format!("{num_key_value_heads} does not divide num_attention_heads {num_attention_heads}"),
            ));
        }
        Ok(Dims {
            hidden_size,
            num_hidden_layers: self.positive("num_hidden_layers", defaults.num_hidden_layers)? as usize,
            intermediate_size: self.positive("intermediate_size", defaults.intermediate_size)?,
            num_attention_heads,
            num_key_value_heads,
            vocab_size: self.positive("vocab_size", defaults.vocab_size)?,
            rms_norm_eps: match (self.float("rms_norm_eps")?, defaults.rms_norm_eps) {
                (Some(e), _) => e as f32,
                (None, Some(e)) => e,
                (None, None) => return Err(self.error("rms_norm_eps", "required and missing")),
            },
        })
    }

    /// mlx_lm's `layer_types` (llama, ministral3): one entry per layer, `full_attention` or
    /// `sliding_attention`; absent means all full. Returns whether each layer slides.
    pub fn layer_types(&self, num_layers: usize) -> Result<Vec<bool>, ConfigError> {
        let Some(types) = self.get("layer_types") else {
            return Ok(vec![false; num_layers]);
        };
        let types = types.as_array().ok_or_else(|| self.error("layer_types", "expected a list"))?;
        if types.len() != num_layers {
            return Err(self.error(
                "layer_types",
                format!(
                    "{} entries for num_hidden_layers {num_layers} (mlx_lm builds one layer per entry)",
                    types.len()
                ),
            ));
        }
        let sliding = types
            .iter()
            .map(|t| match t.as_str() {
                Some("full_attention") => Ok(false),
                Some("sliding_attention") => Ok(true),
                _ => {
                    Err(self.error("layer_types", format!("entry {t} is neither full_attention nor sliding_attention")))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        if sliding.iter().all(|s| *s) {
            return Err(self.error("layer_types", "no full_attention layer (mlx_lm needs one for its mask)"));
        }
        Ok(sliding)
    }

    /// The sliding window, required when a layer slides.
    pub fn sliding_window(&self) -> Result<i32, ConfigError> {
        self.positive("sliding_window", None)
    }

    /// A RoPE scaling object (`rope_scaling`, or `rope_parameters` where the architecture reads
    /// that) as `initialize_rope` reads it; `field` names it in errors.
    pub fn rope_scaling(
        &self,
        s: &Value,
        field: &str,
        max_position_embeddings: Option<f64>,
    ) -> Result<RopeScaling, ConfigError> {
        let field = self.name(field);
        let (kind, kind_field) = match (s.get("type"), s.get("rope_type")) {
            (Some(t), _) if !t.is_null() && t.as_str() != Some("") => (t, format!("{field}.type")),
            (_, Some(t)) => (t, format!("{field}.rope_type")),
            _ => (&Value::Null, format!("{field}.rope_type")),
        };
        let unsupported = |found: String| ConfigError::UnsupportedRope {
            path: self.path.to_owned(),
            field: kind_field.clone(),
            found,
        };
        let kind = match kind {
            Value::Null => "default",
            Value::String(k) => k.as_str(),
            other => return Err(unsupported(other.to_string())),
        };
        let number = |key: &str, default: Option<f64>| -> Result<f64, ConfigError> {
            match s.get(key).filter(|v| !v.is_null()) {
                Some(v) => v.as_f64().ok_or_else(|| {
                    field_error(self.path, &format!("{field}.{key}"), format!("expected a number, found {v}"))
                }),
                None => {
                    default.ok_or_else(|| field_error(self.path, &format!("{field}.{key}"), "required and missing"))
                }
            }
        };
        match kind {
            "default" => Ok(RopeScaling::Plain { scale: 1.0 }),
            "linear" => Ok(RopeScaling::Plain { scale: (1.0 / number("factor", None)?) as f32 }),
            "llama3" => Ok(RopeScaling::Llama3 {
                factor: number("factor", None)?,
                low_freq_factor: number("low_freq_factor", Some(1.0))?,
                high_freq_factor: number("high_freq_factor", Some(4.0))?,
                original_max_position_embeddings: number("original_max_position_embeddings", Some(8192.0))?,
            }),
            "yarn" | "deepseek_yarn" | "telechat3-yarn" => Ok(RopeScaling::Yarn {
                factor: number("factor", None)?,
                original_max_position_embeddings: number("original_max_position_embeddings", Some(4096.0))?,
                beta_fast: number("beta_fast", Some(32.0))?,
                beta_slow: number("beta_slow", Some(1.0))?,
                mscale: number("mscale", Some(1.0))?,
                mscale_all_dim: number("mscale_all_dim", Some(0.0))?,
            }),
            "longrope" => {
                let original = number("original_max_position_embeddings", None)?;
                let max = max_position_embeddings
                    .ok_or_else(|| self.error("max_position_embeddings", "required by longrope and missing"))?;
                self.su_scaled(s, &field, max, original)
            }
            other => Err(unsupported(other.to_owned())),
        }
    }

    /// `SuScaledRoPE(max_position_embeddings, original_max_position_embeddings, long_factor)`:
    /// the frequencies and the input scale (`short_factor` is required by mlx_lm and unused).
    pub fn su_scaled(&self, s: &Value, field: &str, max: f64, original: f64) -> Result<RopeScaling, ConfigError> {
        if s.get("short_factor").is_none() {
            return Err(field_error(self.path, &format!("{field}.short_factor"), "required and missing"));
        }
        let bad = |reason: String| field_error(self.path, &format!("{field}.long_factor"), reason);
        let (long_factor, scalar) = match s.get("long_factor") {
            Some(Value::Array(v)) => (
                v.iter()
                    .map(|x| x.as_f64().ok_or_else(|| bad(format!("expected numbers, found {x}"))))
                    .collect::<Result<Vec<_>, _>>()?,
                false,
            ),
            Some(v) if v.is_number() => (vec![v.as_f64().unwrap_or_default()], true),
            Some(v) => return Err(bad(format!("expected a number or a list, found {v}"))),
            None => return Err(bad("required and missing".into())),
        };
        let factor = max / original;
        let scale = if factor <= 1.0 { 1.0 } else { (1.0 + factor.ln() / original.ln()).sqrt() };
        Ok(RopeScaling::SuScaled { long_factor, scalar, scale })
    }

    /// mlx_lm reads `quantization`; a legacy `quantization_config` without it names another
    /// method (bitnet, compressed-tensors, modelopt, ...) none of which this crate implements.
    pub(crate) fn quantization(&self) -> Result<Option<Quantization>, ConfigError> {
        let refuse = |field: &str, found: String| ConfigError::UnsupportedQuantization {
            path: self.path.to_owned(),
            field: field.to_owned(),
            found,
        };
        let Some(q) = self.get("quantization") else {
            let legacy = self
                .get("quantization_config")
                .or_else(|| self.get("text_config").and_then(|t| t.get("quantization_config")));
            if let Some(legacy) = legacy {
                let method = legacy.get("quant_method").map(|m| m.to_string()).unwrap_or_else(|| "absent".into());
                return Err(refuse("quantization_config.quant_method", method));
            }
            return Ok(None);
        };
        let Value::Object(q) = q else {
            return Err(refuse("quantization", q.to_string()));
        };
        let default = self.quant_params(q, "quantization", true)?;
        let mut modules = BTreeMap::new();
        for (key, value) in q {
            let params = match value {
                Value::Bool(false) => None,
                Value::Bool(true) => Some(default),
                Value::Object(entry) => Some(self.quant_params(entry, &format!("quantization.{key}"), false)?),
                // group_size, bits, mode and anything else mlx_lm does not look up as a module.
                _ => continue,
            };
            modules.insert(key.clone(), params);
        }
        Ok(Some(Quantization { default, modules }))
    }

    /// `to_quantized(group_size, bits, mode)` from one quantization object: null or absent
    /// settings take the mode's defaults, as `mlx.nn` does. The top level must name
    /// `group_size` and `bits` (mlx_lm indexes them).
    fn quant_params(&self, q: &Map<String, Value>, field: &str, top: bool) -> Result<QuantParams, ConfigError> {
        let refuse = |key: &str, found: String| ConfigError::UnsupportedQuantization {
            path: self.path.to_owned(),
            field: format!("{field}.{key}"),
            found,
        };
        if !top {
            if let Some(key) =
                q.keys().find(|k| !matches!(k.as_str(), "group_size" | "bits" | "mode" | "quantize_input"))
            {
                return Err(refuse(key, "a setting to_quantized does not take here".into()));
            }
            if q.get("quantize_input").and_then(Value::as_bool) == Some(true) {
                return Err(refuse("quantize_input", "true (input quantization is not implemented)".into()));
            }
        }
        let mode = match q.get("mode").filter(|v| !v.is_null()) {
            None => QuantMode::Affine,
            Some(Value::String(m)) => QuantMode::parse(m).ok_or_else(|| refuse("mode", format!("{m:?}")))?,
            Some(other) => return Err(refuse("mode", other.to_string())),
        };
        let (default_group, default_bits) = mode.defaults();
        let setting = |key: &str, default: i32| -> Result<i32, ConfigError> {
            match q.get(key) {
                None if top => Err(field_error(self.path, &format!("{field}.{key}"), "required and missing")),
                None | Some(Value::Null) => Ok(default),
                Some(v) => v.as_i64().and_then(|n| i32::try_from(n).ok()).ok_or_else(|| {
                    field_error(self.path, &format!("{field}.{key}"), format!("expected an integer or null, found {v}"))
                }),
            }
        };
        let params = QuantParams {
            group_size: setting("group_size", default_group)?,
            bits: setting("bits", default_bits)?,
            mode,
        };
        check_packing(params).map_err(|(key, found)| refuse(key, found))?;
        Ok(params)
    }
}

/// The packings mlx implements: affine at 2-8 bits (not 7) and group sizes 32/64/128; each
/// floating-point mode at its one (group size, bits) pair.
pub fn check_packing(p: QuantParams) -> Result<(), (&'static str, String)> {
    match p.mode {
        QuantMode::Affine => {
            if ![2, 3, 4, 5, 6, 8].contains(&p.bits) {
                return Err(("bits", p.bits.to_string()));
            }
            if ![32, 64, 128].contains(&p.group_size) {
                return Err(("group_size", p.group_size.to_string()));
            }
        }
        mode => {
            if (p.group_size, p.bits) != mode.defaults() {
                return Err(("group_size", format!("{} with {} bits for mode {mode:?}", p.group_size, p.bits)));
            }
        }
    }
    Ok(())
}

/// Shape fields every dense decoder shares.
pub struct Dims {
    pub hidden_size: i32,
    pub num_hidden_layers: usize,
    pub intermediate_size: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub vocab_size: i32,
    pub rms_norm_eps: f32,
}

/// An architecture's dataclass defaults for the shape fields (`None`: required).
#[derive(Default)]
pub struct DimDefaults {
    pub hidden_size: Option<i64>,
    pub num_hidden_layers: Option<i64>,
    pub intermediate_size: Option<i64>,
    pub num_attention_heads: Option<i64>,
    pub vocab_size: Option<i64>,
    pub rms_norm_eps: Option<f32>,
    pub num_key_value_heads: KvDefault,
}

/// `num_key_value_heads` when absent.
#[derive(Default)]
pub enum KvDefault {
    #[default]
    Required,
    /// The head count (`__post_init__` of llama, phi3, ministral3).
    Heads,
    Value(i64),
}

/// The plain llama-style decoder over `dims`: separate q/k/v, pre-norm blocks, SwiGLU, one
/// RoPE for every layer, standard caches, the head from `tie`. Architectures start here and
/// change what differs.
pub fn dense(dims: Dims, head_dim: i32, rope: Option<Rope>, tie: bool) -> ModelConfig {
    ModelConfig {
        model_type: String::new(),
        hidden_size: dims.hidden_size,
        num_hidden_layers: dims.num_hidden_layers,
        intermediate_size: dims.intermediate_size,
        num_attention_heads: dims.num_attention_heads,
        num_key_value_heads: dims.num_key_value_heads,
        head_dim,
        rms_norm_eps: dims.rms_norm_eps,
        vocab_size: dims.vocab_size,
        prefix: "model",
        head_prefix: "lm_head",
        dropped: &[],
        head: if tie { Head::Tied } else { Head::Own },
        qkv: Qkv::Separate { bias: false },
        o_bias: false,
        qk_norm: QkNorm::None,
        attention_scale: (head_dim as f64).powf(-0.5) as f32,
        llama4_scaling: None,
        attention_sinks: false,
        norm: Norm::Plain,
        block: Block::PreNorm,
        mlp: Mlp::SwiGlu { bias: false },
        moe: None,
        embed_scale: false,
        layers: (0..dims.num_hidden_layers)
            .map(|_| Layer { rope: rope.clone(), sliding: false, cache: CacheKind::Standard, moe: false })
            .collect(),
        masks: Masks { full: 0, sliding: None },
        quantization: None,
    }
}

impl ModelConfig {
    /// llama's `layer_types` and `make_cache`: sliding layers get the sliding-window mask (made
    /// from the first sliding layer's cache) and, with `rotating`, a `RotatingKVCache` of the
    /// window's size; the full mask comes from the first full layer.
    pub fn set_sliding(&mut self, sliding: &[bool], window: Option<i32>, rotating: bool) {
        let full = sliding.iter().position(|s| !s).unwrap_or(0);
        self.masks = Masks { full, sliding: None };
        if let (Some(first), Some(w)) = (sliding.iter().position(|s| *s), window) {
            self.masks.sliding = Some((first, w));
            for (layer, &s) in self.layers.iter_mut().zip(sliding) {
                layer.sliding = s;
                if s && rotating {
                    layer.cache = CacheKind::Rotating { max_size: w };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
