//! The command line of `utf8fs`, in the shape of other FUSE filesystems:
//! `utf8fs SOURCE MOUNTPOINT [-f] [-d] [-o OPT[,OPT…]]...`.
//!
//! [`parse`] is pure (no I/O, no panic on any input) so that it can be fuzzed; the binary checks
//! the paths and mounts. The same parser serves `mount -t fuse.utf8fs` and /etc/fstab: mount.fuse3
//! runs `utf8fs SOURCE MOUNTPOINT -o OPTS` with the generic mount options folded in, and those that
//! do not concern a FUSE daemon (`defaults`, `nofail`, `x-systemd.*`, …) are accepted and ignored.

use crate::fs::{CachePolicy, FsConfig};
use crate::mapping::{Mapper, Mode};
use crate::policy::{Deny, Escaped, Form};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::num::NonZeroUsize;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Duration;

/// Subtype shown in /proc/mounts as `fuse.utf8fs`, unless `-o subtype=` says otherwise.
pub const DEFAULT_SUBTYPE: &str = "utf8fs";

/// Most worker threads `-o threads=` accepts.
pub const MAX_THREADS: usize = 256;

/// What the command line asks for.
#[derive(Clone, Debug)]
pub enum Invocation {
    /// `-h`, `--help`: print [`HELP`].
    Help,
    /// `-V`, `--version`.
    Version,
    /// Mount SOURCE on MOUNTPOINT.
    Mount(Box<MountArgs>),
}

/// Everything needed to mount, as given on the command line (paths not yet checked).
#[derive(Clone, Debug)]
pub struct MountArgs {
    /// The backing directory, as given.
    pub source: PathBuf,
    /// Where to mount, as given.
    pub mountpoint: PathBuf,
    /// `-f`: stay in the foreground instead of detaching.
    pub foreground: bool,
    /// `-d`, `-o debug`: log at debug level (every request); implies foreground, as in libfuse.
    pub debug: bool,
    /// What the filesystem itself needs (`source` here is the path as given).
    pub fs: FsConfig,
    /// `-o passthrough=` as given; `fs.passthrough` is false only for `off`.
    pub passthrough: Passthrough,
    /// `-o cache=` as given (before explicit timeouts override it).
    pub cache: CacheMode,
    /// Options for the kernel mount and fusermount3.
    pub fuse: FuseOptions,
    /// `-o threads=N`; `None` means [`default_threads`].
    pub threads: Option<NonZeroUsize>,
}

/// Options that concern the kernel mount rather than the filesystem's behaviour.
/// `None` in a flag means "not given": the kernel's default for a FUSE mount applies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FuseOptions {
    /// `fsname=`: first field of /proc/mounts; `None` means the SOURCE path.
    pub fsname: Option<String>,
    /// `subtype=`: the `fuse.TYPE` of /proc/mounts.
    pub subtype: String,
    /// `allow_other`: every user may use the mount.
    pub allow_other: bool,
    /// `allow_root`: the owner and root may use the mount.
    pub allow_root: bool,
    /// `default_permissions` (also implied by `allow_other`): the kernel checks permissions.
    pub default_permissions: bool,
    /// `auto_unmount`: fusermount3 unmounts when the daemon dies, even by `kill -9`.
    pub auto_unmount: bool,
    /// `ro` / `rw`.
    pub read_only: bool,
    /// `dev` / `nodev`.
    pub dev: Option<bool>,
    /// `suid` / `nosuid`.
    pub suid: Option<bool>,
    /// `exec` / `noexec`.
    pub exec: Option<bool>,
    /// `atime` / `noatime`.
    pub atime: Option<bool>,
    /// `sync` (true) / `async` (false).
    pub sync: Option<bool>,
    /// `dirsync`.
    pub dirsync: bool,
}

/// `-o passthrough=`: kernel FUSE passthrough of regular-file I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Passthrough {
    /// Use it, falling back to in-daemon I/O when the kernel refuses.
    On,
    /// Never use it.
    Off,
    /// Use it when the kernel offers it (the default).
    Auto,
}

/// `-o cache=`: how long the kernel may trust what it learnt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheMode {
    /// 1 s entry and attribute timeouts, no negative caching: safe when SOURCE also changes
    /// underneath the mount (the default).
    Auto,
    /// Cache for a day and keep page and directory caches: only SOURCE changes through the mount.
    Always,
    /// No caching: every access asks the daemon.
    Never,
}

