//! Concurrency stress: several client processes create, write, rename, list and delete in the
//! same directories at once; afterwards the tree seen through the mount equals the backing
//! tree byte for byte (names, types, sizes, contents, symlink targets), in `reject` mode and in
//! `escape` mode with malformed backing names present.
//!
//! Size: `UTF8FS_STRESS_PROCS` processes (default 4) × `UTF8FS_STRESS_OPS` operations
//! (default 2,000); `scripts/stress` runs it bigger.

mod common;
mod harden_common;

use common::*;
use harden_common::*;
use std::collections::HashMap;
use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use utf8fs::mapping::Mode;

/// Shared directories every worker uses.
const DIRS: usize = 4;

/// Files a worker keeps at most: beyond, creations turn into deletions. Bounds the inodes the
/// kernel remembers (one daemon fd each) below RLIMIT_NOFILE at any number of operations.
const MAX_FILES: usize = 400;

/// Valid names every worker process uses as stems, ASCII and not.
const STEMS: &[&str] = &["f", "é", "日本", "😀", "ﬁ", "a b"];

/// What a worker knows about the files it owns: path → (seed, length) of the content.
type Owned = HashMap<PathBuf, (u64, usize)>;

/// One worker process: `UTF8FS_STRESS_ROOT` is the mounted directory, `UTF8FS_STRESS_ID` its
/// number. Every failure of an operation on its own names is an error; operations on names
/// other workers may change concurrently tolerate ENOENT. Prints `ops=N errors=M` and fails
/// when errors > 0.
#[test]
#[ignore = "run by the stress tests as a separate process"]
fn stress_worker() {
    let Ok(root) = std::env::var("UTF8FS_STRESS_ROOT") else {
        return;
    };
    let root = PathBuf::from(root);
    let id = env_num("UTF8FS_STRESS_ID", 0);
    let ops = env_num("UTF8FS_STRESS_OPS", 2000);
    let mut rng = Rng::new(id + 1);
    let mut owned: Owned = HashMap::new();
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut errors = Vec::new();
    let mut n = 0u64;
    let mut fresh = |rng: &mut Rng| -> PathBuf {
        n += 1;
        let stem = STEMS[rng.below(STEMS.len() as u64) as usize];
        root.join(format!("d{}", rng.below(DIRS as u64)))
            .join(format!("{stem}-w{id}-{n}"))
    };
    for op in 0..ops {
        let mut pick = rng.below(100);
        if pick < 30 && owned.len() >= MAX_FILES {
            pick = 65;
        }
        let mine: Vec<PathBuf> = owned.keys().cloned().collect();
        let any_mine =
            (!mine.is_empty()).then(|| mine[rng.below(mine.len() as u64) as usize].clone());
        let res: std::io::Result<()> = (|| {
            match (pick, any_mine) {
                (0..=29, _) | (_, None) => {
                    let p = fresh(&mut rng);
                    let (seed, len) = (rng.next(), rng.below(70_000) as usize);
                    fs::write(&p, pattern(seed, len))?;
                    owned.insert(p, (seed, len));
                }
                (30..=44, Some(p)) => {
                    let q = fresh(&mut rng);
                    fs::rename(&p, &q)?;
                    let v = owned.remove(&p).expect("owned");
                    owned.insert(q, v);
                }
                (45..=54, Some(p)) => {
                    // Rewrite in place: a new content over the old, through one open file.
                    let (seed, len) = (rng.next(), rng.below(70_000) as usize);
                    let mut f = fs::OpenOptions::new().write(true).open(&p)?;
                    f.seek(SeekFrom::Start(0))?;
                    f.write_all(&pattern(seed, len))?;
                    f.set_len(len as u64)?;
                    owned.insert(p, (seed, len));
                }
                (55..=64, Some(p)) => {
                    let (seed, len) = owned[&p];
                    let mut got = Vec::new();
                    fs::File::open(&p)?.read_to_end(&mut got)?;
                    if got != pattern(seed, len) {
                        return Err(std::io::Error::other(format!(
                            "content of {} changed under its owner",
                            p.display()
                        )));
                    }
                }
                (65..=74, Some(p)) => {
                    fs::remove_file(&p)?;
                    owned.remove(&p);
                }
                (75..=84, _) => {
                    // Listing while the others change the directory; entries may vanish
                    // between readdir and stat.
                    let d = root.join(format!("d{}", rng.below(DIRS as u64)));
                    let skip = rng.below(64) as usize;
                    for (i, e) in fs::read_dir(&d)?.enumerate() {
                        let e = e?;
                        // Stat a window of the listing: stat of every entry of every
                        // listing would dominate the run at big sizes.
                        if i < skip || i >= skip + 16 {
                            continue;
                        }
                        match fs::symlink_metadata(e.path()) {
                            Ok(_) => {}
                            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                            Err(e) => return Err(e),
                        }
                    }
                }
                (85..=89, _) => {
                    // Atomic replacement of a name every worker writes.
                    let d = root.join(format!("d{}", rng.below(DIRS as u64)));
                    let tmp = d.join(format!("tmp-w{id}"));
                    fs::write(&tmp, format!("from worker {id} op {op}"))?;
                    fs::rename(&tmp, d.join("shared"))?;
                }
                (90..=94, _) => {
                    let p = fresh(&mut rng);
                    std::os::unix::fs::symlink(format!("../target-{op}/ü"), &p)?;
                    if rng.below(2) == 0 {
                        fs::remove_file(&p)?;
                    }
                }
                _ => {
                    if let Some(d) = dirs.pop().filter(|_| rng.below(2) == 0) {
                        fs::remove_file(d.join("inner"))?;
                        fs::remove_dir(&d)?;
                    } else {
                        let d = fresh(&mut rng);
                        fs::create_dir(&d)?;
                        fs::write(d.join("inner"), b"inner")?;
                        dirs.push(d);
                    }
                }
            }
            Ok(())
        })();
        if let Err(e) = res {
            errors.push(format!("op {op} (kind {pick}): {e}"));
        }
    }
    // Every file this worker still owns has the content it last wrote.
    for (p, (seed, len)) in &owned {
        match fs::read(p) {
            Ok(got) if got == pattern(*seed, *len) => {}
            Ok(_) => errors.push(format!("final content of {} differs", p.display())),
            Err(e) => errors.push(format!("final read of {}: {e}", p.display())),
        }
    }
    println!(
        "worker {id}: ops={ops} errors={} files={}{}",
        errors.len(),
        owned.len(),
        errors
            .iter()
            .take(3)
            .map(|e| format!("; {e}"))
            .collect::<String>()
    );
    assert!(
        errors.is_empty(),
        "worker {id} errors:\n{}",
        errors.join("\n")
    );
}

