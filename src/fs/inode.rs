//! The inode table: one entry per backing object the kernel knows, each able to give an `O_PATH`
//! fd of its object.
//!
//! Node ids are the backing st_ino for objects on the source's device, so hard links keep one
//! st_ino through every name; objects on other devices (mounts inside the source), and a st_ino
//! that collides with the root's node id 1 or the synthetic range, get ids from a counter with the
//! top bit set.
//!
//! The kernel may know millions of inodes, far more than a process may hold fds. So the number of
//! inodes holding their `O_PATH` fd is kept within a budget ([`super::FsConfig::fd_budget`]): past
//! it, the fds of cold inodes (second-chance clock, one per shard) are closed after their file
//! handle (`name_to_handle_at`) is recorded, and [`Inode::fd`] reopens them on demand with
//! `open_by_handle_at`. An inode whose handle cannot be taken, on another mount, or with an open
//! passthrough id keeps its fd. Without `CAP_DAC_READ_SEARCH` or handle support nothing is evicted.
//!
//! While its fd is held, an object stays alive and its inode number cannot be reused. Once the fd
//! is closed, the object may be deleted and its number given to a new object: a lookup finding an
//! evicted inode with the same (dev, ino) compares file handles, which carry the generation. A
//! different handle marks the old inode stale (its requests answer `ESTALE`) and the new object
//! gets a synthetic id, so a node id never reaches another object.

use super::dir::DirCache;
use super::sys::{self, SysResult};
use fuser::{BackingId, Errno};
use log::warn;
use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

/// The root's node id, fixed by FUSE.
pub const ROOT_ID: u64 = 1;
const SYNTHETIC: u64 = 1 << 63;
const SHARDS: usize = 64;
/// `MAX_HANDLE_SZ` of the kernel.
const MAX_HANDLE: usize = 128;
/// The table is shrunk (and freed memory handed back) when it falls below half of its largest
/// size, if that was at least this many inodes.
const SHRINK_MIN: usize = 256;

/// An `O_PATH` fd held for an inode, counted in the table's held-fd count while it is open.
pub struct PathFd {
    fd: OwnedFd,
    held: Arc<AtomicUsize>,
}

