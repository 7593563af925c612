//! `utf8fs SOURCE MOUNTPOINT [-f] [-d] [-o OPT[,OPT…]]...`: mount a strict-UTF-8 view of SOURCE.
//!
//! Exit status: 0 mounted (or `--help`/`--version`), 1 the mount failed (bad SOURCE or
//! MOUNTPOINT, already mounted, the kernel refused), 2 the command line cannot be understood.
//!
//! Without `-f` the process forks before any thread or mount exists; the child creates a new
//! session, mounts, and tells the parent through a pipe, so the parent returns only once the mount
//! answers, and start-up errors still reach the terminal. The detached daemon's stdio goes to
//! /dev/null; run with `-f` to see its log.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use fuser::{Config, MountOption, Session, SessionACL};
use std::sync::Arc;
use utf8fs::fs::{FsStats, Utf8Fs, Watching};
use utf8fs::options::{self, FuseOptions, Invocation, MountArgs};
use utf8fs::policy::Escaped;

/// Exit status when the mount fails.
const EXIT_FAILURE: u8 = 1;
/// Exit status for a command line that cannot be understood.
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let mut args = match options::parse(&args) {
        Ok(Invocation::Help) => {
            print!("{}", options::HELP);
            return ExitCode::SUCCESS;
        }
        Ok(Invocation::Version) => {
            println!("utf8fs {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Ok(Invocation::Mount(args)) => args,
        Err(e) => {
            eprintln!("utf8fs: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let level = if args.debug { "debug" } else { "warn" };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level)).init();
    match mount(&mut args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("utf8fs: {message}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

/// Checks the paths, then mounts in the foreground or through a detached child.
fn mount(args: &mut MountArgs) -> Result<(), String> {
    let (source, mountpoint) = check_paths(&args.source, &args.mountpoint)?;
    args.fs.source = source.clone();
    args.source = source;
    args.mountpoint = mountpoint;
    raise_fd_limit();
    args.fs.fd_budget = utf8fs::fs::default_fd_budget();
    if args.foreground {
        let (session, stats, _watching) = start(args)?;
        serve(session, stats, args)
    } else {
        daemonize(args)
    }
}

/// Raises the open-file limit as far as allowed: the more fds, the more inodes keep their
/// `O_PATH` fd (half the limit, see `FsConfig::fd_budget`) instead of reopening it from a file
/// handle. Root may raise the hard limit up to `fs.nr_open`.
fn raise_fd_limit() {
    let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse::<libc::rlim_t>().ok());
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) != 0 {
            return;
        }
        if let Some(max) = nr_open {
            if max > rl.rlim_max {
                let wanted = libc::rlimit {
                    rlim_cur: max,
                    rlim_max: max,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) == 0 {
                    return;
                }
            }
        }
        rl.rlim_cur = rl.rlim_max;
        if libc::setrlimit(libc::RLIMIT_NOFILE, &rl) != 0 {
            log::warn!(
                "cannot raise the open-file limit: {}",
                io::Error::last_os_error()
            );
        }
    }
}

/// The most fd table slots reserved at start: 65,536 slots are about 0.5 MiB of kernel memory.
const FD_TABLE_RESERVE: usize = 1 << 16;

/// Grows this process's fd table now, while it has one thread, to the open-file limit (at most
/// [`FD_TABLE_RESERVE`] slots): the inodes' fd budget is half of it, open files the rest. The kernel doubles the table as fds are opened, and
/// once the process has threads each doubling waits for an RCU grace period
/// (`expand_fdtable`): a new daemon's first 10,000 lookups took 0.42 s instead of 0.34 s here,
/// the difference being those waits. Growing it past that size later costs the same waits,
/// but only a few for hundreds of thousands of inodes.
fn reserve_fd_table() {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct passed.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return;
    }
    let slots = usize::try_from(rl.rlim_cur)
        .unwrap_or(usize::MAX)
        .min(FD_TABLE_RESERVE);
    let Ok(top) = libc::c_int::try_from(slots.saturating_sub(1)) else {
        return;
    };
    if top < 1024 {
        return;
    }
    // SAFETY: F_DUPFD takes the lowest free fd at or above `top`, so no open fd is replaced;
    // the copy is closed at once and only the table's size remains.
    unsafe {
        let fd = libc::fcntl(libc::STDERR_FILENO, libc::F_DUPFD_CLOEXEC, top);
        if fd >= 0 {
            libc::close(fd);
        }
    }
}

/// Resolves SOURCE and MOUNTPOINT and refuses what cannot work: missing paths, non-directories,
/// a MOUNTPOINT already carrying a FUSE filesystem (this one under any `subtype=`, or another),
/// one inside the other.
fn check_paths(source: &Path, mountpoint: &Path) -> Result<(PathBuf, PathBuf), String> {
    let src = directory(source)?;
    let mnt = match directory(mountpoint) {
        Ok(mnt) => mnt,
        Err(e) => {
            // A live FUSE mount may not answer stat the way a directory does, and a dead one
            // answers ENOTCONN: say what it is rather than why stat failed.
            if let Some(parent_path) = resolve_without_last(mountpoint) {
                if let Some(fstype) = fuse_mount_at(&parent_path) {
                    return Err(already_mounted(mountpoint, &fstype));
                }
            }
            return Err(e);
        }
    };
    if let Some(fstype) = fuse_mount_at(&mnt) {
        return Err(already_mounted(mountpoint, &fstype));
    }
    if src == mnt {
        return Err(format!(
            "{}: SOURCE and MOUNTPOINT are the same directory",
            shown(mountpoint)
        ));
    }
    if src.starts_with(&mnt) {
        return Err(format!(
            "{}: SOURCE is inside MOUNTPOINT {}",
            shown(source),
            shown(mountpoint)
        ));
    }
    if mnt.starts_with(&src) {
        return Err(format!(
            "{}: MOUNTPOINT is inside SOURCE {}",
            shown(mountpoint),
            shown(source)
        ));
    }
    Ok((src, mnt))
}

/// The canonical path of `path`, which must be a directory.
fn directory(path: &Path) -> Result<PathBuf, String> {
    let canonical = path
        .canonicalize()
        .map_err(|e| format!("{}: {}", shown(path), reason(&e)))?;
    let meta = canonical
        .metadata()
        .map_err(|e| format!("{}: {}", shown(path), reason(&e)))?;
    if meta.is_dir() {
        Ok(canonical)
    } else {
        Err(format!("{}: Not a directory", shown(path)))
    }
}

/// The canonical parent of `path` joined with its last component, for paths that cannot be
/// resolved themselves (a dead mount point).
fn resolve_without_last(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Some(parent.canonicalize().ok()?.join(name))
}

fn already_mounted(mountpoint: &Path, fstype: &str) -> String {
    format!(
        "{}: already a FUSE mount point ({}; unmount it with fusermount3 -u)",
        shown(mountpoint),
        Escaped(fstype.as_bytes())
    )
}

/// The type (`fuse.utf8fs`, `fuse.bindfs`, `fuseblk`, …) of a FUSE mount that
/// /proc/self/mountinfo lists at `path`, whatever its subtype or fsname: mounting over one hides
/// it, and over a dead one cannot work.
fn fuse_mount_at(path: &Path) -> Option<String> {
    let info = std::fs::read("/proc/self/mountinfo").ok()?;
    let is_fuse = |fstype: &[u8]| {
        [&b"fuse"[..], b"fuseblk"]
            .iter()
            .any(|t| fstype == *t || fstype.strip_prefix(*t).is_some_and(|r| r.starts_with(b".")))
    };
    info.split(|&b| b == b'\n').find_map(|line| {
        let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
        let dash = fields.iter().position(|f| *f == b"-")?;
        let fstype = fields.get(dash + 1)?;
        let at = fields.get(4)?;
        (unescape_mountinfo(at) == path.as_os_str().as_bytes() && is_fuse(fstype))
            .then(|| String::from_utf8_lossy(&unescape_mountinfo(fstype)).into_owned())
    })
}

/// Undoes the octal escapes (`\040` for space, …) of a mountinfo field.
fn unescape_mountinfo(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (field[i], octal) {
            (b'\\', Some(d)) => {
                let value = d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0'));
                out.push(value as u8);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// Mounts: opens the backing directory and creates the FUSE session (the kernel handshake is
/// done when this returns, so requests queue until `serve` reads them).
/// A mounted session, its counters, and the watch of SOURCE for outside changes (if any; it
/// stops when dropped).
type Started = (Session<Utf8Fs>, Arc<FsStats>, Option<Watching>);

fn start(args: &MountArgs) -> Result<Started, String> {
    reserve_fd_table();
    let mut fs = Utf8Fs::new(args.fs.clone())
        .map_err(|e| format!("{}: {}", shown(&args.source), reason(&e)))?;
    let watch = fs.watch();
    let config = fuse_config(args);
    log::debug!(
        "mounting {} on {} with {config:?}",
        shown(&args.source),
        shown(&args.mountpoint)
    );
    let stats = fs.stats();
    let session = Session::new(fs, &args.mountpoint, &config)
        .map_err(|e| format!("{}: mount failed: {}", shown(&args.mountpoint), reason(&e)))?;
    // The filesystem already caches for a day on the watch's word, so a watch that cannot
    // start fails the mount (dropping the session unmounts it) rather than serve stale names.
    let watching = watch
        .map(|w| w.spawn(session.notifier()))
        .transpose()
        .map_err(|e| format!("cannot start watching SOURCE: {}", reason(&e)))?;
    Ok((session, stats, watching))
}

/// The fuser configuration for these arguments.
fn fuse_config(args: &MountArgs) -> Config {
    let f = &args.fuse;
    let mut config = Config::default();
    config.mount_options = mount_options(f, &args.source);
    config.acl = if f.allow_other {
        SessionACL::All
    } else if f.allow_root || f.auto_unmount {
        // fusermount3 needs allow_other in the kernel for auto_unmount; fuser then still
        // refuses other users' requests, so access stays as without it.
        SessionACL::RootAndOwner
    } else {
        SessionACL::Owner
    };
    let threads = args.threads.unwrap_or_else(|| {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        options::default_threads(cpus)
    });
    config.n_threads = Some(threads.get());
    config.clone_fd = true;
    config
}

fn mount_options(f: &FuseOptions, source: &Path) -> Vec<MountOption> {
    let fsname = f
        .fsname
        .clone()
        .unwrap_or_else(|| source.to_string_lossy().into_owned());
    // `subtype=` as a kernel option: fuser's Subtype only reaches fusermount3, and the kernel
    // takes it directly when mounting as root (fusermount3 accepts it too).
    let mut opts = vec![
        MountOption::FSName(fsname),
        MountOption::CUSTOM(format!("subtype={}", f.subtype)),
    ];
    let flags = [
        (f.read_only, MountOption::RO),
        (f.default_permissions, MountOption::DefaultPermissions),
        (f.auto_unmount, MountOption::AutoUnmount),
        (f.dirsync, MountOption::DirSync),
    ];
    opts.extend(flags.into_iter().filter(|(on, _)| *on).map(|(_, o)| o));
    let pairs = [
        (f.dev, MountOption::Dev, MountOption::NoDev),
        (f.suid, MountOption::Suid, MountOption::NoSuid),
        (f.exec, MountOption::Exec, MountOption::NoExec),
        (f.atime, MountOption::Atime, MountOption::NoAtime),
        (f.sync, MountOption::Sync, MountOption::Async),
    ];
    for (value, yes, no) in pairs {
        match value {
            Some(true) => opts.push(yes),
            Some(false) => opts.push(no),
            None => {}
        }
    }
    opts
}

/// Serves requests until the filesystem is unmounted: by SIGINT, SIGTERM or SIGHUP (then this
/// process unmounts), or by `fusermount3 -u`/`umount` from outside.
///
/// fuser unmounts MOUNTPOINT by path when its session ends, even when the kernel has already
/// dropped the mount (its check of the connection takes POLLERR for "still mounted"). After an
/// outside unmount that second umount would take down whatever was mounted at the same path
/// in between, such as the new daemon of a restart. So the session runs in the background and
/// its mount guard is never dropped: this process unmounts on signals itself, and after an
/// outside unmount there is nothing left to unmount, as libfuse's daemons behave.
fn serve(session: Session<Utf8Fs>, stats: Arc<FsStats>, args: &MountArgs) -> Result<(), String> {
    let mask = signal_mask();
    let mountpoint = args.mountpoint.clone();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut signal = 0;
            // SAFETY: `mask` is an initialized signal set; `signal` is a valid out pointer.
            if unsafe { libc::sigwait(&mask, &mut signal) } == 0 {
                log::info!("signal {signal}: unmounting");
                if let Err(e) = unmount_fuse(&mountpoint) {
                    log::error!("{}: unmount failed: {e}", shown(&mountpoint));
                }
            }
        })
        .map_err(|e| format!("cannot start the signal thread: {e}"))?;
    let background = ManuallyDrop::new(
        session
            .spawn()
            .map_err(|e| format!("cannot start serving: {}", reason(&e)))?,
    );
    // SAFETY: `background` is never dropped, so the join handle read out of it has exactly one
    // owner, this one.
    let guard = unsafe { std::ptr::read(&background.guard) };
    match guard.join() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(format!("session ended: {}", reason(&e))),
        Err(_) => return Err("session ended: a request thread panicked".to_owned()),
    }
    log::info!(
        "unmounted; {} inodes and {} handles were still held",
        stats.live_inodes(),
        stats.open_handles()
    );
    Ok(())
}

/// Unmounts the FUSE mount at `mountpoint`, if one is still there: umount(2) as root, else
/// `fusermount3 -u`, as fuser does without auto_unmount.
fn unmount_fuse(mountpoint: &Path) -> Result<(), String> {
    if fuse_mount_at(mountpoint).is_none() {
        return Ok(());
    }
    let path = std::ffi::CString::new(mountpoint.as_os_str().as_bytes())
        .map_err(|_| "the path holds a NUL byte".to_owned())?;
    // SAFETY: `path` is a NUL-terminated string that outlives the call.
    if unsafe { libc::umount2(path.as_ptr(), 0) } == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() != Some(libc::EPERM) {
        return Err(reason(&e));
    }
    let status = std::process::Command::new("fusermount3")
        .arg("-u")
        .arg("--")
        .arg(mountpoint)
        .status()
        .map_err(|e| format!("fusermount3: {}", reason(&e)))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("fusermount3 -u: {status}"))
    }
}

/// SIGINT, SIGTERM and SIGHUP, blocked in this thread so that every thread started later inherits
/// the block and only the signal thread receives them, through sigwait.
fn signal_mask() -> libc::sigset_t {
    // SAFETY: sigemptyset initializes the set before use; pthread_sigmask only reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, signal);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// Forks; the child mounts and serves, the parent waits for its word and exits with it.
fn daemonize(args: &MountArgs) -> Result<(), String> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("pipe: {}", reason(&io::Error::last_os_error())));
    }
    // SAFETY: pipe2 returned two fresh descriptors that nothing else owns.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: no thread exists yet (nothing before this point starts one), so the child may run
    // any code.
    match unsafe { libc::fork() } {
        -1 => Err(format!("fork: {}", reason(&io::Error::last_os_error()))),
        0 => {
            drop(read_end);
            let status = child(args, File::from(write_end));
            std::process::exit(if status.is_ok() {
                0
            } else {
                i32::from(EXIT_FAILURE)
            });
        }
        pid => {
            drop(write_end);
            let mut report = String::new();
            let read = File::from(read_end).read_to_string(&mut report);
            if read.is_ok() && report == "ok" {
                return Ok(());
            }
            let mut status = 0;
            // SAFETY: `pid` is our child; `status` is a valid out pointer.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            if report.is_empty() {
                Err(format!(
                    "the daemon exited before mounting (wait status {status})"
                ))
            } else {
                Err(report)
            }
        }
    }
}

