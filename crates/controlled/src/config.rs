//! The model folder's `config.json`, read the way mlx_lm's `ModelArgs` classes read it, and
//! reduced to the one dense decoder this crate implements.
//!
//! Three architectures are supported: `qwen3` (per-head q/k RMS norms, no biases), `qwen2`
//! (q/k/v biases, head dim from the hidden size) and `llama` (optional attention/MLP biases,
//! Llama 3 RoPE scaling). Every default below is the default of the corresponding mlx_lm 0.32.2
//! dataclass. Anything this crate does not implement (another `model_type`, a quantization mode
//! other than affine, a RoPE scaling kind, sliding-window layers) is refused with a
//! [`ConfigError`] that names the field, so a worker can report it at validation, before any
//! model is loaded or any time is measured.

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
    #[error("unsupported model_type in {path}: expected one of qwen3, qwen2, llama, found {found:?}")]
    UnsupportedModelType { path: PathBuf, found: String },
    #[error("field `{field}` in {path}: {reason}")]
    Field {
        path: PathBuf,
        field: String,
        reason: String,
    },
    #[error(
        "unsupported quantization in {path}: field `{field}` is {found}; supported: affine mode, \
         4 or 8 bits, one setting for every layer"
    )]
    UnsupportedQuantization {
        path: PathBuf,
        field: String,
        found: String,
    },
    #[error("unsupported rope scaling in {path}: field `{field}` is {found:?}; supported: default, linear, llama3")]
    UnsupportedRope {
        path: PathBuf,
        field: String,
        found: String,
    },
}

/// The architectures this crate implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Architecture {
    Qwen3,
    Qwen2,
    Llama,
}

/// Affine quantization as declared in `config.json`'s `quantization`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantization {
    pub group_size: i32,
    pub bits: i32,
}

/// How rotary position embedding frequencies are chosen (mlx_lm `initialize_rope`).
#[derive(Debug, Clone, PartialEq)]
pub enum RopeScaling {
    /// `nn.RoPE(dims, traditional, base, scale)`; `scale` is 1 for "default", 1/factor for
    /// "linear".
    Plain { scale: f32 },
    /// mlx_lm's `Llama3RoPE`: precomputed frequencies, `base=None`, `scale=1`.
    Llama3 {
        factor: f64,
        low_freq_factor: f64,
        high_freq_factor: f64,
        original_max_position_embeddings: f64,
    },
}

/// Rotary position embedding settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Rope {
    pub base: f32,
    pub traditional: bool,
    pub scaling: RopeScaling,
}

/// Everything the decoder needs, resolved from `config.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    pub architecture: Architecture,
    pub hidden_size: i32,
    pub num_hidden_layers: usize,
    pub intermediate_size: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub head_dim: i32,
    pub rms_norm_eps: f32,
    pub vocab_size: i32,
    pub tie_word_embeddings: bool,
    /// Per-head RMS norms on queries and keys before RoPE (qwen3).
    pub qk_norm: bool,
    /// Biases on the q, k and v projections.
    pub qkv_bias: bool,
    /// Bias on the output projection.
    pub o_bias: bool,
    /// Biases on the gate, up and down projections.
    pub mlp_bias: bool,
    pub rope: Rope,
    pub quantization: Option<Quantization>,
}

impl ModelConfig {
    /// Reads `<dir>/config.json`.
    pub fn load(dir: &Path) -> Result<Self, ConfigError> {
        let path = dir.join("config.json");
        let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        Self::parse(&text, &path)
    }

    /// Parses a config's text; `path` is only used in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let value: Value = serde_json::from_str(text).map_err(|source| ConfigError::Parse {
            path: path.to_owned(),
            source,
        })?;
        let Value::Object(map) = value else {
            return Err(field_error(path, "<root>", "expected a JSON object"));
        };
        Fields { map: &map, path }.resolve()
    }
}

fn field_error(path: &Path, field: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Field {
        path: path.to_owned(),
        field: field.to_owned(),
        reason: reason.into(),
    }
}

/// Typed access to the config's fields, with errors naming them.
struct Fields<'a> {
    map: &'a Map<String, Value>,
    path: &'a Path,
}

