//! The host-wide benchmark lease: one session measures at a time.
//!
//! An exclusive `flock` on a lease file (`$DECODE_BASELINE_LEASE`, default
//! `/tmp/decode-baseline.lease`). The kernel drops it when the holder dies, however it dies,
//! so a stale lease recovers by itself. The holder writes its pid and session id into the file
//! so a waiting launcher can say whom it waits for. The lease is held by the launcher process
//! and released only when [`Lease`] is dropped, after every worker has been reaped. Workers
//! inherit the locked descriptor, so a launcher killed mid-session leaves the lease held until
//! its orphaned worker has stopped too.
//!
//! The path may lie in a directory other users can write (`/tmp`), so the file is opened with
//! care (`req/session.md`, "The lease on a shared host"):
//! - the directory that holds it, and each of its ancestors, must be owned by the launcher's
//!   user or root and writable by no one else unless sticky (`/tmp` is), so no one else can
//!   swap the file under it;
//! - the file is opened relative to that directory with `O_NOFOLLOW` (a symbolic link is never
//!   followed) and `O_NONBLOCK` (a FIFO cannot hang the open), then checked by `fstat`: a
//!   regular file with one link, owned by the launcher's user or root, not writable by group or
//!   others;
//! - an absent file is created with `O_CREAT | O_EXCL`, mode 0600, or 0644 when the launcher
//!   runs as root (see [`creation_mode`]);
//! - nothing is truncated, ever: the holder is a fixed-size record of [`RECORD_LEN`] bytes
//!   written in place at offset 0, and only into a file that is empty or already holds a record
//!   (a file with other content is refused untouched, so a lease path pointed at a file that
//!   matters cannot damage it). A root-owned lease file that the launcher cannot write is
//!   locked read-only and its holders go unnamed.
//!
//! Every refusal is a [`LeaseError`] naming the path, what was found and what is expected;
//! the launcher exits 2 (bad input) on it.

use std::{
    ffi::OsStr,
    fs::{File, Metadata},
    io,
    os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt},
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use nix::{
    errno::Errno,
    fcntl::{Flock, FlockArg, OFlag},
    sys::stat::Mode,
};

/// The size of the holder record: `pid N (session ID)`, padded with spaces, ending in `\n`.
pub const RECORD_LEN: usize = 128;

/// A held lease.
#[derive(Debug)]
pub struct Lease {
    _lock: Flock<File>,
    pub path: PathBuf,
    pub waited: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error("the lease path {path} names no file; expected a path ending in a file name (DECODE_BASELINE_LEASE)")]
    NoFileName { path: PathBuf },
    #[error("failed to open the directory {dir} of the lease file {path}")]
    Directory {
        path: PathBuf,
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "refusing the lease file {path}: the directory {dir} {found}; expected a directory owned by \
         uid {euid} (yours) or root that no one else can write, or a sticky one such as /tmp \
         (set DECODE_BASELINE_LEASE to a path in such a directory)"
    )]
    UnsafeDirectory { path: PathBuf, dir: PathBuf, found: String, euid: u32 },
    #[error(
        "refusing the lease file {path}: it is a symbolic link to {target}; expected a regular \
         file (links are never followed: remove it, or set DECODE_BASELINE_LEASE)"
    )]
    Symlink { path: PathBuf, target: PathBuf },
    #[error("refusing the lease file {path}: it is {found}; expected a regular file")]
    NotRegular { path: PathBuf, found: &'static str },
    #[error(
        "refusing the lease file {path}: it is owned by uid {owner}; expected uid {euid} (yours) \
         or root (another user's lease file; see \"The lease on a shared host\" in req/session.md)"
    )]
    Owner { path: PathBuf, owner: u32, euid: u32 },
    #[error(
        "refusing the lease file {path}: its mode {mode:04o} lets group or others write it; \
         expected no write permission for them (e.g. 0644)"
    )]
    Writable { path: PathBuf, mode: u32 },
    #[error("refusing the lease file {path}: it has {links} hard links; expected exactly one")]
    Links { path: PathBuf, links: u64 },
    #[error(
        "refusing the lease file {path}: its {len} bytes are not a lease record; expected an empty \
         file or one line `pid N (session ID)` of at most {RECORD_LEN} bytes (nothing was written)"
    )]
    NotALease { path: PathBuf, len: u64 },
    #[error("failed to open the lease file {path}")]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
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

