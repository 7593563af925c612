//! The FUSE operations and the inode table.
//!
//! PLACEHOLDER: `FsConfig` and `Utf8Fs::new` are the contract; the implementation is being written.

use crate::mapping::Mapper;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// How long the kernel may cache what it learnt (`-o cache=`, `*_timeout=`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CachePolicy {
    /// Validity of a name → inode entry.
    pub entry_timeout: Duration,
    /// Validity of an inode's attributes.
    pub attr_timeout: Duration,
    /// Validity of "no such name"; zero disables negative caching.
    pub negative_timeout: Duration,
    /// Keep the page cache of a file across opens when it did not change.
    pub keep_cache: bool,
    /// Let the kernel cache directory listings.
    pub cache_dir: bool,
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
    /// Kernel FUSE passthrough for regular files when available (`-o passthrough=`).
    pub passthrough: bool,
    /// Kernel caching (`-o cache=`).
    pub cache: CachePolicy,
}

/// The filesystem: mirrors `FsConfig::source`, checking every name that crosses it.
pub struct Utf8Fs {
    config: FsConfig,
}

impl Utf8Fs {
    /// Opens the backing directory; fails if it is missing or not a directory.
    pub fn new(config: FsConfig) -> io::Result<Utf8Fs> {
        Ok(Utf8Fs { config })
    }

    /// The configuration this filesystem runs with.
    pub fn config(&self) -> &FsConfig {
        &self.config
    }
}

impl fuser::Filesystem for Utf8Fs {}
