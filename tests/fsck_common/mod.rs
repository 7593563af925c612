//! Helpers shared by the utf8fsck integration tests: trees with raw byte names, running the
//! binary, and deep trees built and removed through directory fds.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The utf8fsck binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_utf8fsck");

/// `dir/name` for a raw byte name.
pub fn p(dir: &Path, name: &[u8]) -> PathBuf {
    dir.join(OsStr::from_bytes(name))
}

/// Creates a file named `name` in `dir` holding `name` itself (so tests can tell files apart).
pub fn file(dir: &Path, name: &[u8]) -> PathBuf {
    let path = p(dir, name);
    std::fs::write(&path, name).unwrap();
    path
}

/// Creates a directory named `name` in `dir`.
pub fn dir(parent: &Path, name: &[u8]) -> PathBuf {
    let path = p(parent, name);
    std::fs::create_dir(&path).unwrap();
    path
}

/// The names in `dir`, as bytes.
pub fn names(dir: &Path) -> BTreeSet<Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().as_bytes().to_vec())
        .collect()
}

/// What one run of utf8fsck did.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs utf8fsck with `args`.
pub fn run<I, S>(args: I) -> Out
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let out = Command::new(BIN).args(args).output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The JSON objects printed by `--json`.
pub fn json_lines(out: &Out) -> Vec<serde_json::Value> {
    out.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn c(name: &[u8]) -> CString {
    CString::new(name).unwrap()
}

fn open_dir(at: i32, name: &[u8]) -> i32 {
    let n = c(name);
    let fd = unsafe {
        libc::openat(
            at,
            n.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    assert!(fd >= 0, "openat: {}", std::io::Error::last_os_error());
    fd
}

/// Builds a chain of `depth` directories below `root`, level `i` named `name(i)`, with
/// mkdirat/openat (the full path is far beyond PATH_MAX), then a file `leaf` in the deepest one.
pub fn deep_chain(root: &Path, name: impl Fn(usize) -> Vec<u8>, depth: usize, leaf: &[u8]) {
    let mut fd = open_dir(libc::AT_FDCWD, root.as_os_str().as_bytes());
    for i in 0..depth {
        let name = name(i);
        let n = c(&name);
        assert_eq!(unsafe { libc::mkdirat(fd, n.as_ptr(), 0o755) }, 0);
        let next = open_dir(fd, &name);
        unsafe { libc::close(fd) };
        fd = next;
    }
    let l = c(leaf);
    let f = unsafe {
        libc::openat(
            fd,
            l.as_ptr(),
            libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
            0o644,
        )
    };
    assert!(f >= 0);
    unsafe {
        libc::close(f);
        libc::close(fd);
    }
}

/// Names in the directory open as `fd`.
fn fd_names(fd: i32) -> Vec<(Vec<u8>, bool)> {
    let dup = unsafe { libc::dup(fd) };
    let dirp = unsafe { libc::fdopendir(dup) };
    assert!(!dirp.is_null());
    let mut out = Vec::new();
    loop {
        let e = unsafe { libc::readdir(dirp) };
        if e.is_null() {
            break;
        }
        let name = unsafe { std::ffi::CStr::from_ptr((*e).d_name.as_ptr()) }
            .to_bytes()
            .to_vec();
        if name != b"." && name != b".." {
            out.push((name, unsafe { (*e).d_type } == libc::DT_DIR));
        }
    }
    unsafe { libc::closedir(dirp) };
    out
}

/// Walks down a deep tree with one open fd at a time and returns, per level, the names found.
pub fn deep_listing(root: &Path) -> Vec<Vec<Vec<u8>>> {
    let mut fd = open_dir(libc::AT_FDCWD, root.as_os_str().as_bytes());
    let mut levels = Vec::new();
    loop {
        let entries = fd_names(fd);
        levels.push(entries.iter().map(|(n, _)| n.clone()).collect());
        let Some((sub, _)) = entries.into_iter().find(|(_, d)| *d) else {
            break;
        };
        let next = open_dir(fd, &sub);
        unsafe { libc::close(fd) };
        fd = next;
    }
    unsafe { libc::close(fd) };
    levels
}

/// Removes everything below `root`, iteratively and with O(1) open fds, whatever the depth
/// (std's remove_dir_all keeps one fd per level).
pub fn remove_deep(root: &Path) {
    let mut fd = open_dir(libc::AT_FDCWD, root.as_os_str().as_bytes());
    let mut path: Vec<Vec<u8>> = Vec::new();
    loop {
        let entries = fd_names(fd);
        if let Some((sub, _)) = entries.iter().find(|(_, d)| *d) {
            let next = open_dir(fd, sub);
            unsafe { libc::close(fd) };
            fd = next;
            path.push(sub.clone());
            continue;
        }
        for (n, _) in &entries {
            assert_eq!(unsafe { libc::unlinkat(fd, c(n).as_ptr(), 0) }, 0);
        }
        let Some(me) = path.pop() else { break };
        let up = open_dir(fd, b"..");
        unsafe { libc::close(fd) };
        fd = up;
        assert_eq!(
            unsafe { libc::unlinkat(fd, c(&me).as_ptr(), libc::AT_REMOVEDIR) },
            0
        );
    }
    unsafe { libc::close(fd) };
}
