//! The MLX distributed group a worker joins as one rank of a rank group (`req/distributed.md`),
//! and the one collective a tensor-parallel model needs: `mx.distributed.all_sum`.
//!
//! The group is initialized as a tensor-parallel mlx_lm run asks for it,
//! `mx.distributed.init(strict=True, backend=…)`: strict, so a backend that cannot start is an
//! error, never a silent group of one. The backend reads the rank and the host file from
//! `MLX_RANK` and `MLX_HOSTFILE`, which the launcher sets.
//!
//! [`Group::all_sum`] runs on the stream that mlx_lm's `mx.distributed.all_sum(x, group=g)`
//! runs on. That call names no stream, and MLX resolves "no stream" through the backend's
//! `communication_stream`: the default stream of the CPU for ring and jaccl, of the GPU for
//! nccl. mlx-c always takes an explicit stream, so this module passes that one.
//! [`Group::synchronize`] is `sharded_load`'s final
//! `mx.eval(mx.distributed.all_sum(mx.array(1.0), stream=mx.cpu))`.

use std::ffi::CString;

use decode_baseline_wire::group::GroupBackend;
use mlx_rs::error::Exception;
use mlx_rs::{Array, Device, Stream};

/// Why the group cannot be joined or synchronized.
#[derive(Debug, thiserror::Error)]
pub enum GroupError {
    #[error("failed to get the default {device} stream for MLX's {backend} backend")]
    Stream {
        device: &'static str,
        backend: &'static str,
        #[source]
        source: Exception,
    },
    #[error("MLX's {0} backend is not available in this libmlx")]
    Unavailable(&'static str),
    // mlx-c hands MLX's own message to mlx-rs's error handler, which this crate cannot read
    // back; the backend's usual causes are named instead.
    #[error(
        "mlx_distributed_init(strict, {0:?}) failed (MLX_RANK and MLX_HOSTFILE unset or wrong, a \
         port of the host file in use, or a rank that never connected)"
    )]
    Init(&'static str),
    #[error("failed to run the synchronizing all_sum across the group")]
    Synchronize(#[source] Exception),
    #[error("the synchronizing all_sum of 1.0 across {ranks} ranks gave {found}")]
    SynchronizeValue { ranks: u32, found: f32 },
}

/// The group this process joined: its handle, its backend and the stream its collectives use.
pub struct Group {
    raw: mlx_sys::mlx_distributed_group,
    backend: GroupBackend,
    stream: Stream,
}

// The handle owns an `mlx::core::distributed::Group` (a shared pointer to the backend), and the
// stream handle is an index and a device: neither is mutated after `init`, and the collectives
// only build graph nodes, as any MLX operation does from the thread that runs the model.
unsafe impl Send for Group {}
unsafe impl Sync for Group {}

impl Group {
    /// Joins the group of `backend` (strict: no fallback to a group of one).
    pub fn init(backend: GroupBackend) -> Result<Group, GroupError> {
        let name = backend.as_str();
        let device = match backend {
            GroupBackend::Ring | GroupBackend::Jaccl => Device::cpu(),
            GroupBackend::Nccl => Device::gpu(),
        };
        // A checked mlx-rs call first: it installs mlx-rs's error handler, without which an
        // mlx-c failure below would run mlx-c's default handler, which exits the process.
        let stream = Stream::try_default_on_device(&device).map_err(|source| GroupError::Stream {
            device: if backend == GroupBackend::Nccl { "GPU" } else { "CPU" },
            backend: name,
            source,
        })?;
        let c_name = CString::new(name).expect("a backend name has no NUL");
        // SAFETY: `c_name` outlives both calls; `raw` starts empty and is filled by a successful
        // init, and freed here on failure (freeing an empty handle is a no-op).
        unsafe {
            if !mlx_sys::mlx_distributed_is_available(c_name.as_ptr()) {
                return Err(GroupError::Unavailable(name));
            }
            let mut raw = mlx_sys::mlx_distributed_group_new();
            if mlx_sys::mlx_distributed_init(&mut raw, true, c_name.as_ptr()) != 0 {
                mlx_sys::mlx_distributed_group_free(raw);
                return Err(GroupError::Init(name));
            }
            Ok(Group { raw, backend, stream })
        }
    }

    /// `group.rank()`.
    pub fn rank(&self) -> u32 {
        // SAFETY: `raw` holds an initialized group.
        unsafe { mlx_sys::mlx_distributed_group_rank(self.raw) as u32 }
    }

    /// `group.size()`.
    pub fn size(&self) -> u32 {
        // SAFETY: as in `rank`.
        unsafe { mlx_sys::mlx_distributed_group_size(self.raw) as u32 }
    }

    pub fn backend(&self) -> GroupBackend {
        self.backend
    }

    /// `mx.distributed.all_sum(x, group=group)`, on the backend's communication stream.
    pub fn all_sum(&self, x: &Array) -> Result<Array, Exception> {
        self.all_sum_on(x, &self.stream)
    }

    fn all_sum_on(&self, x: &Array, stream: &Stream) -> Result<Array, Exception> {
        // SAFETY: every handle is valid for the call; `res` is owned by the returned Array on
        // success and freed on failure.
        unsafe {
            let mut res = mlx_sys::mlx_array_new();
            let rc = mlx_sys::mlx_distributed_all_sum(&mut res, x.as_ptr(), self.raw, stream.as_ptr());
            crate::ffi::finish(rc, res, "all_sum")
        }
    }

    /// `sharded_load`'s last step, `mx.eval(mx.distributed.all_sum(mx.array(1.0),
    /// stream=mx.cpu))`: no rank starts before every rank has loaded. The sum must be the
    /// group's size.
    pub fn synchronize(&self) -> Result<(), GroupError> {
        let sum = self.all_sum_on(&Array::from_f32(1.0), &Stream::cpu()).map_err(GroupError::Synchronize)?;
        sum.eval().map_err(GroupError::Synchronize)?;
        let found = sum.item_exact::<f32>();
        if found != self.size() as f32 {
            return Err(GroupError::SynchronizeValue { ranks: self.size(), found });
        }
        Ok(())
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        // SAFETY: `raw` was filled by `init` and is freed once.
        unsafe {
            mlx_sys::mlx_distributed_group_free(self.raw);
        }
    }
}
