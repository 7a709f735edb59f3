//! `mach_approximate_time` for targets other than Apple's.
//!
//! mlx-rs seeds its default random state from this macOS call. Any binary that keeps a path to
//! that state would fail to link elsewhere, so it is defined here. Only its use as a varying seed
//! matters, so the wall clock in nanoseconds serves.

#[no_mangle]
pub extern "C" fn mach_approximate_time() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_nanos() as u64)
}
