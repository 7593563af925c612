//! Backing name ⇄ shown name, per mode (`-o malformed=`).
//!
//! PLACEHOLDER: the API below is the contract; the implementation is being written.
//! Pure: no I/O. The mount (`fs`) and `utf8fsck` both use it, so a tree repaired offline gets the
//! names the mount showed.

use std::borrow::Cow;

/// A legacy character set for `malformed=transcode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Charset {
    name: &'static str,
}

impl Charset {
    /// Looks up a WHATWG label (`latin1`, `windows-1252`, `shift_jis`, …) or `cp437`/`cp850`.
    pub fn from_label(label: &str) -> Option<Charset> {
        encoding_rs::Encoding::for_label(label.as_bytes()).map(|e| Charset { name: e.name() })
    }
    /// Canonical name of the charset.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// What happens to backing names that are not strict UTF-8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Hidden, and refused from clients with EILSEQ.
    Reject,
    /// Each invalid byte shown as a reversible escape character.
    Escape,
    /// Each maximal invalid subpart shown as U+FFFD.
    Replace,
    /// Decoded as a legacy charset, escape for what it cannot decode.
    Transcode(Charset),
    /// Passed through unchanged and logged.
    Audit,
}

/// Maps single names for one mode; cheap to clone and share between threads.
#[derive(Clone, Debug)]
pub struct Mapper {
    mode: Mode,
}

impl Mapper {
    /// A mapper for `mode`.
    pub fn new(mode: Mode) -> Mapper {
        Mapper { mode }
    }

    /// The mode this mapper implements.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// True for the modes that show malformed names under another name (escape, replace,
    /// transcode), which need collision handling per directory.
    pub fn normalizes(&self) -> bool {
        matches!(self.mode, Mode::Escape | Mode::Replace | Mode::Transcode(_))
    }

    /// The shown form of one backing name, before collisions with its siblings are resolved.
    /// Borrowed when unchanged; `None` when the name is hidden (reject mode, malformed name).
    pub fn candidate<'a>(&self, backing: &'a [u8]) -> Option<Cow<'a, [u8]>> {
        if crate::utf8::is_valid(backing) || self.mode == Mode::Audit {
            Some(Cow::Borrowed(backing))
        } else {
            None
        }
    }

    /// For a shown name that does not exist literally: the backing name it stands for when that
    /// can be computed without listing the directory. The caller checks that it exists.
    pub fn invert(&self, _shown: &[u8]) -> Option<Vec<u8>> {
        None
    }

    /// Whether `shown` could be the shown form of a malformed backing name, so that a directory
    /// listing is worth reading when it does not exist literally.
    pub fn may_be_mapped(&self, _shown: &[u8]) -> bool {
        false
    }
}

/// The resolved view of one directory (collisions and shortening applied). Holds only the
/// malformed entries: valid names show as themselves.
#[derive(Clone, Debug, Default)]
pub struct DirIndex {
    entries: Vec<(Box<[u8]>, Box<[u8]>)>,
}

impl DirIndex {
    /// Builds the view of a directory from all of its backing names.
    pub fn build<'a>(_mapper: &Mapper, _names: impl IntoIterator<Item = &'a [u8]>) -> DirIndex {
        DirIndex::default()
    }

    /// The shown name of backing entry `backing`, or `None` when it is hidden.
    pub fn shown<'a>(&'a self, backing: &'a [u8]) -> Option<&'a [u8]> {
        if crate::utf8::is_valid(backing) {
            return Some(backing);
        }
        self.entries
            .iter()
            .find(|(b, _)| &**b == backing)
            .map(|(_, s)| &**s)
    }

    /// The backing name shown as `shown`, if a malformed entry shows under it.
    pub fn backing(&self, shown: &[u8]) -> Option<&[u8]> {
        self.entries
            .iter()
            .find(|(_, s)| &**s == shown)
            .map(|(b, _)| &**b)
    }
}
