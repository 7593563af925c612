//! The engine of `utf8fsck`: walk trees, report every name that breaks the policy (not strict
//! UTF-8, a hygiene rule of [`Deny`], not in the chosen Unicode [`Form`]) and rename it to the name
//! the mount would show ([`DirIndex`]), never overwriting anything.
//!
//! The walk works on directory file descriptors (`openat`, `getdents64`, `renameat2`), so depth is
//! not limited by PATH_MAX, and it is iterative (a shared work stack served by a few threads), so
//! depth is not limited by the call stack either. Entry types come from `d_type`: no per-entry stat.
//!
//! File formats (one record a line, `#` starts a comment, fields separated by one space, byte
//! strings in lowercase hex so that any name round-trips exactly):
//! - undo log: `PARENT OLD NEW` — the rename of `PARENT/OLD` to `PARENT/NEW`, in the order done;
//! - plan: `PARENT OLD NEW DEV INO` — a rename to do, with the device and inode `PARENT/OLD` had.
//!
//! `PARENT` is absolute and free of symbolic links; a record's parent is named as it is after the
//! records before it have been applied, so plans apply in file order and logs undo in reverse.

use crate::mapping::{self, DirIndex, Mapper};
use crate::policy::{self, check_hygiene, fix_hygiene, normalize, Deny, Escaped, Form, Rule};
use crate::utf8::{self, Reason};
use std::collections::HashSet;
use std::ffi::CString;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Exit status: no finding.
pub const EXIT_CLEAN: i32 = 0;
/// Exit status bit: findings were corrected.
pub const EXIT_CORRECTED: i32 = 1;
/// Exit status bit: findings were left uncorrected (always the case with `-n`).
pub const EXIT_UNCORRECTED: i32 = 4;
/// Exit status bit: an operational error (unreadable directory, I/O error).
pub const EXIT_OPERATIONAL: i32 = 8;
/// Exit status: bad command line.
pub const EXIT_USAGE: i32 = 16;

/// What the walk does with findings.
#[derive(Debug)]
pub enum Action {
    /// Report only (`-n`).
    Check,
    /// Rename (`-y`), optionally logging each rename for `--undo`.
    Fix {
        /// Where to append undo records.
        undo_log: Option<File>,
    },
    /// Write the renames to a plan file (`--plan`) without doing them.
    Plan(File),
}

/// Everything a walk needs to know.
#[derive(Debug)]
pub struct Config {
    /// How malformed names are shown, hence what they are renamed to.
    pub mapper: Mapper,
    /// Hygiene rules names must follow.
    pub deny: Deny,
    /// The Unicode form names must be in, if any.
    pub unicode: Option<Form>,
    /// Report, fix or plan.
    pub action: Action,
    /// Descend into directories on other filesystems.
    pub cross_mounts: bool,
    /// One JSON object per line instead of text.
    pub json: bool,
    /// Worker threads.
    pub jobs: usize,
    /// Show a progress line on stderr.
    pub progress: bool,
    /// Print a summary line on stderr at the end.
    pub verbose: bool,
}

/// Why a name is reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// Not strict UTF-8.
    Malformed(Reason),
    /// Breaks a hygiene rule.
    Hygiene(Rule),
    /// Valid, but not in the requested form.
    Unicode(Form),
}

impl Why {
    fn kind(self) -> &'static str {
        match self {
            Why::Malformed(_) => "malformed",
            Why::Hygiene(_) => "hygiene",
            Why::Unicode(_) => "unicode",
        }
    }

    fn reason(self) -> String {
        match self {
            Why::Malformed(r) => r.as_str().to_owned(),
            Why::Hygiene(r) => r.as_str().to_owned(),
            Why::Unicode(Form::Nfc) => "not NFC".to_owned(),
            Why::Unicode(Form::Nfd) => "not NFD".to_owned(),
        }
    }

    fn describe(self) -> String {
        match self {
            Why::Malformed(r) => format!("not UTF-8 ({r})"),
            Why::Hygiene(r) => format!("breaks rule '{r}'"),
            Why::Unicode(f) => format!("not in {}", f.as_str().to_ascii_uppercase()),
        }
    }
}

