//! Changes made to SOURCE outside the mount. With `cache=auto` the daemon watches the
//! filesystem holding SOURCE with fanotify and tells the kernel to drop what it cached of
//! every name and inode another process changed, so that names and attributes can be cached
//! for long and still never show stale state for more than the moment an event takes.
//!
//! Changes the daemon makes itself (its worker threads) are skipped: the kernel already knows
//! them. Changes clients make through kernel passthrough (writes) come from the client's thread
//! and are handled like any other: dropping cached attributes is harmless.

use super::inode::{open_handle, InodeTable};
use super::sys::{self, SysResult};
use fuser::{INodeNo, Notifier};
use log::{debug, info, warn};
use std::cell::Cell;
use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;

/// Events that change what the kernel may have cached: names in a directory, and an object's
/// attributes or contents.
const EVENTS: u64 = libc::FAN_CREATE
    | libc::FAN_DELETE
    | libc::FAN_MOVED_FROM
    | libc::FAN_MOVED_TO
    | libc::FAN_ATTRIB
    | libc::FAN_MODIFY
    | libc::FAN_ONDIR;

/// How long the watch lets events gather after handling some, in milliseconds: the longest an
/// outside change can wait before the kernel hears of it while SOURCE is busy.
const BATCH_MS: i32 = 10;

/// A fanotify group marking SOURCE's filesystem, not yet serving events.
///
/// Dropping a removed or renamed name from the kernel's cache takes the directory's lock. If
/// the daemon is killed (kill -9) at the moment a client holds that lock waiting for a reply
/// that will never come, the watch thread cannot end, and neither can the daemon until the
/// connection is aborted (`echo 1 > /sys/fs/fuse/connections/N/abort`, or `umount -f`).
pub struct Watch {
    fan: OwnedFd,
    /// A real (not `O_PATH`) fd of SOURCE for `open_by_handle_at`.
    mount_fd: OwnedFd,
    inodes: Arc<InodeTable>,
    workers: Arc<Workers>,
}

