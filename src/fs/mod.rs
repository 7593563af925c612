//! The FUSE operations and the inode table.
//!
//! A passthrough in the manner of libfuse's `passthrough_hp`: each inode holds an `O_PATH` fd of
//! its backing object and every backing call is made relative to a parent's fd with
//! `O_NOFOLLOW`, so no full paths are built and no symlink inside the source is ever followed.
//! Every name a client sends is checked with [`policy::check_component`]; names read from the
//! backing store go through the [`Mapper`] (hidden, shown unchanged, or shown mapped).
//!
//! Names a client creates or renames to must also pass the `deny=` hygiene rules (EINVAL, or a
//! log line in audit mode); existing names are never checked, so nothing becomes unreachable.
//! With `unicode=`, a client's name is put in the form before anything else: it is stored in
//! that form, and a lookup in any spelling finds the entry shown under the form.
//!
//! Hot paths (lookup, getattr, open, read, write, readdirplus) take no global lock: inodes and
//! handles live in sharded tables, and the only process-wide set (names already logged) is
//! touched only for malformed or refused names. Looking up a valid name that exists costs one
//! `fstatat` (plus an `O_PATH` open for an inode the kernel did not hold) and allocates nothing
//! for the name.

mod dir;
mod handles;
mod inode;
mod sys;
mod watch;

pub use watch::{Watch, Watching, Workers};

use crate::mapping::{Mapper, Mode};
use crate::policy::{self, Deny, Escaped, Form, NameError};
use dir::{CachedIndex, Listing, Snapshot};
use fuser::{
    AccessFlags, BackingId, CopyFileRangeFlags, Errno, FileAttr, FileHandle, FileType, Filesystem,
    FopenFlags, Generation, INodeNo, InitFlags, IoctlFlags, KernelConfig, LockOwner, OpenFlags,
    RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty,
    ReplyEntry, ReplyIoctl, ReplyLseek, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr, Request,
    TimeOrNow, WriteFlags,
};
use handles::{Handle, Handles};
use inode::{Inode, InodeTable};
use log::{debug, info, warn};
use std::borrow::Cow;
use std::collections::HashSet;
use std::ffi::{CStr, OsStr};
use std::io;
use std::os::fd::BorrowedFd;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long the kernel may cache what it learnt (`-o cache=`, `*_timeout=`).
///
/// The three presets: [`CachePolicy::auto`] (the default) is safe when SOURCE also changes
/// underneath the mount; [`CachePolicy::always`] trusts that only the mount changes it;
/// [`CachePolicy::never`] makes every access ask the daemon.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CachePolicy {
    /// Validity of a name → inode entry.
    pub entry_timeout: Duration,
    /// Validity of an inode's attributes.
    pub attr_timeout: Duration,
    /// Validity of "no such name"; zero disables negative caching.
    pub negative_timeout: Duration,
    /// Keep the page cache of a file across opens, unconditionally.
    pub keep_cache: bool,
    /// Keep the page cache of a file across opens when its mtime and size are unchanged since
    /// its previous open (libfuse's `auto_cache`), and let the kernel drop cached pages when it
    /// sees the mtime change (FUSE_AUTO_INVAL_DATA).
    pub auto_cache: bool,
    /// Let the kernel cache directory listings.
    pub cache_dir: bool,
    /// Let the kernel buffer writes (FUSE_WRITEBACK_CACHE). Only used when kernel passthrough is
    /// not, since the two exclude each other.
    pub writeback: bool,
    /// Cache names and attributes for a day instead of the timeouts above when SOURCE can be
    /// watched for outside changes ([`Utf8Fs::watch`]): `cache=auto` without explicit timeouts.
    pub watch: bool,
}

/// Validity of kernel caches under `cache=always`: one day, as libfuse's passthrough examples.
const LONG_TIMEOUT: Duration = Duration::from_secs(86_400);

/// Entry timeouts from this long on make lookups of objects the kernel does not hold the common
/// case (see [`InodeTable::lookup`]'s `open_first`).
const OPEN_FIRST_TIMEOUT: Duration = Duration::from_secs(60);

impl CachePolicy {
    /// `cache=auto`: 1 s entry and attribute timeouts, no negative caching, page cache kept
    /// only for files unchanged since their previous open. SOURCE may change underneath.
    pub fn auto() -> CachePolicy {
        CachePolicy {
            entry_timeout: Duration::from_secs(1),
            attr_timeout: Duration::from_secs(1),
            negative_timeout: Duration::ZERO,
            keep_cache: false,
            auto_cache: true,
            cache_dir: false,
            writeback: false,
            watch: true,
        }
    }

    /// `cache=always`: a day of entry, attribute and negative caching, page and directory
    /// caches kept, writeback caching when passthrough is off. Only the mount changes SOURCE.
    pub fn always() -> CachePolicy {
        CachePolicy {
            entry_timeout: LONG_TIMEOUT,
            attr_timeout: LONG_TIMEOUT,
            negative_timeout: LONG_TIMEOUT,
            keep_cache: true,
            auto_cache: false,
            cache_dir: true,
            writeback: true,
            watch: false,
        }
    }

    /// `cache=never`: zero timeouts and no page cache kept across opens.
    pub fn never() -> CachePolicy {
        CachePolicy {
            entry_timeout: Duration::ZERO,
            attr_timeout: Duration::ZERO,
            negative_timeout: Duration::ZERO,
            keep_cache: false,
            auto_cache: false,
            cache_dir: false,
            writeback: false,
            watch: false,
        }
    }
}

impl Default for CachePolicy {
    /// [`CachePolicy::auto`].
    fn default() -> CachePolicy {
        CachePolicy::auto()
    }
}

/// Everything the filesystem needs to know, from the command line.
#[derive(Clone, Debug)]
pub struct FsConfig {
    /// The backing directory.
    pub source: PathBuf,
    /// What malformed names become.
    pub mapper: Mapper,
    /// Refuse every change (`-o ro`).
    pub read_only: bool,
    /// Other users may use the mount (`-o allow_other`): new files get the caller's owner.
    pub allow_other: bool,
    /// The kernel checks permissions from the file modes (`-o default_permissions`, implied
    /// by `allow_other`), so an open needs no check from the daemon.
    pub kernel_permissions: bool,
    /// `-o auto_unmount`: fusermount3 tells a dead daemon by opening the mount point, which
    /// must then reach the daemon and fail (ENOTCONN). So directories keep their open round
    /// trip, and SOURCE is not watched (the watch's teardown delays the connection's end past
    /// that check, and its long timeouts let the kernel answer alone).
    pub auto_unmount: bool,
    /// Kernel FUSE passthrough for regular files when available (`-o passthrough=`).
    pub passthrough: bool,
    /// Kernel caching (`-o cache=`).
    pub cache: CachePolicy,
    /// Hygiene rules that names clients create or rename to must pass (`-o deny=LIST`):
    /// EINVAL otherwise, or a log line in `malformed=audit` mode. Existing names stay usable.
    pub deny: Deny,
    /// Unicode normalization form of shown and created names (`-o unicode=nfc|nfd`); lookups
    /// are normalization-insensitive. Applied to [`FsConfig::mapper`] when the filesystem
    /// starts ([`Mapper::with_form`]).
    pub unicode: Option<Form>,
    /// At most about this many inodes hold an `O_PATH` fd; the fds of cold ones are closed and
    /// reopened from their file handle when needed. `usize::MAX`: never close them.
    pub fd_budget: usize,
}

/// The default [`FsConfig::fd_budget`]: half the soft `RLIMIT_NOFILE` of the process, leaving
/// the rest for open files and directories.
pub fn default_fd_budget() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 512;
    }
    usize::try_from(lim.rlim_cur / 2)
        .unwrap_or(usize::MAX)
        .max(64)
}

impl FsConfig {
    /// A read-write configuration with default caching, kernel passthrough on, no hygiene
    /// rule and no normalization form.
    pub fn new(source: impl Into<PathBuf>, mapper: Mapper) -> FsConfig {
        FsConfig {
            source: source.into(),
            mapper,
            read_only: false,
            allow_other: false,
            kernel_permissions: false,
            auto_unmount: false,
            passthrough: true,
            cache: CachePolicy::default(),
            deny: Deny::NONE,
            unicode: None,
            fd_budget: default_fd_budget(),
        }
    }
}

