//! NVIDIA's energy counter, clocks and clocks-event reasons through NVML, loaded at run time
//! from the driver's `libnvidia-ml.so.1` (`libloading`), so that the launcher builds and runs
//! on hosts without the driver: there the source is missing, with the reason.
//!
//! Seven entry points, as declared in `nvml.h`: `nvmlInit_v2`, `nvmlShutdown`,
//! `nvmlDeviceGetCount_v2`, `nvmlDeviceGetHandleByIndex_v2`,
//! `nvmlDeviceGetTotalEnergyConsumption` (millijoules since the driver loaded; Volta and
//! newer), `nvmlDeviceGetCurrentClocksEventReasons` (drivers before 535 export it as
//! `nvmlDeviceGetCurrentClocksThrottleReasons`, the same bits) and `nvmlDeviceGetClockInfo`
//! (SM = 1, memory = 2, MHz). The counter's delta per request is used, not
//! `nvmlDeviceGetPowerUsage`, which is a 1 s average on Ampere and newer.
//!
//! The `nvml-wrapper` crate was not used: it pulls a second `thiserror`, a derive macro with its
//! own dependencies and large generated bindings into a build that needs seven functions, and it
//! calls the deprecated throttle-reasons entry point. `libloading` was already in the lock file.

use std::ffi::{c_uint, c_ulonglong, c_void};

use libloading::Library;

use super::source::{Clocks, Counter, DomainSample, EnergySource, Missing, Unit};

/// The driver's library, by its soname (present without the development package).
pub const NVML_LIBRARY: &str = "libnvidia-ml.so.1";

type Ret = c_uint;
type Device = *mut c_void;
const SUCCESS: Ret = 0;
const CLOCK_SM: c_uint = 1;
const CLOCK_MEM: c_uint = 2;

/// The entry points, copied out of the library that `_library` keeps loaded.
struct Api {
    shutdown: unsafe extern "C" fn() -> Ret,
    energy: unsafe extern "C" fn(Device, *mut c_ulonglong) -> Ret,
    reasons: Option<unsafe extern "C" fn(Device, *mut c_ulonglong) -> Ret>,
    clock: unsafe extern "C" fn(Device, c_uint, *mut c_uint) -> Ret,
    _library: Library,
}

/// NVML, started, with a handle to every GPU it sees.
pub struct Nvml {
    api: Api,
    devices: Vec<Device>,
}

// SAFETY: NVML is thread-safe (nvml.h: "all NVML functions are thread-safe"); the device
// handles are opaque tokens valid until nvmlShutdown, which only `Drop` calls.
unsafe impl Send for Nvml {}

impl std::fmt::Debug for Nvml {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nvml").field("devices", &self.devices.len()).finish()
    }
}

impl Nvml {
    /// The driver's NVML.
    pub fn open() -> Result<Self, Missing> {
        Self::open_library(NVML_LIBRARY)
    }

    /// NVML from `library` (a soname or a path: the tests load a stub built from C).
    pub fn open_library(library: &str) -> Result<Self, Missing> {
        let missing = || Missing::NoDriver { library: library.to_owned() };
        // SAFETY: loading runs the library's initialisers; NVML's (and the test stub's) have
        // no requirements of the caller.
        let lib = unsafe { Library::new(library) }.map_err(|_| missing())?;
        // SAFETY: each symbol is looked up with the signature nvml.h declares for it.
        unsafe {
            let init = *lib.get::<unsafe extern "C" fn() -> Ret>(b"nvmlInit_v2\0").map_err(|_| missing())?;
            let count = *lib
                .get::<unsafe extern "C" fn(*mut c_uint) -> Ret>(b"nvmlDeviceGetCount_v2\0")
                .map_err(|_| missing())?;
            let handle = *lib
                .get::<unsafe extern "C" fn(c_uint, *mut Device) -> Ret>(b"nvmlDeviceGetHandleByIndex_v2\0")
                .map_err(|_| missing())?;
            let api = Api {
                shutdown: *lib.get(b"nvmlShutdown\0").map_err(|_| missing())?,
                energy: *lib.get(b"nvmlDeviceGetTotalEnergyConsumption\0").map_err(|_| missing())?,
                reasons: lib
                    .get(b"nvmlDeviceGetCurrentClocksEventReasons\0")
                    .or_else(|_| lib.get(b"nvmlDeviceGetCurrentClocksThrottleReasons\0"))
                    .map(|f| *f)
                    .ok(),
                clock: *lib.get(b"nvmlDeviceGetClockInfo\0").map_err(|_| missing())?,
                _library: lib,
            };
            let code = init();
            if code != SUCCESS {
                return Err(Missing::NvmlFailed { call: "nvmlInit_v2", code });
            }
            // From here on `Drop` shuts NVML down, on the error paths too.
            let mut nvml = Nvml { api, devices: Vec::new() };
            let mut n: c_uint = 0;
            let code = count(&mut n);
            if code != SUCCESS {
                return Err(Missing::NvmlFailed { call: "nvmlDeviceGetCount_v2", code });
            }
            for index in 0..n {
                let mut device: Device = std::ptr::null_mut();
                let code = handle(index, &mut device);
                if code != SUCCESS {
                    return Err(Missing::NvmlFailed { call: "nvmlDeviceGetHandleByIndex_v2", code });
                }
                nvml.devices.push(device);
            }
            if nvml.devices.is_empty() {
                return Err(Missing::NoGpu);
            }
            Ok(nvml)
        }
    }