/// The running watch: stops and joins its thread when dropped.
pub struct Watching {
    stop: OwnedFd,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Watching {
    fn drop(&mut self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a live buffer to an eventfd.
        unsafe { libc::write(self.stop.as_raw_fd(), one.as_ptr().cast(), one.len()) };
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn os_err(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

impl Watch {
    /// Marks the filesystem holding `source`, a directory opened for reading (needs
    /// CAP_SYS_ADMIN, Linux 5.9 or later, and a filesystem with file handles); the error says
    /// why watching is not possible. `source` also serves `open_by_handle_at`.
    pub fn new(
        source: OwnedFd,
        inodes: Arc<InodeTable>,
        workers: Arc<Workers>,
    ) -> io::Result<Watch> {
        let flags = libc::FAN_CLASS_NOTIF
            | libc::FAN_CLOEXEC
            | libc::FAN_UNLIMITED_QUEUE
            | libc::FAN_REPORT_FID
            | libc::FAN_REPORT_DFID_NAME
            | libc::FAN_REPORT_TID;
        // SAFETY: plain syscall; the fd returned is owned below.
        let fd = unsafe { libc::fanotify_init(flags, (libc::O_RDONLY | libc::O_CLOEXEC) as u32) };
        if fd < 0 {
            return Err(os_err("fanotify_init"));
        }
        // SAFETY: fresh fd owned by nobody else.
        let fan = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: valid fanotify fd and directory fd; a null path marks the directory itself.
        let r = unsafe {
            libc::fanotify_mark(
                fan.as_raw_fd(),
                libc::FAN_MARK_ADD | libc::FAN_MARK_FILESYSTEM,
                EVENTS,
                source.as_raw_fd(),
                std::ptr::null(),
            )
        };
        if r < 0 {
            return Err(os_err("fanotify_mark"));
        }
        Ok(Watch {
            fan,
            mount_fd: source,
            inodes,
            workers,
        })
    }

    /// Serves events on a thread of its own, sending invalidations through `notifier`, until
    /// the returned [`Watching`] is dropped.
    pub fn spawn(self, notifier: Notifier) -> io::Result<Watching> {
        // SAFETY: plain syscall; the fd returned is owned below.
        let e = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if e < 0 {
            return Err(os_err("eventfd"));
        }
        // SAFETY: fresh fd owned by nobody else.
        let stop = unsafe { OwnedFd::from_raw_fd(e) };
        let stop_rx = stop.try_clone()?;
        // The thread starts with every signal blocked, so that signals meant for the daemon
        // (SIGTERM, SIGINT) reach the thread that waits for them instead of ending the process.
        // SAFETY: sigset_t is plain data, filled by sigfillset; pthread_sigmask only reads
        // `all` and writes `old`.
        let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        unsafe {
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old);
        }
        let thread = std::thread::Builder::new()
            .name("watch".into())
            .spawn(move || self.serve(&notifier, stop_rx.as_fd()));
        // SAFETY: restores the mask saved above.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
        let thread = thread?;
        Ok(Watching {
            stop,
            thread: Some(thread),
        })
    }

    fn serve(self, notifier: &Notifier, stop: BorrowedFd<'_>) {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: self.fan.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: stop.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: two initialized pollfds.
            let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
            if r < 0 {
                if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                warn!("watching SOURCE stopped: {}", io::Error::last_os_error());
                return;
            }
            if fds[1].revents != 0 {
                return;
            }
            // SAFETY: reads into a live buffer of the given length.
            let n = unsafe { libc::read(self.fan.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN)) {
                    continue;
                }
                warn!("watching SOURCE stopped: {e}");
                return;
            }
            for ev in Events::new(&buf[..n as usize]) {
                self.handle(&ev, notifier);
            }
            // Let events gather before reading again: the daemon's own changes raise events
            // too, and waking this thread for each one would cost every request a context
            // switch. An outside change still shows within BATCH_MS.
            let mut stop_fd = [libc::pollfd {
                fd: stop.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }];
            // SAFETY: one initialized pollfd.
            if unsafe { libc::poll(stop_fd.as_mut_ptr(), 1, BATCH_MS) } > 0 {
                return;
            }
        }
    }

    fn handle(&self, ev: &Event<'_>, notifier: &Notifier) {
        if ev.mask & libc::FAN_Q_OVERFLOW != 0 {
            warn!("too many changes in SOURCE at once: some cached names and attributes may stay stale until they expire");
            return;
        }
        if self.workers.contains(ev.tid) {
            return;
        }
        let entry = libc::FAN_CREATE | libc::FAN_DELETE | libc::FAN_MOVED_FROM | libc::FAN_MOVED_TO;
        if let Some((dir, name)) = ev.dir_name.filter(|_| ev.mask & entry != 0) {
            if let Some(id) = self.resolve(dir) {
                debug!(
                    "outside change in directory {id}: {:?}",
                    OsStr::from_bytes(name)
                );
                // A name that went away (or was replaced) may have a cached dentry. New names
                // need nothing: missing names are not cached under cache=auto. This call waits
                // for the directory's lock; see `Watch` for what that means for kill -9.
                let gone = libc::FAN_DELETE | libc::FAN_MOVED_FROM | libc::FAN_MOVED_TO;
                if ev.mask & gone != 0 && !name.is_empty() && name != b"." {
                    let _ = notifier.inval_entry(INodeNo(id), OsStr::from_bytes(name));
                }
                // The directory's attributes; its cached listing goes with its old mtime.
                let _ = notifier.inval_inode(INodeNo(id), -1, 0);
            }
        }
        if ev.mask & (libc::FAN_ATTRIB | libc::FAN_MODIFY) != 0 {
            // Attributes only (offset -1): with FUSE_AUTO_INVAL_DATA the kernel drops cached
            // pages itself when it sees the new mtime, and no page lock is waited for here.
            if let Some(id) = ev.object.and_then(|h| self.resolve(h)) {
                let _ = notifier.inval_inode(INodeNo(id), -1, 0);
            }
        }
    }

    /// The node id of the object a file handle names, if the kernel may hold it.
    fn resolve(&self, handle: &[u8]) -> Option<u64> {
        let fd = open_reported(self.mount_fd.as_fd(), handle).ok()?;
        let st = sys::stat_fd(fd.as_fd()).ok()?;
        self.inodes.find(st.st_dev, st.st_ino).map(|i| i.id)
    }
}

/// Opens the object of a `struct file_handle` as an event reports it: `handle_bytes` (u32),
/// `handle_type` (i32), then the handle.
fn open_reported(mount_fd: BorrowedFd<'_>, raw: &[u8]) -> SysResult<OwnedFd> {
    let (Some(len), Some(kind)) = (u32_at(raw, 0), u32_at(raw, 4)) else {
        return Err(fuser::Errno::EINVAL);
    };
    let bytes = raw.get(8..8 + len as usize).ok_or(fuser::Errno::EINVAL)?;
    open_handle(mount_fd, kind as i32, bytes)
}

/// The thread ids of the daemon's request workers: changes they make to SOURCE are the
/// mount's own, and the watch skips their events. Workers enlist at their first request, so
/// the set is complete before any of their changes can be reported, and stays so after they
/// die (an event read after a crash must not be taken for an outside change).
#[derive(Default)]
pub struct Workers {
    ids: RwLock<Vec<i32>>,
}

impl Workers {
    /// Records the calling thread as a worker of this filesystem (once per thread).
    pub fn enlist(&self) {
        thread_local! {
            static ENLISTED: Cell<usize> = const { Cell::new(0) };
        }
        let me = self as *const Workers as usize;
        if ENLISTED.get() == me {
            return;
        }
        ENLISTED.set(me);
        // SAFETY: gettid takes no arguments and cannot fail.
        let tid = unsafe { libc::gettid() };
        let mut ids = self.ids.write().unwrap_or_else(|e| e.into_inner());
        if !ids.contains(&tid) {
            ids.push(tid);
        }
    }

