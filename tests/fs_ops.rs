//! The passthrough operations in reject mode with valid names: what cp, tar, git and editors
//! rely on, checked through the mount and on the backing store.

mod common;

use common::*;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Command;
use utf8fs::mapping::Mode;

fn mount() -> Mount {
    Mount::new(Mode::Reject)
}

#[test]
fn create_write_read_append_truncate() {
    let m = mount();
    let f = m.mnt_path("café.txt".as_bytes());
    write(&f, b"hello");
    assert_eq!(read(&f), b"hello");
    assert_eq!(fs::metadata(&f).unwrap().len(), 5);
    assert_eq!(read(&m.src_path("café.txt".as_bytes())), b"hello");

    let mut a = OpenOptions::new().append(true).open(&f).unwrap();
    a.write_all(b" world").unwrap();
    drop(a);
    assert_eq!(read(&f), b"hello world");
    assert_eq!(fs::metadata(&f).unwrap().len(), 11);

    let file = OpenOptions::new().write(true).open(&f).unwrap();
    file.set_len(3).unwrap();
    drop(file);
    assert_eq!(read(&f), b"hel");
    assert_eq!(fs::metadata(&f).unwrap().len(), 3);
    assert_eq!(read(&m.src_path("café.txt".as_bytes())), b"hel");

    // Extending truncate reads as zeros.
    fs::OpenOptions::new()
        .write(true)
        .open(&f)
        .unwrap()
        .set_len(4096)
        .unwrap();
    let data = read(&f);
    assert_eq!(data.len(), 4096);
    assert!(data[3..].iter().all(|&b| b == 0));

    // O_TRUNC on open, then a write in the middle of a file.
    let mut t = OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&f)
        .unwrap();
    t.write_all(b"0123456789").unwrap();
    t.seek(SeekFrom::Start(4)).unwrap();
    t.write_all(b"xy").unwrap();
    drop(t);
    assert_eq!(read(&f), b"0123xy6789");
    assert_eq!(
        fs::metadata(m.src_path("café.txt".as_bytes()))
            .unwrap()
            .len(),
        10
    );

    // O_EXCL on an existing name.
    expect_errno(
        OpenOptions::new().write(true).create_new(true).open(&f),
        libc::EEXIST,
        "create_new over an existing file",
    );
    assert_eq!(m.list_mnt(b""), vec!["café.txt".as_bytes().to_vec()]);
}