/// How a busy lease is met: refused at once (`None`, `--no-wait`), or waited for, after telling
/// the function who holds it.
pub type Waiting<'a> = Option<&'a dyn Fn(String)>;

/// Takes the lease, waiting for it as `waiting` says.
pub fn acquire(session_id: &str, waiting: Waiting<'_>) -> Result<Lease, LeaseError> {
    acquire_at(lease_path(), session_id, waiting)
}

/// Takes the lease at `path`: open it safely, lock it, check what it holds, name the holder.
pub fn acquire_at(path: PathBuf, session_id: &str, waiting: Waiting<'_>) -> Result<Lease, LeaseError> {
    let started = Instant::now();
    let opened = open_checked(&path)?;
    let lock = lock(opened.file, &path, waiting)?;
    // Checked under the lock: only a holder writes a record, so the content is stable now.
    let len = lock.metadata().map_err(|source| LeaseError::Open { path: path.clone(), source })?.len();
    if let Content::Other = content(&read_head(&lock)) {
        return Err(LeaseError::NotALease { path, len });
    }
    if opened.writable {
        // The lock is what matters; a record that cannot be written only leaves holders unnamed.
        let _ = lock.write_all_at(&record(std::process::id(), session_id), 0);
    }
    // The lock belongs to the open file description; letting the workers inherit it keeps the
    // lease held until the last of them is gone, even if the launcher itself is killed.
    nix::fcntl::fcntl(&*lock, nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()))
        .map_err(|source| LeaseError::Lock { path: path.clone(), source })?;
    Ok(Lease { _lock: lock, path, waited: started.elapsed() })
}

struct Opened {
    file: File,
    /// Opened for writing (the file is ours): the holder record goes in.
    writable: bool,
}

/// Opens (or creates) the lease file without following a link, hanging, or trusting a file or
/// directory someone else controls.
fn open_checked(path: &Path) -> Result<Opened, LeaseError> {
    let euid = nix::unistd::geteuid().as_raw();
    let name = path.file_name().ok_or_else(|| LeaseError::NoFileName { path: path.to_owned() })?;
    let dir = checked_directory(path, euid)?;
    let flags = OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_CLOEXEC;
    // A file removed between the failed create and the open is created again, a few times.
    for _ in 0..3 {
        let created = OFlag::O_RDWR | OFlag::O_CREAT | OFlag::O_EXCL | flags;
        match nix::fcntl::openat(&dir, name, created, creation_mode(euid)) {
            Ok(fd) => {
                let file = File::from(fd);
                check_file(&file, path, euid)?;
                return Ok(Opened { file, writable: true });
            }
            Err(Errno::EEXIST) => {}
            Err(errno) => return Err(LeaseError::Open { path: path.to_owned(), source: errno.into() }),
        }
        let file = match nix::fcntl::openat(&dir, name, OFlag::O_RDONLY | flags, Mode::empty()) {
            Ok(fd) => File::from(fd),
            Err(Errno::ENOENT) => continue,
            Err(errno) => {
                return Err(describe(&dir, name, path)
                    .unwrap_or(LeaseError::Open { path: path.to_owned(), source: errno.into() }))
            }
        };
        let meta = check_file(&file, path, euid)?;
        if meta.uid() != euid {
            // Root's file, not ours: lock it read-only, write nothing.
            return Ok(Opened { file, writable: false });
        }
        // Ours: reopen for the record, and make sure the name still leads to the checked file.
        let rw = nix::fcntl::openat(&dir, name, OFlag::O_RDWR | flags, Mode::empty())
            .map(File::from)
            .map_err(|errno| LeaseError::Open { path: path.to_owned(), source: errno.into() })?;
        let again = check_file(&rw, path, euid)?;
        if (again.dev(), again.ino()) != (meta.dev(), meta.ino()) {
            return Err(LeaseError::Open {
                path: path.to_owned(),
                source: io::Error::other("the file was replaced while it was being opened"),
            });
        }
        return Ok(Opened { file: rw, writable: true });
    }
    Err(LeaseError::Open { path: path.to_owned(), source: io::Error::other("the file kept disappearing") })
}

/// The mode of a lease file the launcher creates. A user's own file is refused by every other
/// user's launcher (it is not theirs to trust), so letting them open it would serve only to let
/// them lock it forever: 0600. Root's file is trusted by every launcher, which lock it
/// read-only: 0644, so one root-created lease serializes every user's sessions.
fn creation_mode(euid: u32) -> Mode {
    Mode::from_bits_truncate(if euid == 0 { 0o644 } else { 0o600 })
}

