//! Safety of the daemon: it never follows a symlink of the backing tree (so a link pointing
//! outside SOURCE cannot be used to change files outside it), `..` at the mount root leaves the
//! mount, and inodes are released once the kernel forgets them (no fd leak).

mod common;

use common::*;
use std::fs;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use utf8fs::mapping::Mode;

/// The tests of this file run one at a time: the lookup-count test counts this process's open
/// file descriptors, which the other tests' mounts would change.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A directory outside SOURCE holding a file and a directory that symlinks in SOURCE point to.
struct Outside {
    dir: tempfile::TempDir,
}

impl Outside {
    fn new() -> Outside {
        let dir = tempfile::Builder::new()
            .prefix("utf8fs-outside-")
            .tempdir()
            .unwrap();
        write(&dir.path().join("secret"), b"secret");
        fs::set_permissions(dir.path().join("secret"), fs::Permissions::from_mode(0o600)).unwrap();
        fs::create_dir(dir.path().join("dir")).unwrap();
        write(&dir.path().join("dir/inner"), b"inner");
        Outside { dir }
    }

    fn secret(&self) -> PathBuf {
        self.dir.path().join("secret")
    }

    fn subdir(&self) -> PathBuf {
        self.dir.path().join("dir")
    }

    /// Everything a daemon following a link could change, to compare before and after.
    fn state(&self) -> Vec<String> {
        let mut out = Vec::new();
        for p in [self.secret(), self.subdir(), self.subdir().join("inner")] {
            let md = fs::symlink_metadata(&p).unwrap();
            out.push(format!(
                "{} mode={:o} uid={} gid={} nlink={} size={} mtime={}.{} xattrs={:?}",
                p.display(),
                md.mode(),
                md.uid(),
                md.gid(),
                md.nlink(),
                md.len(),
                md.mtime(),
                md.mtime_nsec(),
                list_xattr(&p).unwrap_or_default()
            ));
        }
        out.push(format!("{:?}", snapshot(self.dir.path())));
        out
    }
}

fn mount_with_links(outside: &Outside) -> Mount {
    let (secret, subdir) = (outside.secret(), outside.subdir());
    Mount::populated(Mode::Reject, move |src| {
        for name in ["link", "link2", "link3", "link4"] {
            std::os::unix::fs::symlink(&secret, src.join(name)).unwrap();
        }
        std::os::unix::fs::symlink(&subdir, src.join("dlink")).unwrap();
        write(&src.join("plain"), b"plain");
    })
}