/// Counters of one run; `status()` turns them into the fsck(8) exit status.
#[derive(Debug, Default)]
pub struct Stats {
    /// Directory entries seen.
    pub entries: AtomicU64,
    /// Names reported.
    pub findings: AtomicU64,
    /// Names renamed.
    pub corrected: AtomicU64,
    /// Names reported and not renamed (always all of them with `-n` and `--plan`).
    pub uncorrected: AtomicU64,
    /// Unreadable directories and other I/O errors.
    pub errors: AtomicU64,
}

impl Stats {
    /// The exit status: the sum of the fsck(8) conditions that occurred.
    pub fn status(&self) -> i32 {
        let mut s = EXIT_CLEAN;
        if self.corrected.load(Relaxed) > 0 {
            s |= EXIT_CORRECTED;
        }
        if self.uncorrected.load(Relaxed) > 0 {
            s |= EXIT_UNCORRECTED;
        }
        if self.errors.load(Relaxed) > 0 {
            s |= EXIT_OPERATIONAL;
        }
        s
    }
}

/// Lowercase hex of a byte string.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

/// Parses lowercase or uppercase hex back into bytes.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A JSON string literal holding `s`.
fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn join(parent: &[u8], name: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(parent.len() + 1 + name.len());
    p.extend_from_slice(parent);
    if !p.ends_with(b"/") {
        p.push(b'/');
    }
    p.extend_from_slice(name);
    p
}

