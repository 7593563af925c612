//! Smoke tests of the filesystem through a real mount: the core passthrough operations, reject
//! mode's refusals and hidden entries, and that the kernel's references are all released.

use std::ffi::OsStr;
use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use utf8fs::fs::{FsConfig, FsStats, Utf8Fs};
use utf8fs::mapping::{Mapper, Mode};

struct Mounted {
    _session: fuser::BackgroundSession,
    source: tempfile::TempDir,
    mnt: tempfile::TempDir,
    stats: Arc<FsStats>,
}

impl Mounted {
    fn src(&self, p: &str) -> PathBuf {
        self.source.path().join(p)
    }
    fn mnt(&self, p: &str) -> PathBuf {
        self.mnt.path().join(p)
    }
}

fn mount_with(mode: Mode, prepare: impl FnOnce(&Path)) -> Mounted {
    let source = tempfile::tempdir().expect("tempdir");
    prepare(source.path());
    let mnt = tempfile::tempdir().expect("tempdir");
    let cfg = FsConfig::new(source.path(), Mapper::new(mode));
    let fs = Utf8Fs::new(cfg).expect("new");
    let stats = fs.stats();
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        fuser::MountOption::FSName("utf8fs-test".into()),
        fuser::MountOption::DefaultPermissions,
    ];
    config.n_threads = Some(2);
    let session = fuser::spawn_mount(fs, mnt.path(), &config).expect("mount");
    Mounted {
        _session: session,
        source,
        mnt,
        stats,
    }
}

fn errno<T: std::fmt::Debug>(r: std::io::Result<T>) -> i32 {
    r.expect_err("expected an error")
        .raw_os_error()
        .unwrap_or(0)
}

fn name(b: &[u8]) -> &OsStr {
    OsStr::from_bytes(b)
}