/// Opens the lease file's directory after checking it and every ancestor of its real path.
fn checked_directory(path: &Path, euid: u32) -> Result<File, LeaseError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let fail = |dir: &Path, source| LeaseError::Directory { path: path.to_owned(), dir: dir.to_owned(), source };
    let real = std::fs::canonicalize(parent).map_err(|e| fail(parent, e))?;
    for dir in real.ancestors() {
        let meta = std::fs::symlink_metadata(dir).map_err(|e| fail(dir, e))?;
        if let Some(found) = unsafe_directory(meta.uid(), meta.mode(), euid) {
            return Err(LeaseError::UnsafeDirectory { path: path.to_owned(), dir: dir.to_owned(), found, euid });
        }
    }
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW).bits())
        .open(&real)
        .map_err(|e| fail(&real, e))
}

/// Why a directory with this owner and mode is unsafe to hold the lease, if it is: someone
/// other than the launcher's user and root could rename or replace the file in it.
fn unsafe_directory(owner: u32, mode: u32, euid: u32) -> Option<String> {
    if owner != euid && owner != 0 {
        return Some(format!("is owned by uid {owner}"));
    }
    let sticky = mode & 0o1000 != 0;
    if mode & 0o022 != 0 && !sticky {
        return Some(format!("is writable by group or others and not sticky (mode {:04o})", mode & 0o7777));
    }
    None
}

/// The `fstat` checks of an opened lease file; returns its metadata when it passes.
fn check_file(file: &File, path: &Path, euid: u32) -> Result<Metadata, LeaseError> {
    let meta = file.metadata().map_err(|source| LeaseError::Open { path: path.to_owned(), source })?;
    let path = path.to_owned();
    if !meta.file_type().is_file() {
        return Err(LeaseError::NotRegular { path, found: kind(&meta) });
    }
    if meta.uid() != euid && meta.uid() != 0 {
        return Err(LeaseError::Owner { path, owner: meta.uid(), euid });
    }
    if meta.mode() & 0o022 != 0 {
        return Err(LeaseError::Writable { path, mode: meta.mode() & 0o7777 });
    }
    if meta.nlink() != 1 {
        return Err(LeaseError::Links { path, links: meta.nlink() });
    }
    Ok(meta)
}

/// What stands at the lease path when it could not be opened (a link, a socket), if that is
/// the reason.
fn describe(dir: &File, name: &OsStr, path: &Path) -> Option<LeaseError> {
    let stat = nix::sys::stat::fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW).ok()?;
    let format = stat.st_mode & nix::libc::S_IFMT;
    if format == nix::libc::S_IFLNK {
        let target = nix::fcntl::readlinkat(dir, name).map(PathBuf::from).unwrap_or_else(|_| "?".into());
        return Some(LeaseError::Symlink { path: path.to_owned(), target });
    }
    let found = match format {
        nix::libc::S_IFREG => return None,
        nix::libc::S_IFDIR => "a directory",
        nix::libc::S_IFIFO => "a FIFO",
        nix::libc::S_IFSOCK => "a socket",
        nix::libc::S_IFCHR => "a character device",
        nix::libc::S_IFBLK => "a block device",
        _ => "not a regular file",
    };
    Some(LeaseError::NotRegular { path: path.to_owned(), found })
}

fn kind(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

fn lock(file: File, path: &Path, waiting: Waiting<'_>) -> Result<Flock<File>, LeaseError> {
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Ok(lock),
        Err((file, Errno::EWOULDBLOCK)) => {
            let holder = match content(&read_head(&file)) {
                Content::Holder(holder) => holder,
                Content::Empty | Content::Other => "another launcher".to_owned(),
            };
            let Some(say) = waiting else {
                return Err(LeaseError::Busy { path: path.to_owned(), holder });
            };
            say(format!("waiting for the benchmark lease {} held by {holder}", path.display()));
            Flock::lock(file, FlockArg::LockExclusive)
                .map_err(|(_, source)| LeaseError::Lock { path: path.to_owned(), source })
        }
        Err((_, source)) => Err(LeaseError::Lock { path: path.to_owned(), source }),
    }
}