impl CacheMode {
    /// The kernel cache settings of this mode, as libfuse's passthrough examples choose them.
    pub fn policy(self) -> CachePolicy {
        match self {
            CacheMode::Auto => CachePolicy::auto(),
            CacheMode::Always => CachePolicy::always(),
            CacheMode::Never => CachePolicy::never(),
        }
    }
}

/// A command line that cannot be understood: printed as one line, exit status 2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageError(String);

impl UsageError {
    fn new(message: impl Into<String>) -> UsageError {
        UsageError(message.into())
    }

    /// The reason, without the program name.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (see utf8fs --help)", self.0)
    }
}

impl std::error::Error for UsageError {}

/// Worker threads when `-o threads=` is not given: one per CPU, at least 2 so that one slow
/// backing-store call does not stall every request, at most 16. Idle workers all wait on the
/// one FUSE queue; more workers than CPUs only add wake-ups on another CPU per request.
pub fn default_threads(cpus: usize) -> NonZeroUsize {
    NonZeroUsize::new(cpus.clamp(2, 16)).unwrap_or(NonZeroUsize::MIN)
}

/// The `--help` text: usage, then every option on one line.
pub const HELP: &str = "\
usage: utf8fs SOURCE MOUNTPOINT [-f] [-d] [-o OPT[,OPT...]]...
Mount a view of directory SOURCE on MOUNTPOINT in which every file name is strict UTF-8.

  -f                      stay in the foreground; unmount on SIGINT/SIGTERM
  -d, -o debug            log every request (debug level); implies -f
  -o OPT[,OPT...]         mount options, below; -o may be repeated and glued (-oro)
  -h, --help              print this help and exit
  -V, --version           print the version and exit

Mount options:
  malformed=MODE          names that are not UTF-8: reject (default: hidden, EILSEQ to clients),
                          escape, replace, transcode (decode as charset=), audit (shown, logged)
  charset=LABEL           legacy charset for malformed=transcode (default windows-1252;
                          WHATWG labels such as latin1, koi8-r, shift_jis, gb18030; cp437, cp850)
  deny=RULE[+RULE...]     refuse new names breaking hygiene rules with EINVAL: control, bidi,
                          leading-dash, leading-tilde, space, windows, bom, nonchar, shell,
                          all (every rule but shell), none (default); audit mode only logs
  unicode=nfc|nfd         store new names in that form, show names in it, look up either form
  ro                      read-only mount; rw (the default) undoes it
  allow_other             let every user use the mount (implies default_permissions)
  allow_root              let the owner and root use the mount
  default_permissions     let the kernel check permissions from the file modes
  auto_unmount            unmount when the daemon dies, even by kill -9 (through fusermount3)
  fsname=NAME             first field of /proc/mounts (default: the SOURCE path)
  subtype=TYPE            file system type shown as fuse.TYPE (default utf8fs)
  threads=N               worker threads (default: one per CPU, 2 to 16)
  passthrough=on|off|auto kernel passthrough of file reads and writes (default auto)
  cache=auto|always|never kernel caching: auto (until changed while SOURCE can be watched, else
                          1 s; default), always (1 day, SOURCE changes only through this mount),
                          never
  entry_timeout=SECS      how long a name lookup is cached (overrides cache=)
  attr_timeout=SECS       how long attributes are cached (overrides cache=)
  negative_timeout=SECS   how long a missing name is cached (overrides cache=)
  dev, nodev              allow / refuse device files (default nodev)
  suid, nosuid            honour / ignore set-user-id bits (default nosuid)
  exec, noexec            allow / refuse executing programs
  atime, noatime          update / do not update access times
  sync, async, dirsync    synchronous writes / asynchronous writes / synchronous directory changes
  accepted and ignored (they concern mount(8), not the daemon): defaults, auto, noauto,
                          nofail, _netdev, user, users, nouser, owner, group, relatime,
                          norelatime, strictatime, nostrictatime, lazytime, nolazytime,
                          diratime, nodiratime, silent, loud, comment=..., x-...

Exit status: 0 mounted (or help/version), 1 mount failed, 2 bad command line.
Unmount with: fusermount3 -u MOUNTPOINT (or umount MOUNTPOINT as root).
";