/// The detached child: new session, mount, report to the parent, serve. Start-up errors go to
/// the parent, which prints them.
fn child(args: &MountArgs, mut report: File) -> Result<(), ()> {
    // SAFETY: plain system calls on paths and descriptors this process owns.
    unsafe {
        libc::setsid();
        libc::chdir(c"/".as_ptr());
    }
    let null = match File::options().read(true).write(true).open("/dev/null") {
        Ok(null) => null,
        Err(e) => {
            let _ = write!(report, "/dev/null: {}", reason(&e));
            return Err(());
        }
    };
    // stdin and stdout at once (the FUSE device must not land on 0..2); stderr after the mount,
    // so that anything logged while mounting still reaches the terminal.
    redirect(&null, &[0, 1]);
    let (session, stats, _watching) = match start(args) {
        Ok(started) => started,
        Err(message) => {
            let _ = report.write_all(message.as_bytes());
            return Err(());
        }
    };
    redirect(&null, &[2]);
    let _ = report.write_all(b"ok");
    drop(report);
    serve(session, stats, args).map_err(|message| log::error!("{message}"))
}

fn redirect(to: &File, fds: &[i32]) {
    for &fd in fds {
        // SAFETY: dup2 onto a standard descriptor number; `to` stays open during the call.
        unsafe { libc::dup2(to.as_raw_fd(), fd) };
    }
}

/// A path for an error line, bytes that are not UTF-8 escaped as `\xE9`.
fn shown(path: &Path) -> String {
    Escaped(path.as_os_str().as_bytes()).to_string()
}

/// The reason of an I/O error without Rust's " (os error N)" suffix, like strerror.
fn reason(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}
