//! The inode table: one entry per backing object the kernel knows, each holding an `O_PATH` fd.
//!
//! Node ids are the backing st_ino for objects on the source's device, so hard links keep one
//! st_ino through every name; objects on other devices (mounts inside the source), and a st_ino
//! that collides with the root's node id 1 or the synthetic range, get ids from a counter with the
//! top bit set. Holding the fd keeps the backing inode alive, so its number cannot be reused by
//! another object while the kernel may still send requests for it.

use super::dir::DirCache;
use super::sys::{self, SysResult};
use fuser::BackingId;
use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

/// The root's node id, fixed by FUSE.
pub const ROOT_ID: u64 = 1;
const SYNTHETIC: u64 = 1 << 63;
const SHARDS: usize = 64;

/// One backing object the kernel holds a reference to.
pub struct Inode {
    /// The node id the kernel knows it by (also the st_ino it sees).
    pub id: u64,
    /// `O_PATH | O_NOFOLLOW` fd of the backing object.
    pub fd: OwnedFd,
    /// Backing device and inode number.
    pub dev: u64,
    /// Backing inode number.
    pub ino: u64,
    /// `S_IFMT` bits of the backing object (they never change for a given inode).
    pub fmt: u32,
    nlookup: AtomicU64,
    /// The cached mapped-name index (directories in normalizing modes).
    pub dir: DirCache,
    /// The kernel passthrough id shared by the opens of this file.
    pub backing: Mutex<Weak<BackingId>>,
}

impl Inode {
    /// The `O_PATH` fd.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
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
}

fn poisoned<T>(e: std::sync::PoisonError<T>) -> T {
    e.into_inner()
}

impl InodeTable {
    /// A table holding only the root, whose fd is `root` (an `O_PATH` directory fd).
    pub fn new(root: OwnedFd, st: &libc::stat, live: Arc<AtomicUsize>) -> InodeTable {
        let shards: Box<[Shard]> = (0..SHARDS).map(|_| RwLock::new(HashMap::new())).collect();
        let table = InodeTable {
            shards,
            synthetic: Mutex::new(HashMap::new()),
            next_synthetic: AtomicU64::new(SYNTHETIC + 1),
            source_dev: st.st_dev,
            live,
        };
        let root = Inode {
            id: ROOT_ID,
            fd: root,
            dev: st.st_dev,
            ino: st.st_ino,
            fmt: st.st_mode & libc::S_IFMT,
            nlookup: AtomicU64::new(1),
            dir: DirCache::default(),
            backing: Mutex::new(Weak::new()),
        };
        table
            .shard(ROOT_ID)
            .write()
            .unwrap_or_else(poisoned)
            .insert(ROOT_ID, Arc::new(root));
        table.live.fetch_add(1, Ordering::Relaxed);
        table
    }

    fn shard(&self, id: u64) -> &Shard {
        &self.shards[(id as usize ^ (id >> 32) as usize) % SHARDS]
    }

    /// The inode with node id `id`.
    pub fn get(&self, id: u64) -> Option<Arc<Inode>> {
        self.shard(id)
            .read()
            .unwrap_or_else(poisoned)
            .get(&id)
            .cloned()
    }

    /// The root inode.
    pub fn root(&self) -> Option<Arc<Inode>> {
        self.get(ROOT_ID)
    }

    fn uses_st_ino(&self, dev: u64, ino: u64) -> bool {
        dev == self.source_dev && ino != ROOT_ID && ino & SYNTHETIC == 0 && ino != 0
    }

    /// Looks `name` up in `parent` and counts one kernel reference on the result.
    /// Returns the inode and fresh attributes.
    pub fn lookup(&self, parent: &Inode, name: &[u8]) -> SysResult<(Arc<Inode>, libc::stat)> {
        let st = sys::stat_at(parent.fd(), name)?;
        if self.uses_st_ino(st.st_dev, st.st_ino) {
            if let Some(inode) = self.acquire_existing(st.st_ino, st.st_dev, st.st_ino) {
                return Ok((inode, st));
            }
        }
        let fd = sys::open_path(parent.fd(), name)?;
        let st = sys::stat_fd(fd.as_fd())?;
        Ok((self.insert(fd, &st), st))
    }

    /// Counts one kernel reference on the inode whose backing object `fd` is (just created).
    pub fn insert(&self, fd: OwnedFd, st: &libc::stat) -> Arc<Inode> {
        if self.uses_st_ino(st.st_dev, st.st_ino) {
            return self.acquire_or_insert(st.st_ino, fd, st);
        }
        let mut synth = self.synthetic.lock().unwrap_or_else(poisoned);
        let key = (st.st_dev, st.st_ino);
        let id = match synth.get(&key) {
            Some(&id) => id,
            None => {
                let id = self.next_synthetic.fetch_add(1, Ordering::Relaxed);
                synth.insert(key, id);
                id
            }
        };
        self.acquire_or_insert(id, fd, st)
    }

    fn acquire_existing(&self, id: u64, dev: u64, ino: u64) -> Option<Arc<Inode>> {
        let shard = self.shard(id).read().unwrap_or_else(poisoned);
        let inode = shard.get(&id)?;
        if inode.dev != dev || inode.ino != ino {
            return None;
        }
        // The increment happens under the shard's read lock; forget decrements and removes
        // under its write lock, so an inode found here cannot be dropped concurrently.
        inode.nlookup.fetch_add(1, Ordering::Relaxed);
        Some(Arc::clone(inode))
    }

    fn acquire_or_insert(&self, id: u64, fd: OwnedFd, st: &libc::stat) -> Arc<Inode> {
        if let Some(inode) = self.acquire_existing(id, st.st_dev, st.st_ino) {
            return inode;
        }
        let mut shard = self.shard(id).write().unwrap_or_else(poisoned);
        if let Some(inode) = shard.get(&id) {
            if inode.dev == st.st_dev && inode.ino == st.st_ino {
                inode.nlookup.fetch_add(1, Ordering::Relaxed);
                return Arc::clone(inode);
            }
        }
        let inode = Arc::new(Inode {
            id,
            fd,
            dev: st.st_dev,
            ino: st.st_ino,
            fmt: st.st_mode & libc::S_IFMT,
            nlookup: AtomicU64::new(1),
            dir: DirCache::default(),
            backing: Mutex::new(Weak::new()),
        });
        if shard.insert(id, Arc::clone(&inode)).is_none() {
            self.live.fetch_add(1, Ordering::Relaxed);
        }
        inode
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
        if left == 0 {
            if let Some(inode) = shard.remove(&id) {
                self.live.fetch_sub(1, Ordering::Relaxed);
                if let Some(synth) = synth.as_mut() {
                    synth.remove(&(inode.dev, inode.ino));
                }
            }
        }
    }
}
