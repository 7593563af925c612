//! Thin wrappers over the libc calls the filesystem makes, all relative to directory fds.
//!
//! Each returns the backing errno as a [`fuser::Errno`], so the FUSE layer passes it on unchanged.
//! Names are passed as byte slices and turned into C strings on the stack when short.

use fuser::Errno;
use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;

/// Result of a backing call: the value or the errno the backing filesystem gave.
pub type SysResult<T> = Result<T, Errno>;

/// The errno of the last failed libc call.
pub fn last_errno() -> Errno {
    Errno::from(std::io::Error::last_os_error())
}

fn check(ret: libc::c_int) -> SysResult<libc::c_int> {
    if ret < 0 {
        Err(last_errno())
    } else {
        Ok(ret)
    }
}

fn check_size(ret: libc::ssize_t) -> SysResult<usize> {
    if ret < 0 {
        Err(last_errno())
    } else {
        Ok(ret as usize)
    }
}

/// Calls `f` with `name` as a NUL-terminated C string, built on the stack when it fits.
pub fn with_cstr<T>(name: &[u8], f: impl FnOnce(&CStr) -> SysResult<T>) -> SysResult<T> {
    const STACK: usize = 512;
    if name.contains(&0) {
        return Err(Errno::EINVAL);
    }
    if name.len() < STACK {
        let mut buf = [0u8; STACK];
        buf[..name.len()].copy_from_slice(name);
        let c = CStr::from_bytes_until_nul(&buf).map_err(|_| Errno::EINVAL)?;
        f(c)
    } else {
        let c = std::ffi::CString::new(name).map_err(|_| Errno::EINVAL)?;
        f(&c)
    }
}

/// `/proc/self/fd` of this process, opened on first use. Calls on "the object behind fd N" name
/// it as `N` relative to this directory rather than by the full path: the kernel then walks one
/// component instead of four (`proc`, `self`, `fd`, `N`), which halves the cost of a reopen.
/// The daemon forks before it serves requests, so the process that opens it is the one it names.
static PROC_FD_DIR: OnceLock<Option<OwnedFd>> = OnceLock::new();

