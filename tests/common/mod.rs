//! Mount harness for the integration tests: a real utf8fs mounted over a temporary backing
//! directory, used the way a client would (std::fs and libc), with the backing store inspected
//! directly to check what really happened.
//!
//! Layout of each mount: `TMP/src` (the backing directory, SOURCE) and `TMP/mnt` (the mount
//! point). Every mount has its own temporary directory, so test binaries and the tests inside
//! them run in parallel.

#![allow(dead_code)]

#[macro_use]
pub mod normalize;

use std::ffi::{CStr, CString, OsStr};
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use std::sync::Arc;
use utf8fs::fs::{FsConfig, FsStats, Utf8Fs, Watching};
use utf8fs::mapping::{Charset, Mapper, Mode};

/// One malformed name per class the product must handle, with a label for messages.
pub const MALFORMED: &[(&str, &[u8])] = &[
    ("overlong '/' (C0 AF)", b"\xC0\xAF"),
    ("overlong '..' (C0 AE C0 AE)", b"\xC0\xAE\xC0\xAE"),
    ("overlong '.' (C0 AE)", b"\xC0\xAE"),
    ("surrogate (ED A0 80)", b"\xED\xA0\x80"),
    ("beyond U+10FFFF (F4 90 80 80)", b"\xF4\x90\x80\x80"),
    ("5-byte form (F8 88 80 80 80)", b"\xF8\x88\x80\x80\x80"),
    (
        "6-byte form (FC 84 80 80 80 80)",
        b"\xFC\x84\x80\x80\x80\x80",
    ),
    ("FE", b"\xFE"),
    ("FF", b"\xFF"),
    ("lone continuation (80)", b"\x80"),
    ("truncated (E2 82)", b"x\xE2\x82"),
    ("Latin-1 (caf E9)", b"caf\xE9"),
];

/// The transcode mode with `label`.
pub fn transcode(label: &str) -> Mode {
    Mode::Transcode(Charset::from_label(label).expect("known charset label"))
}

/// A mounted utf8fs over a fresh temporary backing directory; unmounted on drop.
pub struct Mount {
    session: Option<fuser::BackgroundSession>,
    /// The watch of SOURCE for outside changes, as the daemon runs it (`cache=auto` in reject
    /// and audit modes, when fanotify can mark the filesystem).
    pub watching: Option<Watching>,
    config: FsConfig,
    /// Live counters of the running filesystem (replaced on remount).
    pub stats: Arc<FsStats>,
    /// The backing directory (SOURCE).
    pub src: PathBuf,
    /// The mount point.
    pub mnt: PathBuf,
    /// The temporary directory holding `src` and `mnt`; removed last.
    dir: Option<tempfile::TempDir>,
}

impl Mount {
    /// Mounts an empty backing directory in `mode`.
    pub fn new(mode: Mode) -> Mount {
        Mount::with(mode, |_| {}, |_| {})
    }

    /// Lets `populate` fill the backing directory (with raw byte names) before mounting.
    pub fn populated(mode: Mode, populate: impl FnOnce(&Path)) -> Mount {
        Mount::with(mode, populate, |_| {})
    }

    /// Fills the backing directory with `populate`, adjusts the configuration with `tweak`,
    /// then mounts.
    pub fn with(
        mode: Mode,
        populate: impl FnOnce(&Path),
        tweak: impl FnOnce(&mut FsConfig),
    ) -> Mount {
        let dir = tempfile::Builder::new()
            .prefix("utf8fs-test-")
            .tempdir()
            .expect("create temporary directory");
        let src = dir.path().join("src");
        let mnt = dir.path().join("mnt");
        fs::create_dir(&src).expect("create src");
        fs::create_dir(&mnt).expect("create mnt");
        populate(&src);
        let mut config = FsConfig::new(src.clone(), Mapper::new(mode));
        // The harness mounts with default_permissions (below).
        config.kernel_permissions = true;
        tweak(&mut config);
        let mut m = Mount {
            session: None,
            watching: None,
            config,
            stats: Arc::new(FsStats::default()),
            src,
            mnt,
            dir: Some(dir),
        };
        m.mount();
        m
    }