/// Counters readable while the filesystem runs inside a session (see [`Utf8Fs::stats`]).
#[derive(Debug, Default)]
pub struct FsStats {
    live_inodes: Arc<AtomicUsize>,
    path_fds: Arc<AtomicUsize>,
    open_handles: Arc<AtomicUsize>,
    hidden_names: AtomicU64,
    malformed_logged: AtomicU64,
    hygiene_logged: AtomicU64,
}

impl FsStats {
    /// Inodes in the table, the root included (1 once the kernel forgot everything).
    pub fn live_inodes(&self) -> usize {
        self.live_inodes.load(Ordering::Relaxed)
    }

    /// `O_PATH` fds the inode table holds now, the root's included (see
    /// [`FsConfig::fd_budget`]).
    pub fn path_fds(&self) -> usize {
        self.path_fds.load(Ordering::Relaxed)
    }

    /// Open file and directory handles.
    pub fn open_handles(&self) -> usize {
        self.open_handles.load(Ordering::Relaxed)
    }

    /// Distinct malformed backing names hidden from listings (reject mode) and logged.
    pub fn hidden_names(&self) -> u64 {
        self.hidden_names.load(Ordering::Relaxed)
    }

    /// Distinct malformed names logged (hidden, mapped or passed through).
    pub fn malformed_logged(&self) -> u64 {
        self.malformed_logged.load(Ordering::Relaxed)
    }

    /// Distinct names breaking a `deny=` rule that audit mode let clients create and logged.
    pub fn hygiene_logged(&self) -> u64 {
        self.hygiene_logged.load(Ordering::Relaxed)
    }
}

/// The filesystem: mirrors `FsConfig::source`, checking every name that crosses it.
pub struct Utf8Fs {
    config: FsConfig,
    inodes: Arc<InodeTable>,
    /// The request worker threads, whose changes to SOURCE are not outside changes; only
    /// kept while SOURCE is watched.
    workers: Option<Arc<Workers>>,
    handles: Handles,
    stats: Arc<FsStats>,
    /// (directory node id, name) of malformed names and hygiene violations already logged.
    logged: Mutex<HashSet<(u64, Box<[u8]>)>>,
    /// SOURCE as the kernel names it (`/proc/self/fd` of the root), to name directories in logs.
    source_path: Vec<u8>,
    euid: u32,
    /// Kernel passthrough negotiated and not yet found failing.
    passthrough: AtomicBool,
    /// Writeback caching negotiated: opens must be readable and must not append.
    writeback: AtomicBool,
    /// `cache=auto` with FUSE_AUTO_INVAL_DATA negotiated: the kernel rereads a directory's
    /// mtime (once its attributes expire) before serving a cached listing, and drops the
    /// listing when the mtime changed, so listings may be cached across opens.
    auto_dir_cache: AtomicBool,
}

type Res<T> = Result<T, Errno>;

/// Where a readdir continues (see [`Utf8Fs::listing_at`]).
struct Cursor {
    snap: Arc<Snapshot>,
    /// Index of the first entry to send.
    start: usize,
    /// The stream of a handle-less reader.
    epoch: Option<u32>,
}

impl Cursor {
    /// The offset that resumes after entry `i`.
    fn offset(&self, i: usize) -> u64 {
        match self.epoch {
            Some(e) => dir::stream_offset(e, i),
            None => i as u64 + 1,
        }
    }

    /// The entries still to send, with their indexes.
    fn rest(&self) -> impl Iterator<Item = (usize, &dir::Entry)> {
        self.snap.entries().iter().enumerate().skip(self.start)
    }

    /// A handle-less reader past the end is done with its listing.
    fn finish(&self, dir: &Inode) {
        if let (Some(e), Some(x)) = (self.epoch, dir.extra_if_any()) {
            if self.start >= self.snap.entries().len() {
                x.dir.end_stream(e);
            }
        }
    }
}

const NO_ID: u32 = u32::MAX;

/// What a logged name is: decides the message and the counters.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Logged {
    /// A malformed backing name hidden from clients.
    Hidden,
    /// A malformed name shown mapped or passed through (the text says how).
    Malformed(&'static str),
    /// A name a client created or renamed to that breaks a hygiene rule (audit mode).
    Hygiene(policy::Violation),
}