fn cstr(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn openat(dirfd: RawFd, name: &[u8], flags: i32) -> io::Result<OwnedFd> {
    let c = cstr(name)?;
    // SAFETY: `c` is a valid C string; the returned fd is owned by the caller.
    let fd = unsafe { libc::openat(dirfd, c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is not owned elsewhere.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn stat_at(dirfd: RawFd, name: &[u8]) -> io::Result<libc::stat> {
    let c = cstr(name)?;
    // SAFETY: zeroed `stat` is a valid out-buffer; `c` is a valid C string.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let flags = libc::AT_SYMLINK_NOFOLLOW
        | if name.is_empty() {
            libc::AT_EMPTY_PATH
        } else {
            0
        };
    // SAFETY: pointers are valid for the duration of the call.
    if unsafe { libc::fstatat(dirfd, c.as_ptr(), &mut st, flags) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// Renames `old` to `new` inside `dirfd`, failing with EEXIST rather than replacing anything.
fn rename_noreplace(dirfd: RawFd, old: &[u8], new: &[u8]) -> io::Result<()> {
    let (o, n) = (cstr(old)?, cstr(new)?);
    // SAFETY: valid C strings and a directory fd owned by the caller.
    let r =
        unsafe { libc::renameat2(dirfd, o.as_ptr(), dirfd, n.as_ptr(), libc::RENAME_NOREPLACE) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reads every entry of an open directory (except `.` and `..`) with `getdents64`: names and
/// `d_type`, no stat.
fn read_entries(fd: RawFd) -> io::Result<Vec<(Vec<u8>, u8)>> {
    let mut buf = vec![0u64; 4096];
    let mut out = Vec::new();
    loop {
        // SAFETY: `buf` is writable for its whole length in bytes.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len() * 8) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            return Ok(out);
        }
        // SAFETY: the kernel wrote `n` bytes of linux_dirent64 records into `buf`.
        let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr() as *const u8, n as usize) };
        let mut off = 0;
        while off + 19 <= bytes.len() {
            let reclen = u16::from_ne_bytes([bytes[off + 16], bytes[off + 17]]) as usize;
            if reclen == 0 || off + reclen > bytes.len() {
                break;
            }
            let d_type = bytes[off + 18];
            let raw = &bytes[off + 19..off + reclen];
            let name = &raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())];
            if name != b"." && name != b".." {
                out.push((name.to_vec(), d_type));
            }
            off += reclen;
        }
    }
}

/// Offset of the first byte where `a` and `b` differ, at a character boundary of `a`.
fn first_difference(a: &str, b: &str) -> usize {
    let mut n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while !a.is_char_boundary(n) {
        n -= 1;
    }
    n
}

/// The first problem of a name, if any: why, and at which byte.
fn diagnose(name: &[u8], deny: Deny, unicode: Option<Form>) -> Option<(Why, usize)> {
    let text = match utf8::from_utf8(name) {
        Ok(t) => t,
        Err(e) => return Some((Why::Malformed(e.reason()), e.valid_up_to())),
    };
    if let Err(v) = check_hygiene(text, deny) {
        return Some((Why::Hygiene(v.rule), v.offset));
    }
    if let Some(form) = unicode {
        if !policy::is_normalized(text, form) {
            return Some((
                Why::Unicode(form),
                first_difference(text, &normalize(text, form)),
            ));
        }
    }
    None
}

/// Applies the hygiene fixes and the Unicode form to a valid name until it satisfies both.
fn clean_text(text: &str, deny: Deny, unicode: Option<Form>) -> String {
    let mut s = text.to_owned();
    for _ in 0..4 {
        let fixed = fix_hygiene(&s, deny).into_owned();
        s = match unicode {
            Some(f) => normalize(&fixed, f).into_owned(),
            None => fixed,
        };
        if check_hygiene(&s, deny).is_ok() {
            break;
        }
    }
    s
}

/// One reported name of a directory and what it should become.
struct Finding {
    name: Vec<u8>,
    why: Why,
    offset: usize,
    proposed: Option<Vec<u8>>,
}

/// Computes the findings of one directory, with unique proposed names: names the mount shows
/// for malformed entries first (as [`DirIndex`] resolves them), then hygiene and Unicode renames
/// in byte order, each taking a `~hash` suffix when its name is taken or too long.
fn plan_dir(cfg: &Config, names: &[(Vec<u8>, u8)]) -> Vec<Finding> {
    let mut found: Vec<Finding> = names
        .iter()
        .filter_map(|(n, _)| {
            diagnose(n, cfg.deny, cfg.unicode).map(|(why, offset)| Finding {
                name: n.clone(),
                why,
                offset,
                proposed: None,
            })
        })
        .collect();
    if found.is_empty() {
        return found;
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    let index = found
        .iter()
        .any(|f| matches!(f.why, Why::Malformed(_)))
        .then(|| DirIndex::build(&cfg.mapper, names.iter().map(|(n, _)| n.as_slice())));
    let mut taken: HashSet<Vec<u8>> = names.iter().map(|(n, _)| n.clone()).collect();
    let mut later = Vec::new();
    for (i, f) in found.iter_mut().enumerate() {
        let text = match (&index, f.why) {
            (Some(ix), Why::Malformed(_)) => match ix.shown(&f.name).map(utf8::from_utf8) {
                Some(Ok(t)) => t.to_owned(),
                _ => continue,
            },
            _ => match utf8::from_utf8(&f.name) {
                Ok(t) => t.to_owned(),
                Err(_) => continue,
            },
        };
        let cleaned = clean_text(&text, cfg.deny, cfg.unicode);
        if cleaned == text && matches!(f.why, Why::Malformed(_)) && !taken.contains(text.as_bytes())
        {
            taken.insert(text.clone().into_bytes());
            f.proposed = Some(text.into_bytes());
        } else {
            later.push((i, cleaned));
        }
    }
    for (i, cleaned) in later {
        let f = &mut found[i];
        // Rule 7: too long, cut and tagged with the 16-digit tag; rule 6 (c) on what remains.
        let base = if cleaned.len() > policy::NAME_MAX {
            mapping::tagged(&cleaned, &f.name, 1, cfg.unicode)
        } else {
            cleaned
        };
        let mut name = base.clone();
        let mut n = 0;
        while taken.contains(name.as_bytes()) {
            name = mapping::tagged(&base, &f.name, n, cfg.unicode);
            n += 1;
        }
        taken.insert(name.clone().into_bytes());
        f.proposed = Some(name.into_bytes());
    }
    found
}

/// A directory waiting to be walked.
struct Item {
    /// The directory it is in (`None` for a root, opened relative to the working directory).
    parent: Option<Arc<OwnedFd>>,
    /// Its name in `parent`, or the root path.
    name: Vec<u8>,
    /// Its path as shown in reports.
    shown: Vec<u8>,
    /// Its absolute path after the renames done or planned so far (for plan and undo records).
    record: Vec<u8>,
    /// Device of its root, to stay on one filesystem.
    root_dev: Option<u64>,
}

/// Shared state of one walk.
struct Walk<'a> {
    cfg: &'a Config,
    stats: Stats,
    out: Mutex<io::BufWriter<io::Stdout>>,
    files: Mutex<()>,
    stack: Mutex<(Vec<Item>, usize)>,
    wake: Condvar,
}

impl Walk<'_> {
    fn emit(&self, line: &str) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(out, "{line}");
    }

    fn error(&self, path: &[u8], what: &str, err: &io::Error) {
        self.stats.errors.fetch_add(1, Relaxed);
        if self.cfg.json {
            self.emit(&format!(
                "{{\"path\":{},\"path_hex\":\"{}\",\"error\":{}}}",
                json_str(&Escaped(path).to_string()),
                hex(path),
                json_str(&format!("{what}: {err}"))
            ));
        }
        let _ = self.out.lock().map(|mut o| o.flush());
        eprintln!("utf8fsck: {}: {what}: {err}", Escaped(path));
    }

    fn report(&self, path: &[u8], f: &Finding, action: &str, err: Option<&io::Error>) {
        if self.cfg.json {
            let (p, ph) = match &f.proposed {
                Some(p) => (
                    json_str(&String::from_utf8_lossy(p)),
                    format!("\"{}\"", hex(p)),
                ),
                None => ("null".to_owned(), "null".to_owned()),
            };
            let mut line = format!(
                "{{\"path\":{},\"path_hex\":\"{}\",\"offset\":{},\"kind\":\"{}\",\"reason\":{},\
                 \"proposed\":{p},\"proposed_hex\":{ph},\"action\":\"{action}\"",
                json_str(&Escaped(path).to_string()),
                hex(path),
                f.offset,
                f.why.kind(),
                json_str(&f.why.reason()),
            );
            if let Some(e) = err {
                let _ = write!(line, ",\"error\":{}", json_str(&e.to_string()));
            }
            line.push('}');
            self.emit(&line);
            return;
        }
        let what = format!(
            "{}: {} at byte {}",
            Escaped(path),
            f.why.describe(),
            f.offset
        );
        let line = match (&f.proposed, action, err) {
            (None, _, _) => format!("{what}, no name to rename it to"),
            (Some(p), "renamed", _) => format!("{what}, renamed to {}", Escaped(p)),
            (Some(p), "planned", _) => format!("{what}, rename planned to {}", Escaped(p)),
            (Some(p), _, Some(e)) => format!("{what}, not renamed to {}: {e}", Escaped(p)),
            (Some(p), _, None) => format!("{what}, would rename to {}", Escaped(p)),
        };
        self.emit(&line);
    }

    fn log_rename(&self, file: &File, record: &[u8], old: &[u8], new: &[u8], tail: &str) {
        let line = format!("{} {} {}{tail}\n", hex(record), hex(old), hex(new));
        let mut f = file;
        if let Err(e) = f.write_all(line.as_bytes()) {
            self.error(record, "cannot write record", &e);
        }
    }

    /// Walks one directory: reads it, reports, renames or plans, and returns its subdirectories.
    fn visit(&self, item: Item) -> Vec<Item> {
        let pfd = item
            .parent
            .as_ref()
            .map_or(libc::AT_FDCWD, |p| p.as_raw_fd());
        let nofollow = if item.parent.is_some() {
            libc::O_NOFOLLOW
        } else {
            0
        };
        let fd = match openat(
            pfd,
            &item.name,
            libc::O_RDONLY | libc::O_DIRECTORY | nofollow,
        ) {
            Ok(fd) => fd,
            Err(e) => {
                self.error(&item.shown, "cannot open directory", &e);
                return Vec::new();
            }
        };
        let dev = match stat_at(fd.as_raw_fd(), b"") {
            Ok(st) => st.st_dev,
            Err(e) => {
                self.error(&item.shown, "cannot stat directory", &e);
                return Vec::new();
            }
        };
        if let Some(root) = item.root_dev {
            if root != dev && !self.cfg.cross_mounts {
                return Vec::new();
            }
        }
        let entries = match read_entries(fd.as_raw_fd()) {
            Ok(e) => e,
            Err(e) => {
                self.error(&item.shown, "cannot read directory", &e);
                return Vec::new();
            }
        };
        self.stats.entries.fetch_add(entries.len() as u64, Relaxed);
        let findings = plan_dir(self.cfg, &entries);
        let mut renamed: Vec<(&[u8], &[u8])> = Vec::new();
        for f in &findings {
            self.stats.findings.fetch_add(1, Relaxed);
            let path = join(&item.shown, &f.name);
            let Some(new) = &f.proposed else {
                self.stats.uncorrected.fetch_add(1, Relaxed);
                self.report(&path, f, "report", None);
                continue;
            };
            match &self.cfg.action {
                Action::Check => {
                    self.stats.uncorrected.fetch_add(1, Relaxed);
                    self.report(&path, f, "report", None);
                }
                Action::Plan(file) => {
                    self.stats.uncorrected.fetch_add(1, Relaxed);
                    match stat_at(fd.as_raw_fd(), &f.name) {
                        Ok(st) => {
                            let _g = self.files.lock().unwrap_or_else(|e| e.into_inner());
                            let note = format!(
                                "# {} -> {}\n",
                                Escaped(&join(&item.record, &f.name)),
                                Escaped(new)
                            );
                            let mut w = file;
                            let _ = w.write_all(note.as_bytes());
                            let tail = format!(" {} {}", st.st_dev, st.st_ino);
                            self.log_rename(file, &item.record, &f.name, new, &tail);
                            drop(_g);
                            renamed.push((&f.name, new));
                            self.report(&path, f, "planned", None);
                        }
                        Err(e) => self.error(&path, "cannot stat", &e),
                    }
                }
                Action::Fix { undo_log } => match rename_noreplace(fd.as_raw_fd(), &f.name, new) {
                    Ok(()) => {
                        if let Some(log) = undo_log {
                            let _g = self.files.lock().unwrap_or_else(|e| e.into_inner());
                            self.log_rename(log, &item.record, &f.name, new, "");
                        }
                        self.stats.corrected.fetch_add(1, Relaxed);
                        renamed.push((&f.name, new));
                        self.report(&path, f, "renamed", None);
                    }
                    Err(e) => {
                        self.stats.uncorrected.fetch_add(1, Relaxed);
                        self.report(&path, f, "failed", Some(&e));
                    }
                },
            }
        }
        let parent = Arc::new(fd);
        let mut subdirs = Vec::new();
        for (name, d_type) in &entries {
            let is_dir = match *d_type {
                libc::DT_DIR => true,
                libc::DT_UNKNOWN => stat_at(parent.as_raw_fd(), name)
                    .map(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR)
                    .unwrap_or(false),
                _ => false,
            };
            if !is_dir {
                continue;
            }
            let now = renamed
                .iter()
                .find(|(o, _)| o == name)
                .map_or(name.as_slice(), |r| r.1);
            // Only --fix really moved it; reports show real paths, plan records planned ones.
            let real = if matches!(self.cfg.action, Action::Fix { .. }) {
                now
            } else {
                name
            };
            subdirs.push(Item {
                parent: Some(parent.clone()),
                name: real.to_vec(),
                shown: join(&item.shown, real),
                record: join(&item.record, now),
                root_dev: Some(item.root_dev.unwrap_or(dev)),
            });
        }
        subdirs
    }

    fn worker(&self) {
        loop {
            let item = {
                let mut g = self.stack.lock().unwrap_or_else(|e| e.into_inner());
                loop {
                    if let Some(item) = g.0.pop() {
                        g.1 += 1;
                        break item;
                    }
                    if g.1 == 0 {
                        self.wake.notify_all();
                        return;
                    }
                    g = self.wake.wait(g).unwrap_or_else(|e| e.into_inner());
                }
            };
            let more = self.visit(item);
            let mut g = self.stack.lock().unwrap_or_else(|e| e.into_inner());
            g.1 -= 1;
            let n = more.len();
            g.0.extend(more.into_iter().rev());
            if n > 1 || g.1 == 0 {
                self.wake.notify_all();
            } else if n == 1 {
                self.wake.notify_one();
            }
        }
    }
}

/// Raises the soft limit of open files to the hard limit: deep trees keep a few fds per level.
fn raise_fd_limit() {
    // SAFETY: plain getrlimit/setrlimit on a local struct.
    unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) == 0 && rl.rlim_cur < rl.rlim_max {
            rl.rlim_cur = rl.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &rl);
        }
    }
}

