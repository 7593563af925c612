//! Directory listings as clients read them: every entry exactly once per reader, whether
//! directories are opened with a handle (`cache=never`) or without one (the kernel caches
//! listings and the daemon tells readers apart by their offsets), with readers interleaved,
//! positions saved and restored, and directories synced.

mod common;

use common::*;
use std::ffi::CStr;
use std::fs;
use std::os::fd::AsRawFd;
use utf8fs::fs::CachePolicy;
use utf8fs::mapping::Mode;

/// A directory of `n` valid names and a few malformed ones (shown escaped).
fn populate(src: &std::path::Path, n: usize) {
    let d = src.join("d");
    fs::create_dir(&d).unwrap();
    for i in 0..n {
        fs::write(d.join(format!("entry-{i:05}-with-a-longer-name")), b"").unwrap();
    }
    for (_, bad) in MALFORMED {
        fs::write(join(&d, bad), b"").unwrap();
    }
}

/// Mounts in escape mode with `cache`: `auto` opens directories without a handle, `never`
/// with one.
fn mount(n: usize, cache: CachePolicy) -> Mount {
    Mount::with(Mode::Escape, |s| populate(s, n), |c| c.cache = cache)
}

/// An open DIR stream, closed on drop.
struct Dir(*mut libc::DIR);

impl Dir {
    fn open(path: &std::path::Path) -> Dir {
        let c = cpath(path);
        // SAFETY: c is a valid path.
        let d = unsafe { libc::opendir(c.as_ptr()) };
        assert!(!d.is_null(), "opendir: {}", std::io::Error::last_os_error());
        Dir(d)
    }

    /// The next name, or None at the end.
    fn next(&mut self) -> Option<Vec<u8>> {
        // SAFETY: self.0 is an open DIR stream.
        let ent = unsafe { libc::readdir(self.0) };
        if ent.is_null() {
            return None;
        }
        // SAFETY: d_name is NUL-terminated within the dirent readdir returned.
        Some(
            unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) }
                .to_bytes()
                .to_vec(),
        )
    }

    fn tell(&mut self) -> libc::c_long {
        // SAFETY: open DIR stream.
        unsafe { libc::telldir(self.0) }
    }

    fn seek(&mut self, pos: libc::c_long) {
        // SAFETY: open DIR stream, pos from telldir on it.
        unsafe { libc::seekdir(self.0, pos) }
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        // SAFETY: open DIR stream, not used afterwards.
        unsafe { libc::closedir(self.0) };
    }
}

fn expected(m: &Mount) -> Vec<Vec<u8>> {
    let mut names = list_raw(&m.mnt_path(b"d"));
    names.sort();
    names
}

/// Seven readers (more than the listings the daemon keeps per directory) take turns, a few
/// entries each: every one of them sees each entry exactly once.
fn interleaved(cache: CachePolicy) {
    let m = mount(3000, cache);
    let want = expected(&m);
    assert_eq!(
        want.len(),
        3000 + MALFORMED.len() + 2,
        "'.', '..' and every entry"
    );
    // Drop what the first listing cached so the readers below reach the daemon together.
    drop_caches();
    let mut dirs: Vec<Dir> = (0..7).map(|_| Dir::open(&m.mnt_path(b"d"))).collect();
    let mut got: Vec<Vec<Vec<u8>>> = vec![Vec::new(); dirs.len()];
    let mut done = vec![false; dirs.len()];
    let mut turn = 0usize;
    while done.iter().any(|d| !d) {
        for (i, d) in dirs.iter_mut().enumerate() {
            if done[i] {
                continue;
            }
            for _ in 0..(37 + 11 * i + turn % 5) {
                match d.next() {
                    Some(n) => got[i].push(n),
                    None => {
                        done[i] = true;
                        break;
                    }
                }
            }
        }
        turn += 1;
    }
    for (i, mut g) in got.into_iter().enumerate() {
        g.sort();
        assert!(
            g == want,
            "reader {i}: {} names, want {}",
            g.len(),
            want.len()
        );
    }
}

#[test]
fn interleaved_readers_each_see_every_entry_once_without_handles() {
    interleaved(CachePolicy::auto());
}

#[test]
fn interleaved_readers_each_see_every_entry_once_with_handles() {
    interleaved(CachePolicy::never());
}

/// seekdir to a telldir position replays the same names; rewinddir starts over.
fn seek_and_rewind(cache: CachePolicy) {
    let m = mount(1000, cache);
    let want = expected(&m);
    let mut d = Dir::open(&m.mnt_path(b"d"));
    for _ in 0..300 {
        d.next().expect("an entry");
    }
    let pos = d.tell();
    let after: Vec<_> = (0..200).map(|_| d.next().expect("an entry")).collect();
    d.seek(pos);
    let again: Vec<_> = (0..200).map(|_| d.next().expect("an entry")).collect();
    assert_eq!(after, again, "names after seekdir(telldir())");
    // SAFETY: open DIR stream.
    unsafe { libc::rewinddir(d.0) };
    let mut all: Vec<_> = std::iter::from_fn(|| d.next()).collect();
    all.sort();
    assert_eq!(all, want, "a full listing after rewinddir");
}

#[test]
fn seekdir_and_rewinddir_without_handles() {
    seek_and_rewind(CachePolicy::auto());
}

#[test]
fn seekdir_and_rewinddir_with_handles() {
    seek_and_rewind(CachePolicy::never());
}

/// A name created or removed through the mount shows in the next listing at once, even
/// though the kernel caches listings.
#[test]
fn changes_through_the_mount_show_in_the_next_listing() {
    let m = mount(100, CachePolicy::auto());
    let d = m.mnt_path(b"d");
    let before = list(&d);
    fs::write(d.join("new"), b"").unwrap();
    let mut want = before.clone();
    want.push(b"new".to_vec());
    want.sort();
    assert_eq!(list(&d), want);
    fs::remove_file(d.join("entry-00007-with-a-longer-name")).unwrap();
    want.retain(|n| n != b"entry-00007-with-a-longer-name");
    assert_eq!(list(&d), want);
}

/// fsync and fdatasync of a directory reach the backing directory.
#[test]
fn directories_can_be_synced() {
    for cache in [CachePolicy::auto(), CachePolicy::never()] {
        let m = mount(10, cache);
        let f = fs::File::open(m.mnt_path(b"d")).unwrap();
        // SAFETY: f is an open directory.
        check(unsafe { libc::fsync(f.as_raw_fd()) }).expect("fsync of a directory");
        // SAFETY: as above.
        check(unsafe { libc::fdatasync(f.as_raw_fd()) }).expect("fdatasync of a directory");
    }
}