impl Utf8Fs {
    /// Opens the backing directory; fails if it is missing or not a directory.
    pub fn new(mut config: FsConfig) -> io::Result<Utf8Fs> {
        let form = config.unicode.or(config.mapper.form());
        config.unicode = form;
        config.mapper = config.mapper.clone().with_form(form);
        let source = &config.source;
        let c = std::ffi::CString::new(source.as_os_str().as_bytes()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: path holds a NUL byte", source.display()),
            )
        })?;
        let err = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", source.display()));
        // SAFETY: NUL-terminated path; the fd returned is owned below.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(err(io::Error::last_os_error()));
        }
        // SAFETY: fresh fd owned by nobody else.
        let root: OwnedFd = unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) };
        let st =
            sys::stat_fd(root.as_fd()).map_err(|e| err(io::Error::from_raw_os_error(e.code())))?;
        let source_path = sys::fd_path(root.as_fd()).unwrap_or_default();
        let stats = Arc::new(FsStats::default());
        let inodes = Arc::new(InodeTable::new(
            root,
            &st,
            Arc::clone(&stats.live_inodes),
            Arc::clone(&stats.path_fds),
            config.fd_budget,
        ));
        let handles = Handles::new(Arc::clone(&stats.open_handles));
        Ok(Utf8Fs {
            config,
            inodes,
            workers: None,
            handles,
            stats,
            logged: Mutex::new(HashSet::new()),
            source_path,
            euid: sys::geteuid(),
            passthrough: AtomicBool::new(false),
            writeback: AtomicBool::new(false),
            auto_dir_cache: AtomicBool::new(false),
        })
    }

    /// With `cache=auto` (no explicit timeouts) in a mode that shows backing names as they
    /// are (reject or audit, no `unicode=`), without `auto_unmount`: starts watching SOURCE for
    /// changes made outside the mount and, when that works, caches names and attributes for a
    /// day instead of a second. Call before the filesystem moves into its session, then
    /// [`Watch::spawn`] the result with the session's notifier. In the other modes one outside
    /// change can move the shown names of other entries (collision suffixes), which per-name
    /// invalidation cannot follow.
    pub fn watch(&mut self) -> Option<Watch> {
        if !self.config.cache.watch || self.config.mapper.normalizes() || self.config.auto_unmount {
            return None;
        }
        let workers = Arc::new(Workers::default());
        let source = self
            .inodes
            .root()
            .ok_or(Errno::ESTALE)
            .and_then(|root| sys::open_dir(root.fd()?.as_fd()))
            .map_err(|e| io::Error::from_raw_os_error(e.code()));
        match source.and_then(|fd| Watch::new(fd, Arc::clone(&self.inodes), Arc::clone(&workers))) {
            Ok(w) => {
                info!("watching SOURCE for outside changes: names and attributes cached until one");
                self.config.cache.entry_timeout = LONG_TIMEOUT;
                self.config.cache.attr_timeout = LONG_TIMEOUT;
                self.workers = Some(workers);
                Some(w)
            }
            Err(e) => {
                watch::log_unwatched(&e);
                None
            }
        }
    }

    /// The configuration this filesystem runs with.
    pub fn config(&self) -> &FsConfig {
        &self.config
    }

    /// Live counters, shared: keep the `Arc` before moving the filesystem into a session.
    pub fn stats(&self) -> Arc<FsStats> {
        Arc::clone(&self.stats)
    }

    /// Whether lookups open the name before consulting the inode table: while names are cached
    /// long (see [`InodeTable::lookup`]).
    fn open_first(&self) -> bool {
        self.config.cache.entry_timeout >= OPEN_FIRST_TIMEOUT
    }

    /// Records the calling thread as a request worker while SOURCE is watched.
    fn enlist(&self) {
        if let Some(w) = &self.workers {
            w.enlist();
        }
    }

    /// The inode of a request; every request starts here or at [`Utf8Fs::handle`], which is
    /// where worker threads enlist (see [`Workers`]).
    fn inode(&self, id: INodeNo) -> Res<Arc<Inode>> {
        self.enlist();
        self.inodes.get(id.0).ok_or(Errno::ESTALE)
    }

    fn handle(&self, fh: FileHandle) -> Res<Arc<Handle>> {
        self.enlist();
        self.handles.get(fh.0).ok_or(Errno::EBADF)
    }

    fn writable(&self) -> Res<()> {
        if self.config.read_only {
            Err(Errno::EROFS)
        } else {
            Ok(())
        }
    }

    fn mode(&self) -> Mode {
        self.config.mapper.mode()
    }

    /// The path of a directory relative to SOURCE, for log messages: `.` for SOURCE itself,
    /// `inode N` when the kernel no longer knows a path under SOURCE (removed meanwhile).
    fn dir_path(&self, dir: &Inode) -> String {
        if dir.id == inode::ROOT_ID {
            return ".".into();
        }
        match dir.fd().and_then(|f| sys::fd_path(f.as_fd())) {
            Ok(p) if !self.source_path.is_empty() => {
                let base = self
                    .source_path
                    .strip_suffix(b"/")
                    .unwrap_or(&self.source_path);
                match p.strip_prefix(base).and_then(|r| r.strip_prefix(b"/")) {
                    Some(rel) if !rel.is_empty() => Escaped(rel).to_string(),
                    _ => format!("inode {}", dir.id),
                }
            }
            _ => format!("inode {}", dir.id),
        }
    }

    /// Logs a name once per directory; the directory is named by its path (computed only here).
    fn log_name(&self, dir: &Inode, name: &[u8], what: Logged) {
        let mut logged = self.logged.lock().unwrap_or_else(|e| e.into_inner());
        if !logged.insert((dir.id, name.into())) {
            return;
        }
        drop(logged);
        let path = self.dir_path(dir);
        match what {
            Logged::Hidden | Logged::Malformed(_) => {
                self.stats.malformed_logged.fetch_add(1, Ordering::Relaxed);
                let how = match what {
                    Logged::Malformed(how) => how,
                    _ => {
                        self.stats.hidden_names.fetch_add(1, Ordering::Relaxed);
                        "hidden"
                    }
                };
                warn!("{path}: malformed name {}: {how}", Escaped(name));
            }
            Logged::Hygiene(v) => {
                self.stats.hygiene_logged.fetch_add(1, Ordering::Relaxed);
                warn!("{path}: name {} {v}: allowed (audit mode)", Escaped(name));
            }
        }
    }

    /// Checks a name a client sent, and puts it in the normalization form if there is one.
    /// Audit mode lets malformed names through (logged). Valid names in the form (or without a
    /// form) are borrowed: no allocation.
    fn check_name<'a>(&self, dir: &Inode, name: &'a OsStr) -> Res<Cow<'a, [u8]>> {
        let bytes = name.as_bytes();
        match policy::check_component(bytes) {
            Ok(_) => Ok(self.config.mapper.client_name(bytes)),
            Err(NameError::Malformed(_)) if self.mode() == Mode::Audit => {
                self.log_name(
                    dir,
                    bytes,
                    Logged::Malformed("passed through from a client"),
                );
                Ok(Cow::Borrowed(bytes))
            }
            Err(e) => {
                debug!("refused name {}: {e}", Escaped(bytes));
                Err(Errno::from_i32(e.errno()))
            }
        }
    }

    /// Checks a name a client creates or renames to against the hygiene rules (`deny=`):
    /// EINVAL when it breaks one, or a log line in audit mode.
    fn check_hygiene(&self, dir: &Inode, name: &[u8]) -> Res<()> {
        let deny = self.config.deny;
        if deny.is_empty() {
            return Ok(());
        }
        // Malformed names only get here in audit mode, where they were logged already.
        let Ok(text) = std::str::from_utf8(name) else {
            return Ok(());
        };
        match policy::check_hygiene(text, deny) {
            Ok(()) => Ok(()),
            Err(v) if self.mode() == Mode::Audit => {
                self.log_name(dir, name, Logged::Hygiene(v));
                Ok(())
            }
            Err(v) => {
                debug!("refused name {}: {v}", Escaped(name));
                Err(Errno::from_i32(v.errno()))
            }
        }
    }

    /// The directory's mapped-name index, rebuilt when stale (or when `force`).
    fn dir_index(&self, dir: &Inode, force: bool) -> Res<Arc<CachedIndex>> {
        let st = sys::stat_fd(dir.fd()?.as_fd())?;
        if !force {
            if let Some(c) = dir.extra().dir.get(&st) {
                return Ok(c);
            }
        }
        let fd = sys::open_dir(dir.fd()?.as_fd())?;
        let listing = Listing::read(fd.as_fd())?;
        Ok(dir.extra().dir.store(&self.config.mapper, &listing, &st))
    }

    /// The backing name of the entry clients see as `shown` in `dir`, when it exists under
    /// another name; `None` when `shown` should be used literally.
    fn mapped_backing(&self, dir: &Inode, shown: &[u8]) -> Res<Option<Vec<u8>>> {
        if !self.config.mapper.normalizes() {
            return Ok(None);
        }
        match sys::stat_at(dir.fd()?.as_fd(), shown) {
            Ok(_) => Ok(None),
            Err(e) if e.code() != libc::ENOENT => Ok(None),
            Err(_) => self.mapped_after_miss(dir, shown),
        }
    }

    /// [`Utf8Fs::mapped_backing`] once `shown` is known not to exist literally.
    fn mapped_after_miss(&self, dir: &Inode, shown: &[u8]) -> Res<Option<Vec<u8>>> {
        let mapper = &self.config.mapper;
        for b in mapper.inversions(shown) {
            if sys::stat_at(dir.fd()?.as_fd(), &b).is_ok() {
                let idx = self.dir_index(dir, false)?;
                if idx.index.shown(&b) == Some(shown) {
                    return Ok(Some(b));
                }
                let idx = self.dir_index(dir, true)?;
                if idx.index.shown(&b) == Some(shown) {
                    return Ok(Some(b));
                }
            }
        }
        if !mapper.may_be_mapped(shown) {
            return Ok(None);
        }
        let idx = self.dir_index(dir, false)?;
        if let Some(b) = idx.index.backing(shown) {
            return Ok(Some(b.to_vec()));
        }
        if idx.unsure {
            let idx = self.dir_index(dir, true)?;
            if let Some(b) = idx.index.backing(shown) {
                return Ok(Some(b.to_vec()));
            }
        }
        Ok(None)
    }

    /// Checks `name` and resolves it to the backing name of the entry clients see under it.
    fn resolve<'a>(&self, dir: &Inode, name: &'a OsStr) -> Res<Cow<'a, [u8]>> {
        let shown = self.check_name(dir, name)?;
        Ok(match self.mapped_backing(dir, &shown)? {
            Some(b) => Cow::Owned(b),
            None => shown,
        })
    }

    /// Checks a name a client creates: it passes the hygiene rules, is written literally (in
    /// the normalization form), and must not already stand for a mapped entry.
    fn new_name<'a>(&self, dir: &Inode, name: &'a OsStr) -> Res<Cow<'a, [u8]>> {
        let shown = self.check_name(dir, name)?;
        if let Err(e) = self.check_hygiene(dir, &shown) {
            // An existing entry is reported as such, whatever its name.
            if sys::stat_at(dir.fd()?.as_fd(), &shown).is_ok() {
                return Err(Errno::EEXIST);
            }
            return Err(e);
        }
        if self.mapped_backing(dir, &shown)?.is_some() {
            return Err(Errno::EEXIST);
        }
        Ok(shown)
    }

    fn attr(&self, id: u64, st: &libc::stat) -> FileAttr {
        FileAttr {
            ino: INodeNo(id),
            size: st.st_size as u64,
            blocks: st.st_blocks as u64,
            atime: time(st.st_atime, st.st_atime_nsec),
            mtime: time(st.st_mtime, st.st_mtime_nsec),
            ctime: time(st.st_ctime, st.st_ctime_nsec),
            crtime: UNIX_EPOCH,
            kind: kind(st.st_mode),
            perm: (st.st_mode & 0o7777) as u16,
            nlink: st.st_nlink as u32,
            uid: st.st_uid,
            gid: st.st_gid,
            rdev: st.st_rdev as u32,
            blksize: st.st_blksize as u32,
            flags: 0,
        }
    }

    fn reply_entry(&self, reply: ReplyEntry, inode: &Inode, st: &libc::stat) {
        let c = &self.config.cache;
        reply.entry_with_ttls(
            &c.attr_timeout,
            &c.entry_timeout,
            &self.attr(inode.id, st),
            Generation(0),
        );
        self.inodes.balance();
    }

    /// Gives a new object to the user who created it (allow_other, or a daemon serving
    /// another user): the requester's uid, and its gid unless the directory is setgid.
    fn set_owner(&self, req: &Request, parent: &Inode, fd: &OwnedFd, mode: u32) -> Res<()> {
        if !self.config.allow_other && req.uid() == self.euid {
            return Ok(());
        }
        let pst = sys::stat_fd(parent.fd()?.as_fd())?;
        let gid = if pst.st_mode & libc::S_ISGID != 0 {
            NO_ID
        } else {
            req.gid()
        };
        let st = sys::stat_fd(fd.as_fd())?;
        if st.st_uid == req.uid() && (gid == NO_ID || st.st_gid == gid) {
            return Ok(());
        }
        if let Err(e) = sys::chown_fd(fd.as_fd(), req.uid(), gid) {
            if e.code() == libc::EPERM {
                debug!(
                    "cannot give a new object to uid {}: not permitted",
                    req.uid()
                );
                return Ok(());
            }
            return Err(e);
        }
        let fmt = st.st_mode & libc::S_IFMT;
        if fmt == libc::S_IFREG && mode & 0o6000 != 0 {
            let st = sys::stat_fd(fd.as_fd())?;
            if st.st_mode & 0o7777 != mode & 0o7777 {
                sys::chmod_fd(fd.as_fd(), mode & 0o7777)?;
            }
        }
        Ok(())
    }

    /// After creating `name` in `parent`: sets its owner and counts the kernel's reference.
    fn finish_new(
        &self,
        req: &Request,
        parent: &Inode,
        name: &[u8],
        mode: u32,
    ) -> Res<(Arc<Inode>, libc::stat)> {
        parent.dir_changed();
        let fd = sys::open_path(parent.fd()?.as_fd(), name)?;
        self.set_owner(req, parent, &fd, mode)?;
        let st = sys::stat_fd(fd.as_fd())?;
        let inode = self.inodes.insert(fd, &st);
        Ok((inode, st))
    }

    /// Whether kernel passthrough may serve regular file `inode`.
    fn passthrough_for(&self, inode: &Inode) -> bool {
        self.passthrough.load(Ordering::Relaxed) && inode.fmt == libc::S_IFREG
    }

    /// Open flags for a backing open that may also become the inode's shared passthrough
    /// file: read-write (as the shared backing must be) when no open of the inode holds one
    /// yet, so that one open serves both. The kernel still enforces the client's access mode.
    fn shared_open_flags(&self, inode: &Inode, flags: i32) -> i32 {
        if self.config.read_only
            || !self.passthrough_for(inode)
            || flags & libc::O_ACCMODE == libc::O_RDWR
            || flags & Self::UNSHAREABLE != 0
            || inode.backing_in_use()
        {
            return flags;
        }
        (flags & !libc::O_ACCMODE) | libc::O_RDWR
    }

    /// Open flags that would change how every other open of the inode reads or writes if its
    /// fd became the shared passthrough file.
    const UNSHAREABLE: i32 = libc::O_APPEND | libc::O_DIRECT | libc::O_SYNC | libc::O_DSYNC;

    /// The shared kernel passthrough id of a regular file, creating it from `fd` when no open
    /// of the inode holds one. `flags` are those `fd` was opened with: a plain read-write fd
    /// is used as is, any other is replaced by a read-write reopen when one is possible.
    fn backing_id(
        &self,
        inode: &Inode,
        fd: &OwnedFd,
        flags: i32,
        open: impl Fn(&OwnedFd) -> io::Result<BackingId>,
    ) -> Option<Arc<BackingId>> {
        if !self.passthrough_for(inode) {
            return None;
        }
        let mut slot = inode
            .extra()
            .backing
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(id) = slot.upgrade() {
            return Some(id);
        }
        let shareable = flags & libc::O_ACCMODE == libc::O_RDWR && flags & Self::UNSHAREABLE == 0;
        let rw = if self.config.read_only || shareable {
            None
        } else {
            inode
                .fd()
                .ok()
                .and_then(|f| sys::reopen(f.as_fd(), libc::O_RDWR).ok())
        };
        match open(rw.as_ref().unwrap_or(fd)) {
            Ok(id) => {
                let id = Arc::new(id);
                *slot = Arc::downgrade(&id);
                Some(id)
            }
            Err(e) => {
                if self.passthrough.swap(false, Ordering::Relaxed) {
                    info!(
                        "kernel passthrough unavailable ({e}); reading and writing in the daemon"
                    );
                }
                None
            }
        }
    }

    /// Directories are opened without a handle: `opendir` answers ENOSYS, after which the
    /// kernel opens directories without asking and caches their listings itself (as
    /// FOPEN_CACHE_DIR would), saving a round trip per open. Only when listings may be cached
    /// and the daemon needs no say at open: the kernel checks permissions, or the daemon is
    /// root and so could read any directory anyway.
    fn handleless_dirs(&self) -> bool {
        !self.config.auto_unmount
            && !self.dir_open_flags().is_empty()
            && (self.config.kernel_permissions || self.euid == 0)
    }

    /// The open flags of a directory handle.
    fn dir_open_flags(&self) -> FopenFlags {
        if self.config.cache.cache_dir || self.auto_dir_cache.load(Ordering::Relaxed) {
            FopenFlags::FOPEN_CACHE_DIR | FopenFlags::FOPEN_KEEP_CACHE
        } else {
            FopenFlags::empty()
        }
    }

    /// The open flags of a file handle. With `cache=auto` the page cache is kept only when the
    /// file's mtime and size are what they were at its previous open.
    ///
    /// Passthrough opens carry FOPEN_NOFLUSH and nothing else: the kernel uses the backing
    /// file's own page cache, and it fails the client's open with EIO when a passthrough open
    /// carries any flag outside FOPEN_PASSTHROUGH_MASK (FOPEN_KEEP_CACHE among them).
    fn file_open_flags(&self, inode: &Inode, fd: &OwnedFd, passthrough: bool) -> FopenFlags {
        if passthrough {
            // Data goes straight to the backing file and no POSIX locks are held here (the
            // kernel keeps them), so a flush would have nothing to do: skip its round trip.
            return FopenFlags::FOPEN_NOFLUSH;
        }
        let c = &self.config.cache;
        if c.keep_cache {
            return FopenFlags::FOPEN_KEEP_CACHE;
        }
        if !c.auto_cache || inode.fmt != libc::S_IFREG {
            return FopenFlags::empty();
        }
        let Ok(st) = sys::stat_fd(fd.as_fd()) else {
            return FopenFlags::empty();
        };
        let now = (st.st_mtime, st.st_mtime_nsec, st.st_size);
        let mut opened = inode
            .extra()
            .opened
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let same = *opened == Some(now);
        *opened = Some(now);
        if same {
            FopenFlags::FOPEN_KEEP_CACHE
        } else {
            FopenFlags::empty()
        }
    }

    /// Open flags as the backing open needs them: with writeback caching the kernel reads
    /// pages of write-only files and handles O_APPEND itself, as in libfuse's passthrough_hp.
    fn backing_flags(&self, flags: i32) -> i32 {
        let mut flags = flags & !libc::O_NOCTTY;
        if self.writeback.load(Ordering::Relaxed) {
            if flags & libc::O_ACCMODE == libc::O_WRONLY {
                flags = (flags & !libc::O_ACCMODE) | libc::O_RDWR;
            }
            flags &= !libc::O_APPEND;
        }
        flags
    }

    /// Takes (or reuses) the listing a directory handle serves.
    fn snapshot(&self, dir: &Inode, h: &Handle, offset: u64) -> Res<Arc<Snapshot>> {
        let mut slot = h.snapshot.lock().unwrap_or_else(|e| e.into_inner());
        if offset != 0 {
            if let Some(s) = slot.as_ref() {
                return Ok(Arc::clone(s));
            }
        }
        let snap = Arc::new(self.read_listing(dir, h.fd())?);
        *slot = Some(Arc::clone(&snap));
        Ok(snap)
    }

    /// The directory of a readdir request and where its reply continues.
    fn readdir_at(&self, ino: INodeNo, fh: FileHandle, offset: u64) -> Res<(Arc<Inode>, Cursor)> {
        let dir = self.inode(ino)?;
        let cur = self.listing_at(&dir, fh, offset)?;
        Ok((dir, cur))
    }

    /// Where a readdir continues: the listing, the index of the first entry to send, and how
    /// entry offsets are made. With a handle (`fh` ≠ 0) the listing is the handle's and entry
    /// `i` has offset `i + 1`; without one (see [`Utf8Fs::handleless_dirs`]) it is one of the
    /// directory's streams, named by the high half of the offset.
    fn listing_at(&self, dir: &Inode, fh: FileHandle, offset: u64) -> Res<Cursor> {
        if fh.0 != 0 {
            let h = self.handle(fh)?;
            let snap = self.snapshot(dir, &h, offset)?;
            let start = usize::try_from(offset).unwrap_or(usize::MAX);
            return Ok(Cursor {
                snap,
                start,
                epoch: None,
            });
        }
        let (epoch, start) = dir::split_offset(offset);
        if offset != 0 {
            if let Some(snap) = dir.extra().dir.stream(epoch) {
                return Ok(Cursor {
                    snap,
                    start,
                    epoch: Some(epoch),
                });
            }
        }
        // A new reader, or one whose listing was pushed out: read the directory again (the
        // index still resumes where it was, as a telldir cookie would).
        let fd = sys::open_dir(dir.fd()?.as_fd())?;
        let snap = Arc::new(self.read_listing(dir, fd.as_fd())?);
        let epoch = dir.extra().dir.begin_stream(Arc::clone(&snap));
        Ok(Cursor {
            snap,
            start,
            epoch: Some(epoch),
        })
    }

    /// Reads the directory open as `fd` and makes what clients see of it, logging malformed
    /// names.
    fn read_listing(&self, dir: &Inode, fd: BorrowedFd<'_>) -> Res<Snapshot> {
        let st = sys::stat_fd(dir.fd()?.as_fd())?;
        let listing = Listing::read(fd)?;
        let mapper = &self.config.mapper;
        let snap = if mapper.normalizes() {
            let cached = dir.extra().dir.store(mapper, &listing, &st);
            let how = if self.mode() == Mode::Audit {
                "passed through"
            } else {
                "shown mapped"
            };
            listing.into_snapshot(
                |n| {
                    let s = cached.index.shown(n)?;
                    if !crate::utf8::is_valid(n) {
                        self.log_name(dir, n, Logged::Malformed(how));
                    }
                    if s == n {
                        Some(None)
                    } else {
                        Some(Some(s.to_vec()))
                    }
                },
                |n| self.log_name(dir, n, Logged::Hidden),
            )
        } else if self.mode() == Mode::Audit {
            listing.into_snapshot(
                |n| {
                    if !crate::utf8::is_valid(n) {
                        self.log_name(dir, n, Logged::Malformed("passed through"));
                    }
                    Some(None)
                },
                |_| {},
            )
        } else {
            listing.into_snapshot(
                |n| crate::utf8::is_valid(n).then_some(None),
                |n| self.log_name(dir, n, Logged::Hidden),
            )
        };
        Ok(snap)
    }

    /// Maps each component of a symlink target to the name the mount shows for it. Each
    /// component is mapped with the index of the directory it is in, as long as that directory
    /// can be reached from the link's directory, component by component, without following a
    /// symlink or leaving SOURCE; after that (and for absolute targets) each component is mapped
    /// on its own ([`Mapper::candidate`]).
    fn map_target(&self, link: &Inode, target: Vec<u8>) -> Vec<u8> {
        let mapper = &self.config.mapper;
        let shows_itself = |c: &[u8]| matches!(mapper.candidate(c), Some(Cow::Borrowed(_)));
        if !mapper.normalizes() || target.split(|&b| b == b'/').all(shows_itself) {
            return target;
        }
        let mut dir = if target.starts_with(b"/") {
            None
        } else {
            self.link_dir(link)
        };
        let comps: Vec<&[u8]> = target.split(|&b| b == b'/').collect();
        let mut out = Vec::with_capacity(target.len() * 2);
        for (i, comp) in comps.iter().enumerate() {
            if i > 0 {
                out.push(b'/');
            }
            let last = i + 1 == comps.len();
            if comp.is_empty() || *comp == b"." || *comp == b".." {
                out.extend_from_slice(comp);
                if *comp == b".." {
                    dir = dir.and_then(|d| self.parent_within_source(d));
                }
                continue;
            }
            let shown = if shows_itself(comp) {
                None
            } else {
                dir.as_ref().and_then(|d| self.shown_in(d, comp))
            };
            match shown {
                Some(s) => out.extend_from_slice(&s),
                None => match mapper.candidate(comp) {
                    Some(s) => out.extend_from_slice(&s),
                    None => out.extend_from_slice(comp),
                },
            }
            if !last {
                dir = dir.and_then(|d| {
                    sys::openat(
                        d.as_fd(),
                        comp,
                        libc::O_PATH | libc::O_NOFOLLOW | libc::O_DIRECTORY,
                        0,
                    )
                    .ok()
                });
            }
        }
        out
    }

    /// An `O_PATH` fd of the directory holding a symlink, found from the path the kernel knows
    /// for it, walked from SOURCE without following symlinks.
    fn link_dir(&self, link: &Inode) -> Option<OwnedFd> {
        let path = sys::fd_path(link.fd().ok()?.as_fd()).ok()?;
        let base = self
            .source_path
            .strip_suffix(b"/")
            .unwrap_or(&self.source_path);
        let rel = path.strip_prefix(base)?.strip_prefix(b"/")?;
        let dir = match rel.iter().rposition(|&b| b == b'/') {
            Some(slash) => &rel[..slash],
            None => &b""[..],
        };
        let root = self.inodes.root()?;
        let mut fd = sys::openat(
            root.fd().ok()?.as_fd(),
            b".",
            libc::O_PATH | libc::O_DIRECTORY,
            0,
        )
        .ok()?;
        for comp in dir.split(|&b| b == b'/').filter(|c| !c.is_empty()) {
            fd = sys::openat(
                fd.as_fd(),
                comp,
                libc::O_PATH | libc::O_NOFOLLOW | libc::O_DIRECTORY,
                0,
            )
            .ok()?;
        }
        Some(fd)
    }

    /// The parent of directory `dir`, unless `dir` is SOURCE itself.
    fn parent_within_source(&self, dir: OwnedFd) -> Option<OwnedFd> {
        let root = self.inodes.root()?;
        let st = sys::stat_fd(dir.as_fd()).ok()?;
        if st.st_dev == root.dev && st.st_ino == root.ino {
            return None;
        }
        sys::openat(dir.as_fd(), b"..", libc::O_PATH | libc::O_DIRECTORY, 0).ok()
    }

    /// The shown name of backing entry `name` of the directory open as `dir`: from the cached
    /// index when the kernel knows the directory, else from a fresh listing.
    fn shown_in(&self, dir: &OwnedFd, name: &[u8]) -> Option<Vec<u8>> {
        let st = sys::stat_fd(dir.as_fd()).ok()?;
        if let Some(inode) = self.inodes.find(st.st_dev, st.st_ino) {
            let idx = self.dir_index(&inode, false).ok()?;
            return idx.index.shown(name).map(<[u8]>::to_vec);
        }
        let fd = sys::open_dir(dir.as_fd()).ok()?;
        let listing = Listing::read(fd.as_fd()).ok()?;
        let index = crate::mapping::DirIndex::build(&self.config.mapper, listing.names());
        index.shown(name).map(<[u8]>::to_vec)
    }

    /// Looks up a client's name: a literal hit costs one stat and no allocation; the mapped
    /// view is consulted only on a miss.
    fn do_lookup(&self, parent: INodeNo, name: &OsStr) -> Res<(Arc<Inode>, libc::stat)> {
        let parent = self.inode(parent)?;
        let shown = self.check_name(&parent, name)?;
        match self.inodes.lookup(&parent, &shown, self.open_first()) {
            Err(e) if e.code() == libc::ENOENT && self.config.mapper.normalizes() => {
                match self.mapped_after_miss(&parent, &shown)? {
                    Some(b) => self.inodes.lookup(&parent, &b, self.open_first()),
                    None => Err(e),
                }
            }
            r => r,
        }
    }

    fn do_setattr(&self, ino: INodeNo, ch: Changes) -> Res<FileAttr> {
        let Changes {
            mode,
            uid,
            gid,
            size,
            atime,
            mtime,
            fh,
            kill_setid,
        } = ch;
        let inode = self.inode(ino)?;
        if mode.is_some() || uid.is_some() || gid.is_some() || size.is_some() {
            self.writable()?;
        }
        let path_fd = inode.fd()?;
        if kill_setid && inode.fmt == libc::S_IFREG {
            self.writable()?;
            sys::kill_setid(path_fd.as_fd())?;
        }
        if let Some(mode) = mode {
            if inode.is_symlink() {
                return Err(Errno::EOPNOTSUPP);
            }
            sys::chmod_fd(path_fd.as_fd(), mode & 0o7777)?;
        }
        if uid.is_some() || gid.is_some() {
            sys::chown_fd(path_fd.as_fd(), uid.unwrap_or(NO_ID), gid.unwrap_or(NO_ID))?;
        }
        if let Some(size) = size {
            match fh.and_then(|fh| self.handles.get(fh.0)) {
                Some(h) => sys::ftruncate(h.fd(), size)?,
                None => {
                    if inode.is_dir() {
                        return Err(Errno::EISDIR);
                    }
                    if inode.fmt != libc::S_IFREG {
                        return Err(Errno::EINVAL);
                    }
                    let fd = sys::reopen(path_fd.as_fd(), libc::O_WRONLY)?;
                    sys::ftruncate(fd.as_fd(), size)?;
                }
            }
        }
        if atime.is_some() || mtime.is_some() {
            self.writable()?;
            let times = [timespec(atime), timespec(mtime)];
            sys::utimens_fd(path_fd.as_fd(), &times, inode.is_symlink())?;
        }
        let st = sys::stat_fd(path_fd.as_fd())?;
        Ok(self.attr(inode.id, &st))
    }

    /// Whether a change this caller makes to a file's contents clears its set-ID bits, as the
    /// kernel clears them for callers without CAP_FSETID (FUSE_HANDLE_KILLPRIV_V2 hands the
    /// job to the daemon). The request carries no capabilities, so root stands for CAP_FSETID.
    fn kills_setid(req: &Request) -> bool {
        req.uid() != 0
    }

    /// Opens the backing file of `inode` for a client's open; returns the fd and the flags it
    /// was opened with.
    fn do_open(&self, inode: &Inode, flags: i32) -> Res<(OwnedFd, i32)> {
        if inode.is_symlink() {
            return Err(Errno::ELOOP);
        }
        // Never truncate in OPEN: the kernel refuses a running program (ETXTBSY) only after
        // OPEN returns, then truncates with a SETATTR. FUSE_ATOMIC_O_TRUNC is not asked for,
        // so O_TRUNC should not arrive here; it is dropped in case a kernel sends it anyway.
        let flags = flags & !libc::O_TRUNC;
        let acc = flags & libc::O_ACCMODE;
        if acc != libc::O_RDONLY && self.config.read_only {
            return Err(Errno::EROFS);
        }
        let wanted = self.backing_flags(flags);
        let shared = self.shared_open_flags(inode, wanted);
        if shared != wanted {
            if let Ok(fd) = sys::reopen(inode.fd()?.as_fd(), shared) {
                return Ok((fd, shared));
            }
        }
        match sys::reopen(inode.fd()?.as_fd(), wanted) {
            // Writeback wanted read access the caller may not have: open as asked.
            Err(e) if e.code() == libc::EACCES && acc == libc::O_WRONLY => {
                let flags = flags & !libc::O_NOCTTY;
                sys::reopen(inode.fd()?.as_fd(), flags).map(|fd| (fd, flags))
            }
            r => r.map(|fd| (fd, wanted)),
        }
    }

    fn xattr_name(name: &OsStr) -> Res<std::ffi::CString> {
        std::ffi::CString::new(name.as_bytes()).map_err(|_| Errno::EINVAL)
    }

    fn reply_xattr(size: u32, reply: ReplyXattr, f: impl FnOnce(&mut [u8]) -> Res<usize>) {
        if size == 0 {
            match f(&mut []) {
                Ok(n) => reply.size(n as u32),
                Err(e) => reply.error(e),
            }
        } else {
            let mut buf = vec![0u8; size as usize];
            match f(&mut buf) {
                Ok(n) => reply.data(&buf[..n.min(buf.len())]),
                Err(e) => reply.error(e),
            }
        }
    }
}