fn progress_loop(stats: &Stats, done: &AtomicBool) {
    let start = Instant::now();
    while !done.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(250));
        let n = stats.entries.load(Relaxed);
        let rate = n as f64 / start.elapsed().as_secs_f64().max(0.001);
        eprint!(
            "\rutf8fsck: {n} entries, {rate:.0}/s, {} findings\x1b[K",
            stats.findings.load(Relaxed)
        );
    }
    eprint!("\r\x1b[K");
}

/// Walks every root and returns the exit status. Roots themselves are not checked or renamed,
/// only the names below them.
pub fn run(cfg: &Config, roots: &[&Path]) -> i32 {
    raise_fd_limit();
    let walk = Walk {
        cfg,
        stats: Stats::default(),
        out: Mutex::new(io::BufWriter::with_capacity(1 << 16, io::stdout())),
        files: Mutex::new(()),
        stack: Mutex::new((Vec::new(), 0)),
        wake: Condvar::new(),
    };
    let mut items = Vec::new();
    for root in roots {
        let shown = root.as_os_str().as_bytes().to_vec();
        let record = match std::fs::canonicalize(root) {
            Ok(p) => p.as_os_str().as_bytes().to_vec(),
            Err(e) => {
                walk.error(&shown, "cannot resolve", &e);
                continue;
            }
        };
        items.push(Item {
            parent: None,
            name: shown.clone(),
            shown,
            record,
            root_dev: None,
        });
    }
    items.reverse();
    walk.stack.lock().unwrap_or_else(|e| e.into_inner()).0 = items;
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        if cfg.progress {
            s.spawn(|| progress_loop(&walk.stats, &done));
        }
        let workers: Vec<_> = (0..cfg.jobs.max(1))
            .map(|_| s.spawn(|| walk.worker()))
            .collect();
        for w in workers {
            let _ = w.join();
        }
        done.store(true, Relaxed);
    });
    finish(&walk, cfg)
}

