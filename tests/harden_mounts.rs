//! Bad mounts through the real `utf8fs` binary, beyond the cases of `tests/cli.rs`: a MOUNTPOINT
//! that already carries a FUSE filesystem (utf8fs under another subtype, another FUSE
//! filesystem, a dead mount), a dead SOURCE, option values that would garble the error line or
//! /proc/mounts, and SIGTERM with auto_unmount. Each refusal is exactly one stderr line naming the
//! path or option and the reason, with the documented exit status, and leaves nothing mounted.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_utf8fs");

/// A temporary SOURCE and MOUNTPOINT; unmounts whatever is left on drop.
struct Dirs {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    src: PathBuf,
    mnt: PathBuf,
}

impl Dirs {
    fn new() -> Dirs {
        let tmp = tempfile::Builder::new()
            .prefix("utf8fs-harden-")
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

    fn utf8fs(&self, extra: &[&str]) -> Output {
        Command::new(BIN)
            .arg(&self.src)
            .arg(&self.mnt)
            .args(extra)
            .output()
            .unwrap()
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
fn mounts_at(path: &Path) -> Vec<String> {
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
fn stderr_line(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        text.lines().count(),
        1,
        "expected one error line, got {text:?}"
    );
    assert!(text.ends_with('\n'));
    text.trim_end().to_owned()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_timeout(child: &mut Child, limit: Duration) -> ExitStatus {
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
fn daemons_of(mnt: &Path) -> Vec<i32> {
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

/// A second utf8fs on `d.mnt` is refused with exit status 1 and one line naming the mount point
/// and the FUSE type already there, and the first mount stays as it was.
fn assert_already_mounted(d: &Dirs, fstype: &str) {
    let before = mounts_at(&d.mnt);
    let out = d.utf8fs(&[]);
    assert_eq!(out.status.code(), Some(1));
    let m = d.mnt.display();
    assert_eq!(
        stderr_line(&out),
        format!(
            "utf8fs: {m}: already a FUSE mount point ({fstype}; unmount it with fusermount3 -u)"
        )
    );
    assert_eq!(mounts_at(&d.mnt), before);
    // In the foreground too.
    let out = d.utf8fs(&["-f"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_line(&out).contains("already a FUSE mount point"));
    assert_eq!(mounts_at(&d.mnt), before);
}

#[test]
fn second_mount_over_another_subtype_is_refused() {
    let d = Dirs::new();
    let out = d.utf8fs(&["-o", "subtype=foo,fsname=other"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(mounts_at(&d.mnt), ["fuse.foo"]);
    assert_already_mounted(&d, "fuse.foo");
    // The same subtype again, as the new mount would use it.
    let out = d.utf8fs(&["-o", "subtype=foo"]);
    assert_eq!(out.status.code(), Some(1));
    stderr_line(&out);
    assert_eq!(mounts_at(&d.mnt), ["fuse.foo"]);
    assert!(Command::new("fusermount3")
        .arg("-u")
        .arg(&d.mnt)
        .status()
        .unwrap()
        .success());
    assert!(mounts_at(&d.mnt).is_empty());
}

#[test]
fn mount_over_another_fuse_filesystem_is_refused() {
    let d = Dirs::new();
    let other = d.root.join("other");
    std::fs::create_dir(&other).unwrap();
    let status = Command::new("bindfs")
        .arg(&other)
        .arg(&d.mnt)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(mounts_at(&d.mnt), ["fuse"]);
    assert_already_mounted(&d, "fuse");
}

#[test]
fn mount_over_a_dead_mount_is_refused() {
    let d = Dirs::new();
    let out = d.utf8fs(&[]);
    assert!(out.status.success(), "{out:?}");
    let daemons = daemons_of(&d.mnt);
    assert_eq!(daemons.len(), 1, "{daemons:?}");
    unsafe { libc::kill(daemons[0], libc::SIGKILL) };
    let pid = daemons[0];
    wait_until("the daemon to die", || {
        !Path::new(&format!("/proc/{pid}")).exists()
    });
    // The kernel keeps the mount; stat on it answers ENOTCONN.
    assert_eq!(mounts_at(&d.mnt), ["fuse.utf8fs"]);
    assert_already_mounted(&d, "fuse.utf8fs");

    // A dead mount as SOURCE: one line naming it and the reason.
    let target = d.root.join("target");
    std::fs::create_dir(&target).unwrap();
    let out = Command::new(BIN).arg(&d.mnt).arg(&target).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let m = d.mnt.display();
    assert_eq!(
        stderr_line(&out),
        format!("utf8fs: {m}: Transport endpoint is not connected")
    );
    assert!(mounts_at(&target).is_empty());
}

#[test]
fn option_values_with_control_characters_are_refused_on_one_line() {
    let d = Dirs::new();
    let cases: [(&[u8], &str); 5] = [
        (
            b"fsname=a\nb",
            "utf8fs: bad value in 'fsname=a\\x0Ab': control and bidi formatting characters are not allowed (see utf8fs --help)",
        ),
        (
            "subtype=x\u{202E}y".as_bytes(),
            "utf8fs: bad value in 'subtype=x\\u{202E}y': control and bidi formatting characters are not allowed (see utf8fs --help)",
        ),
        (
            b"deny=\x1b[31m",
            "utf8fs: option 'deny': unknown deny rule '\\x1B[31m' (known: all, none, control, bidi, leading-dash, leading-tilde, space, windows, bom, nonchar, shell) (see utf8fs --help)",
        ),
        (
            "unicode=nfc\u{85}".as_bytes(),
            "utf8fs: option 'unicode': unknown Unicode form 'nfc\\u{0085}' (known: nfc, nfd) (see utf8fs --help)",
        ),
        (
            b"fsname=",
            "utf8fs: option 'fsname' needs a value (fsname=...) (see utf8fs --help)",
        ),
    ];
    for (opt, expected) in cases {
        let out = Command::new(BIN)
            .arg(&d.src)
            .arg(&d.mnt)
            .arg("-o")
            .arg(std::ffi::OsStr::from_bytes(opt))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{opt:?}");
        assert_eq!(stderr_line(&out), expected);
        assert!(mounts_at(&d.mnt).is_empty());
    }
}

/// SIGTERM to a daemon mounted with auto_unmount unmounts and exits 0, as without it.
#[test]
fn auto_unmount_daemon_stops_on_sigterm() {
    let d = Dirs::new();
    let mut child = Command::new(BIN)
        .arg(&d.src)
        .arg(&d.mnt)
        .args(["-f", "-o", "auto_unmount"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the mount", || !mounts_at(&d.mnt).is_empty());
    assert_eq!(std::fs::read(d.mnt.join("hello.txt")).unwrap(), b"hi\n");
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = wait_timeout(&mut child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(mounts_at(&d.mnt).is_empty());

    // Detached, the same.
    let out = d.utf8fs(&["-o", "auto_unmount"]);
    assert!(out.status.success(), "{out:?}");
    let daemons = daemons_of(&d.mnt);
    assert_eq!(daemons.len(), 1, "{daemons:?}");
    unsafe { libc::kill(daemons[0], libc::SIGTERM) };
    wait_until("the unmount", || mounts_at(&d.mnt).is_empty());
    let pid = daemons[0];
    wait_until("the daemon to exit", || {
        !Path::new(&format!("/proc/{pid}")).exists()
    });
}
