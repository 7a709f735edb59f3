//! Which MLX this process runs on: the version mlx-c reports and the libmlx file the dynamic
//! loader mapped, with its SHA-256. Both workers report these so a session can prove that the
//! controlled and the stock loop ran on the very same library.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("mlx-c did not report a version")]
    Version,
    #[error("no libmlx is mapped into this process (looked in {0})")]
    NotMapped(&'static str),
    #[error("failed to read libmlx at {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The MLX version string, as `mlx.core.__version__` prints it.
pub fn mlx_version() -> Result<String, IdentityError> {
    // SAFETY: mlx_string_new/free bracket the string mlx_version fills; data() points into it
    // and is copied before the free.
    unsafe {
        let mut version = mlx_sys::mlx_string_new();
        if mlx_sys::mlx_version(&mut version) != 0 {
            mlx_sys::mlx_string_free(version);
            return Err(IdentityError::Version);
        }
        let text = std::ffi::CStr::from_ptr(mlx_sys::mlx_string_data(version)).to_string_lossy().into_owned();
        mlx_sys::mlx_string_free(version);
        Ok(text)
    }
}

/// The path of the libmlx shared library mapped into this process, canonicalized.
#[cfg(target_os = "linux")]
pub fn libmlx_path() -> Result<PathBuf, IdentityError> {
    let maps = std::fs::read_to_string("/proc/self/maps").map_err(|_| IdentityError::NotMapped("/proc/self/maps"))?;
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| path.ends_with("/libmlx.so"))
        .map(|path| std::fs::canonicalize(path).unwrap_or_else(|_| PathBuf::from(path)))
        .ok_or(IdentityError::NotMapped("/proc/self/maps"))
}

/// The path of the libmlx shared library mapped into this process, canonicalized.
#[cfg(target_os = "macos")]
pub fn libmlx_path() -> Result<PathBuf, IdentityError> {
    extern "C" {
        fn _dyld_image_count() -> u32;
        fn _dyld_get_image_name(index: u32) -> *const std::os::raw::c_char;
    }
    // SAFETY: dyld returns valid C strings for indices below the image count.
    let names = unsafe {
        (0.._dyld_image_count())
            .map(|i| std::ffi::CStr::from_ptr(_dyld_get_image_name(i)).to_string_lossy().into_owned())
            .collect::<Vec<_>>()
    };
    names
        .into_iter()
        .find(|path| path.ends_with("/libmlx.dylib"))
        .map(|path| std::fs::canonicalize(&path).unwrap_or_else(|_| PathBuf::from(path)))
        .ok_or(IdentityError::NotMapped("the dyld image list"))
}

/// What this process runs on, as one JSON object: the MLX version and the libmlx it mapped, and
/// with `digest` that file's SHA-256 (`decode-baseline env`; the worker program's `probe`
/// leaves the digest out, it only shows that the program starts).
pub fn facts(digest: bool) -> Result<serde_json::Value, IdentityError> {
    let path = libmlx_path()?;
    let mut facts = serde_json::json!({ "mlx_version": mlx_version()?, "libmlx_path": path });
    if digest {
        facts["libmlx_sha256"] = sha256_file(&path)?.into();
    }
    Ok(facts)
}

/// SHA-256 of a file, lowercase hex.
pub fn sha256_file(path: &std::path::Path) -> Result<String, IdentityError> {
    let bytes = std::fs::read(path).map_err(|source| IdentityError::Read { path: path.to_owned(), source })?;
    Ok(format!("{:x}", Sha256::digest(bytes)))
}

/// The job's device could not be made the default, or MLX's description of it not read.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("MLX could not make its {0} device the default (is this libmlx built with that backend?)")]
    SetDefault(&'static str),
    #[error("MLX could not describe its {0} device (mlx_device_info_get failed)")]
    Info(&'static str),
}

/// Makes MLX's device of `kind` (index 0) the default for this process, as the stock worker
/// does with `mx.set_default_device`.
pub fn set_default_device(kind: decode_baseline_wire::DeviceKind) -> Result<(), DeviceError> {
    // SAFETY: the device is created, passed by value to MLX, and freed; no pointer escapes.
    unsafe {
        let device = mlx_sys::mlx_device_new_type(device_type(kind), 0);
        let status = mlx_sys::mlx_set_default_device(device);
        mlx_sys::mlx_device_free(device);
        if status != 0 {
            return Err(DeviceError::SetDefault(kind.as_str()));
        }
    }
    Ok(())
}

/// MLX's `device_info()` of its device of `kind`, every value as a string (numbers in decimal),
/// as the stock worker records `mx.device_info()`.
pub fn device_info(
    kind: decode_baseline_wire::DeviceKind,
) -> Result<std::collections::BTreeMap<String, String>, DeviceError> {
    use std::ffi::{CStr, CString};
    let mut out = std::collections::BTreeMap::new();
    // SAFETY: every mlx-c object created here is freed before return; strings MLX hands out
    // are copied while the info object that owns them is alive.
    unsafe {
        let device = mlx_sys::mlx_device_new_type(device_type(kind), 0);
        let mut info = mlx_sys::mlx_device_info_new();
        let mut keys = mlx_sys::mlx_vector_string_new();
        let ok = mlx_sys::mlx_device_info_get(&mut info, device) == 0
            && mlx_sys::mlx_device_info_get_keys(&mut keys, info) == 0;
        if ok {
            for i in 0..mlx_sys::mlx_vector_string_size(keys) {
                let mut key_ptr: *mut std::os::raw::c_char = std::ptr::null_mut();
                if mlx_sys::mlx_vector_string_get(&mut key_ptr, keys, i) != 0 || key_ptr.is_null() {
                    continue;
                }
                let key = CStr::from_ptr(key_ptr).to_string_lossy().into_owned();
                let c_key = CString::new(key.clone()).unwrap_or_default();
                let mut is_string = false;
                if mlx_sys::mlx_device_info_is_string(&mut is_string, info, c_key.as_ptr()) != 0 {
                    continue;
                }
                let value = if is_string {
                    let mut value: *const std::os::raw::c_char = std::ptr::null();
                    (mlx_sys::mlx_device_info_get_string(&mut value, info, c_key.as_ptr()) == 0 && !value.is_null())
                        .then(|| CStr::from_ptr(value).to_string_lossy().into_owned())
                } else {
                    let mut value = 0usize;
                    (mlx_sys::mlx_device_info_get_size(&mut value, info, c_key.as_ptr()) == 0)
                        .then(|| value.to_string())
                };
                if let Some(value) = value {
                    out.insert(key, value);
                }
            }
        }
        mlx_sys::mlx_vector_string_free(keys);
        mlx_sys::mlx_device_info_free(info);
        mlx_sys::mlx_device_free(device);
        if !ok {
            return Err(DeviceError::Info(kind.as_str()));
        }
    }
    Ok(out)
}

fn device_type(kind: decode_baseline_wire::DeviceKind) -> mlx_sys::mlx_device_type {
    match kind {
        decode_baseline_wire::DeviceKind::Cpu => mlx_sys::mlx_device_type__MLX_CPU,
        decode_baseline_wire::DeviceKind::Gpu => mlx_sys::mlx_device_type__MLX_GPU,
    }
}