fn finish(walk: &Walk, cfg: &Config) -> i32 {
    if let Err(e) = walk.out.lock().unwrap_or_else(|e| e.into_inner()).flush() {
        if e.kind() != io::ErrorKind::BrokenPipe {
            walk.stats.errors.fetch_add(1, Relaxed);
        }
    }
    let files: [Option<&File>; 2] = match &cfg.action {
        Action::Fix { undo_log } => [undo_log.as_ref(), None],
        Action::Plan(f) => [Some(f), None],
        Action::Check => [None, None],
    };
    for f in files.into_iter().flatten() {
        if let Err(e) = f.sync_all() {
            eprintln!("utf8fsck: cannot sync record file: {e}");
            walk.stats.errors.fetch_add(1, Relaxed);
        }
    }
    let s = &walk.stats;
    if cfg.verbose || cfg.progress {
        eprintln!(
            "utf8fsck: {} entries, {} findings, {} renamed, {} left, {} errors",
            s.entries.load(Relaxed),
            s.findings.load(Relaxed),
            s.corrected.load(Relaxed),
            s.uncorrected.load(Relaxed),
            s.errors.load(Relaxed)
        );
    }
    s.status()
}

/// One record of a plan or undo log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Absolute path of the directory holding the entry.
    pub parent: Vec<u8>,
    /// The entry's name before the rename.
    pub old: Vec<u8>,
    /// The entry's name after the rename.
    pub new: Vec<u8>,
    /// Device and inode the entry had when planned (plans only).
    pub id: Option<(u64, u64)>,
}

