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

/// The cache slot of a directory inode.
#[derive(Default)]
pub struct DirCache {
    slot: Mutex<Option<Arc<CachedIndex>>>,
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