    fn mount(&mut self) {
        let mut fs = Utf8Fs::new(self.config.clone())
            .unwrap_or_else(|e| panic!("Utf8Fs::new({}): {e}", self.src.display()));
        self.stats = fs.stats();
        let watch = fs.watch();
        let mut options = fuser::Config::default();
        options.mount_options = vec![
            fuser::MountOption::FSName("utf8fs-test".into()),
            fuser::MountOption::Subtype("utf8fs".into()),
            fuser::MountOption::DefaultPermissions,
        ];
        options.n_threads = Some(2);
        let session = fuser::spawn_mount(fs, &self.mnt, &options)
            .unwrap_or_else(|e| panic!("mount {}: {e}", self.mnt.display()));
        self.watching = watch.map(|w| w.spawn(session.notifier()).expect("start the watch"));
        self.session = Some(session);
        assert!(
            is_mounted(&self.mnt),
            "{} is not a mount point",
            self.mnt.display()
        );
    }

    fn unmount(&mut self) {
        if let Some(session) = self.session.take() {
            drop(session);
        }
        self.watching = None;
        if is_mounted(&self.mnt) {
            let c = cpath(&self.mnt);
            // SAFETY: c is a valid NUL-terminated path.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
    }

    /// Unmounts and mounts again over the same backing directory with the same configuration:
    /// the kernel and the daemon forget everything they learnt.
    pub fn remount(&mut self) {
        self.unmount();
        assert!(
            !is_mounted(&self.mnt),
            "{} still mounted",
            self.mnt.display()
        );
        self.mount();
    }

    /// Unmounts and hands back the temporary directory, so that the backing store can be
    /// inspected after the mount's life (it is removed when the returned value drops).
    pub fn finish(mut self) -> tempfile::TempDir {
        self.unmount();
        assert!(
            !is_mounted(&self.mnt),
            "{} still mounted",
            self.mnt.display()
        );
        self.dir.take().expect("temporary directory")
    }

    /// The temporary directory holding `src` and `mnt`.
    pub fn dir(&self) -> &Path {
        self.dir.as_ref().expect("temporary directory").path()
    }

    /// The configuration the filesystem was mounted with.
    pub fn config(&self) -> &FsConfig {
        &self.config
    }

    /// `src/rel` (rel may hold `/` and any bytes).
    pub fn src_path(&self, rel: &[u8]) -> PathBuf {
        join(&self.src, rel)
    }

    /// `mnt/rel` (rel may hold `/` and any bytes).
    pub fn mnt_path(&self, rel: &[u8]) -> PathBuf {
        join(&self.mnt, rel)
    }

    /// Sorted names in the backing directory `rel` (without `.` and `..`).
    pub fn list_src(&self, rel: &[u8]) -> Vec<Vec<u8>> {
        list(&self.src_path(rel))
    }

    /// Sorted names in the mounted directory `rel` (without `.` and `..`).
    pub fn list_mnt(&self, rel: &[u8]) -> Vec<Vec<u8>> {
        list(&self.mnt_path(rel))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        self.unmount();
    }
}

/// `base/rel` for a byte-string `rel`.
pub fn join(base: &Path, rel: &[u8]) -> PathBuf {
    if rel.is_empty() {
        base.to_path_buf()
    } else {
        base.join(OsStr::from_bytes(rel))
    }
}

/// Whether `path` is a mount point (listed in /proc/self/mountinfo).
pub fn is_mounted(path: &Path) -> bool {
    let info = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let want = path.as_os_str().as_bytes();
    info.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .any(|p| p.as_bytes() == want)
}

/// The errno of an I/O error; panics (naming the error) when it has none.
pub fn errno_of(e: io::Error) -> i32 {
    e.raw_os_error()
        .unwrap_or_else(|| panic!("error without errno: {e}"))
}

/// Asserts that `res` failed with `errno`; `what` names the operation in the message.
#[track_caller]
pub fn expect_errno<T: std::fmt::Debug>(res: io::Result<T>, errno: i32, what: &str) {
    match res {
        Ok(v) => panic!(
            "{what}: expected errno {errno} ({}), got success {v:?}",
            strerror(errno)
        ),
        Err(e) => {
            let got = errno_of(e);
            assert_eq!(
                got,
                errno,
                "{what}: expected errno {errno} ({}), got {got} ({})",
                strerror(errno),
                strerror(got)
            );
        }
    }
}

/// The text of an errno.
pub fn strerror(errno: i32) -> String {
    io::Error::from_raw_os_error(errno).to_string()
}

/// Sorted names of a directory, without `.` and `..`.
pub fn list(path: &Path) -> Vec<Vec<u8>> {
    let mut names: Vec<Vec<u8>> = fs::read_dir(path)
        .unwrap_or_else(|e| panic!("read_dir {}: {e}", path.display()))
        .map(|e| {
            e.unwrap_or_else(|e| panic!("read_dir {}: {e}", path.display()))
                .file_name()
                .as_bytes()
                .to_vec()
        })
        .collect();
    names.sort();
    names
}

/// Every entry readdir(3) returns, `.` and `..` included, in the order returned.
pub fn list_raw(path: &Path) -> Vec<Vec<u8>> {
    let c = cpath(path);
    // SAFETY: c is a valid path; the DIR stream is closed below.
    let d = unsafe { libc::opendir(c.as_ptr()) };
    assert!(
        !d.is_null(),
        "opendir {}: {}",
        path.display(),
        io::Error::last_os_error()
    );
    let mut names = Vec::new();
    loop {
        // SAFETY: d is an open DIR stream.
        let ent = unsafe { libc::readdir(d) };
        if ent.is_null() {
            break;
        }
        // SAFETY: d_name is NUL-terminated within the dirent readdir returned.
        let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) };
        names.push(name.to_bytes().to_vec());
    }
    // SAFETY: d is open and not used afterwards.
    unsafe { libc::closedir(d) };
    names
}

