//! The host-wide benchmark lease: one session measures at a time.
//!
//! An exclusive `flock` on a lease file (`$DECODE_BASELINE_LEASE`, default
//! `/tmp/decode-baseline.lease`). The kernel drops it when the holder dies, however it dies,
//! so a stale lease recovers by itself. The holder writes its pid and session id into the file
//! so a waiting launcher can say whom it waits for. The lease is held by the launcher process
//! and released only when [`Lease`] is dropped, after every worker has been reaped. Workers
//! inherit the locked descriptor, so a launcher killed mid-session leaves the lease held until
//! its orphaned worker has stopped too.

use std::{
    fs::{File, OpenOptions},
    io::{Read, Seek, Write},
    path::PathBuf,
    time::{Duration, Instant},
};

use nix::fcntl::{Flock, FlockArg};

/// A held lease.
#[derive(Debug)]
pub struct Lease {
    _lock: Flock<File>,
    pub path: PathBuf,
    pub waited: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error("failed to open the lease file {path}")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the benchmark lease {path} is held by {holder}; not waiting (--no-wait)")]
    Busy { path: PathBuf, holder: String },
    #[error("failed to lock {path}: {source}")]
    Lock { path: PathBuf, source: nix::Error },
}

pub fn lease_path() -> PathBuf {
    std::env::var_os("DECODE_BASELINE_LEASE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/decode-baseline.lease"))
}

/// Takes the lease, waiting (with a message on stderr) unless `no_wait`.
pub fn acquire(session_id: &str, no_wait: bool) -> Result<Lease, LeaseError> {
    let path = lease_path();
    let open = || {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|source| LeaseError::Open { path: path.clone(), source })
    };
    let started = Instant::now();
    let mut lock = match Flock::lock(open()?, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => lock,
        Err((file, errno)) if errno == nix::errno::Errno::EWOULDBLOCK => {
            let holder = read_holder(&file);
            if no_wait {
                return Err(LeaseError::Busy { path, holder });
            }
            eprintln!("decode-baseline: waiting for the benchmark lease {} held by {holder}", path.display());
            Flock::lock(file, FlockArg::LockExclusive)
                .map_err(|(_, source)| LeaseError::Lock { path: path.clone(), source })?
        }
        Err((_, source)) => return Err(LeaseError::Lock { path, source }),
    };
    // The lock belongs to the open file description; letting the workers inherit it keeps the
    // lease held until the last of them is gone, even if the launcher itself is killed.
    nix::fcntl::fcntl(&*lock, nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()))
        .map_err(|source| LeaseError::Lock { path: path.clone(), source })?;
    let holder = format!("pid {} (session {session_id})\n", std::process::id());
    let file: &mut File = &mut lock;
    let _ = file.set_len(0).and_then(|_| file.rewind()).and_then(|_| file.write_all(holder.as_bytes()));
    Ok(Lease { _lock: lock, path, waited: started.elapsed() })
}

fn read_holder(file: &File) -> String {
    let mut text = String::new();
    let mut reader = file;
    let _ = reader.read_to_string(&mut text);
    let text = text.trim();
    if text.is_empty() { "another launcher".to_owned() } else { text.to_owned() }
}