/// Options of mount(8) and fstab that concern neither the kernel FUSE mount nor the daemon.
const IGNORED: &[&str] = &[
    "defaults",
    "auto",
    "noauto",
    "nofail",
    "_netdev",
    "user",
    "users",
    "nouser",
    "owner",
    "group",
    "relatime",
    "norelatime",
    "strictatime",
    "nostrictatime",
    "lazytime",
    "nolazytime",
    "diratime",
    "nodiratime",
    "silent",
    "loud",
];

/// Parses the arguments after the program name.
pub fn parse(args: &[OsString]) -> Result<Invocation, UsageError> {
    let mut positional: Vec<&OsStr> = Vec::new();
    let mut foreground = false;
    let mut debug = false;
    let mut opts = Opts::default();
    let mut only_positional = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let bytes = arg.as_bytes();
        if only_positional || bytes.len() < 2 || bytes[0] != b'-' {
            positional.push(arg);
            continue;
        }
        match bytes {
            b"--" => only_positional = true,
            b"--help" => return Ok(Invocation::Help),
            b"--version" => return Ok(Invocation::Version),
            _ if bytes.starts_with(b"--") => {
                return Err(UsageError::new(format!(
                    "unknown option '{}'",
                    Escaped(bytes)
                )));
            }
            _ => {
                // A cluster of short flags (`-fd`), possibly ending in `-o` and its value.
                for (i, &flag) in bytes.iter().enumerate().skip(1) {
                    match flag {
                        b'h' => return Ok(Invocation::Help),
                        b'V' => return Ok(Invocation::Version),
                        b'f' => foreground = true,
                        b'd' => debug = true,
                        b'o' => {
                            let value = if i + 1 < bytes.len() {
                                &bytes[i + 1..]
                            } else {
                                it.next()
                                    .map(|v| v.as_bytes())
                                    .ok_or_else(|| UsageError::new("option -o needs a value"))?
                            };
                            opts.apply_list(value)?;
                            break;
                        }
                        _ => {
                            return Err(UsageError::new(format!(
                                "unknown option '-{}'",
                                Escaped(&[flag])
                            )));
                        }
                    }
                }
            }
        }
    }
    let (source, mountpoint) = match positional[..] {
        [s, m] => (PathBuf::from(s), PathBuf::from(m)),
        [] => return Err(UsageError::new("missing SOURCE and MOUNTPOINT")),
        [_] => return Err(UsageError::new("missing MOUNTPOINT")),
        [_, _, extra, ..] => {
            return Err(UsageError::new(format!(
                "unexpected argument '{}'",
                Escaped(extra.as_bytes())
            )));
        }
    };
    opts.finish(source, mountpoint, foreground, debug)
}

/// Mount options collected so far; later options override earlier ones, as in mount(8).
#[derive(Default)]
struct Opts {
    fuse: FuseOptions,
    debug: bool,
    mode: Option<String>,
    charset: Option<String>,
    threads: Option<NonZeroUsize>,
    passthrough: Option<Passthrough>,
    cache: Option<CacheMode>,
    entry_timeout: Option<Duration>,
    attr_timeout: Option<Duration>,
    negative_timeout: Option<Duration>,
    deny: Deny,
    unicode: Option<Form>,
}

impl Opts {
    /// Applies one `-o` value: options separated by commas, empty items ignored.
    fn apply_list(&mut self, list: &[u8]) -> Result<(), UsageError> {
        let list = std::str::from_utf8(list).map_err(|_| {
            UsageError::new(format!("mount option '{}' is not UTF-8", Escaped(list)))
        })?;
        for opt in list.split(',').filter(|o| !o.is_empty()) {
            self.apply(opt)?;
        }
        Ok(())
    }