/// The first bytes of the file: enough to tell a record from anything longer.
fn read_head(file: &File) -> Vec<u8> {
    let mut head = vec![0; RECORD_LEN + 1];
    let mut filled = 0;
    while filled < head.len() {
        match file.read_at(&mut head[filled..], filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    head.truncate(filled);
    head
}

/// What a lease file holds.
#[derive(Debug, PartialEq, Eq)]
enum Content {
    /// Nothing yet: created, never written.
    Empty,
    /// A holder record (this format, or the unpadded line of earlier versions), trimmed.
    Holder(String),
    /// Anything else: not a lease file, never written to.
    Other,
}

fn content(bytes: &[u8]) -> Content {
    if bytes.is_empty() {
        return Content::Empty;
    }
    let Some((last, line)) = bytes.split_last() else {
        return Content::Empty;
    };
    let printable = line.iter().all(|b| (0x20..=0x7e).contains(b));
    if bytes.len() > RECORD_LEN || *last != b'\n' || !printable || !line.starts_with(b"pid ") {
        return Content::Other;
    }
    Content::Holder(String::from_utf8_lossy(line).trim_end().to_owned())
}

/// The holder record: exactly [`RECORD_LEN`] bytes, printable ASCII, so it always overwrites
/// the previous record in place and reads back as [`Content::Holder`].
fn record(pid: u32, session_id: &str) -> Vec<u8> {
    let text = format!("pid {pid} (session {session_id})");
    let mut bytes: Vec<u8> = text
        .chars()
        .map(|c| if c.is_ascii() && !c.is_ascii_control() { c as u8 } else { b'?' })
        .take(RECORD_LEN - 1)
        .collect();
    bytes.resize(RECORD_LEN - 1, b' ');
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use std::{
        os::unix::fs::{symlink, PermissionsExt},
        sync::mpsc,
    };

    use proptest::prelude::*;

    use super::*;

    /// The uid the tests give "another user": `nobody`.
    const OTHER_UID: u32 = 65534;

    fn try_acquire(path: &Path, session: &str) -> Result<Lease, LeaseError> {
        acquire_at(path.to_owned(), session, None)
    }

    /// Everything a refusal must leave as it was: the entry itself (not followed), and what a
    /// link points to.
    fn snapshot(path: &Path) -> (u32, u32, u64, u64, Option<Vec<u8>>) {
        let meta = std::fs::symlink_metadata(path).unwrap();
        // Read only what cannot block: a FIFO's open would wait for a writer.
        let readable = meta.file_type().is_file() || meta.file_type().is_symlink();
        let bytes = readable.then(|| std::fs::read(path).ok()).flatten();
        (meta.mode(), meta.uid(), meta.ino(), meta.len(), bytes)
    }

    fn set_mode(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// Gives `path` to another user, which only root can: a test run as another user fails
    /// here, unless `DECODE_BASELINE_TESTS_AS_USER` says that skipping these tests is meant.
    fn give_away(path: &Path) -> bool {
        match std::os::unix::fs::chown(path, Some(OTHER_UID), None) {
            Ok(()) => true,
            Err(e) if std::env::var_os("DECODE_BASELINE_TESTS_AS_USER").is_some() => {
                eprintln!(
                    "skipped (DECODE_BASELINE_TESTS_AS_USER): cannot give {} to uid {OTHER_UID} ({e})",
                    path.display()
                );
                false
            }
            Err(e) => panic!(
                "cannot give {} to uid {OTHER_UID} ({e}): the lease's ownership checks need the tests run as root \
                 (set DECODE_BASELINE_TESTS_AS_USER=1 to skip them instead)",
                path.display()
            ),
        }
    }

    /// Runs `f` on a thread and fails the test if it has not returned in 10 s (an open that
    /// blocks on a FIFO would hang the test forever otherwise).
    fn within_10s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || tx.send(f()));
        rx.recv_timeout(Duration::from_secs(10)).expect("acquiring the lease hung")
    }

    /// Tries the lease at `lease` (on a thread with a bound: an open that blocks would hang the
    /// test otherwise), expects a refusal, and checks that the entry is as it was.
    fn refused_untouched(lease: &Path) -> LeaseError {
        let before = snapshot(lease);
        let path = lease.to_owned();
        let err = within_10s(move || try_acquire(&path, "s").unwrap_err());
        assert_eq!(snapshot(lease), before, "{err}");
        err
    }

    #[test]
    fn a_symlink_is_refused_and_its_target_is_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("precious");
        std::fs::write(&target, b"a file the launcher can write\n").unwrap();
        let lease = dir.path().join("lease");
        symlink(&target, &lease).unwrap();
        let before = snapshot(&target);
        let err = refused_untouched(&lease);
        assert!(matches!(&err, LeaseError::Symlink { target: t, .. } if *t == target), "{err}");
        assert!(err.to_string().contains(&*lease.to_string_lossy()), "{err}");
        assert_eq!(snapshot(&target), before);
        assert_eq!(std::fs::read(&target).unwrap(), b"a file the launcher can write\n");
    }

    #[test]
    fn a_dangling_symlink_is_refused_and_nothing_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("absent");
        let lease = dir.path().join("lease");
        symlink(&target, &lease).unwrap();
        let err = try_acquire(&lease, "s").unwrap_err();
        assert!(matches!(err, LeaseError::Symlink { .. }), "{err}");
        assert!(!target.exists(), "the link's target was created");
    }

    #[test]
    fn a_fifo_is_refused_without_hanging() {
        let dir = tempfile::tempdir().unwrap();
        let lease = dir.path().join("lease");
        nix::unistd::mkfifo(&lease, Mode::from_bits_truncate(0o644)).unwrap();
        let err = refused_untouched(&lease);
        assert!(matches!(err, LeaseError::NotRegular { found: "a FIFO", .. }), "{err}");
        assert!(err.to_string().contains("expected a regular file"), "{err}");
    }

    #[test]
    fn a_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let lease = dir.path().join("lease");
        std::fs::create_dir(&lease).unwrap();
        let err = refused_untouched(&lease);
        assert!(matches!(err, LeaseError::NotRegular { found: "a directory", .. }), "{err}");
    }

    #[test]
    fn a_socket_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let lease = dir.path().join("lease");
        let _listener = std::os::unix::net::UnixListener::bind(&lease).unwrap();
        let err = refused_untouched(&lease);
        assert!(matches!(err, LeaseError::NotRegular { found: "a socket", .. }), "{err}");
    }

    #[test]
    fn a_group_writable_file_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let lease = dir.path().join("lease");
        std::fs::write(&lease, b"pid 1 (session old)\n").unwrap();
        set_mode(&lease, 0o664);
        let err = refused_untouched(&lease);
        assert!(matches!(err, LeaseError::Writable { mode: 0o664, .. }), "{err}");
        assert!(err.to_string().contains("0664"), "{err}");
    }

    #[test]
    fn a_file_of_another_user_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let lease = dir.path().join("lease");
        std::fs::write(&lease, b"pid 1 (session theirs)\n").unwrap();
        if !give_away(&lease) {
            return;
        }
        let err = refused_untouched(&lease);
        assert!(matches!(err, LeaseError::Owner { owner: OTHER_UID, .. }), "{err}");
        assert!(err.to_string().contains("owned by uid 65534"), "{err}");
    }

    #[test]
    fn a_hard_linked_file_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("elsewhere");
        std::fs::write(&other, b"").unwrap();
        let lease = dir.path().join("lease");
        std::fs::hard_link(&other, &lease).unwrap();
        let err = refused_untouched(&lease);
        assert!(matches!(err, LeaseError::Links { links: 2, .. }), "{err}");
    }

    #[test]
    fn a_file_that_is_not_a_lease_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let lease = dir.path().join("lease");
        std::fs::write(&lease, b"notes that matter\n").unwrap();
        let err = refused_untouched(&lease);
        assert!(matches!(err, LeaseError::NotALease { len: 18, .. }), "{err}");
        assert_eq!(std::fs::read(&lease).unwrap(), b"notes that matter\n");
    }

    #[test]
    fn a_directory_others_can_write_is_refused_and_nothing_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        set_mode(&open, 0o777);
        let err = try_acquire(&open.join("lease"), "s").unwrap_err();
        assert!(matches!(&err, LeaseError::UnsafeDirectory { dir, .. } if *dir == open), "{err}");
        assert!(err.to_string().contains("not sticky (mode 0777)"), "{err}");
        assert!(!open.join("lease").exists());
    }

    #[test]
    fn a_directory_of_another_user_is_refused_and_nothing_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let theirs = dir.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        if !give_away(&theirs) {
            return;
        }
        let err = try_acquire(&theirs.join("lease"), "s").unwrap_err();
        assert!(matches!(&err, LeaseError::UnsafeDirectory { dir, .. } if *dir == theirs), "{err}");
        assert!(!theirs.join("lease").exists());
    }

    #[test]
    fn a_sticky_world_writable_directory_is_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        set_mode(&shared, 0o1777);
        let lease = try_acquire(&shared.join("lease"), "s").unwrap();
        assert_eq!(lease.path, shared.join("lease"));
    }

    #[test]
    fn an_absent_file_is_created_private_and_names_its_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lease");
        let _lease = try_acquire(&path, "20261201T000000Z-1").unwrap();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(meta.uid(), nix::unistd::geteuid().as_raw());
        // The rule restated: a user's own lease is private, root's is readable by every user.
        let expected = if meta.uid() == 0 { 0o644 } else { 0o600 };
        assert_eq!(meta.mode() & 0o777 & !expected, 0, "mode {:o}, at most {expected:o}", meta.mode());
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), RECORD_LEN);
        let holder = format!("pid {} (session 20261201T000000Z-1)", std::process::id());
        assert_eq!(content(&bytes), Content::Holder(holder));
    }

    #[test]
    fn an_existing_own_file_is_reused_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lease");
        for old in [&b""[..], b"pid 12 (session an earlier version)\n", &record(12, "earlier")] {
            std::fs::write(&path, old).unwrap();
            let ino = std::fs::metadata(&path).unwrap().ino();
            let lease = try_acquire(&path, "now").unwrap();
            let meta = std::fs::metadata(&path).unwrap();
            assert_eq!(meta.ino(), ino, "the file was replaced");
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(bytes, record(std::process::id(), "now"));
            drop(lease);
        }
    }

    #[test]
    fn a_held_lease_is_busy_and_names_its_holder_then_free_once_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lease");
        let first = try_acquire(&path, "first").unwrap();
        let err = try_acquire(&path, "second").unwrap_err();
        let holder = format!("pid {} (session first)", std::process::id());
        assert!(matches!(&err, LeaseError::Busy { holder: h, .. } if *h == holder), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), record(std::process::id(), "first"), "the waiter wrote");
        drop(first);
        let _second = try_acquire(&path, "second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), record(std::process::id(), "second"));
    }

    #[test]
    fn a_path_without_a_file_name_is_refused() {
        let err = try_acquire(Path::new("/"), "s").unwrap_err();
        assert!(matches!(err, LeaseError::NoFileName { .. }), "{err}");
    }

    #[test]
    fn directories_are_judged_by_owner_mode_and_sticky_bit() {
        let me = 1000;
        assert_eq!(unsafe_directory(me, 0o755, me), None);
        assert_eq!(unsafe_directory(0, 0o755, me), None);
        assert_eq!(unsafe_directory(0, 0o1777, me), None, "/tmp");
        assert_eq!(unsafe_directory(me, 0o1770, me), None);
        assert!(unsafe_directory(me, 0o775, me).is_some(), "group can swap the file");
        assert!(unsafe_directory(me, 0o757, me).is_some(), "others can swap the file");
        assert!(unsafe_directory(OTHER_UID, 0o755, me).unwrap().contains("uid 65534"));
        assert!(unsafe_directory(OTHER_UID, 0o1777, me).is_some(), "a sticky directory's owner can still swap");
    }

    #[test]
    fn contents_are_told_apart() {
        assert_eq!(content(b""), Content::Empty);
        assert_eq!(content(b"pid 7 (session x)\n"), Content::Holder("pid 7 (session x)".into()));
        assert_eq!(content(b"pid 7 (session x)"), Content::Other, "no newline");
        assert_eq!(content(b"pid 7\nmore\n"), Content::Other, "two lines");
        assert_eq!(content(b"#!/bin/sh\n"), Content::Other);
        assert_eq!(content(b"pid \x1b[2J\n"), Content::Other, "control characters");
        let mut long = b"pid ".to_vec();
        long.resize(RECORD_LEN, b'x');
        long.push(b'\n');
        assert_eq!(content(&long), Content::Other, "longer than a record");
    }

    proptest! {
        #[test]
        fn every_record_is_a_full_record_that_reads_back(pid: u32, session in any::<String>()) {
            let bytes = record(pid, &session);
            prop_assert_eq!(bytes.len(), RECORD_LEN);
            let prefix = format!("pid {pid} ");
            prop_assert!(matches!(content(&bytes), Content::Holder(h) if h.starts_with(&prefix)));
        }

        #[test]
        fn anything_longer_than_a_record_is_not_one(bytes in proptest::collection::vec(any::<u8>(), RECORD_LEN + 1..400)) {
            prop_assert_eq!(content(&bytes), Content::Other);
        }
    }
}