impl Fields<'_> {
    /// A field that is absent or `null` reads as `None`.
    fn get(&self, field: &str) -> Option<&Value> {
        self.map.get(field).filter(|v| !v.is_null())
    }

    fn int(&self, field: &str) -> Result<Option<i64>, ConfigError> {
        self.get(field)
            .map(|v| {
                v.as_i64()
                    .ok_or_else(|| field_error(self.path, field, format!("expected an integer, found {v}")))
            })
            .transpose()
    }

    fn req_int(&self, field: &str) -> Result<i64, ConfigError> {
        self.int(field)?
            .ok_or_else(|| field_error(self.path, field, "required and missing"))
    }

    fn positive_i32(&self, field: &str, value: i64) -> Result<i32, ConfigError> {
        i32::try_from(value)
            .ok()
            .filter(|v| *v > 0)
            .ok_or_else(|| field_error(self.path, field, format!("expected a positive 32-bit integer, found {value}")))
    }

    fn float(&self, field: &str) -> Result<Option<f64>, ConfigError> {
        self.get(field)
            .map(|v| {
                v.as_f64()
                    .ok_or_else(|| field_error(self.path, field, format!("expected a number, found {v}")))
            })
            .transpose()
    }

    fn boolean(&self, field: &str) -> Result<Option<bool>, ConfigError> {
        self.get(field)
            .map(|v| {
                v.as_bool()
                    .ok_or_else(|| field_error(self.path, field, format!("expected a boolean, found {v}")))
            })
            .transpose()
    }

    fn resolve(&self) -> Result<ModelConfig, ConfigError> {
        let model_type = match self.get("model_type") {
            Some(Value::String(s)) => s.as_str(),
            Some(other) => {
                return Err(field_error(self.path, "model_type", format!("expected a string, found {other}")))
            }
            None => return Err(field_error(self.path, "model_type", "required and missing")),
        };
        let architecture = match model_type {
            "qwen3" => Architecture::Qwen3,
            "qwen2" => Architecture::Qwen2,
            "llama" => Architecture::Llama,
            other => {
                return Err(ConfigError::UnsupportedModelType {
                    path: self.path.to_owned(),
                    found: other.to_owned(),
                })
            }
        };
        // Quantization first: a refusal should name the real obstacle, not a later field.
        let quantization = self.quantization()?;

        let hidden_size = self.positive_i32("hidden_size", self.req_int("hidden_size")?)?;
        let num_hidden_layers = self.positive_i32("num_hidden_layers", self.req_int("num_hidden_layers")?)? as usize;
        let intermediate_size = self.positive_i32("intermediate_size", self.req_int("intermediate_size")?)?;
        let num_attention_heads = self.positive_i32("num_attention_heads", self.req_int("num_attention_heads")?)?;
        let vocab_size = self.positive_i32("vocab_size", self.req_int("vocab_size")?)?;
        let rms_norm_eps = self
            .float("rms_norm_eps")?
            .ok_or_else(|| field_error(self.path, "rms_norm_eps", "required and missing"))?;

        // num_key_value_heads: required by qwen3/qwen2's dataclasses, defaults to the head count
        // in llama's.
        let num_key_value_heads = match (architecture, self.int("num_key_value_heads")?) {
            (_, Some(n)) => self.positive_i32("num_key_value_heads", n)?,
            (Architecture::Llama, None) => num_attention_heads,
            (_, None) => return Err(field_error(self.path, "num_key_value_heads", "required and missing")),
        };
        if num_attention_heads % num_key_value_heads != 0 {
            return Err(field_error(
                self.path,
                "num_key_value_heads",
                format!("{num_key_value_heads} does not divide num_attention_heads {num_attention_heads}"),
            ));
        }

        let head_dim = match architecture {
            Architecture::Qwen3 => self.positive_i32("head_dim", self.req_int("head_dim")?)?,
            // qwen2 ignores any head_dim in the config.
            Architecture::Qwen2 => hidden_size / num_attention_heads,
            Architecture::Llama => match self.int("head_dim")? {
                Some(n) => self.positive_i32("head_dim", n)?,
                None => hidden_size / num_attention_heads,
            },
        };

        let tie_word_embeddings = match (architecture, self.boolean("tie_word_embeddings")?) {
            (_, Some(b)) => b,
            (Architecture::Qwen3, None) => {
                return Err(field_error(self.path, "tie_word_embeddings", "required and missing"))
            }
            (_, None) => true,
        };

        let (qk_norm, qkv_bias, o_bias, mlp_bias) = match architecture {
            Architecture::Qwen3 => (true, false, false, false),
            Architecture::Qwen2 => (false, true, false, false),
            Architecture::Llama => {
                let attention_bias = self.boolean("attention_bias")?.unwrap_or(false);
                let mlp_bias = self.boolean("mlp_bias")?.unwrap_or(false);
                self.refuse_sliding_layers()?;
                (false, attention_bias, attention_bias, mlp_bias)
            }
        };

        let rope = self.rope(architecture)?;

        Ok(ModelConfig {
            architecture,
            hidden_size,
            num_hidden_layers,
            intermediate_size,
            num_attention_heads,
            num_key_value_heads,
            head_dim,
            rms_norm_eps: rms_norm_eps as f32,
            vocab_size,
            tie_word_embeddings,
            qk_norm,
            qkv_bias,
            o_bias,
            mlp_bias,
            rope,
            quantization,
        })
    }

    /// mlx_lm reads `quantization`; a legacy `quantization_config` without it names another
    /// method (mxfp4, bitnet, compressed-tensors, ...) none of which this crate implements.
    fn quantization(&self) -> Result<Option<Quantization>, ConfigError> {
        let refuse = |field: &str, found: String| ConfigError::UnsupportedQuantization {
            path: self.path.to_owned(),
            field: field.to_owned(),
            found,
        };
        let Some(q) = self.get("quantization") else {
            if let Some(legacy) = self.get("quantization_config") {
                let method = legacy.get("quant_method").map(|m| m.to_string()).unwrap_or_else(|| "absent".into());
                return Err(refuse("quantization_config.quant_method", method));
            }
            return Ok(None);
        };
        let Value::Object(q) = q else {
            return Err(refuse("quantization", q.to_string()));
        };
        if let Some((key, _)) = q.iter().find(|(_, v)| v.is_object() || v.is_boolean()) {
            // mlx_lm's per-layer overrides: `"model.layers.0.mlp.down_proj": {bits...}` or false.
            return Err(refuse(&format!("quantization.{key}"), "a per-layer override".into()));
        }
        let mode = q.get("mode").and_then(Value::as_str).unwrap_or("affine");
        if mode != "affine" {
            return Err(refuse("quantization.mode", format!("{mode:?}")));
        }
        let int = |field: &str| -> Result<i64, ConfigError> {
            q.get(field)
                .and_then(Value::as_i64)
                .ok_or_else(|| field_error(self.path, &format!("quantization.{field}"), "required integer missing"))
        };
        let bits = int("bits")?;
        if bits != 4 && bits != 8 {
            return Err(refuse("quantization.bits", bits.to_string()));
        }
        let group_size = int("group_size")?;
        if ![32, 64, 128].contains(&group_size) {
            return Err(refuse("quantization.group_size", group_size.to_string()));
        }
        Ok(Some(Quantization {
            group_size: group_size as i32,
            bits: bits as i32,
        }))
    }

    fn refuse_sliding_layers(&self) -> Result<(), ConfigError> {
        if let Some(types) = self.get("layer_types") {
            let all_full = types
                .as_array()
                .is_some_and(|t| t.iter().all(|v| v.as_str() == Some("full_attention")));
            if !all_full {
                return Err(field_error(
                    self.path,
                    "layer_types",
                    "only full_attention layers are implemented (no sliding-window attention)",
                ));
            }
        }
        Ok(())
    }

    fn rope(&self, architecture: Architecture) -> Result<Rope, ConfigError> {
        // transformers >= 5 nests rope_theta and the scaling under rope_parameters; qwen3's
        // ModelArgs reads both from there when the top-level fields are absent. qwen2 and llama
        // (mlx_lm 0.32.2) do not, so a nested-only config would silently get their defaults;
        // refuse that instead.
        let params = self.get("rope_parameters").filter(|p| p.as_object().is_some_and(|m| !m.is_empty()));
        let theta = match (self.float("rope_theta")?, params, architecture) {
            (Some(t), _, _) => t,
            (None, Some(p), Architecture::Qwen3) => p.get("rope_theta").and_then(Value::as_f64).ok_or_else(|| {
                field_error(self.path, "rope_theta", "missing (also from rope_parameters.rope_theta)")
            })?,
            (None, Some(_), _) => {
                return Err(field_error(
                    self.path,
                    "rope_parameters",
                    "nested rope settings without a top-level rope_theta are not read by mlx_lm for this model type",
                ))
            }
            (None, None, Architecture::Qwen3) => return Err(field_error(self.path, "rope_theta", "required and missing")),
            (None, None, Architecture::Qwen2) => 1_000_000.0,
            (None, None, Architecture::Llama) => 10_000.0,
        };
        let traditional = match architecture {
            Architecture::Qwen3 => false,
            _ => self.boolean("rope_traditional")?.unwrap_or(false),
        };
        let (scaling_value, scaling_field) = match (self.get("rope_scaling"), params, architecture) {
            (Some(s), _, _) => (Some(s), "rope_scaling"),
            (None, Some(p), Architecture::Qwen3) => (Some(p), "rope_parameters"),
            _ => (None, "rope_scaling"),
        };
        let scaling = match scaling_value {
            None => RopeScaling::Plain { scale: 1.0 },
            Some(s) => self.rope_scaling(s, scaling_field)?,
        };
        Ok(Rope {
            base: theta as f32,
            traditional,
            scaling,
        })
    }

    fn rope_scaling(&self, s: &Value, field: &str) -> Result<RopeScaling, ConfigError> {
        let (kind, kind_field) = match (s.get("type"), s.get("rope_type")) {
            (Some(t), _) if !t.is_null() => (t, format!("{field}.type")),
            (_, Some(t)) => (t, format!("{field}.rope_type")),
            _ => (&Value::Null, format!("{field}.rope_type")),
        };
        let kind = match kind {
            Value::Null => "default",
            Value::String(k) => k.as_str(),
            other => {
                return Err(ConfigError::UnsupportedRope {
                    path: self.path.to_owned(),
                    field: kind_field,
                    found: other.to_string(),
                })
            }
        };
        let number = |key: &str, default: Option<f64>| -> Result<f64, ConfigError> {
            match s.get(key).filter(|v| !v.is_null()) {
                Some(v) => v
                    .as_f64()
                    .ok_or_else(|| field_error(self.path, &format!("{field}.{key}"), format!("expected a number, found {v}"))),
                None => default.ok_or_else(|| field_error(self.path, &format!("{field}.{key}"), "required and missing")),
            }
        };
        match kind {
            "default" => Ok(RopeScaling::Plain { scale: 1.0 }),
            "linear" => Ok(RopeScaling::Plain {
                scale: (1.0 / number("factor", None)?) as f32,
            }),
            "llama3" => Ok(RopeScaling::Llama3 {
                factor: number("factor", None)?,
                low_freq_factor: number("low_freq_factor", Some(1.0))?,
                high_freq_factor: number("high_freq_factor", Some(4.0))?,
                original_max_position_embeddings: number("original_max_position_embeddings", Some(8192.0))?,
            }),
            other => Err(ConfigError::UnsupportedRope {
                path: self.path.to_owned(),
                field: kind_field,
                found: other.to_owned(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(name)
    }

    fn parse(text: &str) -> Result<ModelConfig, ConfigError> {
        ModelConfig::parse(text, Path::new("config.json"))
    }

    fn with(base: &str, edit: impl FnOnce(&mut Map<String, Value>)) -> String {
        let mut v: Value = serde_json::from_str(base).unwrap();
        edit(v.as_object_mut().unwrap());
        v.to_string()
    }

    fn base() -> String {
        std::fs::read_to_string(fixture("tiny-qwen3").join("config.json")).unwrap()
    }

    #[test]
    fn fixture_configs_resolve() {
        let c = ModelConfig::load(&fixture("tiny-qwen3")).unwrap();
        assert_eq!(c.architecture, Architecture::Qwen3);
        assert_eq!((c.head_dim, c.num_key_value_heads, c.num_hidden_layers), (16, 2, 2));
        assert!(c.qk_norm && !c.tie_word_embeddings && c.quantization.is_none());
        assert_eq!(c.rope, Rope { base: 1e6, traditional: false, scaling: RopeScaling::Plain { scale: 1.0 } });
        assert!(ModelConfig::load(&fixture("tiny-qwen3-tied")).unwrap().tie_word_embeddings);
        let q4 = ModelConfig::load(&fixture("tiny-qwen3-q4")).unwrap();
        assert_eq!(q4.quantization, Some(Quantization { group_size: 64, bits: 4 }));
    }

    #[test]
    fn unknown_model_type_is_refused_naming_it() {
        let err = parse(&with(&base(), |m| {
            m.insert("model_type".into(), "gemma3".into());
        }))
        .unwrap_err();
        assert!(matches!(&err, ConfigError::UnsupportedModelType { found, .. } if found == "gemma3"));
        assert!(err.to_string().contains("model_type"), "{err}");
    }

    #[test]
    fn non_affine_quantization_is_refused_naming_the_field() {
        let err = parse(&with(&base(), |m| {
            m.insert("quantization".into(), serde_json::json!({"group_size": 32, "bits": 4, "mode": "mxfp4"}));
        }))
        .unwrap_err();
        assert!(matches!(&err, ConfigError::UnsupportedQuantization { field, .. } if field == "quantization.mode"), "{err}");
        let err = parse(&with(&base(), |m| {
            m.insert("quantization".into(), serde_json::json!({"group_size": 64, "bits": 3}));
        }))
        .unwrap_err();
        assert!(matches!(&err, ConfigError::UnsupportedQuantization { field, .. } if field == "quantization.bits"), "{err}");
        let err = parse(&with(&base(), |m| {
            m.insert("quantization_config".into(), serde_json::json!({"quant_method": "bitnet"}));
        }))
        .unwrap_err();
        assert!(err.to_string().contains("quant_method"), "{err}");
        let err = parse(&with(&base(), |m| {
            m.insert(
                "quantization".into(),
                serde_json::json!({"group_size": 64, "bits": 4, "model.layers.0.mlp.down_proj": {"bits": 8, "group_size": 64}}),
            );
        }))
        .unwrap_err();
        assert!(err.to_string().contains("per-layer"), "{err}");
    }

    #[test]
    fn rope_scaling_kinds() {
        let err = parse(&with(&base(), |m| {
            m.insert("rope_scaling".into(), serde_json::json!({"rope_type": "yarn", "factor": 4.0}));
        }))
        .unwrap_err();
        assert!(matches!(&err, ConfigError::UnsupportedRope { field, found, .. }
            if field == "rope_scaling.rope_type" && found == "yarn"), "{err}");
        let c = parse(&with(&base(), |m| {
            m.insert("rope_scaling".into(), serde_json::json!({"type": "linear", "factor": 4.0}));
        }))
        .unwrap();
        assert_eq!(c.rope.scaling, RopeScaling::Plain { scale: 0.25 });
    }

    #[test]
    fn architecture_defaults_follow_mlx_lm() {
        let qwen2 = parse(&with(&base(), |m| {
            m.insert("model_type".into(), "qwen2".into());
            m.insert("head_dim".into(), 999.into());
            m.remove("tie_word_embeddings");
        }))
        .unwrap();
        assert_eq!((qwen2.head_dim, qwen2.qkv_bias, qwen2.o_bias, qwen2.qk_norm), (16, true, false, false));
        assert!(qwen2.tie_word_embeddings);
        let llama = parse(&with(&base(), |m| {
            m.insert("model_type".into(), "llama".into());
            m.insert("attention_bias".into(), true.into());
            m.remove("num_key_value_heads");
            m.remove("rope_theta");
        }))
        .unwrap();
        assert_eq!((llama.num_key_value_heads, llama.qkv_bias, llama.o_bias), (4, true, true));
        assert_eq!(llama.rope.base, 10_000.0);
        let err = parse(&with(&base(), |m| {
            m.insert("model_type".into(), "llama".into());
            m.insert("layer_types".into(), serde_json::json!(["sliding_attention", "full_attention"]));
        }))
        .unwrap_err();
        assert!(err.to_string().contains("layer_types"), "{err}");
        let err = parse(&with(&base(), |m| {
            m.remove("rope_theta");
        }))
        .unwrap_err();
        assert!(err.to_string().contains("rope_theta"), "{err}");
    }
}
