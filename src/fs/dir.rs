//! Directory listings: the snapshot a directory handle serves readdir from, and the cached
//! mapped-name index a directory inode keeps for lookups in normalizing modes.

use super::sys::{self, SysResult};
use crate::mapping::{DirIndex, Mapper};
use std::os::fd::BorrowedFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// One entry of a [`Snapshot`].
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    off: u32,
    len: u16,
    shown_off: u32,
    shown_len: u16,
    /// Backing inode number (`d_ino`).
    pub ino: u64,
    /// Backing `d_type`.
    pub dtype: u8,
}

/// A directory listing held by one open directory handle: every name in one arena.
#[derive(Default, Debug)]
pub struct Snapshot {
    arena: Vec<u8>,
    entries: Vec<Entry>,
}

impl Snapshot {
    /// The entries, `.` and `..` first when the backing fs lists them.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The backing name of an entry.
    pub fn backing(&self, e: &Entry) -> &[u8] {
        &self.arena[e.off as usize..e.off as usize + e.len as usize]
    }

    /// The name clients see for an entry.
    pub fn shown(&self, e: &Entry) -> &[u8] {
        &self.arena[e.shown_off as usize..e.shown_off as usize + e.shown_len as usize]
    }
}

/// Every backing entry of a directory, with its inode number and type, in one arena.
pub struct Listing {
    arena: Vec<u8>,
    /// (offset, length, d_ino, d_type)
    raw: Vec<(u32, u16, u64, u8)>,
}

impl Listing {
    /// Reads the directory open as `fd` from its start.
    pub fn read(fd: BorrowedFd<'_>) -> SysResult<Listing> {
        sys::lseek(fd, 0, libc::SEEK_SET)?;
        let mut buf = vec![0u8; 64 * 1024];
        let mut arena = Vec::new();
        let mut raw = Vec::new();
        loop {
            let n = sys::getdents(fd, &mut buf)?;
            if n == 0 {
                break;
            }
            let mut pos = 0;
            // struct linux_dirent64 { u64 d_ino; i64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
            while pos + 19 <= n {
                let rec = &buf[pos..n];
                let ino = u64::from_ne_bytes(rec[0..8].try_into().unwrap_or([0; 8]));
                let reclen = u16::from_ne_bytes([rec[16], rec[17]]) as usize;
                if reclen < 19 || reclen > rec.len() {
                    break;
                }
                let dtype = rec[18];
                let name_area = &rec[19..reclen];
                let len = name_area
                    .iter()
                    .position(|&b| b == 0)
                    .unwrap_or(name_area.len());
                let name = &name_area[..len];
                let off = u32::try_from(arena.len()).map_err(|_| fuser::Errno::ENOMEM)?;
                arena.extend_from_slice(name);
                raw.push((off, len as u16, ino, dtype));
                pos += reclen;
            }
        }
        Ok(Listing { arena, raw })
    }

    /// Every backing name, `.` and `..` left out.
    pub fn names(&self) -> impl Iterator<Item = &[u8]> {
        self.raw
            .iter()
            .map(|&(o, l, _, _)| &self.arena[o as usize..o as usize + l as usize])
            .filter(|n| *n != b"." && *n != b"..")
    }

    /// Turns the listing into a snapshot of what clients see: names `shown` maps to `None`
    /// are left out and passed to `hidden`.
    pub fn into_snapshot(
        self,
        mut shown: impl FnMut(&[u8]) -> Option<Option<Vec<u8>>>,
        mut hidden: impl FnMut(&[u8]),
    ) -> Snapshot {
        let Listing { mut arena, raw } = self;
        let mut entries = Vec::with_capacity(raw.len());
        for (off, len, ino, dtype) in raw {
            let name = &arena[off as usize..off as usize + len as usize];
            let (shown_off, shown_len) = if name == b"." || name == b".." {
                (off, len)
            } else {
                match shown(name) {
                    None => {
                        hidden(name);
                        continue;
                    }
                    Some(None) => (off, len),
                    Some(Some(s)) => {
                        let so = arena.len() as u32;
                        let sl = s.len() as u16;
                        arena.extend_from_slice(&s);
                        (so, sl)
                    }
                }
            };
            entries.push(Entry {
                off,
                len,
                shown_off,
                shown_len,
                ino,
                dtype,
            });
        }
        Snapshot { arena, entries }
    }
}