#[test]
fn setattr_on_outside_link_changes_the_link_only() {
    let _g = serial();
    let outside = Outside::new();
    let m = mount_with_links(&outside);
    let before = outside.state();

    assert_eq!(
        fs::read_link(m.mnt_path(b"link")).unwrap(),
        outside.secret(),
        "readlink verbatim"
    );
    assert!(fs::symlink_metadata(m.mnt_path(b"link"))
        .unwrap()
        .file_type()
        .is_symlink());

    // chmod of the link inode itself, the way glibc's fchmodat(AT_SYMLINK_NOFOLLOW) does it:
    // through /proc/self/fd of an O_PATH|O_NOFOLLOW descriptor.
    let fd = open(&m.mnt_path(b"link"), libc::O_PATH | libc::O_NOFOLLOW, 0).unwrap();
    let proc = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
    let c = cpath(&proc);
    // SAFETY: valid path.
    let r = unsafe { libc::chmod(c.as_ptr(), 0o666) };
    eprintln!("chmod of the link inode: {:?}", check(r));
    drop(fd);
    assert_eq!(
        outside.state(),
        before,
        "chmod of the link inode changed the outside file"
    );

    // fchmodat2 with AT_SYMLINK_NOFOLLOW (Linux 6.6+).
    let c = cpath(&m.mnt_path(b"link"));
    // SAFETY: valid path; fchmodat2(int, const char*, mode_t, int).
    let r = unsafe {
        libc::syscall(
            452,
            libc::AT_FDCWD,
            c.as_ptr(),
            0o666,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    eprintln!("fchmodat2 NOFOLLOW: {:?}", check(r as i32));
    assert_eq!(
        outside.state(),
        before,
        "fchmodat2 on the link changed the outside file"
    );

    // Owner of the link.
    std::os::unix::fs::lchown(m.mnt_path(b"link"), Some(4321), Some(4322)).unwrap();
    let md = fs::symlink_metadata(m.src_path(b"link")).unwrap();
    assert_eq!(
        (md.uid(), md.gid()),
        (4321, 4322),
        "lchown reaches the backing link"
    );
    assert_eq!(
        outside.state(),
        before,
        "lchown on the link changed the outside file"
    );

    // Times of the link.
    let times = [
        libc::timespec {
            tv_sec: 1000,
            tv_nsec: 0,
        },
        libc::timespec {
            tv_sec: 2000,
            tv_nsec: 0,
        },
    ];
    let c = cpath(&m.mnt_path(b"link"));
    // SAFETY: valid path and two timespecs.
    check(unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            c.as_ptr(),
            times.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })
    .unwrap();
    assert_eq!(
        fs::symlink_metadata(m.src_path(b"link")).unwrap().mtime(),
        2000
    );
    assert_eq!(
        outside.state(),
        before,
        "utimensat NOFOLLOW on the link changed the outside file"
    );

    // Extended attributes of the link (trusted.*: user.* is not allowed on symlinks).
    let r = set_xattr(&m.mnt_path(b"link"), "trusted.utf8fs-test", b"1");
    eprintln!("lsetxattr on the link: {r:?}");
    assert_eq!(
        outside.state(),
        before,
        "lsetxattr on the link changed the outside file"
    );
    expect_errno(
        get_xattr(&outside.secret(), "trusted.utf8fs-test"),
        libc::ENODATA,
        "trusted xattr on the outside file",
    );
    let _ = remove_xattr(&m.mnt_path(b"link"), "trusted.utf8fs-test");
    assert_eq!(outside.state(), before);
}

#[test]
fn outside_link_not_followed_by_name_operations() {
    let _g = serial();
    let outside = Outside::new();
    let m = mount_with_links(&outside);
    let before = outside.state();

    expect_errno(
        open(&m.mnt_path(b"link"), libc::O_RDONLY | libc::O_NOFOLLOW, 0),
        libc::ELOOP,
        "open O_NOFOLLOW on the link",
    );
    expect_errno(
        open(
            &m.mnt_path(b"link"),
            libc::O_WRONLY | libc::O_TRUNC | libc::O_NOFOLLOW,
            0,
        ),
        libc::ELOOP,
        "open O_TRUNC|O_NOFOLLOW on the link",
    );
    expect_errno(
        open(&m.mnt_path(b"dlink"), libc::O_RDONLY | libc::O_NOFOLLOW, 0),
        libc::ELOOP,
        "open O_NOFOLLOW on the directory link",
    );
    expect_errno(
        fs::create_dir(m.mnt_path(b"link")),
        libc::EEXIST,
        "mkdir at the link's name",
    );
    expect_errno(
        fs::create_dir(m.mnt_path(b"dlink")),
        libc::EEXIST,
        "mkdir at the dir link's name",
    );
    expect_errno(
        mkfifo(&m.mnt_path(b"link"), 0o644),
        libc::EEXIST,
        "mkfifo at the link's name",
    );
    expect_errno(
        open(
            &m.mnt_path(b"link"),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
            0o644,
        ),
        libc::EEXIST,
        "O_CREAT|O_EXCL at the link's name",
    );
    expect_errno(
        fs::remove_dir(m.mnt_path(b"dlink")),
        libc::ENOTDIR,
        "rmdir of a dir link",
    );
    assert_eq!(
        outside.state(),
        before,
        "failed operations changed the outside tree"
    );

    // A hard link to the symlink links the symlink itself.
    fs::hard_link(m.mnt_path(b"link2"), m.mnt_path(b"hard")).unwrap();
    assert!(fs::symlink_metadata(m.src_path(b"hard"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        fs::symlink_metadata(m.mnt_path(b"link2")).unwrap().nlink(),
        2
    );
    assert_eq!(
        outside.state(),
        before,
        "link() of the symlink changed the outside file"
    );

    // Renaming over the link replaces the link, not its target.
    write(&m.mnt_path(b"new"), b"new");
    fs::rename(m.mnt_path(b"new"), m.mnt_path(b"link")).unwrap();
    let md = fs::symlink_metadata(m.src_path(b"link")).unwrap();
    assert!(
        md.file_type().is_file(),
        "the backing link was replaced by the file"
    );
    assert_eq!(read(&m.src_path(b"link")), b"new");
    // Renaming the link elsewhere moves the link.
    fs::create_dir(m.mnt_path(b"sub")).unwrap();
    fs::rename(m.mnt_path(b"link3"), m.mnt_path(b"sub/moved")).unwrap();
    assert_eq!(
        fs::read_link(m.src_path(b"sub/moved")).unwrap(),
        outside.secret()
    );
    // Exchanging a file with a link swaps the names only.
    rename2(
        &m.mnt_path(b"plain"),
        &m.mnt_path(b"link4"),
        libc::RENAME_EXCHANGE,
    )
    .unwrap();
    assert_eq!(
        fs::read_link(m.src_path(b"plain")).unwrap(),
        outside.secret()
    );
    assert_eq!(read(&m.src_path(b"link4")), b"plain");
    // Unlinking the link leaves its target.
    fs::remove_file(m.mnt_path(b"link2")).unwrap();
    fs::remove_file(m.mnt_path(b"dlink")).unwrap();
    assert!(!m.src_path(b"dlink").exists());
    assert_eq!(
        outside.state(),
        before,
        "name operations on the links changed the outside tree"
    );
    drop(m);
    assert_eq!(outside.state(), before);
}

#[test]
fn dotdot_at_the_mount_root_leaves_the_mount() {
    let _g = serial();
    let m = Mount::populated(Mode::Reject, |src| {
        fs::create_dir(src.join("sub")).unwrap();
        write(&src.join("only-in-src"), b"x");
    });
    let parent = fs::metadata(m.dir()).unwrap();
    let mnt = fs::metadata(&m.mnt).unwrap();
    assert_ne!(
        mnt.dev(),
        parent.dev(),
        "the mount point is a different filesystem"
    );
    for p in [
        m.mnt_path(b".."),
        m.mnt_path(b"sub/../.."),
        m.mnt_path(b"sub/../../mnt/.."),
    ] {
        let md = fs::metadata(&p).unwrap();
        assert_eq!(
            (md.dev(), md.ino()),
            (parent.dev(), parent.ino()),
            "{} is the directory holding the mount point",
            p.display()
        );
    }
    let root = open(&m.mnt, libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap();
    let up = fs::File::from(openat(&root, b"..", libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap());
    let md = up.metadata().unwrap();
    assert_eq!(
        (md.dev(), md.ino()),
        (parent.dev(), parent.ino()),
        "openat(mount root, \"..\")"
    );
    let names = list(&m.mnt_path(b".."));
    assert_eq!(names, vec![b"mnt".to_vec(), b"src".to_vec()]);
    let sub_up = fs::metadata(m.mnt_path(b"sub/..")).unwrap();
    assert_eq!(
        (sub_up.dev(), sub_up.ino()),
        (mnt.dev(), mnt.ino()),
        "sub/.. is the mount root"
    );
    assert_eq!(
        m.list_mnt(b"sub/.."),
        vec![b"only-in-src".to_vec(), b"sub".to_vec()]
    );
}

fn open_fds() -> usize {
    fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

#[test]
fn inodes_released_after_forget() {
    let _g = serial();
    let m = Mount::new(Mode::Reject);
    let base = open_fds();
    fs::create_dir(m.mnt_path(b"d")).unwrap();
    for i in 0..2000 {
        let p = if i % 2 == 0 {
            m.mnt_path(format!("f{i}").as_bytes())
        } else {
            m.mnt_path(format!("d/g{i}").as_bytes())
        };
        write(&p, b"x");
        assert_eq!(read(&p), b"x");
        fs::metadata(&p).unwrap();
    }
    // Backing entries made behind the mount's back, then looked up through it.
    for i in 0..200 {
        write(&m.src_path(format!("d/back{i}").as_bytes()), b"y");
        fs::metadata(m.mnt_path(format!("d/back{i}").as_bytes())).unwrap();
    }
    assert_eq!(m.list_mnt(b"d").len(), 1200);
    let during = open_fds();
    eprintln!(
        "open fds: {base} after mount, {during} after 2,200 lookups; live inodes {}",
        m.stats.live_inodes()
    );
    let ok = settle(|| m.stats.live_inodes() == 1 && open_fds() <= base);
    let after = open_fds();
    assert!(
        ok,
        "after every file was closed and the kernel dropped its caches, the daemon still holds \
         {} inodes (expected 1, the root), {} open handles, and {after} descriptors (vs {base} \
         right after mounting)",
        m.stats.live_inodes(),
        m.stats.open_handles()
    );
    assert_eq!(m.stats.open_handles(), 0);
    assert_eq!(after, base);
    // The mount still works after all those forgets.
    assert_eq!(read(&m.mnt_path(b"f0")), b"x");
    assert_eq!(read(&m.mnt_path(b"d/g1")), b"x");
}
