//! Load: concurrent clients doing mixed metadata and I/O through the real daemon for a bounded
//! time, with no errors; once they closed their files and the kernel forgot the inodes, the
//! daemon's open fds return to their baseline and its resident memory to near it.
//!
//! Size: `UTF8FS_LOAD_CLIENTS` threads (default 8) for `UTF8FS_LOAD_SECS` seconds (default 5);
//! `scripts/load` runs it bigger.

mod common;
mod harden_common;

use common::*;
use harden_common::*;
use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use utf8fs::mapping::Mode;

/// Tolerance on resident memory after the load (allocator caches, thread stacks).
const RSS_SLACK_KIB: u64 = 8 * 1024;

/// One client: a directory of its own plus a directory shared by all, mixed operations until
/// `until`. Returns (operations, errors as text).
fn client(root: PathBuf, c: u64, until: Instant) -> (u64, Vec<String>) {
    let mine = root.join(format!("c{c}"));
    let shared = root.join("shared");
    let mut rng = Rng::new(c + 100);
    let mut errors = Vec::new();
    let mut ops = 0u64;
    let mut open: Vec<fs::File> = Vec::new();
    if let Err(e) = fs::create_dir(&mine) {
        return (0, vec![format!("mkdir {}: {e}", mine.display())]);
    }
    while Instant::now() < until {
        let i = rng.below(64);
        let p = mine.join(format!("é{i}"));
        let res: std::io::Result<()> = (|| {
            match rng.below(12) {
                0 | 1 => fs::write(&p, pattern(i, rng.below(100_000) as usize))?,
                2 | 3 => match fs::read(&p) {
                    Ok(_) => {}
                    Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                    Err(e) => return Err(e),
                },
                4 => {
                    let _ = fs::symlink_metadata(&p);
                    fs::read_dir(&mine)?.try_for_each(|e| e.map(drop))?;
                }
                5 => {
                    // Keep some files open across operations (closed at the end).
                    let mut f = fs::OpenOptions::new()
                        .create(true)
                        .truncate(false)
                        .read(true)
                        .write(true)
                        .open(&p)?;
                    f.seek(SeekFrom::Start(rng.below(50_000)))?;
                    f.write_all(&pattern(c, 4096))?;
                    f.seek(SeekFrom::Start(0))?;
                    let mut buf = [0u8; 8192];
                    let _ = f.read(&mut buf)?;
                    if open.len() < 16 {
                        open.push(f);
                    }
                }
                6 => {
                    let q = mine.join(format!("ü{}", rng.below(64)));
                    match fs::rename(&p, &q) {
                        Ok(()) => {}
                        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                        Err(e) => return Err(e),
                    }
                }
                7 => match fs::remove_file(&p) {
                    Ok(()) => {}
                    Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                    Err(e) => return Err(e),
                },
                8 => {
                    let d = mine.join(format!("dir{i}"));
                    match fs::create_dir(&d) {
                        Ok(()) => {
                            fs::write(d.join("x"), b"x")?;
                            fs::set_permissions(&d, fs::Permissions::from_mode(0o750))?;
                        }
                        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                            let _ = fs::remove_file(d.join("x"));
                            fs::remove_dir(&d)?;
                        }
                        Err(e) => return Err(e),
                    }
                }
                9 => {
                    let l = mine.join(format!("link{i}"));
                    let _ = fs::remove_file(&l);
                    std::os::unix::fs::symlink(format!("é{i}"), &l)?;
                    fs::read_link(&l)?;
                }
                10 => {
                    if fs::write(&p, b"x").is_ok() {
                        set_xattr(&p, "user.load", &c.to_le_bytes())?;
                        get_xattr(&p, "user.load")?;
                    }
                }
                _ => {
                    let tmp = shared.join(format!("tmp{c}"));
                    fs::write(&tmp, c.to_le_bytes())?;
                    fs::rename(&tmp, shared.join(format!("s{}", rng.below(8))))?;
                    fs::read_dir(&shared)?.try_for_each(|e| e.map(drop))?;
                }
            }
            Ok(())
        })();
        ops += 1;
        if let Err(e) = res {
            errors.push(format!("client {c}: {}: {e}", p.display()));
        }
    }
    drop(open);
    (ops, errors)
}

