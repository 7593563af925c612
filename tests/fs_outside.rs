//! Changes made to SOURCE outside the mount while the kernel caches names and attributes for
//! long (`cache=auto` in reject and audit modes, SOURCE watched): each one shows through the
//! mount, with no wait for a timeout and no cache dropped by hand.

mod common;

use common::*;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::{Duration, Instant};
use utf8fs::mapping::Mode;

/// Polls `done` for up to 10 s without touching any cache: with day-long timeouts only an
/// invalidation from the watch can make it hold.
fn shows(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{what}: not seen through the mount");
}

fn outside_changes(mode: Mode, passthrough: bool) {
    let m = Mount::with(
        mode,
        |s| {
            fs::create_dir(s.join("d")).unwrap();
            fs::write(s.join("d/f"), b"one").unwrap();
            fs::write(s.join("d/gone"), b"").unwrap();
            fs::write(s.join("d/old"), b"").unwrap();
        },
        |c| c.passthrough = passthrough,
    );
    assert!(m.watching.is_some(), "SOURCE is watched in {mode:?} mode");
    let d = m.mnt_path(b"d");
    // Warm every cache: names, attributes, the listing.
    assert_eq!(list(&d).len(), 3);
    let f = d.join("f");
    assert_eq!(fs::metadata(&f).unwrap().len(), 3);
    assert_eq!(read(&f), b"one");
    assert!(fs::symlink_metadata(d.join("new")).is_err());

    fs::write(m.src_path(b"d/f"), b"three").unwrap();
    shows("new size", || {
        fs::metadata(&f).map(|s| s.len()).ok() == Some(5)
    });
    shows("new contents", || read(&f) == b"three");

    fs::set_permissions(m.src_path(b"d/f"), fs::Permissions::from_mode(0o600)).unwrap();
    shows("new mode", || {
        fs::metadata(&f).map(|s| s.mode() & 0o777).ok() == Some(0o600)
    });

    fs::write(m.src_path(b"d/new"), b"").unwrap();
    shows("created name", || {
        fs::symlink_metadata(d.join("new")).is_ok()
    });
    shows("created name listed", || {
        list(&d).contains(&b"new".to_vec())
    });

    fs::remove_file(m.src_path(b"d/gone")).unwrap();
    shows("removed name", || {
        fs::symlink_metadata(d.join("gone")).is_err()
    });
    shows("removed name unlisted", || {
        !list(&d).contains(&b"gone".to_vec())
    });

    fs::rename(m.src_path(b"d/old"), m.src_path(b"d/moved")).unwrap();
    shows("renamed away", || {
        fs::symlink_metadata(d.join("old")).is_err()
    });
    shows("renamed to", || {
        fs::symlink_metadata(d.join("moved")).is_ok()
    });

    fs::create_dir(m.src_path(b"d/sub")).unwrap();
    shows("new directory", || d.join("sub").is_dir());
    fs::write(m.src_path(b"d/sub/x"), b"x").unwrap();
    shows("file in the new directory", || {
        read(&d.join("sub/x")) == b"x"
    });

    // A change made through the mount is the mount's own and needs no event.
    fs::write(d.join("mine"), b"m").unwrap();
    assert_eq!(read(&m.src_path(b"d/mine")), b"m");
    assert_eq!(read(&d.join("mine")), b"m");
}

#[test]
fn outside_changes_show_in_reject_mode() {
    outside_changes(Mode::Reject, true);
}

/// Without passthrough the kernel caches file contents itself: they follow the new mtime.
#[test]
fn outside_changes_show_without_passthrough() {
    outside_changes(Mode::Reject, false);
}

#[test]
fn outside_changes_show_in_audit_mode() {
    outside_changes(Mode::Audit, true);
}

/// Normalizing modes keep 1 s timeouts (an outside change can move other entries' shown
/// names) and are not watched.
#[test]
fn normalizing_modes_are_not_watched() {
    let m = Mount::new(Mode::Escape);
    assert!(m.watching.is_none());
}
