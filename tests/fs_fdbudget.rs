//! The fd budget of the inode table: with far more inodes known to the kernel than the budget
//! allows fds, every operation still works on inodes whose fd was closed, a deleted object's
//! inode number reused by a new object never leads a stale node id to the new object, and
//! everything is released once the kernel forgets.

mod common;

use common::*;
use std::fs;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use utf8fs::mapping::Mode;

const BUDGET: usize = 64;
/// Fds in use by requests in flight and inodes pinned for a moment may exceed the budget.
const SLACK: usize = 16;

fn small_budget() -> Mount {
    Mount::with(Mode::Reject, |_| {}, |c| c.fd_budget = BUDGET)
}

/// `statx` asking the filesystem, not the kernel's attribute cache, about what `fd` refers to.
fn statx_sync(fd: &OwnedFd) -> std::io::Result<libc::statx> {
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd, empty NUL-terminated path, buffer of the right size.
    let ret = unsafe {
        libc::statx(
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_STATX_FORCE_SYNC | libc::AT_SYMLINK_NOFOLLOW,
            libc::STATX_BASIC_STATS,
            &mut stx,
        )
    };
    check(ret).map(|_| stx)
}

fn file_name(i: usize) -> String {
    format!("d{}/f{i}", i % 30)
}

/// Creates 3,000 files in 30 directories through the mount, then lstats them all again.
fn populate(m: &Mount) {
    for d in 0..30 {
        fs::create_dir(m.mnt_path(format!("d{d}").as_bytes())).unwrap();
    }
    for i in 0..3000 {
        fs::write(m.mnt_path(file_name(i).as_bytes()), format!("content {i}")).unwrap();
    }
    for i in 0..3000 {
        let md = fs::symlink_metadata(m.mnt_path(file_name(i).as_bytes())).unwrap();
        assert_eq!(md.len(), format!("content {i}").len() as u64);
    }
}

#[test]
fn thousands_of_inodes_within_the_budget() {
    let m = small_budget();
    populate(&m);
    assert!(
        m.stats.live_inodes() > 3000,
        "the kernel should still know the files ({} inodes)",
        m.stats.live_inodes()
    );
    assert!(
        m.stats.path_fds() <= BUDGET + SLACK,
        "{} O_PATH fds held for a budget of {BUDGET}",
        m.stats.path_fds()
    );
}

#[test]
fn evicted_inodes_still_work() {
    let m = small_budget();
    populate(&m);
    // The first files and directories were evicted long ago.
    for i in 0..40 {
        let p = m.mnt_path(file_name(i).as_bytes());
        assert_eq!(fs::read_to_string(&p).unwrap(), format!("content {i}"));
    }
    let p = m.mnt_path(file_name(1).as_bytes());
    fs::write(&p, b"rewritten").unwrap();
    assert_eq!(
        fs::read(m.src_path(file_name(1).as_bytes())).unwrap(),
        b"rewritten"
    );

    set_xattr(&m.mnt_path(file_name(2).as_bytes()), "user.k", b"v").unwrap();
    assert_eq!(
        get_xattr(&m.mnt_path(file_name(2).as_bytes()), "user.k").unwrap(),
        b"v"
    );
    assert_eq!(
        get_xattr(&m.src_path(file_name(2).as_bytes()), "user.k").unwrap(),
        b"v"
    );
    assert!(list_xattr(&m.mnt_path(file_name(2).as_bytes()))
        .unwrap()
        .contains(&b"user.k".to_vec()));
    remove_xattr(&m.mnt_path(file_name(2).as_bytes()), "user.k").unwrap();

    fs::rename(
        m.mnt_path(file_name(3).as_bytes()),
        m.mnt_path(b"d4/renamed"),
    )
    .unwrap();
    assert_eq!(
        fs::read_to_string(m.src_path(b"d4/renamed")).unwrap(),
        "content 3"
    );
    fs::remove_file(m.mnt_path(file_name(5).as_bytes())).unwrap();
    assert!(!m.src_path(file_name(5).as_bytes()).exists());

    // d0 was evicted: list it, create in it, rename within it, remove from it.
    let names = list(&m.mnt_path(b"d0"));
    assert_eq!(names.len(), 100);
    fs::write(m.mnt_path(b"d0/new"), b"new").unwrap();
    fs::create_dir(m.mnt_path(b"d0/sub")).unwrap();
    fs::write(m.mnt_path(b"d0/sub/deep"), b"deep").unwrap();
    fs::rename(m.mnt_path(b"d0/new"), m.mnt_path(b"d0/new2")).unwrap();
    assert_eq!(fs::read(m.src_path(b"d0/new2")).unwrap(), b"new");
    assert_eq!(fs::read(m.src_path(b"d0/sub/deep")).unwrap(), b"deep");
    fs::hard_link(m.mnt_path(b"d0/new2"), m.mnt_path(b"d1/link")).unwrap();
    assert_eq!(
        fs::symlink_metadata(m.mnt_path(b"d0/new2")).unwrap().ino(),
        fs::symlink_metadata(m.mnt_path(b"d1/link")).unwrap().ino()
    );
    std::os::unix::fs::symlink("target", m.mnt_path(b"d0/link")).unwrap();
    assert_eq!(
        fs::read_link(m.mnt_path(b"d0/link")).unwrap(),
        Path::new("target")
    );
    assert_eq!(list(&m.mnt_path(b"d0")).len(), 103);
    assert!(m.stats.path_fds() <= BUDGET + SLACK);
}

