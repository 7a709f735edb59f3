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
        let text = std::ffi::CStr::from_ptr(mlx_sys::mlx_string_data(version))
            .to_string_lossy()
            .into_owned();
        mlx_sys::mlx_string_free(version);
        Ok(text)
    }
}

/// The path of the libmlx shared library mapped into this process, canonicalized.
#[cfg(target_os = "linux")]
pub fn libmlx_path() -> Result<PathBuf, IdentityError> {
    let maps = std::fs::read_to_string("/proc/self/maps")
        .map_err(|_| IdentityError::NotMapped("/proc/self/maps"))?;
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
            .map(|i| {
                std::ffi::CStr::from_ptr(_dyld_get_image_name(i))
                    .to_string_lossy()
                    .into_owned()
            })
            .collect::<Vec<_>>()
    };
    names
        .into_iter()
        .find(|path| path.ends_with("/libmlx.dylib"))
        .map(|path| std::fs::canonicalize(&path).unwrap_or_else(|_| PathBuf::from(path)))
        .ok_or(IdentityError::NotMapped("the dyld image list"))
}

/// SHA-256 of a file, lowercase hex.
pub fn sha256_file(path: &std::path::Path) -> Result<String, IdentityError> {
    let bytes = std::fs::read(path).map_err(|source| IdentityError::Read {
        path: path.to_owned(),
        source,
    })?;
    Ok(format!("{:x}", Sha256::digest(bytes)))
}