/// Runs the worker processes against `m` and checks the final trees.
fn stress(m: &Mount, mode: Mode) {
    for d in 0..DIRS {
        let p = m.mnt_path(format!("d{d}").as_bytes());
        if !p.exists() {
            fs::create_dir(&p).unwrap();
        }
    }
    let procs = env_num("UTF8FS_STRESS_PROCS", 4);
    let ops = env_num("UTF8FS_STRESS_OPS", 2000);
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..procs)
        .map(|id| {
            Command::new(&exe)
                .args(["--exact", "stress_worker", "--ignored", "--nocapture"])
                .env("UTF8FS_STRESS_ROOT", &m.mnt)
                .env("UTF8FS_STRESS_ID", id.to_string())
                .env("UTF8FS_STRESS_OPS", ops.to_string())
                .output_async()
        })
        .collect();
    let mut failed = Vec::new();
    for (id, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        for line in text.lines().filter(|l| l.starts_with("worker ")) {
            eprintln!("{line}");
        }
        if !out.status.success() {
            failed.push(format!("worker {id} ({}):\n{text}", out.status));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    let entries = assert_same_tree(&m.src, &m.mnt, mode);
    eprintln!(
        "{mode:?}: {procs} processes × {ops} ops, 0 errors; mount equals backing ({entries} entries)"
    );
    // And still after the daemon forgets everything it learnt.
    drop_caches();
    assert_same_tree(&m.src, &m.mnt, mode);
}

/// `Command::spawn` with captured stdout, named for what it is used for here.
trait OutputAsync {
    fn output_async(&mut self) -> std::process::Child;
}

impl OutputAsync for Command {
    fn output_async(&mut self) -> std::process::Child {
        self.stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn worker: {e}"))
    }
}

#[test]
fn stress_reject_mount_equals_backing() {
    let m = Mount::new(Mode::Reject);
    stress(&m, Mode::Reject);
}

/// Malformed names in the shared directories, which the workers' listings meet.
fn malformed(src: &Path) {
    for d in 0..DIRS {
        let dir = src.join(format!("d{d}"));
        fs::create_dir(&dir).unwrap();
        for (i, (_, bad)) in MALFORMED.iter().enumerate() {
            let mut name = bad.to_vec();
            name.extend_from_slice(format!("-{i}").as_bytes());
            write(&join(&dir, &name), &name);
        }
        fs::create_dir(join(&dir, b"caf\xE9-dir")).unwrap();
        write(&join(&dir, b"caf\xE9-dir/\xFF"), b"inner");
        std::os::unix::fs::symlink("caf\u{e9}", join(&dir, b"l\xE9nk")).unwrap();
    }
}

#[test]
fn stress_escape_mount_equals_mapped_backing() {
    let m = Mount::populated(Mode::Escape, malformed);
    stress(&m, Mode::Escape);
    let bad = snapshot(&m.src)
        .iter()
        .filter(|(p, _, _)| std::str::from_utf8(p).is_err())
        .count();
    assert!(
        bad >= DIRS * (MALFORMED.len() + 3),
        "malformed backing names kept: {bad}"
    );
}