    fn apply(&mut self, opt: &str) -> Result<(), UsageError> {
        let (key, value) = match opt.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (opt, None),
        };
        let f = &mut self.fuse;
        match (key, value) {
            ("ro", None) => f.read_only = true,
            ("rw", None) => f.read_only = false,
            ("allow_other", None) => f.allow_other = true,
            ("allow_root", None) => f.allow_root = true,
            ("default_permissions", None) => f.default_permissions = true,
            ("auto_unmount", None) => f.auto_unmount = true,
            ("debug", None) => self.debug = true,
            ("dev", None) => f.dev = Some(true),
            ("nodev", None) => f.dev = Some(false),
            ("suid", None) => f.suid = Some(true),
            ("nosuid", None) => f.suid = Some(false),
            ("exec", None) => f.exec = Some(true),
            ("noexec", None) => f.exec = Some(false),
            ("atime", None) => f.atime = Some(true),
            ("noatime", None) => f.atime = Some(false),
            ("sync", None) => f.sync = Some(true),
            ("async", None) => f.sync = Some(false),
            ("dirsync", None) => f.dirsync = true,
            ("fsname", Some(v)) => f.fsname = Some(mount_label(key, v)?.to_owned()),
            ("subtype", Some(v)) => f.subtype = mount_label(key, v)?.to_owned(),
            ("malformed", Some(v)) => self.mode = Some(v.to_owned()),
            ("charset", Some(v)) => self.charset = Some(non_empty(key, v)?.to_owned()),
            ("threads", Some(v)) => self.threads = Some(threads(v)?),
            ("passthrough", Some(v)) => {
                self.passthrough = Some(match v {
                    "on" => Passthrough::On,
                    "off" => Passthrough::Off,
                    "auto" => Passthrough::Auto,
                    _ => return Err(bad_value(key, v, "on, off or auto")),
                })
            }
            ("cache", Some(v)) => {
                self.cache = Some(match v {
                    "auto" => CacheMode::Auto,
                    "always" => CacheMode::Always,
                    "never" => CacheMode::Never,
                    _ => return Err(bad_value(key, v, "auto, always or never")),
                })
            }
            ("deny", Some(v)) => {
                self.deny =
                    Deny::parse(v).map_err(|e| UsageError::new(format!("option 'deny': {e}")))?
            }
            ("unicode", Some(v)) => {
                self.unicode = Some(
                    Form::parse(v)
                        .map_err(|e| UsageError::new(format!("option 'unicode': {e}")))?,
                )
            }
            ("entry_timeout", Some(v)) => self.entry_timeout = Some(seconds(key, v)?),
            ("attr_timeout", Some(v)) => self.attr_timeout = Some(seconds(key, v)?),
            ("negative_timeout", Some(v)) => self.negative_timeout = Some(seconds(key, v)?),
            ("comment", Some(_)) => {}
            (k, _) if k.starts_with("x-") => {}
            (k, None) if IGNORED.contains(&k) => {}
            (
                "ro"
                | "rw"
                | "allow_other"
                | "allow_root"
                | "default_permissions"
                | "auto_unmount"
                | "debug"
                | "dev"
                | "nodev"
                | "suid"
                | "nosuid"
                | "exec"
                | "noexec"
                | "atime"
                | "noatime"
                | "sync"
                | "async"
                | "dirsync",
                Some(_),
            ) => return Err(UsageError::new(format!("option '{key}' takes no value"))),
            (
                "fsname" | "subtype" | "malformed" | "charset" | "threads" | "passthrough"
                | "cache" | "entry_timeout" | "attr_timeout" | "negative_timeout" | "deny"
                | "unicode",
                None,
            ) => {
                return Err(UsageError::new(format!(
                    "option '{key}' needs a value ({key}=...)"
                )))
            }
            _ => {
                return Err(UsageError::new(format!(
                    "unknown mount option '{}'",
                    shown(opt)
                )))
            }
        }
        Ok(())
    }

    fn finish(
        self,
        source: PathBuf,
        mountpoint: PathBuf,
        foreground: bool,
        debug: bool,
    ) -> Result<Invocation, UsageError> {
        let mode = Mode::parse(
            self.mode.as_deref().unwrap_or("reject"),
            self.charset.as_deref(),
        )
        .map_err(|e| UsageError::new(e.to_string()))?;
        let mut fuse = self.fuse;
        if fuse.allow_other && fuse.allow_root {
            return Err(UsageError::new(
                "options 'allow_other' and 'allow_root' exclude each other",
            ));
        }
        if fuse.subtype.is_empty() {
            fuse.subtype = DEFAULT_SUBTYPE.to_owned();
        }
        fuse.default_permissions |= fuse.allow_other;
        let cache_mode = self.cache.unwrap_or(CacheMode::Auto);
        let mut cache = cache_mode.policy();
        cache.entry_timeout = self.entry_timeout.unwrap_or(cache.entry_timeout);
        cache.attr_timeout = self.attr_timeout.unwrap_or(cache.attr_timeout);
        cache.negative_timeout = self.negative_timeout.unwrap_or(cache.negative_timeout);
        // Explicit timeouts are the user's to choose: keep them as given.
        cache.watch &= self.entry_timeout.is_none() && self.attr_timeout.is_none();
        let passthrough = self.passthrough.unwrap_or(Passthrough::Auto);
        let debug = debug || self.debug;
        let mut fs = FsConfig::new(source.clone(), Mapper::new(mode));
        fs.read_only = fuse.read_only;
        fs.allow_other = fuse.allow_other;
        fs.kernel_permissions = fuse.default_permissions;
        fs.auto_unmount = fuse.auto_unmount;
        fs.passthrough = passthrough != Passthrough::Off;
        fs.cache = cache;
        fs.deny = self.deny;
        fs.unicode = self.unicode;
        Ok(Invocation::Mount(Box::new(MountArgs {
            source,
            mountpoint,
            foreground: foreground || debug,
            debug,
            fs,
            passthrough,
            cache: cache_mode,
            fuse,
            threads: self.threads,
        })))
    }
}