/// What a setattr request changes.
struct Changes {
    mode: Option<u32>,
    uid: Option<u32>,
    gid: Option<u32>,
    size: Option<u64>,
    atime: Option<TimeOrNow>,
    mtime: Option<TimeOrNow>,
    fh: Option<FileHandle>,
    /// Clear set-ID bits along with the size change (an unprivileged truncate).
    kill_setid: bool,
}

fn time(sec: i64, nsec: i64) -> SystemTime {
    let nsec = u32::try_from(nsec).unwrap_or(0).min(999_999_999);
    if sec >= 0 {
        UNIX_EPOCH + Duration::new(sec as u64, nsec)
    } else {
        UNIX_EPOCH - Duration::from_secs(sec.unsigned_abs()) + Duration::from_nanos(nsec.into())
    }
}

fn timespec(t: Option<TimeOrNow>) -> libc::timespec {
    match t {
        None => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
        Some(TimeOrNow::Now) => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_NOW,
        },
        Some(TimeOrNow::SpecificTime(t)) => match t.duration_since(UNIX_EPOCH) {
            Ok(d) => libc::timespec {
                tv_sec: d.as_secs() as libc::time_t,
                tv_nsec: d.subsec_nanos().into(),
            },
            Err(e) => {
                let d = e.duration();
                let mut sec = -(d.as_secs() as i64);
                let mut nsec = i64::from(d.subsec_nanos());
                if nsec > 0 {
                    sec -= 1;
                    nsec = 1_000_000_000 - nsec;
                }
                libc::timespec {
                    tv_sec: sec,
                    tv_nsec: nsec,
                }
            }
        },
    }
}

