//! Crash safety: the real daemon killed with SIGKILL while clients write and rename. Requests in
//! flight fail with ECONNABORTED, later ones with ENOTCONN; the backing tree holds every completed operation intact, only the
//! operations in flight may be partial; `fusermount3 -u` and a new mount work and show the
//! backing tree. With `-o auto_unmount` the mount point is cleaned up by fusermount3.
//!
//! Size: `UTF8FS_CRASH_WRITERS` threads (default 4) for `UTF8FS_CRASH_MS` ms (default 1,500)
//! before the kill; `scripts/crash` runs it bigger.

mod common;
mod harden_common;

use common::*;
use harden_common::*;
use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use utf8fs::mapping::Mode;

/// Size of every written file: several FUSE writes each.
const FILE: usize = 300_000;

/// What the writers saw: completed (final name, seed), and the errno of each failure.
#[derive(Default)]
struct Seen {
    done: Vec<(String, u64)>,
    errors: BTreeMap<i32, usize>,
}

/// Files present before the crash that nothing touches: they must survive unchanged.
fn populate(src: &std::path::Path) {
    fs::create_dir(src.join("keep")).unwrap();
    for i in 0..50 {
        write(&src.join(format!("keep/k{i}")), &pattern(i, 10_000));
    }
    fs::create_dir(src.join("w")).unwrap();
    fs::create_dir(src.join("r")).unwrap();
}

/// Writer `t`: writes `w/ft-n` in chunks, renames it to `r/gt-n`, until the mount fails.
fn writer(mnt: std::path::PathBuf, t: usize, seen: Arc<Mutex<Seen>>, stop: Arc<AtomicBool>) {
    let mut n = 0u64;
    let mut attempt = || -> std::io::Result<(String, u64)> {
        n += 1;
        let seed = (t as u64) << 32 | n;
        let tmp = mnt.join(format!("w/f{t}-{n}"));
        let fin = format!("r/g{t}-{n}");
        let data = pattern(seed, FILE);
        let mut f = fs::File::create(&tmp)?;
        for chunk in data.chunks(16_384) {
            f.write_all(chunk)?;
        }
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, mnt.join(&fin))?;
        Ok((fin, seed))
    };
    let mut failures = 0;
    while failures < 20 {
        match attempt() {
            Ok(d) => seen.lock().unwrap().done.push(d),
            Err(e) => {
                failures += 1;
                *seen
                    .lock()
                    .unwrap()
                    .errors
                    .entry(e.raw_os_error().unwrap_or(-1))
                    .or_default() += 1;
            }
        }
        if stop.load(Ordering::Relaxed) && failures > 0 {
            break;
        }
    }
}