fn non_empty<'a>(key: &str, value: &'a str) -> Result<&'a str, UsageError> {
    if value.is_empty() {
        Err(UsageError::new(format!(
            "option '{key}' needs a value ({key}=...)"
        )))
    } else {
        Ok(value)
    }
}

/// A value that the kernel shows in /proc/mounts (`fsname=`, `subtype=`): not empty, and
/// without control or bidi formatting characters, which would garble or reorder what `mount`
/// and `df` print.
fn mount_label<'a>(key: &str, value: &'a str) -> Result<&'a str, UsageError> {
    if value
        .chars()
        .any(|c| c.is_control() || crate::policy::is_bidi(c))
    {
        return Err(UsageError::new(format!(
            "bad value in '{key}={}': control and bidi formatting characters are not allowed",
            Escaped(value.as_bytes())
        )));
    }
    non_empty(key, value)
}

fn bad_value(key: &str, value: &str, expected: &str) -> UsageError {
    UsageError::new(format!(
        "bad value in '{key}={}': expected {expected}",
        shown(value)
    ))
}

/// User text in an error message, control characters escaped so the message stays one line.
fn shown(text: &str) -> String {
    Escaped(text.as_bytes()).to_string()
}

fn threads(value: &str) -> Result<NonZeroUsize, UsageError> {
    value
        .parse::<NonZeroUsize>()
        .ok()
        .filter(|n| n.get() <= MAX_THREADS)
        .ok_or_else(|| {
            bad_value(
                "threads",
                value,
                &format!("a number from 1 to {MAX_THREADS}"),
            )
        })
}