/// The mapped-name index of a directory as last built, with the directory times it reflects.
pub struct CachedIndex {
    /// The index.
    pub index: DirIndex,
    mtime: (i64, i64),
    ctime: (i64, i64),
    /// The directory changed so shortly before the build that a later change may carry the
    /// same timestamps: a miss must rebuild.
    pub unsure: bool,
}

/// The cache slot of a directory inode, and the listings read without a handle.
#[derive(Default)]
pub struct DirCache {
    slot: Mutex<Option<Arc<CachedIndex>>>,
    streams: Mutex<Streams>,
}

/// Listings served to readers that have no directory handle (the kernel opens directories
/// without asking when `opendir` answers ENOSYS). Each reader that starts at offset 0 gets its
/// own listing, told apart by the epoch in the high 32 bits of the offsets it is given.
#[derive(Default)]
struct Streams {
    last: u32,
    open: Vec<(u32, Arc<Snapshot>)>,
}

/// Listings kept per directory for handle-less readers; a reader that stops early leaves its
/// listing behind until this many newer ones push it out.
const STREAMS: usize = 4;

/// The readdir offset of the entry at `index` in the listing of `epoch`.
pub fn stream_offset(epoch: u32, index: usize) -> u64 {
    (u64::from(epoch) << 32) | (index as u64 + 1)
}

/// The epoch and the index to resume at of a handle-less readdir offset.
pub fn split_offset(offset: u64) -> (u32, usize) {
    ((offset >> 32) as u32, (offset & 0xffff_ffff) as usize)
}

/// How recent a change must be for coarse timestamps to hide a following one.
const COARSE: Duration = Duration::from_millis(10);

fn times(st: &libc::stat) -> ((i64, i64), (i64, i64)) {
    (
        (st.st_mtime, st.st_mtime_nsec),
        (st.st_ctime, st.st_ctime_nsec),
    )
}

impl DirCache {
    /// The cached index if it still matches the directory's times in `st`.
    pub fn get(&self, st: &libc::stat) -> Option<Arc<CachedIndex>> {
        let slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        let c = slot.as_ref()?;
        let (m, ct) = times(st);
        (c.mtime == m && c.ctime == ct).then(|| Arc::clone(c))
    }

    /// The listing a handle-less reader of `epoch` is part way through.
    pub fn stream(&self, epoch: u32) -> Option<Arc<Snapshot>> {
        let st = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        st.open
            .iter()
            .find(|(e, _)| *e == epoch)
            .map(|(_, s)| Arc::clone(s))
    }

    /// Keeps `snap` for a new handle-less reader and returns its epoch (never 0).
    pub fn begin_stream(&self, snap: Arc<Snapshot>) -> u32 {
        let mut st = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        st.last = st.last.checked_add(1).unwrap_or(1);
        let epoch = st.last;
        if st.open.len() >= STREAMS {
            st.open.remove(0);
        }
        st.open.push((epoch, snap));
        epoch
    }

    /// Drops the listing of a reader that reached its end.
    pub fn end_stream(&self, epoch: u32) {
        let mut st = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        st.open.retain(|(e, _)| *e != epoch);
    }

    /// Forgets the cached index (after a change made through the mount).
    pub fn invalidate(&self) {
        *self.slot.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Stores an index built from a listing taken after `st` was read.
    pub fn store(&self, mapper: &Mapper, names: &Listing, st: &libc::stat) -> Arc<CachedIndex> {
        let index = DirIndex::build(mapper, names.names());
        let (mtime, ctime) = times(st);
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        let (latest, latest_ns) = if ctime >= mtime { ctime } else { mtime };
        let changed = Duration::new(
            u64::try_from(latest).unwrap_or(0),
            u32::try_from(latest_ns).unwrap_or(0),
        );
        let unsure = now.saturating_sub(changed) <= COARSE;
        let c = Arc::new(CachedIndex {
            index,
            mtime,
            ctime,
            unsure,
        });
        *self.slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(&c));
        c
    }
}
