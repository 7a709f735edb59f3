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

fn rope(c: &ModelConfig) -> &Rope {
    c.layers[0].rope.as_ref().unwrap()
}

#[test]
fn fixture_configs_resolve() {
    let c = ModelConfig::load(&fixture("tiny-qwen3")).unwrap();
    assert_eq!(c.model_type, "qwen3");
    assert_eq!((c.head_dim, c.num_key_value_heads, c.num_hidden_layers), (16, 2, 2));
    assert!(c.qk_norm == QkNorm::BeforeTranspose && c.head == Head::Own && c.quantization.is_none());
    assert_eq!(rope(&c), &Rope { dims: 16, base: 1e6, traditional: false, scaling: RopeScaling::Plain { scale: 1.0 } });
    assert_eq!(ModelConfig::load(&fixture("tiny-qwen3-tied")).unwrap().head, Head::Tied);
    let q4 = ModelConfig::load(&fixture("tiny-qwen3-q4")).unwrap().quantization.unwrap();
    assert_eq!(q4.default, QuantParams { group_size: 64, bits: 4, mode: QuantMode::Affine });
}

#[test]
fn unknown_model_type_is_refused_naming_it() {
    let err = parse(&with(&base(), |m| {
        m.insert("model_type".into(), "gemma2".into());
    }))
    .unwrap_err();
    assert!(matches!(&err, ConfigError::UnsupportedModelType { found, .. } if found == "gemma2"));
    let text = err.to_string();
    assert!(text.contains("model_type") && text.contains("gemma3_text") && text.contains("mistral"), "{text}");
}

#[test]
fn quantization_settings_follow_mlx_lm() {
    let quant = |q: Value| {
        parse(&with(&base(), |m| {
            m.insert("quantization".into(), q);
        }))
    };
    let err = quant(serde_json::json!({"group_size": 64, "bits": 7})).unwrap_err();
    assert!(
        matches!(&err, ConfigError::UnsupportedQuantization { field, .. } if field == "quantization.bits"),
        "{err}"
    );
    let err = quant(serde_json::json!({"group_size": 16, "bits": 4})).unwrap_err();
    assert!(
        matches!(&err, ConfigError::UnsupportedQuantization { field, .. } if field == "quantization.group_size"),
        "{err}"
    );
    let err = quant(serde_json::json!({"group_size": 32, "bits": 4, "mode": "int4x"})).unwrap_err();
    assert!(
        matches!(&err, ConfigError::UnsupportedQuantization { field, .. } if field == "quantization.mode"),
        "{err}"
    );
    let err = quant(serde_json::json!({"bits": 4})).unwrap_err();
    assert!(err.to_string().contains("quantization.group_size"), "{err}");
    let err = parse(&with(&base(), |m| {
        m.insert("quantization_config".into(), serde_json::json!({"quant_method": "bitnet"}));
    }))
    .unwrap_err();
    assert!(err.to_string().contains("quant_method"), "{err}");
    // A mixed recipe as `convert --quant-predicate mixed_3_6` writes it without --q-group-size:
    // per-module entries with group_size null take the affine default, 64.
    let c = quant(serde_json::json!({
        "group_size": 64, "bits": 4, "mode": "affine",
        "model.layers.0.mlp.down_proj": {"group_size": null, "bits": 6, "mode": "affine"},
        "model.layers.1.mlp.down_proj": false,
        "model.layers.1.mlp.up_proj": true,
    }))
    .unwrap();
    let q = c.quantization.unwrap();
    assert_eq!(
        q.modules["model.layers.0.mlp.down_proj"],
        Some(QuantParams { group_size: 64, bits: 6, mode: QuantMode::Affine })
    );
    assert_eq!(q.modules["model.layers.1.mlp.down_proj"], None);
    assert_eq!(q.modules["model.layers.1.mlp.up_proj"], Some(q.default));
    let fp = quant(serde_json::json!({"group_size": 32, "bits": 4, "mode": "mxfp4"})).unwrap();
    assert_eq!(fp.quantization.unwrap().default.mode, QuantMode::Mxfp4);
    let err = quant(serde_json::json!({"group_size": 64, "bits": 4, "model.layers.0.mlp.up_proj": {"bits": 4, "global_scale": true}}))
        .unwrap_err();
    assert!(err.to_string().contains("quantization.model.layers.0.mlp.up_proj.global_scale"), "{err}");
}

