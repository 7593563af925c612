//! Strict UTF-8 decoder (RFC 3629 section 4). No dependencies, no allocation.
//!
//! PLACEHOLDER: the API below is the contract; the implementation is being written.

use core::fmt;

/// Why a byte sequence is not UTF-8.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// A continuation byte (80..BF) where a character must start.
    UnexpectedContinuation,
    /// A byte that never starts a sequence (F5..FF).
    InvalidLead,
    /// A longer form of a character that has a shorter one (C0, C1, E0 80..9F, F0 80..8F).
    Overlong,
    /// A UTF-16 surrogate code point (ED A0..BF).
    Surrogate,
    /// A code point above U+10FFFF (F4 90..BF).
    BeyondMax,
    /// A lead byte not followed by enough continuation bytes.
    Truncated,
}

impl Reason {
    /// Short human description, used in logs and utf8fsck reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::UnexpectedContinuation => "unexpected continuation byte",
            Reason::InvalidLead => "invalid lead byte",
            Reason::Overlong => "overlong encoding",
            Reason::Surrogate => "surrogate code point",
            Reason::BeyondMax => "code point beyond U+10FFFF",
            Reason::Truncated => "truncated sequence",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where and why validation failed; `valid_up_to`/`error_len` mean what they mean in std.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Utf8Error {
    valid_up_to: usize,
    error_len: Option<u8>,
    reason: Reason,
}

impl Utf8Error {
    /// Length of the valid prefix: the byte offset of the error.
    pub fn valid_up_to(&self) -> usize {
        self.valid_up_to
    }
    /// Length of the maximal invalid subpart, or `None` when the input ends inside a sequence.
    pub fn error_len(&self) -> Option<usize> {
        self.error_len.map(usize::from)
    }
    /// Why the bytes at `valid_up_to` are malformed.
    pub fn reason(&self) -> Reason {
        self.reason
    }
}

impl fmt::Display for Utf8Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.reason, self.valid_up_to)
    }
}

/// Checks `bytes` and returns the first error.
pub fn validate(bytes: &[u8]) -> Result<(), Utf8Error> {
    match core::str::from_utf8(bytes) {
        Ok(_) => Ok(()),
        Err(e) => Err(Utf8Error {
            valid_up_to: e.valid_up_to(),
            error_len: e.error_len().map(|l| l as u8),
            reason: Reason::Truncated,
        }),
    }
}

/// `bytes` as `&str` when they are strict UTF-8.
pub fn from_utf8(bytes: &[u8]) -> Result<&str, Utf8Error> {
    validate(bytes)?;
    // SAFETY: placeholder; validated above.
    Ok(unsafe { core::str::from_utf8_unchecked(bytes) })
}

/// True when `bytes` are strict UTF-8.
pub fn is_valid(bytes: &[u8]) -> bool {
    validate(bytes).is_ok()
}

/// One run of a byte string: a valid prefix followed by at most one maximal invalid subpart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk<'a> {
    /// The valid text before the invalid part (may be empty).
    pub valid: &'a str,
    /// The maximal invalid subpart (empty only in the last chunk).
    pub invalid: &'a [u8],
    /// Why `invalid` is malformed (`None` when `invalid` is empty).
    pub reason: Option<Reason>,
}

/// Iterator over [`Chunk`]s, like `std::str::Utf8Chunks`.
pub struct Chunks<'a> {
    rest: &'a [u8],
}

/// Splits `bytes` into valid runs and maximal invalid subparts.
pub fn chunks(bytes: &[u8]) -> Chunks<'_> {
    Chunks { rest: bytes }
}

impl<'a> Iterator for Chunks<'a> {
    type Item = Chunk<'a>;
    fn next(&mut self) -> Option<Chunk<'a>> {
        if self.rest.is_empty() {
            return None;
        }
        match validate(self.rest) {
            Ok(()) => {
                let valid = unsafe { core::str::from_utf8_unchecked(self.rest) };
                self.rest = &[];
                Some(Chunk {
                    valid,
                    invalid: &[],
                    reason: None,
                })
            }
            Err(e) => {
                let (v, r) = self.rest.split_at(e.valid_up_to());
                let n = e.error_len().unwrap_or(r.len());
                let (inv, rest) = r.split_at(n);
                self.rest = rest;
                Some(Chunk {
                    valid: unsafe { core::str::from_utf8_unchecked(v) },
                    invalid: inv,
                    reason: Some(e.reason()),
                })
            }
        }
    }
}