/// Reads the records of a plan or undo log; the error names the line.
pub fn read_records(path: &Path) -> Result<Vec<Record>, String> {
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| format!("{}: {e}", path.display()))?;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = || format!("{}:{}: not a rename record", path.display(), i + 1);
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        if f.len() != 3 && f.len() != 5 {
            return Err(bad());
        }
        let b = |s: &str| unhex(s).filter(|v| !v.is_empty()).ok_or_else(bad);
        let id = if f.len() == 5 {
            Some((
                f[3].parse().map_err(|_| bad())?,
                f[4].parse().map_err(|_| bad())?,
            ))
        } else {
            None
        };
        out.push(Record {
            parent: b(f[0])?,
            old: b(f[1])?,
            new: b(f[2])?,
            id,
        });
    }
    Ok(out)
}

/// Opens directories by absolute path one component at a time (`O_NOFOLLOW`, so a swapped-in
/// symlink is refused and paths longer than PATH_MAX work), keeping the last path open.
struct DirCache {
    comps: Vec<Vec<u8>>,
    fds: Vec<Option<OwnedFd>>,
    root: Option<OwnedFd>,
}

impl DirCache {
    fn new() -> DirCache {
        DirCache {
            comps: Vec::new(),
            fds: Vec::new(),
            root: None,
        }
    }