/// A path as a C string.
pub fn cpath(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).expect("path without NUL")
}

/// A name as a C string.
pub fn cname(name: &[u8]) -> CString {
    CString::new(name).expect("name without NUL")
}

/// Turns a libc return value into an io::Result.
pub fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Like [`check`] for calls returning ssize_t.
pub fn check_size(ret: isize) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// open(2) with raw flags.
pub fn open(path: &Path, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
    let c = cpath(path);
    // SAFETY: valid path; the returned fd is owned by the OwnedFd.
    let fd =
        check(unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC, mode as libc::c_uint) })?;
    // SAFETY: fd was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// openat(2) with raw flags, relative to `dir`.
pub fn openat(
    dir: &OwnedFd,
    name: &[u8],
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    let c = cname(name);
    // SAFETY: valid fd and name; the returned fd is owned by the OwnedFd.
    let fd = check(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            flags | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    })?;
    // SAFETY: fd was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// lstat(2).
pub fn lstat(path: &Path) -> io::Result<libc::stat> {
    let c = cpath(path);
    // SAFETY: zeroed stat is a valid out-buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid path and buffer.
    check(unsafe { libc::lstat(c.as_ptr(), &mut st) })?;
    Ok(st)
}

/// mkfifo(3).
pub fn mkfifo(path: &Path, mode: libc::mode_t) -> io::Result<()> {
    let c = cpath(path);
    // SAFETY: valid path.
    check(unsafe { libc::mkfifo(c.as_ptr(), mode) }).map(|_| ())
}

/// renameat2(2) with `flags` (RENAME_NOREPLACE, RENAME_EXCHANGE).
pub fn rename2(from: &Path, to: &Path, flags: libc::c_uint) -> io::Result<()> {
    let (f, t) = (cpath(from), cpath(to));
    // SAFETY: valid paths; renameat2 takes (int, char*, int, char*, unsigned).
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            f.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            flags,
        )
    };
    check(r as libc::c_int).map(|_| ())
}

