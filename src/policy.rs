//! What a file name component may be: strict UTF-8, 1 to 255 bytes, not `.` or `..`, without
//! `/` or NUL. Shared by the mount (names clients send) and utf8fsck (names found on disk).

use crate::utf8::{self, Utf8Error};
use std::fmt;

/// Longest component Linux accepts (NAME_MAX), in bytes.
pub const NAME_MAX: usize = 255;

/// Why a name component is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameError {
    /// Not strict UTF-8.
    Malformed(Utf8Error),
    /// Longer than [`NAME_MAX`] bytes.
    TooLong,
    /// Empty, `.`, `..`, or holding `/` or NUL: not a name at all.
    NotAName,
}

impl NameError {
    /// The errno a client sees: EILSEQ for malformed, ENAMETOOLONG, EINVAL.
    pub fn errno(&self) -> i32 {
        match self {
            NameError::Malformed(_) => libc::EILSEQ,
            NameError::TooLong => libc::ENAMETOOLONG,
            NameError::NotAName => libc::EINVAL,
        }
    }
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameError::Malformed(e) => write!(f, "not UTF-8: {e}"),
            NameError::TooLong => write!(f, "longer than {NAME_MAX} bytes"),
            NameError::NotAName => f.write_str("not a file name"),
        }
    }
}

/// Checks that `name` may exist as a component: returns it as text when it may.
pub fn check_component(name: &[u8]) -> Result<&str, NameError> {
    if name.is_empty() || name == b"." || name == b".." || name.contains(&b'/') || name.contains(&0)
    {
        return Err(NameError::NotAName);
    }
    if name.len() > NAME_MAX {
        return Err(NameError::TooLong);
    }
    utf8::from_utf8(name).map_err(NameError::Malformed)
}

/// Displays a byte string with every byte that is not part of valid UTF-8, and every control
/// character, written as `\xHH` (and `\` as `\\`), so that `caf\xE9` can be logged and read back.
pub struct Escaped<'a>(pub &'a [u8]);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for chunk in utf8::chunks(self.0) {
            for c in chunk.valid.chars() {
                match c {
                    '\\' => f.write_str("\\\\")?,
                    c if (c as u32) < 0x20 || c == '\u{7f}' => write!(f, "\\x{:02X}", c as u32)?,
                    c => write!(f, "{c}")?,
                }
            }
            for b in chunk.invalid {
                write!(f, "\\x{b:02X}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components() {
        assert_eq!(check_component(b"caf\xc3\xa9"), Ok("café"));
        assert!(matches!(
            check_component(b"caf\xe9"),
            Err(NameError::Malformed(_))
        ));
        assert_eq!(check_component(b".."), Err(NameError::NotAName));
        assert_eq!(check_component(&[b'a'; 256]), Err(NameError::TooLong));
        assert!(check_component(&[b'a'; 255]).is_ok());
        assert_eq!(
            check_component(b"\xc0\xae\xc0\xae").unwrap_err().errno(),
            libc::EILSEQ
        );
    }

    #[test]
    fn escaped() {
        assert_eq!(Escaped(b"caf\xe9").to_string(), "caf\\xE9");
        assert_eq!(Escaped("a\\b\n".as_bytes()).to_string(), "a\\\\b\\x0A");
    }
}