fn proc_fd_dir() -> Option<RawFd> {
    PROC_FD_DIR
        .get_or_init(|| {
            let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
            // SAFETY: NUL-terminated path; the fd returned is owned by nothing else.
            let fd = unsafe { libc::open(c"/proc/self/fd".as_ptr(), flags) };
            // SAFETY: a fresh fd the kernel just returned.
            (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
        })
        .as_ref()
        .map(AsRawFd::as_raw_fd)
}

/// The `/proc/self/fd/N` magic link of an fd: opens what an `O_PATH` fd refers to without a
/// name. Used as [`ProcPath::dir`] + [`ProcPath::name`] with the `*at` calls, or as the full
/// [`ProcPath::path`] with the calls that have no `*at` form.
pub struct ProcPath {
    dir: RawFd,
    /// `/proc/self/fd/N`, NUL-terminated.
    buf: [u8; 32],
    /// Where `N` starts in `buf` when `dir` is `/proc/self/fd` itself.
    name_at: usize,
}

impl ProcPath {
    /// The magic link of `fd`.
    pub fn new(fd: RawFd) -> ProcPath {
        use std::io::Write;
        const PREFIX: &str = "/proc/self/fd/";
        let mut buf = [0u8; 32];
        let mut cur = &mut buf[..31];
        // 14 bytes of prefix plus at most 11 digits always fit in 31 bytes.
        let _ = write!(cur, "{PREFIX}{fd}");
        match proc_fd_dir() {
            Some(dir) => ProcPath {
                dir,
                buf,
                name_at: PREFIX.len(),
            },
            None => ProcPath {
                dir: libc::AT_FDCWD,
                buf,
                name_at: 0,
            },
        }
    }

    /// The directory [`ProcPath::name`] is relative to.
    pub fn dir(&self) -> RawFd {
        self.dir
    }

    /// The link's name relative to [`ProcPath::dir`].
    pub fn name(&self) -> &CStr {
        CStr::from_bytes_until_nul(&self.buf[self.name_at..]).unwrap_or(c"-1")
    }

    /// The full path, for calls without an `*at` form.
    pub fn path(&self) -> &CStr {
        CStr::from_bytes_until_nul(&self.buf).unwrap_or(c"/proc/self/fd/-1")
    }
}

/// Wraps a raw fd just returned by the kernel.
fn owned(fd: libc::c_int) -> SysResult<OwnedFd> {
    let fd = check(fd)?;
    // SAFETY: the kernel just returned this fd to us and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `openat(dir, name, flags | O_CLOEXEC, mode)`.
pub fn openat(dir: BorrowedFd<'_>, name: &[u8], flags: i32, mode: u32) -> SysResult<OwnedFd> {
    with_cstr(name, |c| {
        // SAFETY: valid fd and NUL-terminated path.
        owned(unsafe {
            libc::openat(
                dir.as_raw_fd(),
                c.as_ptr(),
                flags | libc::O_CLOEXEC,
                mode as libc::c_uint,
            )
        })
    })
}

/// An `O_PATH | O_NOFOLLOW` fd of `name` in `dir`: the handle an inode keeps.
pub fn open_path(dir: BorrowedFd<'_>, name: &[u8]) -> SysResult<OwnedFd> {
    openat(dir, name, libc::O_PATH | libc::O_NOFOLLOW, 0)
}

/// Opens the directory `dir` (an `O_PATH` fd will do) for reading its entries or syncing it.
pub fn open_dir(dir: BorrowedFd<'_>) -> SysResult<OwnedFd> {
    openat(dir, b".", libc::O_RDONLY | libc::O_DIRECTORY, 0)
}

/// Reopens what an `O_PATH` fd refers to with real open flags (never following a symlink).
pub fn reopen(fd: BorrowedFd<'_>, flags: i32) -> SysResult<OwnedFd> {
    let p = ProcPath::new(fd.as_raw_fd());
    let flags = (flags & !libc::O_NOFOLLOW & !libc::O_CREAT & !libc::O_EXCL) | libc::O_CLOEXEC;
    // SAFETY: NUL-terminated path.
    owned(unsafe { libc::openat(p.dir(), p.name().as_ptr(), flags) })
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`.
pub fn stat_at(dir: BorrowedFd<'_>, name: &[u8]) -> SysResult<libc::stat> {
    with_cstr(name, |c| stat_at_c(dir, c, libc::AT_SYMLINK_NOFOLLOW))
}

/// `fstatat(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)`: the attributes of the fd's object.
pub fn stat_fd(fd: BorrowedFd<'_>) -> SysResult<libc::stat> {
    stat_at_c(fd, c"", libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW)
}

fn stat_at_c(dir: BorrowedFd<'_>, name: &CStr, flags: i32) -> SysResult<libc::stat> {
    let mut st = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: valid fd, NUL-terminated path, buffer of the right size.
    check(unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), st.as_mut_ptr(), flags) })?;
    // SAFETY: fstatat filled it on success.
    Ok(unsafe { st.assume_init() })
}

/// `mkdirat`.
pub fn mkdirat(dir: BorrowedFd<'_>, name: &[u8], mode: u32) -> SysResult<()> {
    with_cstr(name, |c| {
        // SAFETY: valid fd and path.
        check(unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), mode as libc::mode_t) }).map(drop)
    })
}

/// `mknodat`.
pub fn mknodat(dir: BorrowedFd<'_>, name: &[u8], mode: u32, rdev: u64) -> SysResult<()> {
    with_cstr(name, |c| {
        // SAFETY: valid fd and path.
        check(unsafe {
            libc::mknodat(
                dir.as_raw_fd(),
                c.as_ptr(),
                mode as libc::mode_t,
                rdev as libc::dev_t,
            )
        })
        .map(drop)
    })
}

/// `symlinkat(target, dir, name)`.
pub fn symlinkat(target: &[u8], dir: BorrowedFd<'_>, name: &[u8]) -> SysResult<()> {
    with_cstr(target, |t| {
        with_cstr(name, |c| {
            // SAFETY: valid fd and paths.
            check(unsafe { libc::symlinkat(t.as_ptr(), dir.as_raw_fd(), c.as_ptr()) }).map(drop)
        })
    })
}

/// Links the object behind `fd` as `name` in `dir`, through its `/proc/self/fd` path.
pub fn link_fd(fd: BorrowedFd<'_>, dir: BorrowedFd<'_>, name: &[u8]) -> SysResult<()> {
    let p = ProcPath::new(fd.as_raw_fd());
    with_cstr(name, |c| {
        // SAFETY: valid fds and paths.
        check(unsafe {
            libc::linkat(
                p.dir(),
                p.name().as_ptr(),
                dir.as_raw_fd(),
                c.as_ptr(),
                libc::AT_SYMLINK_FOLLOW,
            )
        })
        .map(drop)
    })
}

/// `unlinkat(dir, name, flags)`.
pub fn unlinkat(dir: BorrowedFd<'_>, name: &[u8], flags: i32) -> SysResult<()> {
    with_cstr(name, |c| {
        // SAFETY: valid fd and path.
        check(unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), flags) }).map(drop)
    })
}

/// `renameat2(olddir, old, newdir, new, flags)`.
pub fn renameat2(
    olddir: BorrowedFd<'_>,
    old: &[u8],
    newdir: BorrowedFd<'_>,
    new: &[u8],
    flags: u32,
) -> SysResult<()> {
    with_cstr(old, |o| {
        with_cstr(new, |n| {
            // SAFETY: valid fds and paths.
            check(unsafe {
                libc::renameat2(
                    olddir.as_raw_fd(),
                    o.as_ptr(),
                    newdir.as_raw_fd(),
                    n.as_ptr(),
                    flags,
                )
            })
            .map(drop)
        })
    })
}

/// The target of the symlink an `O_PATH` fd refers to.
pub fn readlink_fd(fd: BorrowedFd<'_>) -> SysResult<Vec<u8>> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
    // SAFETY: valid fd, empty path, buffer of the given length.
    let n = check_size(unsafe {
        libc::readlinkat(
            fd.as_raw_fd(),
            c"".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    })?;
    buf.truncate(n);
    Ok(buf)
}

/// The path the kernel knows for the object behind `fd` (readlink of `/proc/self/fd/N`): used
/// only to name things in log messages and to find a symlink's directory, never on hot paths.
pub fn fd_path(fd: BorrowedFd<'_>) -> SysResult<Vec<u8>> {
    let p = ProcPath::new(fd.as_raw_fd());
    let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
    // SAFETY: NUL-terminated path, buffer of the given length.
    let n = check_size(unsafe {
        libc::readlinkat(
            p.dir(),
            p.name().as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    })?;
    buf.truncate(n);
    Ok(buf)
}

/// chmod of the object behind an `O_PATH` fd (not a symlink).
pub fn chmod_fd(fd: BorrowedFd<'_>, mode: u32) -> SysResult<()> {
    let p = ProcPath::new(fd.as_raw_fd());
    // SAFETY: NUL-terminated path.
    check(unsafe { libc::fchmodat(p.dir(), p.name().as_ptr(), mode as libc::mode_t, 0) }).map(drop)
}

/// Clears set-user-ID, and set-group-ID when group execute is also set, on the file behind
/// `fd`: what the kernel does when an unprivileged process writes to or truncates a file. With
/// FUSE_HANDLE_KILLPRIV_V2 the daemon does it, and the daemon's own calls keep the bits (it
/// holds CAP_FSETID).
pub fn kill_setid(fd: BorrowedFd<'_>) -> SysResult<()> {
    let mode = stat_fd(fd)?.st_mode & 0o7777;
    let mut kept = mode & !libc::S_ISUID;
    if mode & libc::S_IXGRP != 0 {
        kept &= !libc::S_ISGID;
    }
    if kept != mode {
        chmod_fd(fd, kept)?;
    }
    Ok(())
}

/// chown of the object behind an `O_PATH` fd, never following a symlink; `u32::MAX` keeps one.
pub fn chown_fd(fd: BorrowedFd<'_>, uid: u32, gid: u32) -> SysResult<()> {
    // SAFETY: valid fd and empty path.
    check(unsafe {
        libc::fchownat(
            fd.as_raw_fd(),
            c"".as_ptr(),
            uid,
            gid,
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        )
    })
    .map(drop)
}

/// Sets times of the object behind an `O_PATH` fd (UTIME_NOW / UTIME_OMIT honoured).
pub fn utimens_fd(fd: BorrowedFd<'_>, times: &[libc::timespec; 2], symlink: bool) -> SysResult<()> {
    // SAFETY: valid fd, empty path, two timespecs.
    let r = unsafe {
        libc::utimensat(
            fd.as_raw_fd(),
            c"".as_ptr(),
            times.as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = last_errno();
    if e.code() != libc::EINVAL || symlink {
        return Err(e);
    }
    // Kernels before 5.8 lack AT_EMPTY_PATH here: go through the /proc path.
    let p = ProcPath::new(fd.as_raw_fd());
    // SAFETY: NUL-terminated path, two timespecs.
    check(unsafe { libc::utimensat(p.dir(), p.name().as_ptr(), times.as_ptr(), 0) }).map(drop)
}

/// `ftruncate`.
pub fn ftruncate(fd: BorrowedFd<'_>, size: u64) -> SysResult<()> {
    let size = libc::off_t::try_from(size).map_err(|_| Errno::EFBIG)?;
    // SAFETY: valid fd.
    check(unsafe { libc::ftruncate(fd.as_raw_fd(), size) }).map(drop)
}

/// `pread` into `buf`, returning the bytes read.
pub fn pread(fd: BorrowedFd<'_>, buf: &mut [u8], off: u64) -> SysResult<usize> {
    let off = libc::off_t::try_from(off).map_err(|_| Errno::EINVAL)?;
    // SAFETY: valid fd and buffer.
    check_size(unsafe { libc::pread(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), off) })
}

/// `pwrite` of `buf`, returning the bytes written.
pub fn pwrite(fd: BorrowedFd<'_>, buf: &[u8], off: u64) -> SysResult<usize> {
    let off = libc::off_t::try_from(off).map_err(|_| Errno::EINVAL)?;
    // SAFETY: valid fd and buffer.
    check_size(unsafe { libc::pwrite(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len(), off) })
}

/// `fsync` or `fdatasync`.
pub fn fsync(fd: BorrowedFd<'_>, datasync: bool) -> SysResult<()> {
    // SAFETY: valid fd.
    check(unsafe {
        if datasync {
            libc::fdatasync(fd.as_raw_fd())
        } else {
            libc::fsync(fd.as_raw_fd())
        }
    })
    .map(drop)
}

/// `close(dup(fd))`: reports delayed write errors of the backing fs at close, as a local close would.
pub fn flush(fd: BorrowedFd<'_>) -> SysResult<()> {
    // SAFETY: valid fd.
    let d = check(unsafe { libc::dup(fd.as_raw_fd()) })?;
    // SAFETY: we own the duplicate.
    check(unsafe { libc::close(d) }).map(drop)
}

/// `fallocate`.
pub fn fallocate(fd: BorrowedFd<'_>, mode: i32, off: u64, len: u64) -> SysResult<()> {
    let off = libc::off_t::try_from(off).map_err(|_| Errno::EINVAL)?;
    let len = libc::off_t::try_from(len).map_err(|_| Errno::EINVAL)?;
    // SAFETY: valid fd.
    check(unsafe { libc::fallocate(fd.as_raw_fd(), mode, off, len) }).map(drop)
}

/// `lseek`, for SEEK_DATA / SEEK_HOLE.
pub fn lseek(fd: BorrowedFd<'_>, off: i64, whence: i32) -> SysResult<i64> {
    // SAFETY: valid fd.
    let r = unsafe { libc::lseek(fd.as_raw_fd(), off, whence) };
    if r < 0 {
        Err(last_errno())
    } else {
        Ok(r)
    }
}

/// `copy_file_range` between two open fds at explicit offsets.
pub fn copy_file_range(
    fd_in: BorrowedFd<'_>,
    off_in: u64,
    fd_out: BorrowedFd<'_>,
    off_out: u64,
    len: u64,
) -> SysResult<usize> {
    let mut oi = libc::off64_t::try_from(off_in).map_err(|_| Errno::EINVAL)?;
    let mut oo = libc::off64_t::try_from(off_out).map_err(|_| Errno::EINVAL)?;
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    // SAFETY: valid fds and offsets.
    check_size(unsafe {
        libc::copy_file_range(
            fd_in.as_raw_fd(),
            &mut oi,
            fd_out.as_raw_fd(),
            &mut oo,
            len,
            0,
        )
    })
}

/// `fstatvfs`.
pub fn statvfs(fd: BorrowedFd<'_>) -> SysResult<libc::statvfs> {
    let mut st = MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: valid fd and buffer.
    check(unsafe { libc::fstatvfs(fd.as_raw_fd(), st.as_mut_ptr()) })?;
    // SAFETY: filled on success.
    Ok(unsafe { st.assume_init() })
}

/// `access` of the object behind an `O_PATH` fd.
pub fn access_fd(fd: BorrowedFd<'_>, mask: i32) -> SysResult<()> {
    let p = ProcPath::new(fd.as_raw_fd());
    // SAFETY: NUL-terminated path.
    check(unsafe { libc::faccessat(p.dir(), p.name().as_ptr(), mask, 0) }).map(drop)
}

/// `getdents64` into `buf`; returns the bytes filled (0 at the end).
pub fn getdents(fd: BorrowedFd<'_>, buf: &mut [u8]) -> SysResult<usize> {
    // SAFETY: valid fd and buffer.
    let r = unsafe {
        libc::syscall(
            libc::SYS_getdents64,
            fd.as_raw_fd(),
            buf.as_mut_ptr(),
            buf.len(),
        )
    };
    if r < 0 {
        Err(last_errno())
    } else {
        Ok(r as usize)
    }
}

/// The effective uid of the daemon.
pub fn geteuid() -> u32 {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::geteuid() }
}

/// Which xattr call to make.
pub enum XattrOp<'a> {
    /// Read the value of a name into the buffer (empty buffer: size query).
    Get(&'a CStr, &'a mut [u8]),
    /// Set a value with flags.
    Set(&'a CStr, &'a [u8], i32),
    /// List the names into the buffer (empty buffer: size query).
    List(&'a mut [u8]),
    /// Remove a name.
    Remove(&'a CStr),
}

/// An xattr call on the object behind an `O_PATH` fd, through its `/proc/self/fd` path. The
/// magic link resolves to the object itself, a symlink included (never to a symlink's target).
pub fn xattr(fd: BorrowedFd<'_>, op: XattrOp<'_>) -> SysResult<usize> {
    let p = ProcPath::new(fd.as_raw_fd());
    let path = p.path().as_ptr();
    // SAFETY: NUL-terminated path and names, buffers of the given lengths.
    unsafe {
        match op {
            XattrOp::Get(name, buf) => check_size(libc::getxattr(
                path,
                name.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )),
            XattrOp::Set(name, value, flags) => check(libc::setxattr(
                path,
                name.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
                flags,
            ))
            .map(|_| 0),
            XattrOp::List(buf) => {
                check_size(libc::listxattr(path, buf.as_mut_ptr().cast(), buf.len()))
            }
            XattrOp::Remove(name) => check(libc::removexattr(path, name.as_ptr())).map(|_| 0),
        }
    }
}
thread_local! {
    static UMASK_CLEARED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Clears the umask for the calling thread: the kernel already applied the client's umask to
/// the modes it sends. The thread first gets its own fs context (`unshare(CLONE_FS)`) so that the
/// umask of the process embedding the filesystem is left alone; if that fails, the process
/// umask is cleared.
pub fn clear_thread_umask() {
    UMASK_CLEARED.with(|done| {
        if done.get() {
            return;
        }
        // SAFETY: unshare and umask take plain integers and cannot corrupt memory.
        unsafe {
            if libc::unshare(libc::CLONE_FS) != 0 {
                log::debug!("unshare(CLONE_FS) failed; clearing the process umask");
            }
            libc::umask(0);
        }
        done.set(true);
    });
}
