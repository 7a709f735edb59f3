//! decode-baseline wire formats and worker protocol (no MLX).