#[test]
fn rope_scaling_kinds() {
    let err = parse(&with(&base(), |m| {
        m.insert("rope_scaling".into(), serde_json::json!({"rope_type": "dynamic", "factor": 4.0}));
    }))
    .unwrap_err();
    assert!(
        matches!(&err, ConfigError::UnsupportedRope { field, found, .. }
        if field == "rope_scaling.rope_type" && found == "dynamic"),
        "{err}"
    );
    let c = parse(&with(&base(), |m| {
        m.insert("rope_scaling".into(), serde_json::json!({"type": "linear", "factor": 4.0}));
    }))
    .unwrap();
    assert_eq!(rope(&c).scaling, RopeScaling::Plain { scale: 0.25 });
    let c = parse(&with(&base(), |m| {
        m.insert("rope_scaling".into(), serde_json::json!({"rope_type": "yarn", "factor": 4.0}));
    }))
    .unwrap();
    assert!(
        matches!(rope(&c).scaling, RopeScaling::Yarn { factor, beta_fast, .. } if factor == 4.0 && beta_fast == 32.0)
    );
}

#[test]
fn architecture_defaults_follow_mlx_lm() {
    let qwen2 = parse(&with(&base(), |m| {
        m.insert("model_type".into(), "qwen2".into());
        m.insert("head_dim".into(), 999.into());
        m.remove("tie_word_embeddings");
    }))
    .unwrap();
    assert_eq!(
        (qwen2.head_dim, qwen2.qkv, qwen2.o_bias, qwen2.qk_norm),
        (16, Qkv::Separate { bias: true }, false, QkNorm::None)
    );
    assert_eq!(qwen2.head, Head::Tied);
    for model_type in ["llama", "mistral"] {
        let llama = parse(&with(&base(), |m| {
            m.insert("model_type".into(), model_type.into());
            m.insert("attention_bias".into(), true.into());
            m.remove("num_key_value_heads");
            m.remove("rope_theta");
        }))
        .unwrap();
        assert_eq!((llama.num_key_value_heads, llama.qkv, llama.o_bias), (4, Qkv::Separate { bias: true }, true));
        assert_eq!(rope(&llama).base, 10_000.0);
    }
    let sliding = parse(&with(&base(), |m| {
        m.insert("model_type".into(), "llama".into());
        m.insert("layer_types".into(), serde_json::json!(["sliding_attention", "full_attention"]));
        m.insert("sliding_window".into(), 8.into());
    }))
    .unwrap();
    assert_eq!(sliding.layers[0].cache, CacheKind::Rotating { max_size: 8 });
    assert_eq!(sliding.masks, Masks { full: 1, sliding: Some((0, 8)) });
    let err = parse(&with(&base(), |m| {
        m.insert("model_type".into(), "llama".into());
        m.insert("layer_types".into(), serde_json::json!(["sliding_attention", "full_attention"]));
    }))
    .unwrap_err();
    assert!(err.to_string().contains("sliding_window"), "{err}");
    let err = parse(&with(&base(), |m| {
        m.remove("rope_theta");
    }))
    .unwrap_err();
    assert!(err.to_string().contains("rope_theta"), "{err}");
}

#[test]
fn new_architectures_read_their_fields() {
    let gemma = parse(&with(&base(), |m| {
        m.insert("model_type".into(), "gemma3_text".into());
        m.insert("sliding_window_pattern".into(), 2.into());
        m.insert("sliding_window".into(), 8.into());
    }))
    .unwrap();
    assert_eq!(gemma.layers[0].cache, CacheKind::Rotating { max_size: 8 });
    assert_eq!(gemma.layers[1].cache, CacheKind::Standard);
    assert_eq!(gemma.layers[0].rope.as_ref().unwrap().base, 10_000.0);
    assert_eq!(gemma.attention_scale, 256f64.powf(-0.5) as f32);
    let err = parse(&with(&base(), |m| {
        m.insert("model_type".into(), "gemma3_text".into());
    }))
    .unwrap_err();
    assert!(err.to_string().contains("sliding_window_pattern"), "{err}");
    let smol = parse(&with(&base(), |m| {
        m.insert("model_type".into(), "smollm3".into());
        m.insert("no_rope_layer_interval".into(), 2.into());
    }))
    .unwrap();
    assert!(smol.layers[0].rope.is_some() && smol.layers[1].rope.is_none());
    let err = parse(&with(&base(), |m| {
        m.insert("model_type".into(), "phi3".into());
        m.insert("rope_scaling".into(), serde_json::json!({"type": "longrope", "short_factor": [1.0]}));
    }))
    .unwrap_err();
    assert!(err.to_string().contains("rope_scaling.long_factor"), "{err}");
    let err = parse(&with(&base(), |m| {
        m.insert("model_type".into(), "ministral3".into());
        m.insert(
            "rope_parameters".into(),
            serde_json::json!({"rope_theta": 1e6, "original_max_position_embeddings": 64}),
        );
    }))
    .unwrap_err();
    assert!(err.to_string().contains("rope_parameters.llama_4_scaling_beta"), "{err}");
}

