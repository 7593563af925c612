//! Security through real mounts, beyond `fs_safety.rs` (links out of SOURCE, `..` at the root)
//! and `fs_reject.rs` (malformed classes, 255/256-byte names for create, mkdir, stat, rename):
//! every byte value in every position of a name; 255/256-byte names for the remaining
//! name-taking operations; setattr through the link inode itself; a backing directory swapped
//! for a link out of SOURCE behind the mount's back; and `allow_other` with another user.

mod common;
mod harden_common;

use common::*;
use harden_common::*;
use std::fs;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use utf8fs::mapping::Mode;

/// The user the allow_other tests act as.
const NOBODY: u32 = 65534;

/// `mnt` joined with raw name bytes (which may hold `/`), without Path::join's special case
/// for a leading `/`.
fn raw(base: &Path, name: &[u8]) -> PathBuf {
    let mut p = base.as_os_str().as_bytes().to_vec();
    p.push(b'/');
    p.extend_from_slice(name);
    PathBuf::from(std::ffi::OsStr::from_bytes(&p))
}

#[test]
fn every_byte_value_in_every_position() {
    let m = Mount::new(Mode::Reject);
    fs::create_dir(m.mnt_path(b"a")).unwrap();
    let mut created = 0;
    for b in 0x01..=0xFFu8 {
        for (pos, name) in [
            ("start", vec![b, b'x']),
            ("middle", vec![b'a', b, b'z']),
            ("end", vec![b'x', b]),
        ] {
            let before = snapshot(&m.src);
            let what = format!("byte {b:#04x} at the {pos}: {}", show(&name));
            let res = open(
                &raw(&m.mnt, &name),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
                0o644,
            );
            if b == b'/' {
                // A path separator, not part of a name: "/x" is x at the root, "a/z" is z in
                // the directory a, "x/" names a directory that does not exist.
                match pos {
                    "end" => expect_errno(res, libc::EISDIR, &what),
                    _ => {
                        res.unwrap_or_else(|e| panic!("{what}: {e}"));
                        let path: &[u8] = if pos == "start" { b"x" } else { b"a/z" };
                        assert!(m.src_path(path).is_file(), "{what}: {} created", show(path));
                        fs::remove_file(m.src_path(path)).unwrap();
                    }
                }
            } else if b < 0x80 {
                res.unwrap_or_else(|e| panic!("{what}: {e}"));
                assert!(
                    m.src_path(&name).is_file(),
                    "{what}: created as sent on the backing store"
                );
                assert!(m.list_mnt(b"").contains(&name), "{what}: listed");
                fs::remove_file(m.mnt_path(&name)).unwrap();
                created += 1;
            } else {
                // A lone byte >= 0x80 is never strict UTF-8.
                expect_errno(res, libc::EILSEQ, &what);
                expect_errno(fs::create_dir(m.mnt_path(&name)), libc::EILSEQ, &what);
                expect_errno(
                    std::os::unix::fs::symlink("t", m.mnt_path(&name)),
                    libc::EILSEQ,
                    &what,
                );
                assert_eq!(snapshot(&m.src), before, "{what}: nothing created");
            }
        }
    }
    assert_eq!(created, 3 * 126);
    assert_eq!(m.list_src(b""), vec![b"a".to_vec()]);
}

