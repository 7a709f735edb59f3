//! Whether the controlled loop implements a model: its own `config.json` reader decides, so an
//! architecture added to the loop is benched with both adapters without a change here.

use std::path::Path;

/// `None` when the controlled loop can run the model in `model_dir`, else the one-line reason.
#[cfg(feature = "controlled")]
pub fn controlled_refusal(model_dir: &Path) -> Option<String> {
    decode_baseline_model_config::config::ModelConfig::load(model_dir).err().map(|err| crate::guard::chain(&err))
}

/// This build has no controlled worker at all.
#[cfg(not(feature = "controlled"))]
pub fn controlled_refusal(_model_dir: &Path) -> Option<String> {
    Some("this build has no controlled worker (built without the `controlled` feature)".to_owned())
}