fn qwen3_moe(edit: impl FnOnce(&mut Map<String, Value>)) -> Result<ModelConfig, ConfigError> {
    parse(&with(&base(), |m| {
        m.insert("model_type".into(), "qwen3_moe".into());
        m.insert("num_hidden_layers".into(), 4.into());
        m.insert("num_experts".into(), 8.into());
        m.insert("num_experts_per_tok".into(), 2.into());
        m.insert("decoder_sparse_step".into(), 2.into());
        m.insert("mlp_only_layers".into(), serde_json::json!([3]));
        m.insert("moe_intermediate_size".into(), 32.into());
        m.insert("norm_topk_prob".into(), false.into());
        m.insert("max_position_embeddings".into(), 1024.into());
        edit(m);
    }))
}

#[test]
fn qwen3_moe_places_its_sparse_layers_as_mlx_lm() {
    // (i + 1) % decoder_sparse_step == 0 and i not in mlp_only_layers: layer 1 only.
    let c = qwen3_moe(|_| {}).unwrap();
    let sparse: Vec<bool> = c.layers.iter().map(|l| l.moe).collect();
    assert_eq!(sparse, [false, true, false, false]);
    let moe = c.moe.unwrap();
    assert_eq!(
        (moe.num_experts, moe.top_k, moe.intermediate_size, moe.router),
        (8, 2, 32, Router::SoftmaxTopK { norm_topk_prob: false })
    );
    assert_eq!(c.qk_norm, QkNorm::BeforeTranspose);
    // num_experts 0: every layer dense, whatever the step.
    let dense = qwen3_moe(|m| {
        m.insert("num_experts".into(), 0.into());
        m.insert("decoder_sparse_step".into(), 0.into());
    })
    .unwrap();
    assert!(dense.layers.iter().all(|l| !l.moe));
    for (field, value) in [
        ("decoder_sparse_step", Value::from(0)),
        ("num_experts_per_tok", Value::from(9)),
        ("mlp_only_layers", Value::from("3")),
        ("norm_topk_prob", Value::Null),
    ] {
        let err = qwen3_moe(|m| {
            m.insert(field.into(), value.clone());
        })
        .unwrap_err();
        assert!(err.to_string().contains(field), "{field}: {err}");
    }
}

fn gpt_oss(edit: impl FnOnce(&mut Map<String, Value>)) -> Result<ModelConfig, ConfigError> {
    parse(&with(&base(), |m| {
        m.insert("model_type".into(), "gpt_oss".into());
        m.insert("num_local_experts".into(), 8.into());
        m.insert("num_experts_per_tok".into(), 2.into());
        m.insert("sliding_window".into(), 16.into());
        edit(m);
    }))
}

#[test]
fn gpt_oss_reads_sinks_layer_types_and_experts() {
    let c = gpt_oss(|_| {}).unwrap();
    assert!(c.attention_sinks && c.o_bias && c.qkv == Qkv::Separate { bias: true });
    assert_eq!(c.layers[0].cache, CacheKind::Rotating { max_size: 16 });
    assert_eq!(c.layers[1].cache, CacheKind::Standard);
    assert_eq!(c.masks, Masks { full: 1, sliding: Some((0, 16)) });
    assert!(c.layers.iter().all(|l| l.moe) && c.head == Head::Own);
    let moe = c.moe.unwrap();
    assert_eq!((moe.router, moe.activation, moe.bias), (Router::TopKSoftmax, ExpertActivation::SwigluOai, true));
    let yarn = gpt_oss(|m| {
        m.insert(
            "rope_scaling".into(),
            serde_json::json!({"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096}),
        );
    })
    .unwrap();
    assert!(matches!(rope(&yarn).scaling, RopeScaling::Yarn { factor, .. } if factor == 32.0));
    // mlx_lm zips layers with layer_types and indexes both kinds: refused where it would drop a
    // layer or fail.
    let err = gpt_oss(|m| {
        m.insert("num_hidden_layers".into(), 3.into());
    })
    .unwrap_err();
    assert!(err.to_string().contains("num_hidden_layers"), "{err}");
    let err = gpt_oss(|m| {
        m.insert("layer_types".into(), serde_json::json!(["full_attention", "full_attention"]));
    })
    .unwrap_err();
    assert!(err.to_string().contains("layer_types"), "{err}");
    let err = gpt_oss(|m| {
        m.insert("rope_scaling".into(), serde_json::json!({"rope_type": "dynamic", "factor": 2.0}));
    })
    .unwrap_err();
    assert!(err.to_string().contains("rope_scaling.rope_type"), "{err}");
    // A per-expert nvfp4 global scale (quantize_model's global_scale) is not implemented.
    let err = gpt_oss(|m| {
        m.insert(
            "quantization".into(),
            serde_json::json!({"group_size": 16, "bits": 4, "mode": "nvfp4",
                "model.layers.0.mlp.experts.up_proj": {"group_size": 16, "bits": 4, "mode": "nvfp4", "global_scale": true}}),
        );
    })
    .unwrap_err();
    assert!(err.to_string().contains("quantization.model.layers.0.mlp.experts.up_proj.global_scale"), "{err}");
}