#[test]
fn deleted_evicted_file_never_reaches_a_new_object() {
    let m = small_budget();
    fs::write(m.mnt_path(b"victim"), b"OLD").unwrap();
    // Keeps the kernel's node id for victim while its fd is evicted.
    let held = open(&m.mnt_path(b"victim"), libc::O_PATH | libc::O_NOFOLLOW, 0).unwrap();
    let ino = fs::symlink_metadata(m.src_path(b"victim")).unwrap().ino();
    populate(&m);
    assert!(m.stats.path_fds() <= BUDGET + SLACK);
    // Deleted behind the mount's back: nothing keeps the object alive any more.
    fs::remove_file(m.src_path(b"victim")).unwrap();
    // ext4 hands a freed inode number out again soon: create files until it does.
    let mut reused = None;
    for i in 0..5000 {
        let p = m.src_path(format!("fresh{i}").as_bytes());
        fs::write(&p, b"NEW").unwrap();
        if fs::symlink_metadata(&p).unwrap().ino() == ino {
            reused = Some(format!("fresh{i}"));
            break;
        }
    }
    let err = statx_sync(&held).expect_err("stat of a deleted, evicted file");
    let errno = errno_of(err);
    assert!(
        errno == libc::ESTALE || errno == libc::ENOENT,
        "stat of the deleted file: {}",
        strerror(errno)
    );
    // Opening the stale node id must not open the new object.
    let proc = format!("/proc/self/fd/{}", held.as_raw_fd());
    match fs::read(&proc) {
        Ok(data) => panic!("read a deleted file through its stale node id: {data:?}"),
        Err(e) => {
            let errno = errno_of(e);
            assert!(
                errno == libc::ESTALE || errno == libc::ENOENT,
                "open of the deleted file: {}",
                strerror(errno)
            );
        }
    }
    let Some(fresh) = reused else {
        eprintln!("inode number {ino} was not reused: only the deleted case was checked");
        return;
    };
    // The new object is reachable by its name and shows its own data.
    let p = m.mnt_path(fresh.as_bytes());
    assert_eq!(fs::read(&p).unwrap(), b"NEW");
    fs::write(&p, b"NEWER").unwrap();
    assert_eq!(fs::read(m.src_path(fresh.as_bytes())).unwrap(), b"NEWER");
    assert!(statx_sync(&held).is_err());
    drop(held);
}

#[test]
fn everything_released_after_forget() {
    let m = small_budget();
    populate(&m);
    let released = settle(|| m.stats.live_inodes() == 1 && m.stats.path_fds() == 1);
    assert!(
        released,
        "after drop_caches: {} inodes, {} O_PATH fds (want 1 and 1)",
        m.stats.live_inodes(),
        m.stats.path_fds()
    );
    // And the tree is still there, through the mount.
    assert_eq!(
        fs::read_to_string(m.mnt_path(file_name(7).as_bytes())).unwrap(),
        "content 7"
    );
}