fn seconds(key: &str, value: &str) -> Result<Duration, UsageError> {
    value
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0 && *s <= 1e9)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| bad_value(key, value, "seconds, such as 1 or 0.5"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::Charset;
    use proptest::prelude::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    fn mount(list: &[&str]) -> MountArgs {
        match parse(&args(list)) {
            Ok(Invocation::Mount(m)) => *m,
            other => panic!("{list:?}: {other:?}"),
        }
    }

    fn error(list: &[&str]) -> String {
        match parse(&args(list)) {
            Err(e) => e.message().to_owned(),
            Ok(other) => panic!("{list:?} parsed as {other:?}"),
        }
    }

    #[test]
    fn deny_and_unicode() {
        let m = mount(&["s", "m", "-o", "deny=control+bidi,unicode=nfc"]);
        assert!(m.fs.deny.contains(crate::policy::Rule::Control));
        assert!(m.fs.deny.contains(crate::policy::Rule::Bidi));
        assert!(!m.fs.deny.contains(crate::policy::Rule::Windows));
        assert_eq!(m.fs.unicode, Some(Form::Nfc));
        for bad in ["deny=nope", "unicode=nfkc", "deny", "unicode"] {
            let args: Vec<OsString> = ["s", "m", "-o", bad].iter().map(OsString::from).collect();
            assert!(parse(&args).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn defaults() {
        let m = mount(&["src", "mnt"]);
        assert_eq!(m.source, PathBuf::from("src"));
        assert_eq!(m.mountpoint, PathBuf::from("mnt"));
        assert!(!m.foreground && !m.debug);
        assert_eq!(m.fs.mapper.mode(), Mode::Reject);
        assert!(!m.fs.read_only && !m.fs.allow_other && m.fs.passthrough);
        assert_eq!(m.fs.cache, CacheMode::Auto.policy());
        assert_eq!(m.fs.cache.entry_timeout, Duration::from_secs(1));
        assert_eq!(m.fs.cache.negative_timeout, Duration::ZERO);
        assert_eq!(m.fuse.subtype, "utf8fs");
        assert_eq!(m.fuse.fsname, None);
        assert_eq!(m.threads, None);
    }

    #[test]
    fn options_anywhere_repeated_and_glued() {
        let m = mount(&[
            "-o",
            "ro",
            "src",
            "-oallow_other,fsname=x",
            "mnt",
            "-f",
            "-o",
            "debug",
        ]);
        assert!(m.fs.read_only && m.fuse.read_only && m.foreground && m.debug);
        assert!(m.fuse.allow_other && m.fs.allow_other && m.fuse.default_permissions);
        assert_eq!(m.fuse.fsname.as_deref(), Some("x"));
        let m = mount(&["-fo", "ro", "src", "mnt"]);
        assert!(m.foreground && m.fs.read_only);
        let m = mount(&["src", "mnt", "-fdoro"]);
        assert!(m.foreground && m.debug && m.fs.read_only);
    }

    #[test]
    fn double_dash_ends_options() {
        let m = mount(&["-f", "--", "-src", "-o"]);
        assert_eq!(m.source, PathBuf::from("-src"));
        assert_eq!(m.mountpoint, PathBuf::from("-o"));
    }

    #[test]
    fn help_and_version() {
        assert!(matches!(parse(&args(&["--help"])), Ok(Invocation::Help)));
        assert!(matches!(parse(&args(&["src", "-h"])), Ok(Invocation::Help)));
        assert!(matches!(parse(&args(&["-V"])), Ok(Invocation::Version)));
        assert!(matches!(
            parse(&args(&["--version", "x"])),
            Ok(Invocation::Version)
        ));
    }

    #[test]
    fn help_documents_every_option() {
        for key in [
            "malformed=",
            "charset=",
            "deny=",
            "unicode=",
            "ro ",
            "allow_other",
            "allow_root",
            "default_permissions",
            "auto_unmount",
            "fsname=",
            "subtype=",
            "threads=",
            "passthrough=",
            "cache=",
            "entry_timeout=",
            "attr_timeout=",
            "negative_timeout=",
            "nodev",
            "nosuid",
            "noexec",
            "noatime",
            "dirsync",
            "debug",
            "-f ",
        ] {
            assert!(HELP.contains(key), "{key} missing from --help");
        }
        for key in IGNORED {
            assert!(HELP.contains(key), "{key} missing from --help");
        }
        assert!(HELP.lines().all(|l| l.chars().count() <= 100));
    }

    #[test]
    fn modes() {
        assert_eq!(
            mount(&["s", "m", "-o", "malformed=escape"])
                .fs
                .mapper
                .mode(),
            Mode::Escape
        );
        assert_eq!(
            mount(&["s", "m", "-omalformed=replace"]).fs.mapper.mode(),
            Mode::Replace
        );
        assert_eq!(
            mount(&["s", "m", "-omalformed=audit"]).fs.mapper.mode(),
            Mode::Audit
        );
        assert_eq!(
            mount(&["s", "m", "-omalformed=reject"]).fs.mapper.mode(),
            Mode::Reject
        );
        let cp1252 = Charset::from_label("windows-1252").unwrap();
        let t = mount(&["s", "m", "-omalformed=transcode"]).fs.mapper.mode();
        assert_eq!(t, Mode::Transcode(cp1252));
        let koi = Charset::from_label("koi8-r").unwrap();
        let t = mount(&["s", "m", "-ocharset=koi8-r,malformed=transcode"])
            .fs
            .mapper
            .mode();
        assert_eq!(t, Mode::Transcode(koi));
        // The last value wins, as in mount(8).
        let m = mount(&["s", "m", "-omalformed=escape", "-omalformed=reject"]);
        assert_eq!(m.fs.mapper.mode(), Mode::Reject);
    }

    #[test]
    fn bad_mode_and_charset() {
        let e = error(&["s", "m", "-omalformed=fix"]);
        assert!(e.contains("\"fix\"") && e.contains("reject, escape"), "{e}");
        let e = error(&["s", "m", "-omalformed=transcode,charset=klingon"]);
        assert!(e.starts_with("unknown charset \"klingon\""), "{e}");
        let e = error(&["s", "m", "-ocharset=latin1"]);
        assert!(e.contains("charset=") && e.contains("transcode"), "{e}");
        let e = error(&["s", "m", "-omalformed=a\nb"]);
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn dos_charsets() {
        let m = mount(&["s", "m", "-omalformed=transcode,charset=cp437"]);
        assert!(matches!(m.fs.mapper.mode(), Mode::Transcode(_)));
    }

    #[test]
    fn unknown_and_malformed_options() {
        assert_eq!(
            error(&["s", "m", "-o", "ro,frobnicate"]),
            "unknown mount option 'frobnicate'"
        );
        assert_eq!(
            error(&["s", "m", "-o", "big_writes=1"]),
            "unknown mount option 'big_writes=1'"
        );
        assert_eq!(error(&["-x", "s", "m"]), "unknown option '-x'");
        assert_eq!(error(&["--frob", "s", "m"]), "unknown option '--frob'");
        assert_eq!(error(&["s", "m", "-o"]), "option -o needs a value");
        assert_eq!(error(&["s", "m", "-oro=1"]), "option 'ro' takes no value");
        assert_eq!(
            error(&["s", "m", "-ofsname"]),
            "option 'fsname' needs a value (fsname=...)"
        );
        assert_eq!(
            error(&["s", "m", "-ofsname="]),
            "option 'fsname' needs a value (fsname=...)"
        );
        assert!(error(&["s", "m", "-othreads=0"]).contains("threads=0"));
        assert!(error(&["s", "m", "-othreads=many"]).contains("threads=many"));
        assert!(error(&["s", "m", "-othreads=257"]).contains("1 to 256"));
        assert!(error(&["s", "m", "-opassthrough=yes"]).contains("passthrough=yes"));
        assert!(error(&["s", "m", "-ocache=sometimes"]).contains("cache=sometimes"));
        for bad in ["-1", "nan", "inf", "1e300", "", "1s"] {
            let e = error(&["s", "m", &format!("-oattr_timeout={bad}")]);
            assert!(e.contains("attr_timeout="), "{e}");
        }
        assert_eq!(
            error(&["s", "m", "-oallow_other,allow_root"]),
            "options 'allow_other' and 'allow_root' exclude each other"
        );
        let e = parse(&[
            OsString::from("s"),
            "m".into(),
            OsString::from("-o"),
            std::os::unix::ffi::OsStringExt::from_vec(b"fsname=caf\xe9".to_vec()),
        ])
        .unwrap_err();
        assert_eq!(e.message(), "mount option 'fsname=caf\\xE9' is not UTF-8");
    }

    #[test]
    fn positionals() {
        assert_eq!(error(&[]), "missing SOURCE and MOUNTPOINT");
        assert_eq!(error(&["-f", "s"]), "missing MOUNTPOINT");
        assert_eq!(error(&["s", "m", "x"]), "unexpected argument 'x'");
        // A lone dash is a path, as for most tools.
        assert_eq!(mount(&["-", "m"]).source, PathBuf::from("-"));
    }

    #[test]
    fn usage_error_is_one_line() {
        let e = parse(&args(&["s", "m", "-o", "nope"])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown mount option 'nope' (see utf8fs --help)"
        );
        let e = parse(&args(&["s", "m", "-o", "fsname=ab,no\npe"])).unwrap_err();
        assert_eq!(e.message(), "unknown mount option 'no\\x0Ape'");
    }

    #[test]
    fn what_mount_fuse3_passes_is_accepted() {
        // As seen from `mount -t fuse.utf8fs` with fstab-style options, as root.
        let m = mount(&["/s", "/m", "-o", "rw,dev,suid"]);
        assert_eq!((m.fuse.dev, m.fuse.suid), (Some(true), Some(true)));
        let m = mount(&[
            "/s",
            "/m",
            "-o",
            "ro,relatime,noexec,nosuid,nodev,allow_other",
        ]);
        assert!(m.fs.read_only);
        assert_eq!(
            (m.fuse.dev, m.fuse.suid, m.fuse.exec),
            (Some(false), Some(false), Some(false))
        );
        let fstab = "defaults,nofail,_netdev,noauto,auto,user,users,nouser,owner,group,\
                     x-systemd.automount,x-systemd.idle-timeout=60,comment=systemd.x,relatime,\
                     strictatime,lazytime,nodiratime,rw,malformed=escape";
        assert_eq!(
            mount(&["/s", "/m", "-o", fstab]).fs.mapper.mode(),
            Mode::Escape
        );
    }

    #[test]
    fn kernel_flags_last_wins() {
        let m = mount(&[
            "s",
            "m",
            "-oro,rw,nodev,dev,exec,noexec,atime,noatime,sync,async",
        ]);
        assert!(!m.fuse.read_only);
        assert_eq!(m.fuse.dev, Some(true));
        assert_eq!(m.fuse.exec, Some(false));
        assert_eq!(m.fuse.atime, Some(false));
        assert_eq!(m.fuse.sync, Some(false));
        assert!(
            mount(&["s", "m", "-odirsync,auto_unmount,allow_root"])
                .fuse
                .auto_unmount
        );
    }

    #[test]
    fn cache_and_timeouts() {
        let always = mount(&["s", "m", "-ocache=always"]).fs.cache;
        assert_eq!(always.entry_timeout, Duration::from_secs(86_400));
        assert!(always.keep_cache && always.cache_dir);
        let never = mount(&["s", "m", "-ocache=never"]).fs.cache;
        assert_eq!(never.attr_timeout, Duration::ZERO);
        assert!(!never.keep_cache);
        let m = mount(&[
            "s",
            "m",
            "-oentry_timeout=2.5,cache=never,negative_timeout=3",
        ]);
        assert_eq!(m.fs.cache.entry_timeout, Duration::from_millis(2500));
        assert_eq!(m.fs.cache.attr_timeout, Duration::ZERO);
        assert_eq!(m.fs.cache.negative_timeout, Duration::from_secs(3));
        assert_eq!(m.cache, CacheMode::Never);
    }

    #[test]
    fn threads_and_passthrough() {
        let m = mount(&["s", "m", "-othreads=3,passthrough=off"]);
        assert_eq!(m.threads.map(NonZeroUsize::get), Some(3));
        assert!(!m.fs.passthrough);
        assert_eq!(m.passthrough, Passthrough::Off);
        assert!(mount(&["s", "m", "-opassthrough=on"]).fs.passthrough);
        assert_eq!(default_threads(1).get(), 2);
        assert_eq!(default_threads(8).get(), 8);
        assert_eq!(default_threads(128).get(), 16);
    }

    proptest! {
        #[test]
        fn parse_never_panics(raw in proptest::collection::vec(
            proptest::collection::vec(any::<u8>(), 0..12), 0..8)) {
            let args: Vec<OsString> = raw
                .into_iter()
                .map(std::os::unix::ffi::OsStringExt::from_vec)
                .collect();
            let _ = parse(&args);
        }

        #[test]
        fn option_lists_never_panic(opts in "[a-z_=,.0-9-]{0,40}", glue in any::<bool>()) {
            let mut args = args(&["s", "m"]);
            if glue {
                args.push(format!("-o{opts}").into());
            } else {
                args.push("-o".into());
                args.push(opts.into());
            }
            let _ = parse(&args);
        }

        #[test]
        fn known_options_in_any_order_never_panic(picks in proptest::collection::vec(
            (0..KNOWN.len(), "[a-z0-9.-]{0,6}"), 0..10)) {
            let list: Vec<String> = picks
                .iter()
                .map(|(i, v)| KNOWN[*i].replace('*', v))
                .collect();
            let mut args = args(&["s", "m"]);
            args.push(format!("-o{}", list.join(",")).into());
            if let Err(e) = parse(&args) {
                prop_assert!(!e.to_string().contains('\n'));
            }
        }
    }

    const KNOWN: &[&str] = &[
        "ro",
        "rw",
        "allow_other",
        "allow_root",
        "auto_unmount",
        "malformed=*",
        "malformed=transcode",
        "charset=*",
        "charset=latin1",
        "threads=*",
        "cache=*",
        "entry_timeout=*",
        "passthrough=*",
        "fsname=*",
        "subtype=*",
        "nofail",
        "x-*",
        "*",
    ];
}