#[test]
fn name_length_limit_for_every_name_taking_operation() {
    let m = Mount::populated(Mode::Reject, |src| {
        write(&src.join("file"), b"file");
        write(&src.join("x"), b"x");
    });
    let long = vec![b'n'; 256];
    let before = snapshot(&m.src);
    expect_errno(
        std::os::unix::fs::symlink("file", m.mnt_path(&long)),
        libc::ENAMETOOLONG,
        "symlink 256",
    );
    expect_errno(
        fs::hard_link(m.mnt_path(b"file"), m.mnt_path(&long)),
        libc::ENAMETOOLONG,
        "link 256",
    );
    expect_errno(
        mkfifo(&m.mnt_path(&long), 0o644),
        libc::ENAMETOOLONG,
        "mknod 256",
    );
    expect_errno(
        fs::remove_file(m.mnt_path(&long)),
        libc::ENAMETOOLONG,
        "unlink 256",
    );
    expect_errno(
        fs::remove_dir(m.mnt_path(&long)),
        libc::ENAMETOOLONG,
        "rmdir 256",
    );
    expect_errno(
        rename2(&m.mnt_path(&long), &m.mnt_path(b"x"), 0),
        libc::ENAMETOOLONG,
        "rename from 256",
    );
    expect_errno(
        set_xattr(&m.mnt_path(&long), "user.a", b"1"),
        libc::ENAMETOOLONG,
        "setxattr on 256",
    );
    assert_eq!(
        snapshot(&m.src),
        before,
        "nothing changed by 256-byte names"
    );

    let name = vec![b'n'; 255];
    std::os::unix::fs::symlink("file", m.mnt_path(&name)).unwrap();
    assert_eq!(fs::read_link(m.src_path(&name)).unwrap(), Path::new("file"));
    fs::remove_file(m.mnt_path(&name)).unwrap();
    fs::hard_link(m.mnt_path(b"file"), m.mnt_path(&name)).unwrap();
    assert_eq!(fs::metadata(m.src_path(b"file")).unwrap().nlink(), 2);
    fs::remove_file(m.mnt_path(&name)).unwrap();
    mkfifo(&m.mnt_path(&name), 0o644).unwrap();
    assert!(lstat(&m.src_path(&name)).unwrap().st_mode & libc::S_IFMT == libc::S_IFIFO);
    rename2(&m.mnt_path(&name), &m.mnt_path(b"x"), libc::RENAME_EXCHANGE).unwrap();
    assert_eq!(read(&m.src_path(&name)), b"x");
}

/// A directory outside SOURCE, owned by root, mode 0755, with one file: what a daemon following
/// links could change.
fn outside(dir: &Path) -> PathBuf {
    let out = dir.join("outside");
    fs::create_dir(&out).unwrap();
    fs::set_permissions(&out, fs::Permissions::from_mode(0o755)).unwrap();
    write(&out.join("secret"), b"secret");
    fs::set_permissions(out.join("secret"), fs::Permissions::from_mode(0o644)).unwrap();
    out
}

#[test]
fn truncate_and_chmod_of_the_link_inode_do_not_reach_its_target() {
    let mut d = Daemon::start("allow_other", |_| {});
    let out = outside(d.dir());
    std::os::unix::fs::symlink(out.join("secret"), d.src.join("link")).unwrap();
    let before = snapshot(&out);
    let mode_before = fs::metadata(out.join("secret")).unwrap().mode();
    // The link inode itself, as tools reach it with O_PATH|O_NOFOLLOW and /proc/self/fd.
    let fd = open(&d.mnt.join("link"), libc::O_PATH | libc::O_NOFOLLOW, 0).unwrap();
    let proc = cpath(Path::new(&format!("/proc/self/fd/{}", fd.as_raw_fd())));
    // SAFETY: valid path.
    let t = check(unsafe { libc::truncate(proc.as_ptr(), 0) });
    // SAFETY: valid path.
    let c = check(unsafe { libc::chmod(proc.as_ptr(), 0o777) });
    let times = [libc::timespec {
        tv_sec: 1,
        tv_nsec: 0,
    }; 2];
    // SAFETY: valid fd, empty path with AT_EMPTY_PATH, two timespecs.
    let u = check(unsafe {
        libc::utimensat(
            fd.as_raw_fd(),
            c"".as_ptr(),
            times.as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        )
    });
    eprintln!("on the link inode: truncate {t:?}, chmod {c:?}, utimensat {u:?}");
    drop(fd);
    // By name, the client's kernel follows the link, with the client's own rights: nobody
    // cannot truncate, chmod or touch root's file through it.
    let link = d.mnt.join("link").display().to_string();
    for cmd in ["truncate -s 0", "chmod 777", "touch", "chown nobody"] {
        let (rc, err) = as_nobody(&format!("{cmd} {link}"));
        assert_ne!(rc, 0, "nobody: {cmd} through the link succeeded");
        assert!(
            err.contains("Permission denied") || err.contains("not permitted"),
            "{cmd}: {err}"
        );
    }
    assert_eq!(snapshot(&out), before, "the link's target changed");
    assert_eq!(
        fs::metadata(out.join("secret")).unwrap().mode(),
        mode_before
    );
    assert_eq!(
        fs::read_link(d.src.join("link")).unwrap(),
        out.join("secret"),
        "the link is still a link"
    );
    d.stop();
}