    fn read_device(&self, device: Device) -> (Option<Counter>, Option<Clocks>, Option<u64>) {
        // SAFETY: the handles came from NVML and stay valid until `Drop`; every out-pointer is
        // a local of the type nvml.h names.
        unsafe {
            let mut mj: c_ulonglong = 0;
            let energy = ((self.api.energy)(device, &mut mj) == SUCCESS).then_some(Counter {
                value: mj,
                unit: Unit::Millijoules,
                wrap: None,
            });
            let mut bits: c_ulonglong = 0;
            let reasons = self.api.reasons.and_then(|f| (f(device, &mut bits) == SUCCESS).then_some(bits));
            let (mut sm, mut mem): (c_uint, c_uint) = (0, 0);
            let clocks = ((self.api.clock)(device, CLOCK_SM, &mut sm) == SUCCESS
                && (self.api.clock)(device, CLOCK_MEM, &mut mem) == SUCCESS)
                .then_some(Clocks { sm_mhz: sm, mem_mhz: mem });
            (energy, clocks, reasons)
        }
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        // SAFETY: NVML was started in `open_library` and is shut down once, here.
        unsafe {
            (self.api.shutdown)();
        }
    }
}

impl EnergySource for Nvml {
    fn name(&self) -> &'static str {
        "nvml"
    }

    fn domains(&self) -> Vec<String> {
        (0..self.devices.len()).map(|i| format!("nvml:{i}")).collect()
    }

    fn read(&mut self) -> Vec<DomainSample> {
        self.devices
            .iter()
            .enumerate()
            .map(|(i, &device)| {
                let (energy, clocks, reasons) = self.read_device(device);
                DomainSample { domain: format!("nvml:{i}"), energy, clocks, reasons, thermal: None }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::{path::Path, process::Command};

    use super::*;

    #[test]
    fn an_absent_library_is_a_missing_driver() {
        let err = Nvml::open_library("libnvidia-ml-absent-for-this-test.so.1").unwrap_err();
        assert_eq!(err, Missing::NoDriver { library: "libnvidia-ml-absent-for-this-test.so.1".into() });
        assert_eq!(err.to_string(), "no NVIDIA driver: libnvidia-ml-absent-for-this-test.so.1 not found");
    }

    /// A stand-in for the driver's library with the seven entry points: two GPUs whose energy
    /// counters advance 250 mJ per read, GPU 1 reporting HwSlowdown and GPU 0 nothing, clocks
    /// 1980/1593 MHz; `FAIL_INIT` makes nvmlInit_v2 return NVML_ERROR_DRIVER_NOT_LOADED (9).
    const STUB: &str = r#"
        typedef void *dev;
        static unsigned long long mj[2] = {1000, 5000};
        static int started = 0;
        unsigned int nvmlInit_v2(void) {
        #ifdef FAIL_INIT
            return 9;
        #endif
            started = 1; return 0; }
        unsigned int nvmlShutdown(void) { started = 0; return 0; }
        unsigned int nvmlDeviceGetCount_v2(unsigned int *n) { *n = 2; return 0; }
        unsigned int nvmlDeviceGetHandleByIndex_v2(unsigned int i, dev *d) { *d = (dev)(&mj[i]); return 0; }
        unsigned int nvmlDeviceGetTotalEnergyConsumption(dev d, unsigned long long *e) {
            if (!started) return 1; *(unsigned long long *)d += 250; *e = *(unsigned long long *)d; return 0; }
        unsigned int nvmlDeviceGetCurrentClocksEventReasons(dev d, unsigned long long *r) {
            *r = (d == (dev)&mj[1]) ? 0x8 : 0; return 0; }
        unsigned int nvmlDeviceGetClockInfo(dev d, unsigned int type, unsigned int *mhz) {
            *mhz = type == 1 ? 1980 : 1593; return 0; }
    "#;

    /// Builds the stub with the system's C compiler, which the build already needs (mlx-c): a
    /// host without one fails here rather than skipping the test.
    fn stub(dir: &Path, defines: &[&str]) -> String {
        let source = dir.join("stub.c");
        std::fs::write(&source, STUB).unwrap();
        let out = dir.join(format!("libnvml-stub{}.so", defines.len()));
        let status = Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(&out)
            .arg(&source)
            .args(defines.iter().map(|d| format!("-D{d}")))
            .status()
            .expect("cc, the C compiler the build needs, could not be started");
        assert!(status.success(), "cc failed to build the NVML stub");
        out.to_str().unwrap().to_owned()
    }

    #[test]
    fn a_stub_library_is_read_through_the_real_loader() {
        let tmp = tempfile::tempdir().unwrap();
        let library = stub(tmp.path(), &[]);
        let mut nvml = Nvml::open_library(&library).unwrap();
        assert_eq!(nvml.domains(), ["nvml:0", "nvml:1"]);
        let first = nvml.read();
        let second = nvml.read();
        let mj = |s: &[DomainSample], i: usize| s[i].energy.map(|c| (c.value, c.unit, c.wrap));
        assert_eq!(mj(&first, 0), Some((1250, Unit::Millijoules, None)));
        assert_eq!(mj(&second, 0), Some((1500, Unit::Millijoules, None)));
        assert_eq!(mj(&second, 1), Some((5500, Unit::Millijoules, None)));
        assert_eq!((first[0].reasons, first[1].reasons), (Some(0), Some(0x8)));
        assert_eq!(first[1].clocks, Some(Clocks { sm_mhz: 1980, mem_mhz: 1593 }));

        let failing = stub(tmp.path(), &["FAIL_INIT"]);
        assert_eq!(Nvml::open_library(&failing).unwrap_err(), Missing::NvmlFailed { call: "nvmlInit_v2", code: 9 });
    }
}