fn kind(mode: u32) -> FileType {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => FileType::Directory,
        libc::S_IFLNK => FileType::Symlink,
        libc::S_IFIFO => FileType::NamedPipe,
        libc::S_IFSOCK => FileType::Socket,
        libc::S_IFCHR => FileType::CharDevice,
        libc::S_IFBLK => FileType::BlockDevice,
        _ => FileType::RegularFile,
    }
}

fn dtype_kind(d: u8) -> FileType {
    match d {
        libc::DT_DIR => FileType::Directory,
        libc::DT_LNK => FileType::Symlink,
        libc::DT_FIFO => FileType::NamedPipe,
        libc::DT_SOCK => FileType::Socket,
        libc::DT_CHR => FileType::CharDevice,
        libc::DT_BLK => FileType::BlockDevice,
        _ => FileType::RegularFile,
    }
}

fn negative_attr() -> FileAttr {
    FileAttr {
        ino: INodeNo(0),
        size: 0,
        blocks: 0,
        atime: UNIX_EPOCH,
        mtime: UNIX_EPOCH,
        ctime: UNIX_EPOCH,
        crtime: UNIX_EPOCH,
        kind: FileType::RegularFile,
        perm: 0,
        nlink: 0,
        uid: 0,
        gid: 0,
        rdev: 0,
        blksize: 0,
        flags: 0,
    }
}