    fn root_fd(&mut self) -> io::Result<RawFd> {
        if self.root.is_none() {
            self.root = Some(openat(
                libc::AT_FDCWD,
                b"/",
                libc::O_PATH | libc::O_DIRECTORY,
            )?);
        }
        Ok(self.root.as_ref().map_or(-1, |f| f.as_raw_fd()))
    }

    /// Forgets the open directories below depth `keep`.
    fn truncate(&mut self, keep: usize) {
        self.comps.truncate(keep);
        self.fds.truncate(keep);
    }

    fn open(&mut self, path: &[u8]) -> io::Result<RawFd> {
        if !path.starts_with(b"/") {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let want: Vec<&[u8]> = path
            .split(|&b| b == b'/')
            .filter(|c| !c.is_empty())
            .collect();
        let common = self
            .comps
            .iter()
            .zip(&want)
            .take_while(|(a, b)| a == *b)
            .count();
        self.truncate(common);
        // Reopen from the deepest ancestor still open.
        let mut base = self.fds.iter().rposition(|f| f.is_some());
        let start = base.map_or(0, |b| b + 1);
        self.truncate(start);
        for comp in &want[start..] {
            let dirfd = match base {
                Some(b) => self.fds[b].as_ref().map_or(-1, |f| f.as_raw_fd()),
                None => self.root_fd()?,
            };
            let fd = openat(
                dirfd,
                comp,
                libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW,
            )?;
            // Keep one fd every 64 levels and the last one, so deep paths need few fds.
            if let Some(b) = base {
                if b % 64 != 63 {
                    self.fds[b] = None;
                }
            }
            self.comps.push(comp.to_vec());
            self.fds.push(Some(fd));
            base = Some(self.fds.len() - 1);
        }
        match base {
            Some(b) => Ok(self.fds[b].as_ref().map_or(-1, |f| f.as_raw_fd())),
            None => self.root_fd(),
        }
    }
}

/// How [`replay`] treats records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replay {
    /// `--apply`: records in order, old → new, checking device and inode.
    Apply,
    /// `--undo`: records in reverse, new → old.
    Undo,
}