/// Runs writers, kills the daemon under them, and checks the backing tree. Returns what the
/// clients saw.
fn crash(d: &mut Daemon) -> Seen {
    let before_keep = snapshot(&d.src.join("keep"));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let writers = env_num("UTF8FS_CRASH_WRITERS", 4) as usize;
    let handles: Vec<_> = (0..writers)
        .map(|t| {
            let (mnt, seen, stop) = (d.mnt.clone(), seen.clone(), stop.clone());
            std::thread::spawn(move || writer(mnt, t, seen, stop))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(env_num("UTF8FS_CRASH_MS", 1500)));
    d.kill9();
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().unwrap();
    }
    let seen = Arc::try_unwrap(seen).ok().unwrap().into_inner().unwrap();
    assert!(!seen.done.is_empty(), "no write completed before the kill");

    // Untouched files are intact.
    assert_eq!(snapshot(&d.src.join("keep")), before_keep, "keep/ changed");
    // Every completed write+rename is on the backing store, complete, under its final name only.
    for (fin, seed) in &seen.done {
        assert_eq!(
            fs::read(d.src.join(fin)).unwrap_or_default(),
            pattern(*seed, FILE),
            "{fin} incomplete after the crash"
        );
    }
    // What is left is at most the operation in flight per writer: in w/ a prefix of its
    // content; in r/ a complete file whose rename finished without its reply.
    let done: std::collections::HashSet<&str> = seen.done.iter().map(|(f, _)| f.as_str()).collect();
    let mut extra = 0;
    for name in list(&d.src.join("r")) {
        let name = String::from_utf8(name).unwrap();
        if !done.contains(format!("r/{name}").as_str()) {
            extra += 1;
            let (t, n) = name[1..].split_once('-').unwrap();
            let seed = t.parse::<u64>().unwrap() << 32 | n.parse::<u64>().unwrap();
            assert_eq!(read(&d.src.join("r").join(&name)), pattern(seed, FILE));
        }
    }
    let partial = list(&d.src.join("w"));
    for name in &partial {
        let name = String::from_utf8(name.clone()).unwrap();
        let (t, n) = name[1..].split_once('-').unwrap();
        let seed = t.parse::<u64>().unwrap() << 32 | n.parse::<u64>().unwrap();
        let got = read(&d.src.join("w").join(&name));
        assert_eq!(
            got,
            pattern(seed, got.len()),
            "w/{name} is not a prefix of what was written"
        );
        assert!(
            !d.src.join(format!("r/g{t}-{n}")).exists(),
            "{name} under both names"
        );
    }
    assert!(
        extra + partial.len() <= writers,
        "{} files beyond the completed operations, for {writers} writers in flight",
        extra + partial.len()
    );
    eprintln!(
        "killed under {writers} writers: {} write+rename completed, in flight: {} partial \
         file(s) in w/, {extra} renamed without reply; client errors by errno: {:?}",
        seen.done.len(),
        partial.len(),
        seen.errors
    );
    seen
}

#[test]
fn kill_9_during_writes_and_renames() {
    let mut d = Daemon::start("", populate);
    let seen = crash(&mut d);
    // The requests in flight at the kill fail with ECONNABORTED (the kernel aborts the
    // connection), every later operation on the dead mount with ENOTCONN.
    assert!(
        seen.errors
            .keys()
            .all(|&e| e == libc::ENOTCONN || e == libc::ECONNABORTED),
        "errors other than ENOTCONN and ECONNABORTED: {:?}",
        seen.errors
    );
    assert!(is_mounted(&d.mnt), "the dead mount stays until unmounted");
    expect_errno(
        fs::metadata(&d.mnt),
        libc::ENOTCONN,
        "stat of the dead mount",
    );
    expect_errno(
        fs::read_dir(&d.mnt),
        libc::ENOTCONN,
        "readdir of the dead mount",
    );
    expect_errno(
        fs::write(d.mnt.join("w/after"), b"x"),
        libc::ENOTCONN,
        "create in the dead mount",
    );
    // fusermount3 -u then a new mount works and shows the backing tree.
    assert!(d.fusermount_u(), "fusermount3 -u of the dead mount");
    assert!(!is_mounted(&d.mnt));
    d.mount();
    let n = assert_same_tree(&d.src, &d.mnt, Mode::Reject);
    write(&d.mnt.join("w/after"), b"after");
    assert_eq!(read(&d.src.join("w/after")), b"after");
    eprintln!("remounted after fusermount3 -u: {n} entries equal to the backing tree");
    d.stop();
}

/// Not in the default run: fusermount3 3.14 now and then leaves the dead mount in place when
/// the daemon dies with requests in flight (about 1 run in 30 here); `scripts/crash` runs it.
#[test]
#[ignore = "fusermount3 auto_unmount after kill -9 is racy (about 1 run in 30); scripts/crash runs it"]
fn auto_unmount_cleans_up_after_kill_9_under_load() {
    let mut d = Daemon::start("auto_unmount", populate);
    let seen = crash(&mut d);
    let mnt = d.mnt.clone();
    assert!(
        wait_for(Duration::from_secs(20), || !is_mounted(&mnt)),
        "fusermount3 did not unmount {} after the daemon died",
        d.mnt.display()
    );
    // The mount point is an ordinary empty directory again.
    assert!(list(&d.mnt).is_empty());
    eprintln!(
        "auto_unmount: client errors {:?}; mount point cleaned up",
        seen.errors
    );
    d.mount();
    assert_same_tree(&d.src, &d.mnt, Mode::Reject);
    d.stop();
}
