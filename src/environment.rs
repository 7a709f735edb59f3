//! `decode-baseline env`: what this build's controlled worker runs on.

use decode_baseline_wire::ExitCode;

#[cfg(feature = "controlled")]
pub fn run() -> anyhow::Result<ExitCode> {
    use decode_baseline_controlled::identity;
    let path = identity::libmlx_path()?;
    let facts = serde_json::json!({
        "mlx_version": identity::mlx_version()?,
        "libmlx_path": path,
        "libmlx_sha256": identity::sha256_file(&path)?,
    });
    println!("{}", serde_json::to_string_pretty(&facts)?);
    Ok(ExitCode::Ok)
}

#[cfg(not(feature = "controlled"))]
pub fn run() -> anyhow::Result<ExitCode> {
    anyhow::bail!("this build links no MLX: rebuild with the default `controlled` feature")
}