fn os(b: &[u8]) -> &OsStr {
    OsStr::from_bytes(b)
}

impl Filesystem for Utf8Fs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        let caps = config.capabilities();
        if self.config.passthrough && caps.contains(InitFlags::FUSE_PASSTHROUGH) {
            if config.add_capabilities(InitFlags::FUSE_PASSTHROUGH).is_ok()
                && config.set_max_stack_depth(1).is_ok()
            {
                self.passthrough.store(true, Ordering::Relaxed);
            }
        } else if self.config.passthrough {
            info!(
                "kernel passthrough not offered by the kernel; reading and writing in the daemon"
            );
        }
        let wanted = InitFlags::FUSE_DO_READDIRPLUS
            | InitFlags::FUSE_READDIRPLUS_AUTO
            | InitFlags::FUSE_PARALLEL_DIROPS
            | InitFlags::FUSE_HANDLE_KILLPRIV_V2;
        let _ = config.add_capabilities(caps & wanted);
        let cache = &self.config.cache;
        if cache.auto_cache
            && caps.contains(InitFlags::FUSE_AUTO_INVAL_DATA)
            && config
                .add_capabilities(InitFlags::FUSE_AUTO_INVAL_DATA)
                .is_ok()
        {
            self.auto_dir_cache.store(true, Ordering::Relaxed);
        }
        let passthrough = self.passthrough.load(Ordering::Relaxed);
        if cache.writeback
            && !passthrough
            && caps.contains(InitFlags::FUSE_WRITEBACK_CACHE)
            && config
                .add_capabilities(InitFlags::FUSE_WRITEBACK_CACHE)
                .is_ok()
        {
            self.writeback.store(true, Ordering::Relaxed);
        }
        let _ = config.set_max_write(1 << 20);
        Ok(())
    }

    fn destroy(&mut self) {
        let hidden = self.stats.hidden_names();
        if hidden > 0 {
            warn!("{hidden} malformed names were hidden from clients");
        }
        let logged = self.stats.malformed_logged();
        if logged > hidden {
            info!(
                "{} malformed names were shown or passed through",
                logged - hidden
            );
        }
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.do_lookup(parent, name) {
            Ok((inode, st)) => self.reply_entry(reply, &inode, &st),
            Err(e) if e.code() == libc::ENOENT && !self.config.cache.negative_timeout.is_zero() => {
                let t = self.config.cache.negative_timeout;
                reply.entry_with_ttls(&t, &t, &negative_attr(), Generation(0));
            }
            Err(e) => reply.error(e),
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.inodes.forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        let r = (|| {
            let inode = self.inode(ino)?;
            let st = match fh.and_then(|fh| self.handles.get(fh.0)) {
                Some(h) if !inode.is_dir() => sys::stat_fd(h.fd())?,
                _ => sys::stat_fd(inode.fd()?.as_fd())?,
            };
            Ok::<_, Errno>(self.attr(inode.id, &st))
        })();
        match r {
            Ok(a) => reply.attr(&self.config.cache.attr_timeout, &a),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let ch = Changes {
            mode,
            uid,
            gid,
            size,
            atime,
            mtime,
            fh,
            // A request that changes nothing is the kernel asking to clear set-ID bits: before
            // an unprivileged write (FUSE_HANDLE_KILLPRIV_V2), or for chown(f, -1, -1).
            kill_setid: (size.is_some() && Self::kills_setid(req))
                || (mode, uid, gid, size, atime, mtime) == (None, None, None, None, None, None),
        };
        match self.do_setattr(ino, ch) {
            Ok(a) => reply.attr(&self.config.cache.attr_timeout, &a),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let r = self
            .inode(ino)
            .and_then(|i| sys::readlink_fd(i.fd()?.as_fd()).map(|t| self.map_target(&i, t)));
        match r {
            Ok(t) => reply.data(&t),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let r = (|| {
            self.writable()?;
            let parent = self.inode(parent)?;
            let name = &*self.new_name(&parent, name)?;
            sys::clear_thread_umask();
            sys::mknodat(parent.fd()?.as_fd(), name, mode, u64::from(rdev))?;
            self.finish_new(req, &parent, name, mode)
        })();
        match r {
            Ok((inode, st)) => self.reply_entry(reply, &inode, &st),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        let r = (|| {
            self.writable()?;
            let parent = self.inode(parent)?;
            let name = &*self.new_name(&parent, name)?;
            sys::clear_thread_umask();
            sys::mkdirat(parent.fd()?.as_fd(), name, mode)?;
            self.finish_new(req, &parent, name, mode | libc::S_IFDIR)
        })();
        match r {
            Ok((inode, st)) => self.reply_entry(reply, &inode, &st),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = (|| {
            self.writable()?;
            let parent = self.inode(parent)?;
            let b = self.resolve(&parent, name)?;
            sys::unlinkat(parent.fd()?.as_fd(), &b, 0)?;
            parent.dir_changed();
            Ok::<_, Errno>(())
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = (|| {
            self.writable()?;
            let parent = self.inode(parent)?;
            let b = self.resolve(&parent, name)?;
            sys::unlinkat(parent.fd()?.as_fd(), &b, libc::AT_REMOVEDIR)?;
            parent.dir_changed();
            Ok::<_, Errno>(())
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let r = (|| {
            self.writable()?;
            let parent = self.inode(parent)?;
            let name = &*self.new_name(&parent, link_name)?;
            let target = target.as_os_str().as_bytes();
            for comp in target.split(|&b| b == b'/') {
                if comp.is_empty() || comp == b"." || comp == b".." {
                    continue;
                }
                self.check_name(&parent, os(comp))?;
            }
            sys::clear_thread_umask();
            sys::symlinkat(target, parent.fd()?.as_fd(), name)?;
            self.finish_new(req, &parent, name, libc::S_IFLNK | 0o777)
        })();
        match r {
            Ok((inode, st)) => self.reply_entry(reply, &inode, &st),
            Err(e) => reply.error(e),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let r = (|| {
            self.writable()?;
            let parent = self.inode(parent)?;
            let newparent = self.inode(newparent)?;
            let old = self.resolve(&parent, name)?;
            let new = self.check_name(&newparent, newname)?;
            self.check_hygiene(&newparent, &new)?;
            let new = match self.mapped_backing(&newparent, &new)? {
                Some(b) => Cow::Owned(b),
                None => new,
            };
            sys::renameat2(
                parent.fd()?.as_fd(),
                &old,
                newparent.fd()?.as_fd(),
                &new,
                flags.bits(),
            )?;
            parent.dir_changed();
            newparent.dir_changed();
            Ok::<_, Errno>(())
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let r = (|| {
            self.writable()?;
            let inode = self.inode(ino)?;
            let newparent = self.inode(newparent)?;
            let name = &*self.new_name(&newparent, newname)?;
            sys::link_fd(inode.fd()?.as_fd(), newparent.fd()?.as_fd(), name)?;
            newparent.dir_changed();
            self.inodes.lookup(&newparent, name, self.open_first())
        })();
        match r {
            Ok((inode, st)) => self.reply_entry(reply, &inode, &st),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let r = (|| {
            let inode = self.inode(ino)?;
            let (fd, fd_flags) = self.do_open(&inode, flags.0)?;
            let backing = self.backing_id(&inode, &fd, fd_flags, |f| reply.open_backing(f));
            Ok::<_, Errno>((inode, fd, backing))
        })();
        match r {
            Ok((inode, fd, backing)) => {
                let flags = self.file_open_flags(&inode, &fd, backing.is_some());
                let fh = self.handles.insert(Handle::new(fd, backing.clone()));
                match backing {
                    Some(b) => reply.opened_passthrough(FileHandle(fh), flags, &b),
                    None => reply.opened(FileHandle(fh), flags),
                }
            }
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let r = (|| {
            let h = self.handle(fh)?;
            let mut buf = vec![0u8; size as usize];
            let n = sys::pread(h.fd(), &mut buf, offset)?;
            buf.truncate(n);
            Ok::<_, Errno>(buf)
        })();
        match r {
            Ok(b) => reply.data(&b),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let r = self
            .writable()
            .and_then(|()| self.handle(fh))
            .and_then(|h| {
                if write_flags.contains(WriteFlags::FUSE_WRITE_KILL_SUIDGID) {
                    sys::kill_setid(h.fd())?;
                }
                sys::pwrite(h.fd(), data, offset)
            });
        match r {
            Ok(n) => reply.written(n as u32),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        match self.handle(fh).and_then(|h| sys::flush(h.fd())) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.handles.remove(fh.0);
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        match self.handle(fh).and_then(|h| sys::fsync(h.fd(), datasync)) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if self.handleless_dirs() {
            return reply.error(Errno::ENOSYS);
        }
        let r = self.inode(ino).and_then(|i| sys::open_dir(i.fd()?.as_fd()));
        match r {
            Ok(fd) => {
                let fh = self.handles.insert(Handle::new(fd, None));
                reply.opened(FileHandle(fh), self.dir_open_flags());
            }
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let (dir, cur) = match self.readdir_at(ino, fh, offset) {
            Ok(s) => s,
            Err(e) => return reply.error(e),
        };
        let snap = &cur.snap;
        for (i, e) in cur.rest() {
            if reply.add(
                INodeNo(e.ino),
                cur.offset(i),
                dtype_kind(e.dtype),
                os(snap.shown(e)),
            ) {
                break;
            }
        }
        cur.finish(&dir);
        reply.ok();
    }

    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let (dir, cur) = match self.readdir_at(ino, fh, offset) {
            Ok(s) => s,
            Err(e) => return reply.error(e),
        };
        let c = &self.config.cache;
        let snap = &cur.snap;
        let mut added = false;
        for (i, e) in cur.rest() {
            let name = snap.backing(e);
            let shown = os(snap.shown(e));
            let off = cur.offset(i);
            if name == b"." || name == b".." {
                // The kernel ignores the attributes of these and counts no reference.
                let mut a = negative_attr();
                a.ino = INodeNo(if name == b"." { dir.id } else { e.ino });
                a.kind = FileType::Directory;
                if reply.add(a.ino, off, shown, &Duration::ZERO, &a, Generation(0)) {
                    break;
                }
                added = true;
                continue;
            }
            let (inode, st) = match self.inodes.lookup(&dir, name, self.open_first()) {
                Ok(x) => x,
                // Gone since the listing was taken: leave it out.
                Err(e) if e.code() == libc::ENOENT => continue,
                // Out of descriptors or memory: leaving the entry out would make the listing
                // silently short. Fail the call, or end this batch so the next call retries.
                Err(e) if !added => return reply.error(e),
                Err(_) => break,
            };
            let attr = self.attr(inode.id, &st);
            if reply.add(attr.ino, off, shown, &c.entry_timeout, &attr, Generation(0)) {
                self.inodes.forget(inode.id, 1);
                break;
            }
            added = true;
        }
        cur.finish(&dir);
        reply.ok();
        self.inodes.balance();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.handles.remove(fh.0);
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let r = if fh.0 == 0 {
            // Opened without a handle (see handleless_dirs).
            self.inode(ino).and_then(|i| {
                let fd = sys::open_dir(i.fd()?.as_fd())?;
                sys::fsync(fd.as_fd(), datasync)
            })
        } else {
            self.handle(fh).and_then(|h| sys::fsync(h.fd(), datasync))
        };
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let r = self
            .inodes
            .root()
            .ok_or(Errno::ESTALE)
            .and_then(|r| sys::statvfs(r.fd()?.as_fd()));
        match r {
            Ok(s) => reply.statfs(
                s.f_blocks,
                s.f_bfree,
                s.f_bavail,
                s.f_files,
                s.f_ffree,
                s.f_bsize as u32,
                s.f_namemax as u32,
                s.f_frsize as u32,
            ),
            Err(e) => reply.error(e),
        }
    }

    fn setxattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        let r = (|| {
            self.writable()?;
            let inode = self.inode(ino)?;
            let name = Self::xattr_name(name)?;
            sys::xattr(inode.fd()?.as_fd(), sys::XattrOp::Set(&name, value, flags))
        })();
        match r {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        let inode = match self.inode(ino) {
            Ok(i) => i,
            Err(e) => return reply.error(e),
        };
        let name = match Self::xattr_name(name) {
            Ok(n) => n,
            Err(e) => return reply.error(e),
        };
        let name: &CStr = &name;
        Self::reply_xattr(size, reply, |buf| {
            sys::xattr(inode.fd()?.as_fd(), sys::XattrOp::Get(name, buf))
        });
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        let inode = match self.inode(ino) {
            Ok(i) => i,
            Err(e) => return reply.error(e),
        };
        Self::reply_xattr(size, reply, |buf| {
            sys::xattr(inode.fd()?.as_fd(), sys::XattrOp::List(buf))
        });
    }

    fn removexattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = (|| {
            self.writable()?;
            let inode = self.inode(ino)?;
            let name = Self::xattr_name(name)?;
            sys::xattr(inode.fd()?.as_fd(), sys::XattrOp::Remove(&name))
        })();
        match r {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn access(&self, _req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        let r = self.inode(ino).and_then(|i| {
            if mask.bits() & libc::W_OK != 0 && self.config.read_only {
                return Err(Errno::EROFS);
            }
            if i.is_symlink() {
                Ok(())
            } else {
                sys::access_fd(i.fd()?.as_fd(), mask.bits())
            }
        });
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let r = (|| {
            self.writable()?;
            let parent = self.inode(parent)?;
            let shown = self.check_name(&parent, name)?;
            if let Err(e) = self.check_hygiene(&parent, &shown) {
                // Opening an existing entry with O_CREAT is an open, not a new name.
                if sys::stat_at(parent.fd()?.as_fd(), &shown).is_err() {
                    return Err(e);
                }
                if flags & libc::O_EXCL != 0 {
                    return Err(Errno::EEXIST);
                }
            }
            let name: Cow<'_, [u8]> = match self.mapped_backing(&parent, &shown)? {
                Some(_) if flags & libc::O_EXCL != 0 => return Err(Errno::EEXIST),
                Some(b) => Cow::Owned(b),
                None => shown,
            };
            sys::clear_thread_umask();
            let wanted = self.backing_flags(flags | libc::O_CREAT | libc::O_NOFOLLOW);
            // A new file is opened read-write whatever the mode (the kernel checks no access
            // on the open that creates it), so that fd can serve as the passthrough backing.
            let shared = if self.passthrough.load(Ordering::Relaxed)
                && !self.config.read_only
                && wanted & Self::UNSHAREABLE == 0
            {
                (wanted & !libc::O_ACCMODE) | libc::O_RDWR
            } else {
                wanted
            };
            let dir_fd = parent.fd()?;
            let (fd, fd_flags) = match sys::openat(dir_fd.as_fd(), &name, shared, mode) {
                // An existing file the daemon may not read: open it as asked.
                Err(e) if e.code() == libc::EACCES && shared != wanted => {
                    (sys::openat(dir_fd.as_fd(), &name, wanted, mode)?, wanted)
                }
                r => (r?, shared),
            };
            let (inode, st) = self.finish_new(req, &parent, &name, mode)?;
            Ok::<_, Errno>((fd, fd_flags, inode, st))
        })();
        match r {
            Ok((fd, fd_flags, inode, st)) => {
                let backing = self.backing_id(&inode, &fd, fd_flags, |f| reply.open_backing(f));
                let attr = self.attr(inode.id, &st);
                let c = &self.config.cache;
                let flags = self.file_open_flags(&inode, &fd, backing.is_some());
                let fh = self.handles.insert(Handle::new(fd, backing.clone()));
                match backing {
                    Some(b) => reply.created_passthrough(
                        &c.entry_timeout,
                        &attr,
                        Generation(0),
                        FileHandle(fh),
                        flags,
                        &b,
                    ),
                    None => reply.created(
                        &c.entry_timeout,
                        &attr,
                        Generation(0),
                        FileHandle(fh),
                        flags,
                    ),
                }
                self.inodes.balance();
            }
            Err(e) => reply.error(e),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let r = self
            .writable()
            .and_then(|()| self.handle(fh))
            .and_then(|h| sys::fallocate(h.fd(), mode, offset, length));
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    /// No ioctl is passed through: every one is answered "not a terminal" (ENOTTY) at once.
    /// Each stdio `isatty` probe on an open file arrives here, so this must stay silent.
    fn ioctl(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: IoctlFlags,
        _cmd: u32,
        _in_data: &[u8],
        _out_size: u32,
        reply: ReplyIoctl,
    ) {
        reply.error(Errno::ENOTTY);
    }

    fn lseek(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: i64,
        whence: i32,
        reply: ReplyLseek,
    ) {
        match self
            .handle(fh)
            .and_then(|h| sys::lseek(h.fd(), offset, whence))
        {
            Ok(o) => reply.offset(o),
            Err(e) => reply.error(e),
        }
    }

    fn copy_file_range(
        &self,
        _req: &Request,
        _ino_in: INodeNo,
        fh_in: FileHandle,
        offset_in: u64,
        _ino_out: INodeNo,
        fh_out: FileHandle,
        offset_out: u64,
        len: u64,
        _flags: CopyFileRangeFlags,
        reply: ReplyWrite,
    ) {
        let r = (|| {
            self.writable()?;
            let hi = self.handle(fh_in)?;
            let ho = self.handle(fh_out)?;
            sys::copy_file_range(hi.fd(), offset_in, ho.fd(), offset_out, len.min(1 << 30))
        })();
        match r {
            Ok(n) => reply.written(u32::try_from(n).unwrap_or(u32::MAX)),
            Err(e) => reply.error(e),
        }
    }
}
