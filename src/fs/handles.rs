//! Open file and directory handles, keyed by the fh the kernel passes back.

use super::dir::Snapshot;
use fuser::BackingId;
use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

const SHARDS: usize = 16;

type Shard = RwLock<HashMap<u64, Arc<Handle>>>;

/// What one fh stands for.
pub struct Handle {
    /// The backing file or directory, opened for real.
    pub fd: OwnedFd,
    /// The kernel passthrough id this open holds (shared with other opens of the inode);
    /// kept for its `Drop`, which closes the id in the kernel after the last release.
    #[expect(dead_code, reason = "held for its Drop")]
    pub backing: Option<Arc<BackingId>>,
    /// A directory's listing, taken at the first readdir from offset 0.
    pub snapshot: Mutex<Option<Arc<Snapshot>>>,
}

impl Handle {
    /// A handle for an open file or directory.
    pub fn new(fd: OwnedFd, backing: Option<Arc<BackingId>>) -> Handle {
        Handle {
            fd,
            backing,
            snapshot: Mutex::new(None),
        }
    }

    /// The open fd.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// fh → handle.
pub struct Handles {
    shards: Box<[Shard]>,
    next: AtomicU64,
    open: Arc<AtomicUsize>,
}

impl Handles {
    /// An empty table counting its entries in `open`.
    pub fn new(open: Arc<AtomicUsize>) -> Handles {
        Handles {
            shards: (0..SHARDS).map(|_| RwLock::new(HashMap::new())).collect(),
            next: AtomicU64::new(1),
            open,
        }
    }

    fn shard(&self, fh: u64) -> &Shard {
        &self.shards[fh as usize % SHARDS]
    }

    /// Stores `h` and returns its fh.
    pub fn insert(&self, h: Handle) -> u64 {
        let fh = self.next.fetch_add(1, Ordering::Relaxed);
        self.shard(fh)
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(fh, Arc::new(h));
        self.open.fetch_add(1, Ordering::Relaxed);
        fh
    }

    /// The handle `fh`.
    pub fn get(&self, fh: u64) -> Option<Arc<Handle>> {
        self.shard(fh)
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&fh)
            .cloned()
    }

    /// Removes the handle `fh` (release); its fd closes when the last user is done.
    pub fn remove(&self, fh: u64) -> Option<Arc<Handle>> {
        let h = self
            .shard(fh)
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&fh);
        if h.is_some() {
            self.open.fetch_sub(1, Ordering::Relaxed);
        }
        h
    }
}