#[test]
fn core_operations() {
    let m = mount_with(Mode::Reject, |s| {
        fs::write(s.join("hello"), b"hi").unwrap();
    });
    assert_eq!(fs::read(m.mnt("hello")).unwrap(), b"hi");

    fs::create_dir(m.mnt("d")).unwrap();
    let mut f = fs::File::create(m.mnt("d/f")).unwrap();
    f.write_all(b"0123456789").unwrap();
    f.seek(SeekFrom::Start(2)).unwrap();
    let mut s = String::new();
    fs::File::open(m.mnt("d/f"))
        .unwrap()
        .read_to_string(&mut s)
        .unwrap();
    assert_eq!(s, "0123456789");
    drop(f);
    assert_eq!(fs::read(m.src("d/f")).unwrap(), b"0123456789");

    // Hard links share st_ino and see the current nlink.
    fs::hard_link(m.mnt("d/f"), m.mnt("g")).unwrap();
    let a = fs::metadata(m.mnt("d/f")).unwrap();
    let b = fs::metadata(m.mnt("g")).unwrap();
    assert_eq!(a.ino(), b.ino());
    assert_eq!(b.nlink(), 2);
    assert_eq!(a.ino(), fs::metadata(m.src("g")).unwrap().ino());

    std::os::unix::fs::symlink("d/f", m.mnt("l")).unwrap();
    assert_eq!(fs::read_link(m.mnt("l")).unwrap(), Path::new("d/f"));
    assert_eq!(fs::read(m.mnt("l")).unwrap(), b"0123456789");

    fs::set_permissions(m.mnt("g"), fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(fs::metadata(m.src("g")).unwrap().mode() & 0o7777, 0o600);
    let f = fs::OpenOptions::new().write(true).open(m.mnt("g")).unwrap();
    f.set_len(3).unwrap();
    drop(f);
    assert_eq!(fs::read(m.src("d/f")).unwrap(), b"012");

    fs::rename(m.mnt("g"), m.mnt("d/h")).unwrap();
    assert!(m.src("d/h").exists());
    let mut names: Vec<_> = fs::read_dir(m.mnt("d"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, vec!["f", "h"]);
    fs::remove_file(m.mnt("d/h")).unwrap();
    fs::remove_file(m.mnt("d/f")).unwrap();
    fs::remove_file(m.mnt("l")).unwrap();
    fs::remove_dir(m.mnt("d")).unwrap();
    assert!(!m.src("d").exists());
    assert_eq!(errno(fs::metadata(m.mnt("nope"))), libc::ENOENT);
}

#[test]
fn reject_mode() {
    let m = mount_with(Mode::Reject, |s| {
        fs::create_dir(s.join("dir")).unwrap();
        fs::write(s.join("dir").join(name(b"caf\xe9")), b"x").unwrap();
        fs::write(s.join("dir/ok"), b"y").unwrap();
    });
    let names: Vec<_> = fs::read_dir(m.mnt("dir"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec!["ok"]);
    assert_eq!(m.stats.hidden_names(), 1);
    for bad in [
        &b"caf\xe9"[..],
        b"\xc0\xaf",
        b"\xed\xa0\x80",
        b"\xf4\x90\x80\x80",
        b"\xff",
    ] {
        let p = m.mnt("dir").join(name(bad));
        assert_eq!(errno(fs::metadata(&p)), libc::EILSEQ);
        assert_eq!(errno(fs::write(&p, b"z")), libc::EILSEQ);
        assert_eq!(errno(fs::create_dir(&p)), libc::EILSEQ);
        assert_eq!(errno(fs::rename(m.mnt("dir/ok"), &p)), libc::EILSEQ);
        assert_eq!(errno(fs::hard_link(m.mnt("dir/ok"), &p)), libc::EILSEQ);
        assert_eq!(errno(std::os::unix::fs::symlink("x", &p)), libc::EILSEQ);
        let mut target = b"a/".to_vec();
        target.extend_from_slice(bad);
        assert_eq!(
            errno(std::os::unix::fs::symlink(name(&target), m.mnt("dir/l"))),
            libc::EILSEQ
        );
    }
    let long = "a".repeat(256);
    assert_eq!(errno(fs::write(m.mnt(&long), b"")), libc::ENAMETOOLONG);
    fs::remove_file(m.mnt("dir/ok")).unwrap();
    assert_eq!(errno(fs::remove_dir(m.mnt("dir"))), libc::ENOTEMPTY);
    assert_eq!(fs::read(m.src("dir").join(name(b"caf\xe9"))).unwrap(), b"x");
}

#[test]
fn deep_tree_and_forget() {
    let m = mount_with(Mode::Reject, |_| {});
    // 1,000 levels of 20-byte names: far deeper than PATH_MAX, walked with *at calls.
    let c = |s: &str| std::ffi::CString::new(s).unwrap();
    let root = fs::File::open(m.mnt.path()).unwrap();
    let depth = 1000;
    let comp = c("dddddddddddddddddddd");
    // SAFETY: plain libc calls on fds this test owns.
    unsafe {
        let mut fd = libc::dup(std::os::fd::AsRawFd::as_raw_fd(&root));
        for _ in 0..depth {
            assert_eq!(libc::mkdirat(fd, comp.as_ptr(), 0o755), 0);
            let next = libc::openat(fd, comp.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY);
            assert!(next >= 0);
            libc::close(fd);
            fd = next;
        }
        let leaf = libc::openat(
            fd,
            c("leaf").as_ptr(),
            libc::O_CREAT | libc::O_WRONLY,
            0o644,
        );
        assert!(leaf >= 0);
        assert_eq!(libc::write(leaf, b"deep".as_ptr().cast(), 4), 4);
        libc::close(leaf);
        assert_eq!(libc::unlinkat(fd, c("leaf").as_ptr(), 0), 0);
        for _ in 0..depth {
            let up = libc::openat(fd, c("..").as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY);
            assert!(up >= 0);
            libc::close(fd);
            fd = up;
            assert_eq!(libc::unlinkat(fd, comp.as_ptr(), libc::AT_REMOVEDIR), 0);
        }
        libc::close(fd);
    }
    drop(root);
    assert!(fs::read_dir(m.source.path()).unwrap().next().is_none());
    // Ask the kernel to drop its dentries, then every inode but the root must go.
    let _ = fs::write("/proc/sys/vm/drop_caches", b"2");
    let deadline = Instant::now() + Duration::from_secs(10);
    while (m.stats.live_inodes() != 1 || m.stats.open_handles() != 0) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        let _ = fs::write("/proc/sys/vm/drop_caches", b"2");
    }
    assert_eq!(m.stats.live_inodes(), 1);
    assert_eq!(m.stats.open_handles(), 0);
}