/// Executes a plan (`--apply`) or undoes an undo log (`--undo`), refusing any record whose
/// source changed or whose target exists; appends what it did to `undo_log`. Returns the exit
/// status.
pub fn replay(records: &[Record], how: Replay, json: bool, undo_log: Option<&File>) -> i32 {
    let stats = Stats::default();
    let mut cache = DirCache::new();
    let mut out = io::BufWriter::new(io::stdout());
    let ordered: Vec<&Record> = match how {
        Replay::Apply => records.iter().collect(),
        Replay::Undo => records.iter().rev().collect(),
    };
    for r in ordered {
        let (from, to) = match how {
            Replay::Apply => (&r.old, &r.new),
            Replay::Undo => (&r.new, &r.old),
        };
        let path = join(&r.parent, from);
        let result = (|| -> Result<(), String> {
            let dirfd = cache
                .open(&r.parent)
                .map_err(|e| format!("cannot open directory: {e}"))?;
            let st = stat_at(dirfd, from).map_err(|e| format!("cannot stat: {e}"))?;
            if let (Replay::Apply, Some((dev, ino))) = (how, r.id) {
                if st.st_dev != dev || st.st_ino != ino {
                    return Err("changed since the plan was made (device or inode differ)".into());
                }
            }
            match stat_at(dirfd, to) {
                Ok(_) => return Err(format!("target {} exists", Escaped(to))),
                Err(e) if e.raw_os_error() != Some(libc::ENOENT) => {
                    return Err(format!("cannot stat target: {e}"))
                }
                Err(_) => {}
            }
            rename_noreplace(dirfd, from, to).map_err(|e| format!("cannot rename: {e}"))?;
            // Paths below the renamed entry changed: forget them.
            let depth = r
                .parent
                .split(|&b| b == b'/')
                .filter(|c| !c.is_empty())
                .count();
            cache.truncate(depth.min(cache.comps.len()));
            if let Some(mut log) = undo_log {
                let line = format!("{} {} {}\n", hex(&r.parent), hex(from), hex(to));
                log.write_all(line.as_bytes())
                    .map_err(|e| format!("cannot log: {e}"))?;
            }
            Ok(())
        })();
        let action = if result.is_ok() { "renamed" } else { "refused" };
        let line = if json {
            let mut l = format!(
                "{{\"path\":{},\"path_hex\":\"{}\",\"proposed\":{},\"proposed_hex\":\"{}\",\
                 \"action\":\"{action}\"",
                json_str(&Escaped(&path).to_string()),
                hex(&path),
                json_str(&String::from_utf8_lossy(to)),
                hex(to)
            );
            if let Err(e) = &result {
                let _ = write!(l, ",\"error\":{}", json_str(e));
            }
            l + "}"
        } else {
            match &result {
                Ok(()) => format!("{}: renamed to {}", Escaped(&path), Escaped(to)),
                Err(e) => format!("{}: not renamed to {}: {e}", Escaped(&path), Escaped(to)),
            }
        };
        let _ = writeln!(out, "{line}");
        match result {
            Ok(()) => stats.corrected.fetch_add(1, Relaxed),
            Err(_) => stats.uncorrected.fetch_add(1, Relaxed),
        };
    }
    let _ = out.flush();
    if let Some(log) = undo_log {
        if let Err(e) = log.sync_all() {
            eprintln!("utf8fsck: cannot sync undo log: {e}");
            stats.errors.fetch_add(1, Relaxed);
        }
    }
    stats.status()
}

/// The header line of a file of records.
pub fn header(kind: &str) -> String {
    format!(
        "# utf8fsck {kind} v1: PARENT OLD NEW{} (hex)\n",
        if kind == "plan" { " DEV INO" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        assert_eq!(hex(b"caf\xe9/"), "636166e92f");
        assert_eq!(unhex("636166E92f").unwrap(), b"caf\xe9/");
        assert!(unhex("6").is_none() && unhex("zz").is_none());
    }

    #[test]
    fn json_escapes() {
        assert_eq!(json_str("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }

    #[test]
    fn suffixes() {
        let s = mapping::tagged("photo.jpeg", b"x", 0, None);
        assert!(
            s.starts_with("photo~") && s.ends_with(".jpeg") && s.len() == 19,
            "{s}"
        );
        assert_ne!(s, mapping::tagged("photo.jpeg", b"x", 1, None));
        let long = "é".repeat(200);
        let s = mapping::tagged(&long, b"y", 0, None);
        assert!(s.len() <= policy::NAME_MAX && s.contains('~'));
    }

    #[test]
    fn diagnoses() {
        let d = Deny::parse("all").unwrap();
        assert_eq!(
            diagnose(b"caf\xe9", d, None),
            Some((
                Why::Malformed(utf8::validate(b"caf\xe9").unwrap_err().reason()),
                3
            ))
        );
        assert_eq!(
            diagnose(b"-x", d, None),
            Some((Why::Hygiene(Rule::LeadingDash), 0))
        );
        assert_eq!(
            diagnose("cafe\u{301}".as_bytes(), d, Some(Form::Nfc)),
            Some((Why::Unicode(Form::Nfc), 3))
        );
        assert_eq!(diagnose(b"ok", d, Some(Form::Nfc)), None);
    }
}