/// lsetxattr(2).
pub fn set_xattr(path: &Path, name: &str, value: &[u8]) -> io::Result<()> {
    let (p, n) = (cpath(path), cname(name.as_bytes()));
    // SAFETY: valid path, name and value buffer.
    check(unsafe {
        libc::lsetxattr(
            p.as_ptr(),
            n.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    })
    .map(|_| ())
}

/// lgetxattr(2).
pub fn get_xattr(path: &Path, name: &str) -> io::Result<Vec<u8>> {
    let (p, n) = (cpath(path), cname(name.as_bytes()));
    let mut buf = vec![0u8; 65536];
    // SAFETY: valid path, name and buffer of the given length.
    let len = check_size(unsafe {
        libc::lgetxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), buf.len())
    })?;
    buf.truncate(len);
    Ok(buf)
}

/// llistxattr(2), names sorted.
pub fn list_xattr(path: &Path) -> io::Result<Vec<Vec<u8>>> {
    let p = cpath(path);
    let mut buf = vec![0u8; 65536];
    // SAFETY: valid path and buffer of the given length.
    let len =
        check_size(unsafe { libc::llistxattr(p.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) })?;
    let mut names: Vec<Vec<u8>> = buf[..len]
        .split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    names.sort();
    Ok(names)
}

/// lremovexattr(2).
pub fn remove_xattr(path: &Path, name: &str) -> io::Result<()> {
    let (p, n) = (cpath(path), cname(name.as_bytes()));
    // SAFETY: valid path and name.
    check(unsafe { libc::lremovexattr(p.as_ptr(), n.as_ptr()) }).map(|_| ())
}

/// Whether `tool` is installed (found on PATH).
pub fn have(tool: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Runs a command, panicking with its output when it fails.
#[track_caller]
pub fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Writes `content` to `path`, panicking with the path on failure.
#[track_caller]
pub fn write(path: &Path, content: &[u8]) {
    fs::write(path, content).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// Reads `path`, panicking with the path on failure.
#[track_caller]
pub fn read(path: &Path) -> Vec<u8> {
    fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// A whole tree below `root` as sorted (relative path bytes, kind, content or link target).
/// Used to check that the backing store did not change.
pub fn snapshot(root: &Path) -> Vec<(Vec<u8>, char, Vec<u8>)> {
    fn walk(root: &Path, rel: &[u8], out: &mut Vec<(Vec<u8>, char, Vec<u8>)>) {
        for name in list(&join(root, rel)) {
            let mut r = rel.to_vec();
            if !r.is_empty() {
                r.push(b'/');
            }
            r.extend_from_slice(&name);
            let p = join(root, &r);
            let md =
                fs::symlink_metadata(&p).unwrap_or_else(|e| panic!("lstat {}: {e}", p.display()));
            let ft = md.file_type();
            if ft.is_dir() {
                out.push((r.clone(), 'd', Vec::new()));
                walk(root, &r, out);
            } else if ft.is_symlink() {
                let t = fs::read_link(&p).expect("readlink");
                out.push((r, 'l', t.as_os_str().as_bytes().to_vec()));
            } else if ft.is_file() {
                out.push((r, 'f', fs::read(&p).expect("read")));
            } else {
                out.push((r, 'o', Vec::new()));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, b"", &mut out);
    out.sort();
    out
}

/// Shows a byte name with invalid bytes escaped, for messages.
pub fn show(name: &[u8]) -> String {
    utf8fs::policy::Escaped(name).to_string()
}

/// `sync`, then makes the kernel drop its dentry, inode and page caches, as memory pressure
/// would: it sends FORGET for every inode no longer in use. Needs root.
pub fn drop_caches() {
    // SAFETY: sync takes no arguments.
    unsafe { libc::sync() };
    if let Err(e) = std::fs::write("/proc/sys/vm/drop_caches", "3") {
        panic!("write /proc/sys/vm/drop_caches (needs root): {e}");
    }
}

/// Drops caches repeatedly (up to 30 s) until `done` holds; false if it never did.
pub fn settle(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..300 {
        drop_caches();
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    false
}
