//! Harness for the tests that run the real `utf8fs` binary (`tests/cli.rs`,
//! `tests/harden_mounts.rs`): a temporary SOURCE and MOUNTPOINT cleaned up on drop, the mounts at
//! a path, the one error line of a refused command, and waits bounded in time.

#![allow(dead_code)]

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_utf8fs");

/// A temporary SOURCE and MOUNTPOINT; unmounts whatever is left on drop.
pub struct Dirs {
    _tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub src: PathBuf,
    pub mnt: PathBuf,
}

impl Dirs {
    pub fn new() -> Dirs {
        let tmp = tempfile::Builder::new()
            .prefix("utf8fs-cli-")
            .tempdir()
            .unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let src = root.join("src");
        let mnt = root.join("mnt");
        std::fs::create_dir(&src).unwrap();
        std::fs::create_dir(&mnt).unwrap();
        std::fs::write(src.join("hello.txt"), b"hi\n").unwrap();
        Dirs {
            _tmp: tmp,
            root,
            src,
            mnt,
        }
    }

    pub fn utf8fs(&self, extra: &[&str]) -> Output {
        Command::new(BIN)
            .arg(&self.src)
            .arg(&self.mnt)
            .args(extra)
            .output()
            .unwrap()
    }

    /// `utf8fs SRC MNT -f EXTRA...` as a child (stderr piped), once its mount is up.
    pub fn foreground(&self, extra: &[&str]) -> Child {
        let child = Command::new(BIN)
            .arg(&self.src)
            .arg(&self.mnt)
            .arg("-f")
            .args(extra)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_until("the mount", || !mounts_at(&self.mnt).is_empty());
        child
    }

    /// `fusermount3 -u MNT`, which must succeed.
    pub fn fusermount_u(&self) {
        assert!(Command::new("fusermount3")
            .arg("-u")
            .arg(&self.mnt)
            .status()
            .unwrap()
            .success());
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        for dir in [&self.mnt, &self.src] {
            for _ in 0..5 {
                if mounts_at(dir).is_empty() {
                    break;
                }
                let _ = Command::new("umount").arg("-l").arg(dir).status();
            }
        }
    }
}

/// The file system types mounted exactly at `path`, from /proc/self/mountinfo.
pub fn mounts_at(path: &Path) -> Vec<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let path = path.to_str().unwrap();
    info.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let dash = fields.iter().position(|f| *f == "-")?;
            (fields.get(4) == Some(&path)).then(|| fields.get(dash + 1).unwrap_or(&"").to_string())
        })
        .collect()
}

/// The one line on stderr; fails unless there is exactly one.
pub fn stderr_line(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        text.lines().count(),
        1,
        "expected one error line, got {text:?}"
    );
    assert!(text.ends_with('\n'));
    text.trim_end().to_owned()
}

pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn wait_timeout(child: &mut Child, limit: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("utf8fs did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Pids of utf8fs daemons whose command line names `mnt`.
pub fn daemons_of(mnt: &Path) -> Vec<i32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        if args.first().is_some_and(|a| a.ends_with(b"utf8fs"))
            && args.iter().any(|a| *a == mnt.as_os_str().as_bytes())
        {
            pids.push(pid);
        }
    }
    pids
}
