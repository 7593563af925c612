//! Bad mounts through the real `utf8fs` binary, beyond the cases of `tests/cli.rs`: a MOUNTPOINT
//! that already carries a FUSE filesystem (utf8fs under another subtype, another FUSE
//! filesystem, a dead mount), a dead SOURCE, option values that would garble the error line or
//! /proc/mounts, and SIGTERM with auto_unmount. Each refusal is exactly one stderr line naming the
//! path or option and the reason, with the documented exit status, and leaves nothing mounted.

mod cli_common;

use cli_common::*;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

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
    d.fusermount_u();
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
    let mut child = d.foreground(&["-o", "auto_unmount"]);
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

/// A daemon whose mount was taken away from outside (`fusermount3 -u`) leaves alone what is
/// mounted at the same path by the time it exits, such as the new daemon of a restart. The old
/// daemon is stopped (SIGSTOP) across the unmount and the new mount, so that it ends only after
/// the new mount is up.
#[test]
fn daemon_unmounted_from_outside_leaves_a_new_mount_alone() {
    let d = Dirs::new();
    let mut old = d.foreground(&[]);
    unsafe { libc::kill(old.id() as i32, libc::SIGSTOP) };
    d.fusermount_u();
    let out = d.utf8fs(&[]);
    assert!(out.status.success(), "{out:?}");
    unsafe { libc::kill(old.id() as i32, libc::SIGCONT) };
    let status = wait_timeout(&mut old, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert_eq!(mounts_at(&d.mnt), ["fuse.utf8fs"]);
    assert_eq!(std::fs::read(d.mnt.join("hello.txt")).unwrap(), b"hi\n");
    let daemons = daemons_of(&d.mnt);
    assert_eq!(daemons.len(), 1, "{daemons:?}");
    unsafe { libc::kill(daemons[0], libc::SIGTERM) };
    wait_until("the unmount", || mounts_at(&d.mnt).is_empty());
}