impl AsFd for PathFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Drop for PathFd {
    fn drop(&mut self) {
        self.held.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A file handle as `name_to_handle_at` gives it: identifies an object (generation included)
/// without holding it open.
#[derive(PartialEq, Eq)]
struct FileHandle {
    kind: i32,
    bytes: Box<[u8]>,
}

#[repr(C)]
struct HandleBuf {
    head: libc::file_handle,
    bytes: [u8; MAX_HANDLE],
}

impl HandleBuf {
    fn new() -> HandleBuf {
        HandleBuf {
            head: libc::file_handle {
                handle_bytes: MAX_HANDLE as libc::c_uint,
                handle_type: 0,
                f_handle: [],
            },
            bytes: [0; MAX_HANDLE],
        }
    }
}

impl FileHandle {
    /// The handle and mount id of `name` in `dir` (`""` with `AT_EMPTY_PATH`: of `dir` itself),
    /// never following a symlink.
    fn of(dir: BorrowedFd<'_>, name: &[u8], flags: i32) -> SysResult<(FileHandle, i32)> {
        sys::with_cstr(name, |c| {
            let mut buf = HandleBuf::new();
            let mut mount_id: libc::c_int = 0;
            // SAFETY: valid fd, NUL-terminated name, a buffer of MAX_HANDLE bytes after the
            // header as handle_bytes says.
            let ret = unsafe {
                libc::name_to_handle_at(
                    dir.as_raw_fd(),
                    c.as_ptr(),
                    &mut buf.head,
                    &mut mount_id,
                    flags,
                )
            };
            if ret < 0 {
                return Err(sys::last_errno());
            }
            let len = (buf.head.handle_bytes as usize).min(MAX_HANDLE);
            let handle = FileHandle {
                kind: buf.head.handle_type,
                bytes: buf.bytes[..len].into(),
            };
            Ok((handle, mount_id))
        })
    }

    /// The handle of the object `fd` refers to.
    fn of_fd(fd: BorrowedFd<'_>) -> SysResult<(FileHandle, i32)> {
        FileHandle::of(fd, b"", libc::AT_EMPTY_PATH)
    }

    /// Opens the object as `O_PATH` (a symlink itself, not its target).
    fn open(&self, mount_fd: BorrowedFd<'_>) -> SysResult<OwnedFd> {
        open_handle(mount_fd, self.kind, &self.bytes)
    }
}

/// Opens as `O_PATH` (a symlink itself, not its target) the object that the handle of type
/// `kind` with `bytes` names; `mount_fd` is any real fd on the same filesystem.
pub(super) fn open_handle(mount_fd: BorrowedFd<'_>, kind: i32, bytes: &[u8]) -> SysResult<OwnedFd> {
    if bytes.len() > MAX_HANDLE {
        return Err(fuser::Errno::EINVAL);
    }
    let mut buf = HandleBuf::new();
    buf.head.handle_bytes = bytes.len() as libc::c_uint;
    buf.head.handle_type = kind;
    buf.bytes[..bytes.len()].copy_from_slice(bytes);
    // SAFETY: valid fd and a handle buffer holding handle_bytes bytes.
    let fd = unsafe {
        libc::open_by_handle_at(
            mount_fd.as_raw_fd(),
            &mut buf.head,
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(sys::last_errno());
    }
    // SAFETY: the kernel just returned this fd and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// What inodes share with their table: the held-fd count, the reopen means and the clocks.
struct Shared {
    /// `O_PATH` fds held now, the root's included.
    held: Arc<AtomicUsize>,
    /// A real fd of SOURCE for `open_by_handle_at`; `None` when fds are never evicted.
    mount_fd: Option<OwnedFd>,
    /// SOURCE's mount id: objects on other mounts keep their fd.
    mount_id: i32,
    /// Per shard, the node ids of inodes holding an fd, in second-chance clock order.
    clocks: Box<[Mutex<VecDeque<u64>>]>,
    /// A handle could not be taken (logged once).
    handle_failed: AtomicBool,
}

impl Shared {
    fn hold(self: &Arc<Shared>, fd: OwnedFd) -> Arc<PathFd> {
        self.held.fetch_add(1, Ordering::Relaxed);
        Arc::new(PathFd {
            fd,
            held: Arc::clone(&self.held),
        })
    }
}

fn shard_of(id: u64) -> usize {
    (id as usize ^ (id >> 32) as usize) % SHARDS
}

/// What eviction did with one inode.
enum Evicted {
    /// Its fd was closed.
    Yes,
    /// Not now (in use as a passthrough file): try again later.
    Later,
    /// Never: its handle cannot be taken or it is on another mount.
    Never,
}

/// One backing object the kernel holds a reference to.
pub struct Inode {
    /// The node id the kernel knows it by (also the st_ino it sees).
    pub id: u64,
    /// The `O_PATH | O_NOFOLLOW` fd of the backing object, while held.
    slot: RwLock<Option<Arc<PathFd>>>,
    /// Its file handle, taken when its fd is first evicted.
    handle: OnceLock<FileHandle>,
    /// Used since the clock hand last passed.
    referenced: AtomicBool,
    /// The object is gone: requests answer `ESTALE`.
    stale: AtomicBool,
    shared: Arc<Shared>,
    /// Backing device and inode number.
    pub dev: u64,
    /// Backing inode number.
    pub ino: u64,
    /// `S_IFMT` bits of the backing object (they never change for a given inode).
    pub fmt: u32,
    nlookup: AtomicU64,
    /// What only opened files and listed directories need, allocated on first use: most inodes
    /// the kernel holds are only looked up, and the table keeps one per inode it holds.
    extra: OnceLock<Box<Extra>>,
}

/// The part of an [`Inode`] that only opened files and listed directories need.
#[derive(Default)]
pub struct Extra {
    /// The cached mapped-name index and the listings of handle-less readers (directories).
    pub dir: DirCache,
    /// The kernel passthrough id shared by the opens of this file.
    pub backing: Mutex<Weak<BackingId>>,
    /// (mtime, mtime ns, size) of a regular file at its previous open: `cache=auto` keeps the
    /// page cache only when they have not changed since.
    pub opened: Mutex<Option<(i64, i64, i64)>>,
}

impl Inode {
    fn new(id: u64, fd: Arc<PathFd>, st: &libc::stat, shared: &Arc<Shared>) -> Inode {
        Inode {
            id,
            slot: RwLock::new(Some(fd)),
            handle: OnceLock::new(),
            referenced: AtomicBool::new(false),
            stale: AtomicBool::new(false),
            shared: Arc::clone(shared),
            dev: st.st_dev,
            ino: st.st_ino,
            fmt: st.st_mode & libc::S_IFMT,
            nlookup: AtomicU64::new(1),
            extra: OnceLock::new(),
        }
    }

    /// The per-open and per-listing state, allocated on the first call.
    pub fn extra(&self) -> &Extra {
        self.extra.get_or_init(Box::default)
    }

    /// The per-open and per-listing state if it was ever needed (never allocates).
    pub fn extra_if_any(&self) -> Option<&Extra> {
        self.extra.get().map(|e| &**e)
    }

    /// Drops the directory's cached index, if it has one: its entries changed.
    pub fn dir_changed(&self) {
        if let Some(e) = self.extra_if_any() {
            e.dir.invalidate();
        }
    }

    /// True while an open of this file holds the shared passthrough id.
    pub fn backing_in_use(&self) -> bool {
        self.extra_if_any()
            .is_some_and(|e| e.backing.lock().map_or(true, |b| b.strong_count() > 0))
    }

    /// The `O_PATH` fd, reopened from the file handle if it was evicted; `ESTALE` when the
    /// object is gone. Keep the result only for the request at hand.
    pub fn fd(&self) -> SysResult<Arc<PathFd>> {
        if let Some(fd) = &*self.slot.read().unwrap_or_else(poisoned) {
            if !self.referenced.load(Ordering::Relaxed) {
                self.referenced.store(true, Ordering::Relaxed);
            }
            return Ok(Arc::clone(fd));
        }
        self.reopen()
    }

    fn has_fd(&self) -> bool {
        self.slot.read().unwrap_or_else(poisoned).is_some()
    }

    fn reopen(&self) -> SysResult<Arc<PathFd>> {
        let mut slot = self.slot.write().unwrap_or_else(poisoned);
        if let Some(fd) = &*slot {
            return Ok(Arc::clone(fd));
        }
        if self.stale.load(Ordering::Relaxed) {
            return Err(Errno::ESTALE);
        }
        let (Some(handle), Some(mount_fd)) = (self.handle.get(), self.shared.mount_fd.as_ref())
        else {
            return Err(Errno::ESTALE);
        };
        let fd = handle.open(mount_fd.as_fd()).inspect_err(|e| {
            if e.code() == libc::ESTALE || e.code() == libc::ENOENT {
                self.stale.store(true, Ordering::Relaxed);
            }
        })?;
        let st = sys::stat_fd(fd.as_fd())?;
        if st.st_dev != self.dev || st.st_ino != self.ino || st.st_mode & libc::S_IFMT != self.fmt {
            self.stale.store(true, Ordering::Relaxed);
            return Err(Errno::ESTALE);
        }
        let fd = self.shared.hold(fd);
        *slot = Some(Arc::clone(&fd));
        drop(slot);
        self.shared.clocks[shard_of(self.id)]
            .lock()
            .unwrap_or_else(poisoned)
            .push_back(self.id);
        Ok(fd)
    }

    /// Closes the fd after recording the file handle that reopens it.
    fn evict(&self) -> Evicted {
        // Only try the locks: a request may hold them while it waits for the clock.
        if let Some(e) = self.extra_if_any() {
            match e.backing.try_lock() {
                Ok(b) if b.strong_count() == 0 => {}
                _ => return Evicted::Later,
            }
        }
        let Ok(mut slot) = self.slot.try_write() else {
            return Evicted::Later;
        };
        let Some(fd) = slot.as_ref() else {
            return Evicted::Never;
        };
        if self.handle.get().is_none() {
            match FileHandle::of_fd(fd.as_fd()) {
                Ok((h, mount_id)) if mount_id == self.shared.mount_id => {
                    let _ = self.handle.set(h);
                }
                Ok(_) => return Evicted::Never,
                Err(e) => {
                    if !self.shared.handle_failed.swap(true, Ordering::Relaxed) {
                        warn!("name_to_handle_at failed ({e:?}): such inodes keep their fd");
                    }
                    return Evicted::Never;
                }
            }
        }
        *slot = None;
        Evicted::Yes
    }

    /// True for a directory.
    pub fn is_dir(&self) -> bool {
        self.fmt == libc::S_IFDIR
    }

    /// True for a symlink.
    pub fn is_symlink(&self) -> bool {
        self.fmt == libc::S_IFLNK
    }
}

type Shard = RwLock<HashMap<u64, Arc<Inode>>>;

/// Node id → inode, sharded so that lookups of different inodes do not contend.
pub struct InodeTable {
    shards: Box<[Shard]>,
    /// (dev, ino) → synthetic id, for objects that cannot use their st_ino.
    synthetic: Mutex<HashMap<(u64, u64), u64>>,
    next_synthetic: AtomicU64,
    source_dev: u64,
    live: Arc<AtomicUsize>,
    /// The largest `live` since the table was last shrunk.
    high_water: AtomicUsize,
    shared: Arc<Shared>,
    /// At most this many inodes hold their fd (plus pinned ones and fds in use).
    budget: usize,
    /// Eviction runs when more fds than this are held: the budget, raised after a pass that
    /// could not get down to it (pinned inodes) so that requests do not rescan in vain.
    limit: AtomicUsize,
    /// One thread evicts at a time.
    evicting: AtomicBool,
    /// The shard the next eviction pass starts at.
    hand: AtomicUsize,
}

fn poisoned<T>(e: std::sync::PoisonError<T>) -> T {
    e.into_inner()
}

impl InodeTable {
    /// A table holding only the root, whose fd is `root` (an `O_PATH` directory fd). `live`
    /// counts inodes, `held` the `O_PATH` fds held; at most `budget` fds are held (about).
    pub fn new(
        root: OwnedFd,
        st: &libc::stat,
        live: Arc<AtomicUsize>,
        held: Arc<AtomicUsize>,
        budget: usize,
    ) -> InodeTable {
        let (mount_fd, mount_id) = if budget == usize::MAX {
            (None, 0)
        } else {
            match handles_work(root.as_fd()) {
                Ok((fd, id)) => (Some(fd), id),
                Err(e) => {
                    warn!(
                        "file handles unusable on SOURCE ({e:?}): every inode the kernel knows \
                         holds an fd"
                    );
                    (None, 0)
                }
            }
        };
        let shared = Arc::new(Shared {
            held,
            mount_fd,
            mount_id,
            clocks: (0..SHARDS).map(|_| Mutex::new(VecDeque::new())).collect(),
            handle_failed: AtomicBool::new(false),
        });
        let shards: Box<[Shard]> = (0..SHARDS).map(|_| RwLock::new(HashMap::new())).collect();
        let budget = budget.max(1);
        let table = InodeTable {
            shards,
            synthetic: Mutex::new(HashMap::new()),
            next_synthetic: AtomicU64::new(SYNTHETIC + 1),
            source_dev: st.st_dev,
            live,
            high_water: AtomicUsize::new(1),
            budget,
            limit: AtomicUsize::new(budget),
            evicting: AtomicBool::new(false),
            hand: AtomicUsize::new(0),
            shared,
        };
        let root = Inode::new(ROOT_ID, table.shared.hold(root), st, &table.shared);
        table
            .shard(ROOT_ID)
            .write()
            .unwrap_or_else(poisoned)
            .insert(ROOT_ID, Arc::new(root));
        table.live.fetch_add(1, Ordering::Relaxed);
        table
    }

    fn shard(&self, id: u64) -> &Shard {
        &self.shards[shard_of(id)]
    }

    /// The inode with node id `id`. Closes cold fds first when far over the budget (reopened
    /// inodes add fds between the replies that balance the table).
    pub fn get(&self, id: u64) -> Option<Arc<Inode>> {
        let far = self
            .limit
            .load(Ordering::Relaxed)
            .saturating_add(self.budget / 16);
        if self.shared.held.load(Ordering::Relaxed) > far {
            self.balance();
        }
        self.peek(id)
    }

    fn peek(&self, id: u64) -> Option<Arc<Inode>> {
        self.shard(id)
            .read()
            .unwrap_or_else(poisoned)
            .get(&id)
            .cloned()
    }

    /// The root inode.
    pub fn root(&self) -> Option<Arc<Inode>> {
        self.peek(ROOT_ID)
    }

    /// The inode of backing object (`dev`, `ino`) if the kernel holds it under its st_ino
    /// (objects with synthetic ids are not found). An evicted inode found here may be stale:
    /// its [`Inode::fd`] then answers `ESTALE`.
    pub fn find(&self, dev: u64, ino: u64) -> Option<Arc<Inode>> {
        if let Some(root) = self.root().filter(|r| r.dev == dev && r.ino == ino) {
            return Some(root);
        }
        if !self.uses_st_ino(dev, ino) {
            return None;
        }
        self.peek(ino).filter(|i| i.dev == dev && i.ino == ino)
    }

    fn uses_st_ino(&self, dev: u64, ino: u64) -> bool {
        dev == self.source_dev && ino != ROOT_ID && ino & SYNTHETIC == 0 && ino != 0
    }

    /// Looks `name` up in `parent` and counts one kernel reference on the result.
    /// Returns the inode and fresh attributes.
    ///
    /// `open_first`: when the kernel keeps names for long, a lookup is nearly always of an
    /// object it does not hold, which needs an `O_PATH` fd anyway, so one `openat` + `fstat`
    /// (one path walk) beats `fstatat` first and `openat` after (two walks). With short
    /// timeouts most lookups revalidate inodes already held: `fstatat` alone.
    pub fn lookup(
        &self,
        parent: &Inode,
        name: &[u8],
        open_first: bool,
    ) -> SysResult<(Arc<Inode>, libc::stat)> {
        let pfd = parent.fd()?;
        if open_first {
            let fd = sys::open_path(pfd.as_fd(), name)?;
            let st = sys::stat_fd(fd.as_fd())?;
            return Ok((self.insert(fd, &st), st));
        }
        let st = sys::stat_at(pfd.as_fd(), name)?;
        if self.uses_st_ino(st.st_dev, st.st_ino) {
            if let Some(inode) = self
                .peek(st.st_ino)
                .filter(|i| i.dev == st.st_dev && i.ino == st.st_ino)
            {
                let same = same_object(&inode, || {
                    FileHandle::of(pfd.as_fd(), name, 0).ok().map(|(h, _)| h)
                });
                if same && self.acquire(&inode) {
                    return Ok((inode, st));
                }
            }
        }
        let fd = sys::open_path(pfd.as_fd(), name)?;
        let st = sys::stat_fd(fd.as_fd())?;
        Ok((self.insert(fd, &st), st))
    }

    /// Counts one kernel reference on `inode` if it is still in the table.
    fn acquire(&self, inode: &Arc<Inode>) -> bool {
        let shard = self.shard(inode.id).read().unwrap_or_else(poisoned);
        match shard.get(&inode.id) {
            // The increment happens under the shard's read lock; forget decrements and removes
            // under its write lock, so an inode found here cannot be dropped concurrently.
            Some(i) if Arc::ptr_eq(i, inode) => {
                i.nlookup.fetch_add(1, Ordering::Relaxed);
                true
            }
            _ => false,
        }
    }

    /// Counts one kernel reference on the inode whose backing object `fd` is (just created).
    pub fn insert(&self, fd: OwnedFd, st: &libc::stat) -> Arc<Inode> {
        let fd = if self.uses_st_ino(st.st_dev, st.st_ino) {
            match self.acquire_or_insert(st.st_ino, fd, st) {
                Ok(inode) => return inode,
                // A stale inode of a deleted object holds this number: use a synthetic id.
                Err(fd) => fd,
            }
        } else {
            fd
        };
        let mut synth = self.synthetic.lock().unwrap_or_else(poisoned);
        let key = (st.st_dev, st.st_ino);
        let fd = match synth.get(&key) {
            Some(&id) => match self.acquire_or_insert(id, fd, st) {
                Ok(inode) => return inode,
                Err(fd) => fd,
            },
            None => fd,
        };
        let id = self.next_synthetic.fetch_add(1, Ordering::Relaxed);
        synth.insert(key, id);
        let fd = self.shared.hold(fd);
        self.insert_new(id, fd, st)
    }

    /// The inode `id` with one more reference if it is this object, else a new inode for it;
    /// gives `fd` back when `id` is taken by another object.
    fn acquire_or_insert(
        &self,
        id: u64,
        fd: OwnedFd,
        st: &libc::stat,
    ) -> Result<Arc<Inode>, OwnedFd> {
        {
            let shard = self.shard(id).write().unwrap_or_else(poisoned);
            if let Some(inode) = shard.get(&id) {
                let same = inode.dev == st.st_dev
                    && inode.ino == st.st_ino
                    && same_object(inode, || FileHandle::of_fd(fd.as_fd()).ok().map(|(h, _)| h));
                if !same {
                    return Err(fd);
                }
                inode.nlookup.fetch_add(1, Ordering::Relaxed);
                return Ok(Arc::clone(inode));
            }
        }
        let fd = self.shared.hold(fd);
        Ok(self.insert_new(id, fd, st))
    }

    /// Inserts a new inode under `id`, unless another thread just did for the same object.
    fn insert_new(&self, id: u64, fd: Arc<PathFd>, st: &libc::stat) -> Arc<Inode> {
        let mut shard = self.shard(id).write().unwrap_or_else(poisoned);
        if let Some(inode) = shard.get(&id) {
            // `fd` keeps the object alive, so an inode with its number is this object.
            if inode.dev == st.st_dev && inode.ino == st.st_ino {
                inode.nlookup.fetch_add(1, Ordering::Relaxed);
                return Arc::clone(inode);
            }
        }
        let inode = Arc::new(Inode::new(id, fd, st, &self.shared));
        if shard.insert(id, Arc::clone(&inode)).is_none() {
            let live = self.live.fetch_add(1, Ordering::Relaxed) + 1;
            self.high_water.fetch_max(live, Ordering::Relaxed);
        }
        if self.shared.mount_fd.is_some() {
            let mut clock = self.shared.clocks[shard_of(id)]
                .lock()
                .unwrap_or_else(poisoned);
            clock.push_back(id);
            // Forgotten ids pile up in the clock while nothing is evicted: drop them.
            if clock.len() > 2 * shard.len() + 64 {
                clock.retain(|id| shard.get(id).is_some_and(|i| i.has_fd()));
            }
        }
        drop(shard);
        inode
    }

    /// Closes cold fds while more are held than the budget allows. Inserting never does it
    /// itself: call this after the reply that made the inode known is sent, so that the
    /// `name_to_handle_at` and `close` of eviction stay off the client's wait.
    pub fn balance(&self) {
        if self.shared.held.load(Ordering::Relaxed) <= self.limit.load(Ordering::Relaxed) {
            return;
        }
        if self.evicting.swap(true, Ordering::Acquire) {
            return;
        }
        // Down to a little below the budget, so that one pass serves many new inodes.
        let target = self.budget - self.budget / 64;
        let start = self.hand.fetch_add(1, Ordering::Relaxed);
        for s in 0..SHARDS {
            if self.shared.held.load(Ordering::Relaxed) <= target {
                break;
            }
            self.evict_shard((start + s) % SHARDS, target);
        }
        let held = self.shared.held.load(Ordering::Relaxed);
        let limit = if held <= self.budget {
            self.budget
        } else {
            held + self.budget / 8 + 16
        };
        self.limit.store(limit, Ordering::Relaxed);
        self.evicting.store(false, Ordering::Release);
    }

    fn evict_shard(&self, s: usize, target: usize) {
        let shard = self.shards[s].read().unwrap_or_else(poisoned);
        let mut clock = self.shared.clocks[s].lock().unwrap_or_else(poisoned);
        let mut turns = 2 * clock.len();
        while turns > 0 && self.shared.held.load(Ordering::Relaxed) > target {
            turns -= 1;
            let Some(id) = clock.pop_front() else {
                break;
            };
            let Some(inode) = shard.get(&id) else {
                continue;
            };
            if id == ROOT_ID {
                continue;
            }
            if inode.referenced.swap(false, Ordering::Relaxed) {
                clock.push_back(id);
                continue;
            }
            match inode.evict() {
                Evicted::Yes | Evicted::Never => {}
                Evicted::Later => clock.push_back(id),
            }
        }
    }

    /// Drops `n` kernel references to `id`; the inode (and its fd) goes at zero.
    pub fn forget(&self, id: u64, n: u64) {
        if id == ROOT_ID {
            return;
        }
        let synthetic = id & SYNTHETIC != 0;
        let mut synth = synthetic.then(|| self.synthetic.lock().unwrap_or_else(poisoned));
        let mut shard = self.shard(id).write().unwrap_or_else(poisoned);
        let Some(inode) = shard.get(&id) else {
            return;
        };
        let prev = inode.nlookup.load(Ordering::Relaxed);
        let left = prev.saturating_sub(n);
        inode.nlookup.store(left, Ordering::Relaxed);
        if left > 0 {
            return;
        }
        let Some(inode) = shard.remove(&id) else {
            return;
        };
        let live = self.live.fetch_sub(1, Ordering::Relaxed) - 1;
        if let Some(synth) = synth.as_mut() {
            let key = (inode.dev, inode.ino);
            if synth.get(&key) == Some(&id) {
                synth.remove(&key);
            }
        }
        drop(shard);
        drop(synth);
        let high = self.high_water.load(Ordering::Relaxed);
        // Also once when only the root is left, so that memory returns near its baseline.
        if ((high >= SHRINK_MIN && live < high / 2) || (live == 1 && high > 1))
            && self
                .high_water
                .compare_exchange(high, live.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.shrink();
        }
    }

    /// Gives back the memory of forgotten inodes: shard capacity, clock entries, and the
    /// allocator's free pages.
    fn shrink(&self) {
        for (s, shard) in self.shards.iter().enumerate() {
            let mut shard = shard.write().unwrap_or_else(poisoned);
            shard.shrink_to_fit();
            let mut clock = self.shared.clocks[s].lock().unwrap_or_else(poisoned);
            clock.retain(|id| shard.get(id).is_some_and(|i| i.has_fd()));
            clock.shrink_to_fit();
        }
        self.synthetic
            .lock()
            .unwrap_or_else(poisoned)
            .shrink_to_fit();
        // SAFETY: malloc_trim only returns free heap memory to the system.
        unsafe {
            libc::malloc_trim(0);
        }
        log::debug!(
            "inode table shrunk: {} inodes, {} O_PATH fds",
            self.live.load(Ordering::Relaxed),
            self.shared.held.load(Ordering::Relaxed)
        );
    }
}

/// True if `inode` (same dev and ino as the object looked at) is that object: certainly while
/// it holds its fd (the object cannot have been deleted, so its number cannot have been reused);
/// after eviction, if the file handles agree. A different handle marks `inode` stale.
fn same_object(inode: &Inode, handle_of_new: impl FnOnce() -> Option<FileHandle>) -> bool {
    if inode.has_fd() {
        return true;
    }
    if inode.stale.load(Ordering::Relaxed) {
        return false;
    }
    match (inode.handle.get(), handle_of_new()) {
        (Some(old), Some(new)) if *old == new => true,
        (Some(_), Some(_)) => {
            inode.stale.store(true, Ordering::Relaxed);
            false
        }
        _ => false,
    }
}

/// A real fd of SOURCE and its mount id if file handles can be taken and opened there.
fn handles_work(root: BorrowedFd<'_>) -> SysResult<(OwnedFd, i32)> {
    let mount_fd = sys::openat(root, b".", libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
    let (handle, mount_id) = FileHandle::of_fd(root)?;
    handle.open(mount_fd.as_fd())?;
    Ok((mount_fd, mount_id))
}