/// A program running from the mount cannot be changed under it: every open that would write
/// or truncate fails with ETXTBSY, as on ext4, and the file stays whole. The kernel refuses
/// O_RDONLY|O_TRUNC only after the open, so a daemon that truncated inside OPEN would cut the
/// program short and still report ETXTBSY.
#[test]
fn running_program_cannot_be_written_or_truncated() {
    let m = mount();
    let sleep = ["/usr/bin/sleep", "/bin/sleep"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("sleep(1) in /usr/bin or /bin");
    // Written in SOURCE, so no writer of the mount's inode is left in a forked child.
    let len = fs::copy(sleep, m.src_path(b"prog")).unwrap();
    fs::set_permissions(m.src_path(b"prog"), fs::Permissions::from_mode(0o755)).unwrap();
    let prog = m.mnt_path(b"prog");
    let mut child = Command::new(&prog).arg("30").spawn().unwrap();
    for (flags, what) in [
        (libc::O_WRONLY, "O_WRONLY"),
        (libc::O_RDWR, "O_RDWR"),
        (libc::O_RDONLY | libc::O_TRUNC, "O_RDONLY|O_TRUNC"),
        (libc::O_WRONLY | libc::O_TRUNC, "O_WRONLY|O_TRUNC"),
    ] {
        expect_errno(open(&prog, flags, 0), libc::ETXTBSY, what);
    }
    assert_eq!(fs::metadata(m.src_path(b"prog")).unwrap().len(), len);
    assert_eq!(fs::metadata(&prog).unwrap().len(), len);
    assert!(
        child.try_wait().unwrap().is_none(),
        "the program still runs"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    // Once it has exited, the same truncating open works.
    drop(open(&prog, libc::O_RDONLY | libc::O_TRUNC, 0).unwrap());
    assert_eq!(fs::metadata(m.src_path(b"prog")).unwrap().len(), 0);
}

#[test]
fn mkdir_rmdir_unlink() {
    let m = mount();
    let d = m.mnt_path(b"dir");
    fs::create_dir(&d).unwrap();
    assert!(fs::metadata(&d).unwrap().is_dir());
    assert!(fs::metadata(m.src_path(b"dir")).unwrap().is_dir());
    expect_errno(fs::create_dir(&d), libc::EEXIST, "mkdir existing");

    write(&m.mnt_path(b"dir/file"), b"x");
    expect_errno(fs::remove_dir(&d), libc::ENOTEMPTY, "rmdir non-empty");
    assert!(m.src_path(b"dir/file").exists());

    expect_errno(fs::remove_file(&d), libc::EISDIR, "unlink a directory");
    expect_errno(
        fs::remove_dir(m.mnt_path(b"dir/file")),
        libc::ENOTDIR,
        "rmdir a file",
    );

    fs::remove_file(m.mnt_path(b"dir/file")).unwrap();
    assert!(!m.src_path(b"dir/file").exists());
    expect_errno(
        fs::metadata(m.mnt_path(b"dir/file")),
        libc::ENOENT,
        "stat after unlink",
    );
    fs::remove_dir(&d).unwrap();
    assert!(!m.src_path(b"dir").exists());
    assert!(m.list_mnt(b"").is_empty());
    expect_errno(fs::remove_dir(&d), libc::ENOENT, "rmdir missing");
}

#[test]
fn rename_plain_over_existing_and_across_directories() {
    let m = mount();
    write(&m.mnt_path(b"a"), b"A");
    fs::rename(m.mnt_path(b"a"), m.mnt_path(b"b")).unwrap();
    assert_eq!(m.list_src(b""), vec![b"b".to_vec()]);
    assert_eq!(read(&m.src_path(b"b")), b"A");
    expect_errno(
        fs::metadata(m.mnt_path(b"a")),
        libc::ENOENT,
        "stat old name",
    );

    write(&m.mnt_path(b"c"), b"C");
    fs::rename(m.mnt_path(b"b"), m.mnt_path(b"c")).unwrap();
    assert_eq!(m.list_src(b""), vec![b"c".to_vec()]);
    assert_eq!(read(&m.mnt_path(b"c")), b"A");
    assert_eq!(read(&m.src_path(b"c")), b"A");

    fs::create_dir(m.mnt_path(b"d1")).unwrap();
    fs::create_dir(m.mnt_path(b"d1/sub")).unwrap();
    write(&m.mnt_path(b"d1/sub/f"), b"F");
    fs::rename(m.mnt_path(b"c"), m.mnt_path(b"d1/c")).unwrap();
    fs::rename(m.mnt_path(b"d1"), m.mnt_path(b"d2")).unwrap();
    assert_eq!(read(&m.mnt_path(b"d2/c")), b"A");
    assert_eq!(read(&m.mnt_path(b"d2/sub/f")), b"F");
    assert_eq!(read(&m.src_path(b"d2/sub/f")), b"F");
    assert_eq!(m.list_src(b""), vec![b"d2".to_vec()]);

    // A directory over a non-empty directory fails; over an empty one succeeds.
    fs::create_dir(m.mnt_path(b"e")).unwrap();
    fs::rename(m.mnt_path(b"e"), m.mnt_path(b"d2/sub2")).unwrap();
    fs::create_dir(m.mnt_path(b"e")).unwrap();
    expect_errno(
        fs::rename(m.mnt_path(b"e"), m.mnt_path(b"d2/sub")),
        libc::ENOTEMPTY,
        "rename a directory over a non-empty directory",
    );
    fs::rename(m.mnt_path(b"e"), m.mnt_path(b"d2/sub2")).unwrap();
    assert_eq!(m.list_src(b""), vec![b"d2".to_vec()]);
}

#[test]
fn rename_noreplace() {
    let m = mount();
    write(&m.mnt_path(b"a"), b"A");
    write(&m.mnt_path(b"b"), b"B");
    expect_errno(
        rename2(&m.mnt_path(b"a"), &m.mnt_path(b"b"), libc::RENAME_NOREPLACE),
        libc::EEXIST,
        "RENAME_NOREPLACE over an existing file",
    );
    assert_eq!(read(&m.src_path(b"a")), b"A");
    assert_eq!(read(&m.src_path(b"b")), b"B");
    rename2(&m.mnt_path(b"a"), &m.mnt_path(b"c"), libc::RENAME_NOREPLACE).unwrap();
    assert_eq!(m.list_src(b""), vec![b"b".to_vec(), b"c".to_vec()]);
    assert_eq!(read(&m.mnt_path(b"c")), b"A");
}

#[test]
fn rename_exchange() {
    let m = mount();
    write(&m.mnt_path(b"a"), b"A");
    write(&m.mnt_path(b"b"), b"B");
    rename2(&m.mnt_path(b"a"), &m.mnt_path(b"b"), libc::RENAME_EXCHANGE).unwrap();
    assert_eq!(read(&m.mnt_path(b"a")), b"B");
    assert_eq!(read(&m.mnt_path(b"b")), b"A");
    assert_eq!(read(&m.src_path(b"a")), b"B");
    assert_eq!(read(&m.src_path(b"b")), b"A");

    // A file and a directory swap places.
    fs::create_dir(m.mnt_path(b"d")).unwrap();
    write(&m.mnt_path(b"d/inner"), b"I");
    rename2(&m.mnt_path(b"a"), &m.mnt_path(b"d"), libc::RENAME_EXCHANGE).unwrap();
    assert!(fs::metadata(m.mnt_path(b"a")).unwrap().is_dir());
    assert_eq!(read(&m.mnt_path(b"a/inner")), b"I");
    assert_eq!(read(&m.mnt_path(b"d")), b"B");
    assert_eq!(read(&m.src_path(b"a/inner")), b"I");
    assert_eq!(read(&m.src_path(b"d")), b"B");

    expect_errno(
        rename2(
            &m.mnt_path(b"b"),
            &m.mnt_path(b"missing"),
            libc::RENAME_EXCHANGE,
        ),
        libc::ENOENT,
        "RENAME_EXCHANGE with a missing target",
    );
    assert_eq!(read(&m.src_path(b"b")), b"A");
}

#[test]
fn hard_link_shares_inode_and_nlink() {
    let m = mount();
    fs::create_dir(m.mnt_path(b"sub")).unwrap();
    write(&m.mnt_path(b"a"), b"one");
    fs::hard_link(m.mnt_path(b"a"), m.mnt_path(b"sub/b")).unwrap();
    let (ma, mb) = (
        fs::metadata(m.mnt_path(b"a")).unwrap(),
        fs::metadata(m.mnt_path(b"sub/b")).unwrap(),
    );
    assert_eq!(ma.ino(), mb.ino(), "both names show the same st_ino");
    assert_eq!(ma.nlink(), 2, "nlink through the first name");
    assert_eq!(mb.nlink(), 2, "nlink through the second name");
    let (sa, sb) = (
        fs::metadata(m.src_path(b"a")).unwrap(),
        fs::metadata(m.src_path(b"sub/b")).unwrap(),
    );
    assert_eq!(sa.ino(), sb.ino(), "backing names are one file");
    assert_eq!(sa.nlink(), 2);

    write(&m.mnt_path(b"sub/b"), b"two");
    assert_eq!(read(&m.mnt_path(b"a")), b"two");

    // A third link made on the backing side before lookup, then unlinks: nlink follows.
    fs::remove_file(m.mnt_path(b"a")).unwrap();
    assert_eq!(fs::metadata(m.mnt_path(b"sub/b")).unwrap().nlink(), 1);
    assert_eq!(fs::metadata(m.src_path(b"sub/b")).unwrap().nlink(), 1);
    expect_errno(
        fs::hard_link(m.mnt_path(b"sub/b"), m.mnt_path(b"sub")),
        libc::EEXIST,
        "link over an existing name",
    );
    expect_errno(
        fs::hard_link(m.mnt_path(b"sub"), m.mnt_path(b"dirlink")),
        libc::EPERM,
        "hard link to a directory",
    );
}

#[test]
fn symlink_and_readlink() {
    let m = mount();
    write(&m.mnt_path(b"target"), b"T");
    std::os::unix::fs::symlink("target", m.mnt_path(b"rel")).unwrap();
    std::os::unix::fs::symlink("dangling/x/ü", m.mnt_path(b"dangle")).unwrap();
    assert_eq!(
        fs::read_link(m.mnt_path(b"rel")).unwrap().as_os_str(),
        "target"
    );
    assert_eq!(
        fs::read_link(m.src_path(b"rel")).unwrap().as_os_str(),
        "target"
    );
    assert_eq!(
        fs::read_link(m.mnt_path(b"dangle")).unwrap().as_os_str(),
        "dangling/x/ü"
    );
    assert!(fs::symlink_metadata(m.mnt_path(b"rel"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(fs::symlink_metadata(m.src_path(b"rel"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        read(&m.mnt_path(b"rel")),
        b"T",
        "the client follows the link through the mount"
    );
    assert_eq!(
        fs::symlink_metadata(m.mnt_path(b"dangle")).unwrap().len(),
        "dangling/x/ü".len() as u64
    );
    expect_errno(
        fs::metadata(m.mnt_path(b"dangle")),
        libc::ENOENT,
        "stat a dangling link",
    );
    expect_errno(
        std::os::unix::fs::symlink("x", m.mnt_path(b"rel")),
        libc::EEXIST,
        "symlink over an existing name",
    );
    fs::remove_file(m.mnt_path(b"rel")).unwrap();
    assert_eq!(
        read(&m.src_path(b"target")),
        b"T",
        "unlinking a link leaves its target"
    );
}

#[test]
fn mknod_fifo() {
    let m = mount();
    mkfifo(&m.mnt_path(b"fifo"), 0o640).unwrap();
    let st = lstat(&m.mnt_path(b"fifo")).unwrap();
    assert_eq!(st.st_mode & libc::S_IFMT, libc::S_IFIFO);
    assert_eq!(st.st_mode & 0o777, 0o640 & !umask());
    let st = lstat(&m.src_path(b"fifo")).unwrap();
    assert_eq!(st.st_mode & libc::S_IFMT, libc::S_IFIFO);
    expect_errno(
        mkfifo(&m.mnt_path(b"fifo"), 0o640),
        libc::EEXIST,
        "mkfifo existing",
    );
    fs::remove_file(m.mnt_path(b"fifo")).unwrap();
    assert!(m.list_src(b"").is_empty());
}

fn umask() -> libc::mode_t {
    // SAFETY: umask only swaps the process mask; restored at once.
    unsafe {
        let old = libc::umask(0o022);
        libc::umask(old);
        old
    }
}

#[test]
fn chmod_and_chown() {
    let m = mount();
    let f = m.mnt_path(b"f");
    write(&f, b"x");
    fs::set_permissions(&f, fs::Permissions::from_mode(0o640)).unwrap();
    assert_eq!(fs::metadata(&f).unwrap().mode() & 0o7777, 0o640);
    assert_eq!(
        fs::metadata(m.src_path(b"f")).unwrap().mode() & 0o7777,
        0o640
    );

    fs::create_dir(m.mnt_path(b"d")).unwrap();
    fs::set_permissions(m.mnt_path(b"d"), fs::Permissions::from_mode(0o1750)).unwrap();
    assert_eq!(
        fs::metadata(m.mnt_path(b"d")).unwrap().mode() & 0o7777,
        0o1750
    );
    assert_eq!(
        fs::metadata(m.src_path(b"d")).unwrap().mode() & 0o7777,
        0o1750
    );

    std::os::unix::fs::chown(&f, Some(1234), Some(5678)).unwrap();
    let md = fs::metadata(&f).unwrap();
    assert_eq!(
        (md.uid(), md.gid()),
        (1234, 5678),
        "owner through the mount"
    );
    let md = fs::metadata(m.src_path(b"f")).unwrap();
    assert_eq!(
        (md.uid(), md.gid()),
        (1234, 5678),
        "owner on the backing file"
    );

    // Group only; the owner stays.
    std::os::unix::fs::chown(&f, None, Some(42)).unwrap();
    let md = fs::metadata(m.src_path(b"f")).unwrap();
    assert_eq!((md.uid(), md.gid()), (1234, 42));

    // Owner of a symlink itself.
    std::os::unix::fs::symlink("f", m.mnt_path(b"l")).unwrap();
    std::os::unix::fs::lchown(m.mnt_path(b"l"), Some(777), Some(778)).unwrap();
    let md = fs::symlink_metadata(m.src_path(b"l")).unwrap();
    assert_eq!((md.uid(), md.gid()), (777, 778));
    let md = fs::metadata(m.src_path(b"f")).unwrap();
    assert_eq!(
        (md.uid(), md.gid()),
        (1234, 42),
        "lchown leaves the link target alone"
    );
}

fn utimens(
    path: &std::path::Path,
    atime: libc::timespec,
    mtime: libc::timespec,
) -> std::io::Result<()> {
    let c = cpath(path);
    let times = [atime, mtime];
    // SAFETY: valid path and a two-element timespec array.
    check(unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            c.as_ptr(),
            times.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })
    .map(|_| ())
}

fn ts(sec: i64, nsec: i64) -> libc::timespec {
    libc::timespec {
        tv_sec: sec,
        tv_nsec: nsec,
    }
}

#[test]
fn utimensat_with_omit_and_now() {
    let m = mount();
    let f = m.mnt_path(b"f");
    write(&f, b"x");
    utimens(&f, ts(1_000_000_000, 5), ts(1_200_000_000, 7)).unwrap();
    for (what, md) in [
        ("mount", fs::metadata(&f).unwrap()),
        ("backing", fs::metadata(m.src_path(b"f")).unwrap()),
    ] {
        assert_eq!(
            (md.atime(), md.atime_nsec()),
            (1_000_000_000, 5),
            "atime on {what}"
        );
        assert_eq!(
            (md.mtime(), md.mtime_nsec()),
            (1_200_000_000, 7),
            "mtime on {what}"
        );
    }

    utimens(&f, ts(0, libc::UTIME_OMIT), ts(1_300_000_000, 0)).unwrap();
    for (what, md) in [
        ("mount", fs::metadata(&f).unwrap()),
        ("backing", fs::metadata(m.src_path(b"f")).unwrap()),
    ] {
        assert_eq!(
            (md.atime(), md.atime_nsec()),
            (1_000_000_000, 5),
            "UTIME_OMIT keeps atime on {what}"
        );
        assert_eq!(md.mtime(), 1_300_000_000, "mtime set on {what}");
    }

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    utimens(&f, ts(0, libc::UTIME_OMIT), ts(0, libc::UTIME_NOW)).unwrap();
    for (what, md) in [
        ("mount", fs::metadata(&f).unwrap()),
        ("backing", fs::metadata(m.src_path(b"f")).unwrap()),
    ] {
        assert_eq!(
            md.atime(),
            1_000_000_000,
            "UTIME_OMIT keeps atime on {what}"
        );
        assert!(
            (md.mtime() - now).abs() < 3600,
            "UTIME_NOW sets mtime to the present on {what}: {} vs {now}",
            md.mtime()
        );
    }

    utimens(&f, ts(0, libc::UTIME_NOW), ts(0, libc::UTIME_OMIT)).unwrap();
    let md = fs::metadata(m.src_path(b"f")).unwrap();
    assert!((md.atime() - now).abs() < 3600, "UTIME_NOW sets atime");
    assert!(
        (md.mtime() - now).abs() < 3600,
        "UTIME_OMIT keeps the new mtime"
    );

    // Times of a symlink itself.
    std::os::unix::fs::symlink("f", m.mnt_path(b"l")).unwrap();
    utimens(&m.mnt_path(b"l"), ts(100, 0), ts(200, 0)).unwrap();
    let md = fs::symlink_metadata(m.src_path(b"l")).unwrap();
    assert_eq!((md.atime(), md.mtime()), (100, 200));
    assert_ne!(fs::metadata(m.src_path(b"f")).unwrap().mtime(), 200);
}

#[test]
fn xattrs_set_get_list_remove() {
    let m = mount();
    let f = m.mnt_path(b"f");
    write(&f, b"x");
    fs::create_dir(m.mnt_path(b"d")).unwrap();
    if let Err(e) = set_xattr(&m.src_path(b"d"), "user.probe", b"1") {
        eprintln!("skipping: backing fs has no user xattrs: {e}");
        return;
    }
    remove_xattr(&m.src_path(b"d"), "user.probe").unwrap();

    for (p, s) in [
        (f.clone(), m.src_path(b"f")),
        (m.mnt_path(b"d"), m.src_path(b"d")),
    ] {
        set_xattr(&p, "user.test", "värde".as_bytes()).unwrap();
        set_xattr(&p, "user.empty", b"").unwrap();
        assert_eq!(get_xattr(&p, "user.test").unwrap(), "värde".as_bytes());
        assert_eq!(get_xattr(&p, "user.empty").unwrap(), b"");
        assert_eq!(
            get_xattr(&s, "user.test").unwrap(),
            "värde".as_bytes(),
            "on the backing entry"
        );
        let names = list_xattr(&p).unwrap();
        assert!(
            names.contains(&b"user.test".to_vec()),
            "listxattr shows user.test: {names:?}"
        );
        assert!(names.contains(&b"user.empty".to_vec()));

        // Size probe (a zero-length buffer) as getfattr does.
        let (pc, nc) = (cpath(&p), cname(b"user.test"));
        // SAFETY: valid path and name; a null buffer of size 0 asks for the size.
        let size = unsafe { libc::lgetxattr(pc.as_ptr(), nc.as_ptr(), std::ptr::null_mut(), 0) };
        assert_eq!(size, "värde".len() as isize);
        // SAFETY: as above.
        let size = unsafe { libc::llistxattr(pc.as_ptr(), std::ptr::null_mut(), 0) };
        assert!(size >= "user.test\0user.empty\0".len() as isize);

        // XATTR_CREATE on an existing name, XATTR_REPLACE on a missing one.
        let (pc, nc) = (cpath(&p), cname(b"user.test"));
        // SAFETY: valid path, name, value.
        let r = unsafe {
            libc::lsetxattr(
                pc.as_ptr(),
                nc.as_ptr(),
                b"v".as_ptr().cast(),
                1,
                libc::XATTR_CREATE,
            )
        };
        expect_errno(
            check(r),
            libc::EEXIST,
            "XATTR_CREATE on an existing attribute",
        );
        let nc = cname(b"user.missing");
        // SAFETY: valid path, name, value.
        let r = unsafe {
            libc::lsetxattr(
                pc.as_ptr(),
                nc.as_ptr(),
                b"v".as_ptr().cast(),
                1,
                libc::XATTR_REPLACE,
            )
        };
        expect_errno(
            check(r),
            libc::ENODATA,
            "XATTR_REPLACE on a missing attribute",
        );

        remove_xattr(&p, "user.test").unwrap();
        expect_errno(
            get_xattr(&p, "user.test"),
            libc::ENODATA,
            "getxattr after removexattr",
        );
        expect_errno(
            get_xattr(&s, "user.test"),
            libc::ENODATA,
            "backing getxattr after removexattr",
        );
        expect_errno(
            remove_xattr(&p, "user.test"),
            libc::ENODATA,
            "removexattr missing",
        );
    }
}

fn fallocate(fd: &OwnedFd, mode: libc::c_int, off: i64, len: i64) -> std::io::Result<()> {
    // SAFETY: valid fd.
    check(unsafe { libc::fallocate(fd.as_raw_fd(), mode, off, len) }).map(|_| ())
}

fn lseek(fd: &OwnedFd, off: i64, whence: libc::c_int) -> std::io::Result<i64> {
    // SAFETY: valid fd.
    let r = unsafe { libc::lseek(fd.as_raw_fd(), off, whence) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

#[test]
fn fallocate_and_punch_hole() {
    let m = mount();
    const MIB: i64 = 1 << 20;
    let fd = open(&m.mnt_path(b"f"), libc::O_RDWR | libc::O_CREAT, 0o644).unwrap();
    fallocate(&fd, 0, 0, MIB).unwrap();
    assert_eq!(fs::metadata(m.mnt_path(b"f")).unwrap().len(), MIB as u64);
    let md = fs::metadata(m.src_path(b"f")).unwrap();
    assert_eq!(md.len(), MIB as u64);
    assert!(
        md.blocks() * 512 >= MIB as u64,
        "space reserved on the backing file: {} blocks",
        md.blocks()
    );

    // KEEP_SIZE reserves beyond the end without changing the size.
    fallocate(&fd, libc::FALLOC_FL_KEEP_SIZE, MIB, MIB).unwrap();
    assert_eq!(fs::metadata(m.src_path(b"f")).unwrap().len(), MIB as u64);

    let mut file = File::from(fd);
    file.write_all(&vec![0xAB; MIB as usize]).unwrap();
    file.sync_all().unwrap();
    let fd = OwnedFd::from(file);
    let before = fs::metadata(m.src_path(b"f")).unwrap().blocks();
    fallocate(
        &fd,
        libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
        64 * 1024,
        512 * 1024,
    )
    .unwrap();
    let md = fs::metadata(m.src_path(b"f")).unwrap();
    assert_eq!(md.len(), MIB as u64, "punching a hole keeps the size");
    assert!(
        md.blocks() < before,
        "the hole frees backing blocks: {} -> {}",
        before,
        md.blocks()
    );
    drop(fd);
    let data = read(&m.mnt_path(b"f"));
    assert_eq!(data.len(), MIB as usize);
    assert!(data[..64 * 1024].iter().all(|&b| b == 0xAB));
    assert!(
        data[64 * 1024..576 * 1024].iter().all(|&b| b == 0),
        "the hole reads as zeros"
    );
    assert!(data[576 * 1024..].iter().all(|&b| b == 0xAB));
}

#[test]
fn seek_data_and_hole_on_sparse_file() {
    let m = mount();
    const MIB: i64 = 1 << 20;
    {
        let mut f = File::create(m.mnt_path(b"sparse")).unwrap();
        f.set_len(4 * MIB as u64).unwrap();
        f.seek(SeekFrom::Start(MIB as u64)).unwrap();
        f.write_all(&[1u8; 8192]).unwrap();
        f.seek(SeekFrom::Start(3 * MIB as u64)).unwrap();
        f.write_all(&[2u8; 4096]).unwrap();
        f.sync_all().unwrap();
    }
    let mfd = open(&m.mnt_path(b"sparse"), libc::O_RDONLY, 0).unwrap();
    let sfd = open(&m.src_path(b"sparse"), libc::O_RDONLY, 0).unwrap();
    let backing_data = lseek(&sfd, 0, libc::SEEK_DATA).unwrap();
    assert!(
        backing_data > 0,
        "the backing fs keeps holes (first data at {backing_data})"
    );
    for off in [0, 4096, MIB - 1, MIB, MIB + 8192, 2 * MIB, 3 * MIB + 100] {
        for (whence, name) in [
            (libc::SEEK_DATA, "SEEK_DATA"),
            (libc::SEEK_HOLE, "SEEK_HOLE"),
        ] {
            let want = lseek(&sfd, off, whence).unwrap();
            let got = lseek(&mfd, off, whence).unwrap();
            assert_eq!(
                got, want,
                "lseek({off}, {name}) through the mount vs the backing file"
            );
        }
    }
    expect_errno(
        lseek(&mfd, 4 * MIB, libc::SEEK_DATA),
        libc::ENXIO,
        "SEEK_DATA at end of file",
    );
}

#[test]
fn copy_file_range_copies() {
    let m = mount();
    let pattern: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    write(&m.mnt_path(b"a"), &pattern);
    let fin = open(&m.mnt_path(b"a"), libc::O_RDONLY, 0).unwrap();
    let fout = open(
        &m.mnt_path(b"b"),
        libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
        0o644,
    )
    .unwrap();
    let mut done = 0usize;
    while done < pattern.len() {
        // SAFETY: valid fds; null offsets use and advance the file positions.
        let n = check_size(unsafe {
            libc::copy_file_range(
                fin.as_raw_fd(),
                std::ptr::null_mut(),
                fout.as_raw_fd(),
                std::ptr::null_mut(),
                pattern.len() - done,
                0,
            )
        })
        .unwrap();
        assert!(n > 0, "copy_file_range stopped at {done}");
        done += n;
    }
    // With explicit offsets: copy 1000 bytes from 5000 to 10 in a third file.
    let fout2 = open(&m.mnt_path(b"c"), libc::O_WRONLY | libc::O_CREAT, 0o644).unwrap();
    let (mut off_in, mut off_out): (i64, i64) = (5000, 10);
    // SAFETY: valid fds and offset pointers.
    let n = check_size(unsafe {
        libc::copy_file_range(
            fin.as_raw_fd(),
            &mut off_in,
            fout2.as_raw_fd(),
            &mut off_out,
            1000,
            0,
        )
    })
    .unwrap();
    assert_eq!(n, 1000);
    drop((fin, fout, fout2));
    assert_eq!(read(&m.mnt_path(b"b")), pattern);
    assert_eq!(read(&m.src_path(b"b")), pattern);
    let c = read(&m.src_path(b"c"));
    assert_eq!(c.len(), 1010);
    assert_eq!(&c[10..], &pattern[5000..6000]);
}

#[test]
fn fsync_and_fdatasync() {
    let m = mount();
    let mut f = File::create(m.mnt_path(b"f")).unwrap();
    f.write_all(b"durable").unwrap();
    f.sync_data().unwrap();
    f.sync_all().unwrap();
    drop(f);
    fs::create_dir(m.mnt_path(b"d")).unwrap();
    File::open(m.mnt_path(b"d")).unwrap().sync_all().unwrap();
    File::open(&m.mnt).unwrap().sync_all().unwrap();
    assert_eq!(read(&m.src_path(b"f")), b"durable");
}

#[test]
fn statfs_agrees_with_backing() {
    let m = mount();
    let st = |p: &std::path::Path| {
        let c = cpath(p);
        // SAFETY: zeroed statvfs is a valid out-buffer.
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: valid path and buffer.
        check(unsafe { libc::statvfs(c.as_ptr(), &mut s) }).unwrap();
        s
    };
    let (mm, ss) = (st(&m.mnt), st(&m.src));
    assert_eq!(
        mm.f_blocks as u128 * mm.f_frsize as u128,
        ss.f_blocks as u128 * ss.f_frsize as u128,
        "total size"
    );
    assert_eq!(mm.f_files, ss.f_files, "total inodes");
    let free = |s: &libc::statvfs| s.f_bavail as f64 * s.f_frsize as f64;
    assert!(
        (free(&mm) - free(&ss)).abs() <= 0.01 * ss.f_blocks as f64 * ss.f_frsize as f64,
        "available space agrees within 1%: {} vs {}",
        free(&mm),
        free(&ss)
    );
    assert_eq!(mm.f_namemax, 255, "name length limit");
}

#[test]
fn access_checks() {
    let m = mount();
    let acc = |p: &std::path::Path, mode| {
        let c = cpath(p);
        // SAFETY: valid path.
        check(unsafe { libc::access(c.as_ptr(), mode) }).map(|_| ())
    };
    let f = m.mnt_path(b"f");
    write(&f, b"x");
    fs::set_permissions(&f, fs::Permissions::from_mode(0o644)).unwrap();
    acc(&f, libc::F_OK).unwrap();
    acc(&f, libc::R_OK | libc::W_OK).unwrap();
    expect_errno(
        acc(&f, libc::X_OK),
        libc::EACCES,
        "X_OK on a 0644 file, even for root",
    );
    fs::set_permissions(&f, fs::Permissions::from_mode(0o755)).unwrap();
    acc(&f, libc::X_OK).unwrap();
    expect_errno(
        acc(&m.mnt_path(b"missing"), libc::F_OK),
        libc::ENOENT,
        "access on a missing name",
    );
}

#[test]
fn tree_deeper_than_path_max() {
    let m = mount();
    let name = vec![b'd'; 200];
    let depth = 30; // 30 × 201 bytes > PATH_MAX (4096)
    let mut fds = vec![open(&m.mnt, libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap()];
    for level in 0..depth {
        let parent = fds.last().unwrap();
        let c = cname(&name);
        // SAFETY: valid fd and name.
        check(unsafe { libc::mkdirat(parent.as_raw_fd(), c.as_ptr(), 0o755) })
            .unwrap_or_else(|e| panic!("mkdirat at level {level}: {e}"));
        let child = openat(parent, &name, libc::O_RDONLY | libc::O_DIRECTORY, 0)
            .unwrap_or_else(|e| panic!("openat at level {level}: {e}"));
        fds.push(child);
    }
    let leaf = openat(
        fds.last().unwrap(),
        b"leaf",
        libc::O_WRONLY | libc::O_CREAT,
        0o644,
    )
    .unwrap();
    File::from(leaf).write_all(b"deep").unwrap();

    // The backing store holds the same tree.
    let mut dir = open(&m.src, libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap();
    for _ in 0..depth {
        dir = openat(&dir, &name, libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap();
    }
    let mut s = String::new();
    File::from(openat(&dir, b"leaf", libc::O_RDONLY, 0).unwrap())
        .read_to_string(&mut s)
        .unwrap();
    assert_eq!(s, "deep");

    // A fresh walk through the mount reaches it and stats it.
    let mut dir = open(&m.mnt, libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap();
    for _ in 0..depth {
        dir = openat(&dir, &name, libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap();
    }
    let leaf = File::from(openat(&dir, b"leaf", libc::O_RDONLY, 0).unwrap());
    assert_eq!(leaf.metadata().unwrap().len(), 4);
    // getcwd-free ".." walk back up inside the mount.
    let up = openat(&dir, b"..", libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap();
    let st = File::from(up).metadata().unwrap();
    let st2 = File::from(fds[depth - 1].try_clone().unwrap())
        .metadata()
        .unwrap();
    assert_eq!(
        st.ino(),
        st2.ino(),
        "`..` of the deepest directory is its parent"
    );

    // Remove everything through the mount, deepest first.
    let c = cname(b"leaf");
    // SAFETY: valid fd and name.
    check(unsafe { libc::unlinkat(fds[depth].as_raw_fd(), c.as_ptr(), 0) }).unwrap();
    let c = cname(&name);
    for level in (0..depth).rev() {
        // SAFETY: valid fd and name.
        check(unsafe { libc::unlinkat(fds[level].as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) })
            .unwrap_or_else(|e| panic!("rmdir at level {level}: {e}"));
    }
    drop(fds);
    assert!(m.list_src(b"").is_empty());
}

#[test]
fn readdir_of_1000_entries() {
    let names: Vec<Vec<u8>> = (0..1000)
        .map(|i| {
            if i % 3 == 0 {
                format!("файл-{i:04}").into_bytes()
            } else if i % 3 == 1 {
                format!("file-{i:04}").into_bytes()
            } else {
                format!("ファイル{i:04}🙂").into_bytes()
            }
        })
        .collect();
    let m = Mount::populated(Mode::Reject, |src| {
        for n in &names[..500] {
            write(&join(src, n), n);
        }
    });
    for n in &names[500..] {
        write(&m.mnt_path(n), n);
    }
    let raw = list_raw(&m.mnt);
    assert_eq!(
        raw.iter().filter(|n| n.as_slice() == b".").count(),
        1,
        "`.` once"
    );
    assert_eq!(
        raw.iter().filter(|n| n.as_slice() == b"..").count(),
        1,
        "`..` once"
    );
    let mut got: Vec<Vec<u8>> = raw
        .into_iter()
        .filter(|n| n != b"." && n != b"..")
        .collect();
    got.sort();
    let mut want = names.clone();
    want.sort();
    assert_eq!(got.len(), 1000, "every entry listed exactly once");
    assert_eq!(got, want);
    // Each listed name opens its own file.
    for n in names.iter().step_by(37) {
        assert_eq!(&read(&m.mnt_path(n)), n);
    }
}

fn compare_trees(a: &std::path::Path, b: &std::path::Path) {
    let (sa, sb) = (snapshot(a), snapshot(b));
    assert_eq!(sa, sb, "trees {} and {} differ", a.display(), b.display());
}

fn make_sample_tree(root: &std::path::Path) {
    fs::create_dir_all(root.join("sub/deeper")).unwrap();
    write(&root.join("a.txt"), b"alpha");
    write(&root.join("sub/ünïcødé.txt"), "ünïcødé".as_bytes());
    write(&root.join("sub/deeper/big"), &vec![7u8; 200_000]);
    std::os::unix::fs::symlink("../a.txt", root.join("sub/link")).unwrap();
    fs::set_permissions(root.join("a.txt"), fs::Permissions::from_mode(0o600)).unwrap();
    fs::hard_link(root.join("a.txt"), root.join("sub/hard")).unwrap();
}

#[test]
fn cp_a_onto_and_within_the_mount() {
    if !have("cp") {
        eprintln!("skipping: cp not installed");
        return;
    }
    let m = mount();
    let outside = tempfile::tempdir().unwrap();
    make_sample_tree(&outside.path().join("tree"));
    run(Command::new("cp")
        .arg("-a")
        .arg(outside.path().join("tree"))
        .arg(&m.mnt));
    compare_trees(&outside.path().join("tree"), &m.mnt_path(b"tree"));
    compare_trees(&outside.path().join("tree"), &m.src_path(b"tree"));
    run(Command::new("cp")
        .arg("-a")
        .arg(m.mnt_path(b"tree"))
        .arg(m.mnt_path(b"copy")));
    compare_trees(&m.src_path(b"tree"), &m.src_path(b"copy"));
    let (a, h) = (
        fs::metadata(m.src_path(b"copy/a.txt")).unwrap(),
        fs::metadata(m.src_path(b"copy/sub/hard")).unwrap(),
    );
    assert_eq!(a.ino(), h.ino(), "cp -a keeps hard links");
    assert_eq!(a.mode() & 0o7777, 0o600, "cp -a keeps modes");
    assert_eq!(
        fs::symlink_metadata(m.src_path(b"copy/a.txt"))
            .unwrap()
            .mtime(),
        fs::symlink_metadata(outside.path().join("tree/a.txt"))
            .unwrap()
            .mtime(),
        "cp -a keeps mtimes"
    );
}

#[test]
fn tar_pipe_through_the_mount() {
    if !have("tar") {
        eprintln!("skipping: tar not installed");
        return;
    }
    let m = mount();
    make_sample_tree(&m.mnt_path(b"tree"));
    fs::create_dir(m.mnt_path(b"out")).unwrap();
    run(Command::new("sh").arg("-c").arg(format!(
        "set -e; tar -C '{}' -cf - tree | tar -C '{}' -xpf -",
        m.mnt.display(),
        m.mnt_path(b"out").display()
    )));
    compare_trees(&m.src_path(b"tree"), &m.src_path(b"out/tree"));
    compare_trees(&m.mnt_path(b"tree"), &m.mnt_path(b"out/tree"));
}

#[test]
fn git_init_add_commit_on_the_mount() {
    if !have("git") {
        eprintln!("skipping: git not installed");
        return;
    }
    let m = mount();
    let home = tempfile::tempdir().unwrap();
    let repo = m.mnt_path(b"repo");
    let git = |args: &[&str]| {
        let mut c = Command::new("git");
        c.arg("-C")
            .arg(&repo)
            .args([
                "-c",
                "user.name=Test",
                "-c",
                "user.email=test@example.org",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .env("HOME", home.path())
            .env("GIT_CONFIG_NOSYSTEM", "1");
        run(&mut c)
    };
    fs::create_dir(&repo).unwrap();
    git(&["init", "-q"]);
    make_sample_tree(&repo.join("tree"));
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "first"]);
    write(&repo.join("tree/a.txt"), b"changed");
    git(&["commit", "-q", "-a", "-m", "second"]);
    git(&["fsck", "--strict"]);
    let log = git(&["log", "--format=%s"]);
    assert_eq!(log.lines().collect::<Vec<_>>(), vec!["second", "first"]);
    git(&["checkout", "-q", "HEAD~1", "--", "tree/a.txt"]);
    assert_eq!(read(&m.src_path(b"repo/tree/a.txt")), b"alpha");
    let status = git(&["status", "--porcelain"]);
    assert_eq!(status.trim(), "M  tree/a.txt");
}

#[test]
fn tree_5000_directories_deep_created_and_removed() {
    let m = mount();
    let depth = 5000;
    let mut dir = open(&m.mnt, libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap();
    let c = cname(b"d");
    for level in 0..depth {
        // SAFETY: valid fd and name.
        check(unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o755) })
            .unwrap_or_else(|e| panic!("mkdirat at level {level}: {e}"));
        dir = openat(&dir, b"d", libc::O_RDONLY | libc::O_DIRECTORY, 0)
            .unwrap_or_else(|e| panic!("openat at level {level}: {e}"));
    }
    File::from(openat(&dir, b"leaf", libc::O_WRONLY | libc::O_CREAT, 0o644).unwrap())
        .write_all(b"bottom")
        .unwrap();
    // The backing store holds the whole depth.
    let mut b = open(&m.src, libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap();
    for _ in 0..depth {
        b = openat(&b, b"d", libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap();
    }
    let mut s = String::new();
    File::from(openat(&b, b"leaf", libc::O_RDONLY, 0).unwrap())
        .read_to_string(&mut s)
        .unwrap();
    assert_eq!(s, "bottom");
    // Remove bottom-up through the mount, climbing with "..".
    let leaf = cname(b"leaf");
    // SAFETY: valid fd and name.
    check(unsafe { libc::unlinkat(dir.as_raw_fd(), leaf.as_ptr(), 0) }).unwrap();
    for level in (0..depth).rev() {
        let parent = openat(&dir, b"..", libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap();
        // SAFETY: valid fd and name.
        check(unsafe { libc::unlinkat(parent.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) })
            .unwrap_or_else(|e| panic!("rmdir at level {level}: {e}"));
        dir = parent;
    }
    drop(dir);
    assert!(
        m.list_src(b"").is_empty(),
        "the whole tree is gone from the backing store"
    );
}

#[test]
fn concurrent_clients_in_one_directory() {
    let m = mount();
    fs::create_dir(m.mnt_path(b"shared")).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let m = &m;
            s.spawn(move || {
                for i in 0..150 {
                    let a = m.mnt_path(format!("shared/t{t}-{i}").as_bytes());
                    let b = m.mnt_path(format!("shared/t{t}-{i}-renamed").as_bytes());
                    write(&a, format!("{t}/{i}").as_bytes());
                    fs::rename(&a, &b).unwrap();
                    assert_eq!(read(&b), format!("{t}/{i}").as_bytes());
                    if i % 3 == 0 {
                        fs::remove_file(&b).unwrap();
                    }
                    if i % 10 == 0 {
                        m.list_mnt(b"shared");
                    }
                }
            });
        }
    });
    let mut want: Vec<Vec<u8>> = (0..4)
        .flat_map(|t| {
            (0..150)
                .filter(|i| i % 3 != 0)
                .map(move |i| format!("t{t}-{i}-renamed").into_bytes())
        })
        .collect();
    want.sort();
    assert_eq!(m.list_mnt(b"shared"), want);
    assert_eq!(m.list_src(b"shared"), want);
    for n in &want {
        let text = String::from_utf8(n.clone()).unwrap();
        let (t, rest) = text[1..].split_once('-').unwrap();
        let i = rest.trim_end_matches("-renamed");
        assert_eq!(
            read(&m.src_path(&[b"shared/", &n[..]].concat())),
            format!("{t}/{i}").as_bytes()
        );
    }
}

#[test]
fn read_only_mount_refuses_changes() {
    let m = Mount::with(
        Mode::Reject,
        |src| {
            write(&src.join("f"), b"data");
            fs::create_dir(src.join("d")).unwrap();
        },
        |cfg| cfg.read_only = true,
    );
    let before = snapshot(&m.src);
    assert_eq!(read(&m.mnt_path(b"f")), b"data", "reads work");
    expect_errno(
        fs::write(m.mnt_path(b"new"), b"x"),
        libc::EROFS,
        "create on a read-only mount",
    );
    expect_errno(
        OpenOptions::new().write(true).open(m.mnt_path(b"f")),
        libc::EROFS,
        "open for writing on a read-only mount",
    );
    expect_errno(
        fs::create_dir(m.mnt_path(b"d2")),
        libc::EROFS,
        "mkdir on a read-only mount",
    );
    expect_errno(
        fs::remove_file(m.mnt_path(b"f")),
        libc::EROFS,
        "unlink on a read-only mount",
    );
    expect_errno(
        fs::remove_dir(m.mnt_path(b"d")),
        libc::EROFS,
        "rmdir on a read-only mount",
    );
    expect_errno(
        fs::rename(m.mnt_path(b"f"), m.mnt_path(b"g")),
        libc::EROFS,
        "rename on a read-only mount",
    );
    expect_errno(
        fs::set_permissions(m.mnt_path(b"f"), fs::Permissions::from_mode(0o600)),
        libc::EROFS,
        "chmod on a read-only mount",
    );
    expect_errno(
        set_xattr(&m.mnt_path(b"f"), "user.x", b"1"),
        libc::EROFS,
        "setxattr on a read-only mount",
    );
    assert_eq!(snapshot(&m.src), before, "nothing changed");
}
