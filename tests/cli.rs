//! The `utf8fs` command line, run as users run it: real mounts in temporary directories, as root.
//! Errors must be one line with the documented exit status and leave nothing mounted; the daemon
//! must return only once the mount answers; `-f` must unmount cleanly on SIGINT/SIGTERM; and
//! `mount -t fuse.utf8fs` must work through mount.fuse3.

mod cli_common;

use cli_common::*;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const FUSE_SUPER_MAGIC: i64 = 0x6573_5546;

fn statfs_type(path: &Path) -> std::io::Result<i64> {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    let mut buf: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut buf) } == 0 {
        Ok(buf.f_type as i64)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[test]
fn help_lists_every_option_and_exits_0() {
    let out = Command::new(BIN).arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("usage: utf8fs SOURCE MOUNTPOINT"));
    for opt in [
        "malformed=",
        "charset=",
        "allow_other",
        "auto_unmount",
        "threads=",
        "cache=",
    ] {
        assert!(text.contains(opt), "--help lacks {opt}");
    }
    let short = Command::new(BIN).arg("-h").output().unwrap();
    assert_eq!(String::from_utf8(short.stdout).unwrap(), text);
}

#[test]
fn version_exits_0() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("utf8fs {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn unknown_option_is_exit_2_and_mounts_nothing() {
    let d = Dirs::new();
    let out = d.utf8fs(&["-o", "ro,frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr_line(&out),
        "utf8fs: unknown mount option 'frobnicate' (see utf8fs --help)"
    );
    assert!(mounts_at(&d.mnt).is_empty());
    let out = d.utf8fs(&["-x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_line(&out).contains("'-x'"));
}

#[test]
fn bad_mode_and_charset_are_exit_2() {
    let d = Dirs::new();
    let out = d.utf8fs(&["-o", "malformed=transcode,charset=klingon"]);
    assert_eq!(out.status.code(), Some(2));
    let line = stderr_line(&out);
    assert!(
        line.starts_with("utf8fs: unknown charset \"klingon\""),
        "{line}"
    );
    let out = d.utf8fs(&["-o", "malformed=maybe"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_line(&out).contains("malformed=\"maybe\""));
    assert!(mounts_at(&d.mnt).is_empty());
}

#[test]
fn missing_arguments_are_exit_2() {
    let out = Command::new(BIN).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr_line(&out),
        "utf8fs: missing SOURCE and MOUNTPOINT (see utf8fs --help)"
    );
}

fn assert_refused(d: &Dirs, src: &Path, mnt: &Path, expected: &str) {
    let out = Command::new(BIN).arg(src).arg(mnt).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{src:?} {mnt:?}");
    assert_eq!(stderr_line(&out), expected);
    assert!(mounts_at(mnt).is_empty());
    assert!(mounts_at(&d.mnt).is_empty());
}

#[test]
fn bad_source_is_exit_1() {
    let d = Dirs::new();
    let missing = d.root.join("missing");
    let m = missing.display();
    assert_refused(
        &d,
        &missing,
        &d.mnt,
        &format!("utf8fs: {m}: No such file or directory"),
    );
    let file = d.src.join("hello.txt");
    let f = file.display();
    assert_refused(&d, &file, &d.mnt, &format!("utf8fs: {f}: Not a directory"));
}

#[test]
fn bad_mountpoint_is_exit_1() {
    let d = Dirs::new();
    let missing = d.root.join("missing");
    let m = missing.display();
    assert_refused(
        &d,
        &d.src,
        &missing,
        &format!("utf8fs: {m}: No such file or directory"),
    );
    let file = d.root.join("file");
    std::fs::write(&file, b"").unwrap();
    let f = file.display();
    assert_refused(&d, &d.src, &file, &format!("utf8fs: {f}: Not a directory"));
}

#[test]
fn nested_source_and_mountpoint_are_refused() {
    let d = Dirs::new();
    let inner = d.mnt.join("inner");
    std::fs::create_dir(&inner).unwrap();
    let (i, m) = (inner.display(), d.mnt.display());
    assert_refused(
        &d,
        &inner,
        &d.mnt,
        &format!("utf8fs: {i}: SOURCE is inside MOUNTPOINT {m}"),
    );
    let inner = d.src.join("inner");
    std::fs::create_dir(&inner).unwrap();
    let (i, s) = (inner.display(), d.src.display());
    assert_refused(
        &d,
        &d.src,
        &inner,
        &format!("utf8fs: {i}: MOUNTPOINT is inside SOURCE {s}"),
    );
    let s = d.src.display();
    assert_refused(
        &d,
        &d.src,
        &d.src,
        &format!("utf8fs: {s}: SOURCE and MOUNTPOINT are the same directory"),
    );
    // The same directory through a symlink is still the same directory.
    let link = d.root.join("link");
    std::os::unix::fs::symlink(&d.src, &link).unwrap();
    let l = link.display();
    assert_refused(
        &d,
        &d.src,
        &link,
        &format!("utf8fs: {l}: SOURCE and MOUNTPOINT are the same directory"),
    );
}

#[test]
fn daemon_returns_once_the_mount_answers_and_fusermount_unmounts_it() {
    let d = Dirs::new();
    let before = std::fs::metadata(&d.mnt).unwrap().dev();
    let out = d.utf8fs(&[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty() && out.stderr.is_empty());
    // Right after the command returns: mounted, with our type, and answering requests.
    assert_eq!(mounts_at(&d.mnt), ["fuse.utf8fs"]);
    assert_eq!(statfs_type(&d.mnt).unwrap(), FUSE_SUPER_MAGIC);
    assert_ne!(std::fs::metadata(&d.mnt).unwrap().dev(), before);
    assert_eq!(std::fs::read(d.mnt.join("hello.txt")).unwrap(), b"hi\n");
    let daemons = daemons_of(&d.mnt);
    assert_eq!(daemons.len(), 1, "{daemons:?}");

    // A second mount on the same point is refused, and the first stays.
    let out = d.utf8fs(&[]);
    assert_eq!(out.status.code(), Some(1));
    let m = d.mnt.display();
    assert_eq!(
        stderr_line(&out),
        format!(
            "utf8fs: {m}: already a FUSE mount point (fuse.utf8fs; unmount it with fusermount3 -u)"
        )
    );
    assert_eq!(mounts_at(&d.mnt), ["fuse.utf8fs"]);

    d.fusermount_u();
    assert!(mounts_at(&d.mnt).is_empty());
    let pid = daemons[0];
    wait_until("the daemon to exit", || {
        !Path::new(&format!("/proc/{pid}")).exists()
    });
}

#[test]
fn daemon_is_unmounted_by_umount_and_takes_options() {
    let d = Dirs::new();
    let out = d.utf8fs(&["-o", "ro,fsname=demo,subtype=u8,allow_other", "-othreads=2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let line = info
        .lines()
        .find(|l| l.contains(d.mnt.to_str().unwrap()))
        .unwrap();
    assert!(line.contains(" - fuse.u8 demo ro,"), "{line}");
    assert!(
        line.contains("default_permissions") && line.contains("allow_other"),
        "{line}"
    );
    let status = Command::new("umount").arg(&d.mnt).status().unwrap();
    assert!(status.success());
    assert!(mounts_at(&d.mnt).is_empty());
}

#[test]
fn daemon_start_up_error_reaches_the_terminal() {
    // auto_unmount mounts through fusermount3; a missing helper fails in the detached child.
    let d = Dirs::new();
    let out = Command::new(BIN)
        .arg(&d.src)
        .arg(&d.mnt)
        .args(["-o", "auto_unmount"])
        .env("FUSERMOUNT_PATH", d.root.join("no-such-fusermount"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let line = stderr_line(&out);
    let m = d.mnt.display();
    assert!(
        line.starts_with(&format!("utf8fs: {m}: mount failed: ")),
        "{line}"
    );
    assert!(mounts_at(&d.mnt).is_empty());
}

#[test]
fn auto_unmount_cleans_up_after_kill_9() {
    let d = Dirs::new();
    let out = d.utf8fs(&["-o", "auto_unmount"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(mounts_at(&d.mnt), ["fuse.utf8fs"]);
    let daemons = daemons_of(&d.mnt);
    assert_eq!(daemons.len(), 1, "{daemons:?}");
    unsafe { libc::kill(daemons[0], libc::SIGKILL) };
    wait_until("fusermount3 to unmount", || mounts_at(&d.mnt).is_empty());
}

fn foreground_signal(signal: i32) {
    let d = Dirs::new();
    let mut child = d.foreground(&[]);
    assert_eq!(statfs_type(&d.mnt).unwrap(), FUSE_SUPER_MAGIC);
    unsafe { libc::kill(child.id() as i32, signal) };
    let status = wait_timeout(&mut child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(mounts_at(&d.mnt).is_empty());
}

#[test]
fn foreground_unmounts_on_sigterm() {
    foreground_signal(libc::SIGTERM);
}

#[test]
fn foreground_unmounts_on_sigint() {
    foreground_signal(libc::SIGINT);
}

#[test]
fn foreground_exits_0_when_unmounted_from_outside() {
    let d = Dirs::new();
    let mut child = d.foreground(&[]);
    d.fusermount_u();
    let status = wait_timeout(&mut child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0));
}

/// `mount -t fuse.utf8fs` runs mount.fuse3, which finds `utf8fs` through /bin/sh's default PATH
/// (mount(8) does not pass PATH on). A private mount namespace puts the built binary at
/// /usr/local/bin/utf8fs without touching the machine's own /usr/local/bin.
#[test]
fn mount_t_fuse_utf8fs_works() {
    let d = Dirs::new();
    let bin = d.root.join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(BIN, bin.join("utf8fs")).unwrap();
    let script = r#"
        set -e
        mount --bind "$1" /usr/local/bin
        mount -t fuse.utf8fs "$2" "$3" -o malformed=reject,nofail,_netdev,x-systemd.automount
        grep -F " $3 " /proc/self/mountinfo | grep -F " - fuse.utf8fs $2 "
        stat -f -c %t "$3"
        umount "$3"
        if grep -F " $3 " /proc/self/mountinfo; then exit 1; fi
        if mount -t fuse.utf8fs "$2" "$3" -o frobnicate 2>"$4"; then exit 1; fi
    "#;
    let err = d.root.join("err");
    let out = Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .args([
            bin.as_os_str(),
            d.src.as_os_str(),
            d.mnt.as_os_str(),
            err.as_os_str(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("65735546"));
    let err = std::fs::read_to_string(err).unwrap();
    assert!(err.contains("unknown mount option 'frobnicate'"), "{err}");
    assert!(mounts_at(&d.mnt).is_empty());
}

#[test]
fn non_utf8_paths_are_escaped_in_errors() {
    let d = Dirs::new();
    let missing = d.root.join(OsStr::from_bytes(b"caf\xe9"));
    let out = Command::new(BIN)
        .arg(&missing)
        .arg(&d.mnt)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let r = d.root.display();
    assert_eq!(
        stderr_line(&out),
        format!("utf8fs: {r}/caf\\xE9: No such file or directory")
    );
}
