//! Helpers shared by the hardening tests: the real `utf8fs` binary run in the foreground as a
//! child process (so it can be killed, and its fds and memory read from /proc), a byte-exact
//! tree comparison of the mount against the (mapped) backing tree, and deterministic contents.

#![allow(dead_code)]

use crate::common::*;
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use utf8fs::mapping::{DirIndex, Mapper, Mode};

/// The daemon binary built by cargo for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_utf8fs");

/// A number from the environment (the scripts pass bigger sizes), or `default`.
pub fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A small deterministic PRNG (xorshift64*), so runs are reproducible from their seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `len` bytes determined by `seed`: a file's expected content can be recomputed from both.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut r = Rng::new(seed);
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&r.next().to_le_bytes());
    }
    out.truncate(len);
    out
}

/// One entry of a tree: kind (`d`, `f`, `l`, `o`), size, and content or symlink target.
pub type Entry = (char, u64, Vec<u8>);

/// A whole tree as relative path → entry. With `mapper`, each backing name is replaced by the
/// name the mount shows for it (computed per directory, as the daemon does), so the result is
/// what a client must see through the mount.
pub fn tree(root: &Path, mapper: Option<&Mapper>) -> BTreeMap<Vec<u8>, Entry> {
    fn walk(
        dir: &Path,
        shown_rel: &[u8],
        mapper: Option<&Mapper>,
        out: &mut BTreeMap<Vec<u8>, Entry>,
    ) {
        let names = list(dir);
        let index = mapper.map(|m| DirIndex::build(m, names.iter().map(Vec::as_slice)));
        for name in &names {
            let shown = match &index {
                Some(ix) => match ix.shown(name) {
                    Some(s) => s.to_vec(),
                    None => continue, // hidden by the mode
                },
                None => name.clone(),
            };
            let mut rel = shown_rel.to_vec();
            if !rel.is_empty() {
                rel.push(b'/');
            }
            rel.extend_from_slice(&shown);
            let p = join(dir, name);
            let md =
                fs::symlink_metadata(&p).unwrap_or_else(|e| panic!("lstat {}: {e}", p.display()));
            let ft = md.file_type();
            if ft.is_dir() {
                out.insert(rel.clone(), ('d', 0, Vec::new()));
                walk(&p, &rel, mapper, out);
            } else if ft.is_symlink() {
                let t =
                    fs::read_link(&p).unwrap_or_else(|e| panic!("readlink {}: {e}", p.display()));
                out.insert(rel, ('l', md.len(), t.as_os_str().as_bytes().to_vec()));
            } else if ft.is_file() {
                out.insert(rel, ('f', md.len(), read(&p)));
            } else {
                out.insert(rel, ('o', 0, Vec::new()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, b"", mapper, &mut out);
    out
}

/// Asserts that the mount shows exactly the backing tree mapped by `mode`, byte for byte, and
/// returns the number of entries compared.
#[track_caller]
pub fn assert_same_tree(src: &Path, mnt: &Path, mode: Mode) -> usize {
    let want = tree(src, Some(&Mapper::new(mode)));
    let got = tree(mnt, None);
    if got != want {
        let mut diff = Vec::new();
        for (k, v) in &want {
            match got.get(k) {
                None => diff.push(format!("missing through the mount: {}", show(k))),
                Some(g) if g != v => diff.push(format!(
                    "differs: {} mount ({}, {} bytes) backing ({}, {} bytes)",
                    show(k),
                    g.0,
                    g.1,
                    v.0,
                    v.1
                )),
                _ => {}
            }
        }
        for k in got.keys().filter(|k| !want.contains_key(*k)) {
            diff.push(format!("only through the mount: {}", show(k)));
        }
        diff.truncate(20);
        panic!(
            "the mount differs from the backing tree:\n{}",
            diff.join("\n")
        );
    }
    want.len()
}

/// Polls `done` every 50 ms for up to `limit`; whether it came true. Only a bound on waiting
/// for something that must happen, never an assertion about speed.
pub fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The real `utf8fs` binary mounted in the foreground (`-f`) as a child process over
/// `TMP/src` at `TMP/mnt`. Killed and unmounted on drop.
pub struct Daemon {
    child: Option<Child>,
    /// The backing directory (SOURCE).
    pub src: PathBuf,
    /// The mount point.
    pub mnt: PathBuf,
    /// The daemon's standard error.
    pub log: PathBuf,
    opts: Vec<String>,
    /// RLIMIT_NOFILE (soft and hard) to start the daemon with, if limited.
    nofile: Option<u64>,
    dir: tempfile::TempDir,
}

impl Daemon {
    /// Fills a fresh backing directory with `populate`, then mounts it with `-o opts`
    /// (comma-separated, may be empty). The temporary directory is 0755, so that other users
    /// can reach the mount when `allow_other` is given.
    pub fn start(opts: &str, populate: impl FnOnce(&Path)) -> Daemon {
        Daemon::start_limited(opts, None, populate)
    }

    /// Like [`Daemon::start`], with the daemon's RLIMIT_NOFILE (soft and hard) set to `nofile`.
    pub fn start_limited(opts: &str, nofile: Option<u64>, populate: impl FnOnce(&Path)) -> Daemon {
        let dir = tempfile::Builder::new()
            .prefix("utf8fs-harden-")
            .tempdir()
            .expect("create temporary directory");
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).expect("chmod tmp");
        let src = dir.path().join("src");
        let mnt = dir.path().join("mnt");
        fs::create_dir(&src).expect("create src");
        fs::create_dir(&mnt).expect("create mnt");
        populate(&src);
        let mut d = Daemon {
            child: None,
            log: dir.path().join("daemon.log"),
            src,
            mnt,
            opts: opts
                .split(',')
                .filter(|o| !o.is_empty())
                .map(String::from)
                .collect(),
            nofile,
            dir,
        };
        d.mount();
        d
    }

    /// Starts a new daemon over the same directories and options (after a crash and unmount).
    pub fn mount(&mut self) {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("open daemon log");
        let mut cmd = Command::new(BIN);
        cmd.arg(&self.src).arg(&self.mnt).arg("-f");
        if !self.opts.is_empty() {
            cmd.arg("-o").arg(self.opts.join(","));
        }
        if let Some(n) = self.nofile {
            let lim = libc::rlimit {
                rlim_cur: n,
                rlim_max: n,
            };
            // SAFETY: setrlimit is async-signal-safe; lim lives in the closure.
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {BIN}: {e}"));
        self.child = Some(child);
        let mnt = self.mnt.clone();
        let up = wait_for(Duration::from_secs(20), || is_mounted(&mnt));
        assert!(
            up,
            "utf8fs did not mount {} within 20 s; log:\n{}",
            self.mnt.display(),
            self.log_text()
        );
    }

    /// The daemon's process id.
    pub fn pid(&self) -> i32 {
        self.child.as_ref().expect("daemon running").id() as i32
    }

    /// The daemon's standard error so far.
    pub fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Number of open file descriptors of the daemon (/proc/PID/fd).
    pub fn fds(&self) -> usize {
        fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// A `kB` field of /proc/PID/status (VmRSS, VmHWM), in KiB.
    pub fn status_kib(&self, field: &str) -> u64 {
        let text = fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {field} in /proc/{}/status", self.pid()))
    }

    /// Kills the daemon with SIGKILL and reaps it; the mount stays (dead) unless `auto_unmount`.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Whether the daemon process is still running.
    pub fn running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// `fusermount3 -u MOUNTPOINT`; whether it succeeded.
    pub fn fusermount_u(&self) -> bool {
        Command::new("fusermount3")
            .arg("-u")
            .arg(&self.mnt)
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    }

    /// Unmounts with `fusermount3 -u` and checks that the daemon then exits with status 0.
    #[track_caller]
    pub fn stop(&mut self) {
        assert!(self.fusermount_u(), "fusermount3 -u {}", self.mnt.display());
        let Some(mut child) = self.child.take() else {
            return;
        };
        let exited = wait_for(Duration::from_secs(20), || {
            matches!(child.try_wait(), Ok(Some(_)))
        });
        if !exited {
            let stack =
                fs::read_to_string(format!("/proc/{}/stack", child.id())).unwrap_or_default();
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "utf8fs did not exit within 20 s of fusermount3 -u; kernel stack:\n{stack}\nlog:\n{}",
                self.log_text()
            );
        }
        let status = child.wait().expect("wait for utf8fs");
        assert_eq!(
            status.code(),
            Some(0),
            "utf8fs exit after fusermount3 -u: {status}; log:\n{}",
            self.log_text()
        );
    }

    /// The temporary directory holding `src` and `mnt`.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill9();
        if is_mounted(&self.mnt) {
            let _ = Command::new("fusermount3")
                .arg("-uz")
                .arg(&self.mnt)
                .stderr(Stdio::null())
                .status();
        }
        if is_mounted(&self.mnt) {
            let c = cpath(&self.mnt);
            // SAFETY: c is a valid NUL-terminated path.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
    }
}