    fn contains(&self, tid: i32) -> bool {
        self.ids
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&tid)
    }
}

/// One event: what happened, which thread did it, the directory and name it touched, and the
/// object itself.
struct Event<'a> {
    mask: u64,
    tid: i32,
    /// File handle of the directory, and the entry's name (empty for the directory itself).
    dir_name: Option<(&'a [u8], &'a [u8])>,
    /// File handle of the object.
    object: Option<&'a [u8]>,
}

/// The events in one read of the fanotify fd.
struct Events<'a> {
    buf: &'a [u8],
}

impl<'a> Events<'a> {
    fn new(buf: &'a [u8]) -> Events<'a> {
        Events { buf }
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

impl<'a> Iterator for Events<'a> {
    type Item = Event<'a>;

    fn next(&mut self) -> Option<Event<'a>> {
        // struct fanotify_event_metadata { u32 event_len; u8 vers; u8 reserved;
        //   u16 metadata_len; u64 mask; i32 fd; i32 pid; } = 24 bytes
        let b = self.buf;
        let len = u32_at(b, 0)? as usize;
        let meta_len = u16_at(b, 6)? as usize;
        if len < 24 || len > b.len() || meta_len < 24 || meta_len > len {
            self.buf = &[];
            return None;
        }
        let mask = u64_at(b, 8)?;
        let tid = u32_at(b, 20)? as i32;
        let fd = u32_at(b, 16)? as i32;
        if fd >= 0 {
            // Not expected with FAN_REPORT_FID, but an fd must not leak.
            // SAFETY: the kernel gave this fd to us.
            drop(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let mut ev = Event {
            mask,
            tid,
            dir_name: None,
            object: None,
        };
        // Info records: struct fanotify_event_info_header { u8 info_type; u8 pad; u16 len; }
        // then for fid records __kernel_fsid_t (8 bytes) and a struct file_handle, followed
        // by a NUL-terminated name for DFID_NAME.
        let mut at = meta_len;
        while at + 4 <= len {
            let kind = b[at];
            let rec_len = u16_at(b, at + 2).unwrap_or(0) as usize;
            if rec_len < 4 || at + rec_len > len {
                break;
            }
            let rec = &b[at..at + rec_len];
            if rec.len() >= 4 + 8 + 8 {
                let fh = &rec[12..];
                let hbytes = u32_at(fh, 0).unwrap_or(0) as usize;
                let hend = (8 + hbytes).min(fh.len());
                match kind {
                    libc::FAN_EVENT_INFO_TYPE_FID => ev.object = Some(&fh[..hend]),
                    libc::FAN_EVENT_INFO_TYPE_DFID_NAME => {
                        let rest = &fh[hend..];
                        let nul = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
                        ev.dir_name = Some((&fh[..hend], &rest[..nul]));
                    }
                    libc::FAN_EVENT_INFO_TYPE_DFID => ev.dir_name = Some((&fh[..hend], &[])),
                    _ => {}
                }
            }
            at += rec_len;
        }
        self.buf = &b[len..];
        Some(ev)
    }
}

/// Logs once why SOURCE is not watched.
pub fn log_unwatched(why: &io::Error) {
    info!(
        "not watching SOURCE for outside changes ({why}); names and attributes are cached for 1 s"
    );
}