#[test]
fn load_then_fds_and_memory_return_to_baseline() {
    let d = Daemon::start("", |src| fs::create_dir(src.join("shared")).unwrap());
    // Baseline: mounted, root looked up, nothing else.
    fs::metadata(&d.mnt).unwrap();
    drop_caches();
    std::thread::sleep(Duration::from_millis(200));
    let (fds0, rss0) = (d.fds(), d.status_kib("VmRSS"));

    let clients = env_num("UTF8FS_LOAD_CLIENTS", 8);
    let secs = env_num("UTF8FS_LOAD_SECS", 5);
    let until = Instant::now() + Duration::from_secs(secs);
    let peak_fds = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let monitor = {
        let (pid, peak_fds, done) = (d.pid(), peak_fds.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let n = fs::read_dir(format!("/proc/{pid}/fd"))
                    .map(|d| d.count() as u64)
                    .unwrap_or(0);
                peak_fds.fetch_max(n, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let root = d.mnt.clone();
            std::thread::spawn(move || client(root, c, until))
        })
        .collect();
    let mut total = 0;
    let mut per_client = Vec::new();
    let mut errors = Vec::new();
    for h in handles {
        let (ops, errs) = h.join().unwrap();
        total += ops;
        per_client.push(ops);
        errors.extend(errs);
    }
    done.store(true, Ordering::Relaxed);
    monitor.join().unwrap();
    let (fds_peak, rss_peak) = (peak_fds.load(Ordering::Relaxed), d.status_kib("VmHWM"));
    let fds_end = d.fds();

    // Every file is closed; the kernel forgets the inodes after dropping its caches.
    let settled = wait_for(Duration::from_secs(30), || {
        drop_caches();
        d.fds() <= fds0
    });
    let (fds1, rss1) = (d.fds(), d.status_kib("VmRSS"));
    eprintln!(
        "load: {clients} clients × {secs} s, {total} ops (per client {per_client:?}), {} errors; \
         daemon fds {fds0} → peak {fds_peak} (at end {fds_end}) → {fds1} after drop_caches; \
         VmRSS {rss0} KiB → peak {rss_peak} KiB → {rss1} KiB",
        errors.len()
    );
    assert!(
        errors.is_empty(),
        "{} errors, first ones:\n{}",
        errors.len(),
        errors[..errors.len().min(10)].join("\n")
    );
    assert!(
        settled && fds1 == fds0,
        "daemon fds: {fds1} after the load and drop_caches, {fds0} before"
    );
    assert!(
        rss1 <= rss0 + RSS_SLACK_KIB,
        "daemon VmRSS {rss1} KiB after the load, baseline {rss0} KiB (+{RSS_SLACK_KIB} KiB allowed)"
    );
    // The tree is still what the backing store holds.
    assert_same_tree(&d.src, &d.mnt, Mode::Reject);
}

/// Out of descriptors (each inode the kernel holds is one daemon fd), a listing either shows
/// every entry or fails: a silently shorter listing would make `rm -r`, rsync or a backup act
/// on a wrong view of the directory.
#[test]
fn listing_out_of_descriptors_fails_rather_than_shrinks() {
    let d = Daemon::start_limited("", Some(64), |src| {
        for i in 0..200 {
            write(&src.join(format!("f{i:03}")), b"x");
        }
    });
    let mut names = Vec::new();
    let mut error = None;
    match fs::read_dir(&d.mnt) {
        Ok(rd) => {
            for e in rd {
                match e {
                    Ok(e) => names.push(e.file_name()),
                    Err(e) => {
                        error = Some(e);
                        break;
                    }
                }
            }
        }
        Err(e) => error = Some(e),
    }
    eprintln!(
        "listing 200 entries with 64 descriptors: {} names, error {error:?}",
        names.len()
    );
    match error {
        None => assert_eq!(
            names.len(),
            200,
            "a listing without error shows every entry"
        ),
        Some(e) => assert!(
            matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)),
            "{e}"
        ),
    }
    // Once the kernel forgets the entries, the daemon has descriptors again.
    drop_caches();
    assert_eq!(read(&d.mnt.join("f199")), b"x");
    assert_eq!(read(&d.src.join("f000")), b"x");
}