/// Runs `sh -c script` as nobody; (exit code, stderr).
fn as_nobody(script: &str) -> (i32, String) {
    let out = Command::new("setpriv")
        .args([
            "--reuid",
            &NOBODY.to_string(),
            "--regid",
            &NOBODY.to_string(),
            "--clear-groups",
            "sh",
            "-c",
            script,
        ])
        .output()
        .expect("run setpriv");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn allow_other_keeps_permissions_and_ownership() {
    let mut d = Daemon::start("allow_other", |src| {
        write(&src.join("private"), b"root only");
        fs::set_permissions(src.join("private"), fs::Permissions::from_mode(0o600)).unwrap();
        write(&src.join("public"), b"everyone");
        fs::set_permissions(src.join("public"), fs::Permissions::from_mode(0o644)).unwrap();
        fs::create_dir(src.join("drop")).unwrap();
        fs::set_permissions(src.join("drop"), fs::Permissions::from_mode(0o777)).unwrap();
    });
    let mnt = d.mnt.display().to_string();
    let (rc, err) = as_nobody(&format!("cat {mnt}/public"));
    assert_eq!(rc, 0, "nobody reads a 0644 file: {err}");
    let (rc, err) = as_nobody(&format!("cat {mnt}/private"));
    assert_ne!(rc, 0, "nobody must not read a 0600 file of root");
    assert!(err.contains("Permission denied"), "{err}");
    let (rc, _) = as_nobody(&format!("echo x >> {mnt}/public"));
    assert_ne!(rc, 0, "nobody must not write a 0644 file of root");
    let (rc, _) = as_nobody(&format!("echo x > {mnt}/new-at-root"));
    assert_ne!(rc, 0, "nobody must not create in root's 0755 directory");
    assert!(!d.src.join("new-at-root").exists());
    let (rc, err) = as_nobody(&format!(
        "echo mine > {mnt}/drop/file && mkdir {mnt}/drop/dir && ln -s t {mnt}/drop/link"
    ));
    assert_eq!(rc, 0, "nobody creates in a 0777 directory: {err}");
    for name in ["drop/file", "drop/dir", "drop/link"] {
        let md = fs::symlink_metadata(d.src.join(name)).unwrap();
        assert_eq!(
            (md.uid(), md.gid()),
            (NOBODY, NOBODY),
            "{name} on the backing store belongs to its creator"
        );
    }
    assert_eq!(read(&d.src.join("private")), b"root only");
    assert_eq!(read(&d.src.join("public")), b"everyone");
    d.stop();
}

#[test]
fn directory_swapped_for_an_outside_link_behind_the_mount() {
    let mut d = Daemon::start("allow_other", |src| {
        fs::create_dir(src.join("d")).unwrap();
        fs::set_permissions(src.join("d"), fs::Permissions::from_mode(0o777)).unwrap();
    });
    let out = outside(d.dir());
    let before = snapshot(&out);
    let mnt = d.mnt.display().to_string();
    // The kernel and the daemon know d; then d becomes a link out of SOURCE on the backing
    // store. nobody may write in d but not in the outside directory: a daemon (root) that
    // followed the link would create the file there.
    let (rc, err) = as_nobody(&format!("echo before > {mnt}/d/first"));
    assert_eq!(rc, 0, "{err}");
    fs::rename(d.src.join("d"), d.src.join("d.old")).unwrap();
    std::os::unix::fs::symlink(&out, d.src.join("d")).unwrap();
    let (rc, err) = as_nobody(&format!(
        "echo after > {mnt}/d/second; mkdir {mnt}/d/sub; ln -s t {mnt}/d/l; mv {mnt}/d/first {mnt}/d/moved; rm -f {mnt}/d/secret"
    ));
    eprintln!(
        "nobody in the swapped directory: exit {rc} {err}; d.old now holds {:?}",
        list(&d.src.join("d.old"))
            .iter()
            .map(|n| show(n))
            .collect::<Vec<_>>()
    );
    assert_eq!(snapshot(&out), before, "the outside directory changed");
    // After the kernel forgets, d is looked up again: the link, shown as a link.
    drop_caches();
    assert!(fs::symlink_metadata(d.mnt.join("d"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(snapshot(&out), before);
    d.stop();
}

/// Runs `sh -c script` as root; (exit code, stderr).
fn as_root(script: &str) -> (i32, String) {
    let out = Command::new("sh")
        .args(["-c", script])
        .output()
        .expect("run sh");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Writing, truncating or chown(f, -1, -1) clears set-user-ID (and set-group-ID with group
/// execute) exactly as on ext4: for a writer without CAP_FSETID, and for chown even for root,
/// while root's writes keep them. The mount shows the same mode as the backing file at once,
/// with kernel passthrough and without. The daemon is told to clear them
/// (FUSE_HANDLE_KILLPRIV_V2), which spares every write a security.capability lookup.
#[test]
fn set_id_bits_cleared_on_write_as_on_ext4() {
    for opts in ["allow_other", "allow_other,passthrough=off"] {
        let mut d = Daemon::start(opts, |src| {
            fs::set_permissions(src, fs::Permissions::from_mode(0o777)).unwrap();
        });
        let mnt = d.mnt.display().to_string();
        write(&d.src.join("from"), b"source bytes");
        let actions = [
            ("append", "echo more >> {f}"),
            ("truncate", "truncate -s 2 {f}"),
            ("O_TRUNC", ": > {f}"),
            ("fallocate", "fallocate -l 8192 {f}"),
            ("copy_file_range", "cp --reflink=never {mnt}/from {f}"),
            ("chown -1 -1", "chown -h : {f}"),
        ];
        for (who, root) in [("nobody", false), ("root", true)] {
            for (i, (what, script)) in actions.iter().enumerate() {
                for mode in [0o6775, 0o2664] {
                    let name = format!("f-{who}-{i}-{mode:o}");
                    write(&d.src.join(&name), b"data");
                    std::os::unix::fs::chown(d.src.join(&name), Some(NOBODY), Some(NOBODY))
                        .unwrap();
                    fs::set_permissions(d.src.join(&name), fs::Permissions::from_mode(mode))
                        .unwrap();
                    let f = format!("{mnt}/{name}");
                    let script = script.replace("{f}", &f).replace("{mnt}", &mnt);
                    let (rc, err) = if root {
                        as_root(&script)
                    } else {
                        as_nobody(&script)
                    };
                    assert_eq!(rc, 0, "{opts}: {who}: {script}: {err}");
                    // chown always clears set-user-ID; a write or truncate only for a caller
                    // without CAP_FSETID. Set-group-ID goes too only with group execute.
                    let kills = !root || *what == "chown -1 -1";
                    let want = match (kills, mode) {
                        (true, 0o6775) => 0o775,
                        _ => mode,
                    };
                    let shown = fs::metadata(&f).unwrap().mode() & 0o7777;
                    let backing = fs::metadata(d.src.join(&name)).unwrap().mode() & 0o7777;
                    assert_eq!(
                        (shown, backing),
                        (want, want),
                        "{opts}: {what} by {who} on a {mode:o} file: mode seen through the \
                         mount and on the backing file"
                    );
                }
            }
        }
        d.stop();
    }
}
