//! Strict UTF-8 decoder (RFC 3629 section 4, Unicode Table 3-7). No dependencies, no allocation,
//! `core` only.
//!
//! Valid UTF-8 is exactly the well-formed byte sequences of Table 3-7: 1 to 4 octets encoding
//! U+0000..U+10FFFF, no surrogates (ED A0..BF), no overlong forms (C0, C1, E0 80..9F, F0 80..8F),
//! nothing above U+10FFFF (F4 90..BF, F5..FF). The 5- and 6-octet forms of ISO 10646 Annex R are
//! malformed. Noncharacters such as U+FFFE, U+FFFF and U+FEFF are valid: they are a policy question,
//! not an encoding error.
//!
//! Errors follow the Unicode chapter 3 "maximal subpart" practice exactly as
//! `core::str::Utf8Error` does: [`Utf8Error::valid_up_to`] is the offset of the first bad byte,
//! [`Utf8Error::error_len`] the length of the maximal invalid subpart there, `None` only when the
//! input ends inside a sequence that was valid so far.
//!
//! Each error also carries a [`Reason`], decided by the first byte that makes the sequence invalid:
//!
//! | bytes                                    | reason                  |
//! |------------------------------------------|-------------------------|
//! | 80..BF where a character starts          | `UnexpectedContinuation`|
//! | F5..FF (incl. 5- and 6-octet leads)      | `InvalidLead`           |
//! | C0, C1 (they only start overlong forms)  | `Overlong`              |
//! | E0 80..9F, F0 80..8F                     | `Overlong`              |
//! | ED A0..BF                                | `Surrogate`             |
//! | F4 90..BF                                | `BeyondMax`             |
//! | a lead byte followed by a non-continuation byte or by the end of input | `Truncated` |

use core::fmt;

/// Why a byte sequence is not UTF-8.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// A continuation byte (80..BF) where a character must start.
    UnexpectedContinuation,
    /// A byte that never starts a sequence (F5..FF).
    InvalidLead,
    /// A longer form of a character that has a shorter one (C0, C1, E0 80..9F, F0 80..8F).
    /// C0 and C1 count here rather than as invalid leads: they can only begin overlong forms.
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

impl core::error::Error for Utf8Error {}

/// How a sequence that starts at some offset fails: maximal subpart length (`None`: the input
/// ended inside a valid-so-far prefix) and reason.
type SeqError = (Option<u8>, Reason);

/// True for a continuation byte 80..BF.
#[inline(always)]
fn is_continuation(b: u8) -> bool {
    (b as i8) < -64
}

/// What Table 3-7 says about a lead byte: the sequence width (0: never a lead), the allowed range
/// of the second byte, and the reason when the second byte is a continuation byte outside it.
#[derive(Clone, Copy)]
struct Lead {
    width: u8,
    lo: u8,
    hi: u8,
    out_of_range: Reason,
}

/// [`Lead`] for a byte; the single statement of Table 3-7 that both paths below use.
const fn lead(b0: u8) -> Lead {
    let (width, lo, hi, out_of_range) = match b0 {
        // ASCII never reaches the error path; its entry only records the width.
        0x00..=0x7F => (1, 0, 0, Reason::Truncated),
        0xC2..=0xDF => (2, 0x80, 0xBF, Reason::Truncated),
        0xE0 => (3, 0xA0, 0xBF, Reason::Overlong),
        0xE1..=0xEC | 0xEE | 0xEF => (3, 0x80, 0xBF, Reason::Truncated),
        0xED => (3, 0x80, 0x9F, Reason::Surrogate),
        0xF0 => (4, 0x90, 0xBF, Reason::Overlong),
        0xF1..=0xF3 => (4, 0x80, 0xBF, Reason::Truncated),
        0xF4 => (4, 0x80, 0x8F, Reason::BeyondMax),
        0x80..=0xBF => (0, 0, 0, Reason::UnexpectedContinuation),
        0xC0 | 0xC1 => (0, 0, 0, Reason::Overlong),
        0xF5..=0xFF => (0, 0, 0, Reason::InvalidLead),
    };
    Lead {
        width,
        lo,
        hi,
        out_of_range,
    }
}

/// Allowed second-byte range of each multi-byte lead E0..F4, indexed by `lead - 0xE0`.
const SECOND: [(u8, u8); 21] = {
    let mut t = [(0, 0); 21];
    let mut k = 0;
    while k < t.len() {
        let l = lead(0xE0 + k as u8);
        t[k] = (l.lo, l.hi);
        k += 1;
    }
    t
};

/// True when `b1` may follow the lead `b0` (E0..F4).
#[inline(always)]
fn second_ok(b0: u8, b1: u8) -> bool {
    let (lo, hi) = SECOND[usize::from(b0 - 0xE0)];
    lo <= b1 && b1 <= hi
}

/// Checks the sequence starting at `bytes[i]` (`i` in bounds) and returns its width, or how it is
/// malformed. Well-formed sequences take the inline path; errors are worked out on a cold one.
#[inline(always)]
fn sequence(bytes: &[u8], i: usize) -> Result<usize, SeqError> {
    let b0 = bytes[i];
    match b0 {
        0x00..=0x7F => return Ok(1),
        0xC2..=0xDF => {
            if let Some(&b1) = bytes.get(i + 1) {
                if is_continuation(b1) {
                    return Ok(2);
                }
            }
        }
        0xE0..=0xEF => {
            if let Some(&[_, b1, b2]) = bytes.get(i..i + 3) {
                if second_ok(b0, b1) && is_continuation(b2) {
                    return Ok(3);
                }
            }
        }
        0xF0..=0xF4 => {
            if let Some(&[_, b1, b2, b3]) = bytes.get(i..i + 4) {
                if second_ok(b0, b1) && is_continuation(b2) && is_continuation(b3) {
                    return Ok(4);
                }
            }
        }
        _ => {}
    }
    Err(malformed(bytes, i))
}

/// How the sequence starting at `bytes[i]` is malformed: the maximal subpart and the reason,
/// decided by the first byte that cannot continue it.
#[cold]
#[inline(never)]
fn malformed(bytes: &[u8], i: usize) -> SeqError {
    let l = lead(bytes[i]);
    if l.width < 2 {
        return (Some(1), l.out_of_range);
    }
    let Some(&b1) = bytes.get(i + 1) else {
        return (None, Reason::Truncated);
    };
    if b1 < l.lo || b1 > l.hi {
        let reason = if is_continuation(b1) {
            l.out_of_range
        } else {
            Reason::Truncated
        };
        return (Some(1), reason);
    }
    for k in 2..usize::from(l.width) {
        match bytes.get(i + k) {
            None => return (None, Reason::Truncated),
            Some(&b) if !is_continuation(b) => return (Some(k as u8), Reason::Truncated),
            Some(_) => {}
        }
    }
    // Only reached if `sequence` and this function disagree, which the tests rule out.
    (Some(1), Reason::Truncated)
}

const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// Eight bytes from `bytes[i..i + 8]` (caller checks bounds), first byte in the low lane.
#[inline(always)]
fn word(bytes: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[i..i + 8]);
    u64::from_le_bytes(w)
}

/// Offset of the first non-ASCII byte at or after `i`, or `bytes.len()`: eight bytes at a time,
/// the last partial block read overlapping the bytes before it.
#[inline(always)]
fn skip_ascii(bytes: &[u8], mut i: usize) -> usize {
    let n = bytes.len();
    while i + 16 <= n {
        if (word(bytes, i) | word(bytes, i + 8)) & HIGH_BITS != 0 {
            break;
        }
        i += 16;
    }
    while i + 8 <= n {
        let m = word(bytes, i) & HIGH_BITS;
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    if i == n {
        return n;
    }
    if n >= 8 {
        // The block ending at `n` starts up to 7 bytes before `i`; ignore those lanes.
        let start = n - 8;
        let m = word(bytes, start) & HIGH_BITS & (!0u64 << ((i - start) * 8));
        return if m != 0 {
            start + (m.trailing_zeros() / 8) as usize
        } else {
            n
        };
    }
    while i < n && bytes[i] < 0x80 {
        i += 1;
    }
    i
}

/// Checks `bytes` and returns the first error.
pub fn validate(bytes: &[u8]) -> Result<(), Utf8Error> {
    let n = bytes.len();
    let mut i = 0;
    loop {
        i = skip_ascii(bytes, i);
        while let Some(&b) = bytes.get(i) {
            if b < 0x80 {
                // A lone ASCII byte between non-ASCII characters (a space in Greek or CJK
                // text) is cheaper to step over than to hand to the block loop.
                if bytes.get(i + 1).is_some_and(|&next| next >= 0x80) {
                    i += 1;
                    continue;
                }
                break;
            }
            match sequence(bytes, i) {
                Ok(width) => i += width,
                Err((error_len, reason)) => {
                    return Err(Utf8Error {
                        valid_up_to: i,
                        error_len,
                        reason,
                    })
                }
            }
        }
        if i >= n {
            return Ok(());
        }
    }
}

/// `bytes` as `&str` when they are strict UTF-8.
pub fn from_utf8(bytes: &[u8]) -> Result<&str, Utf8Error> {
    validate(bytes)?;
    // SAFETY: `validate` accepted every byte, and strict UTF-8 is what `str` requires.
    Ok(unsafe { core::str::from_utf8_unchecked(bytes) })
}

/// True when `bytes` are strict UTF-8.
pub fn is_valid(bytes: &[u8]) -> bool {
    validate(bytes).is_ok()
}

/// One maximal invalid subpart met while decoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidSequence<'a> {
    /// Byte offset of the subpart in the decoded input.
    pub offset: usize,
    /// The invalid bytes (at the end of input: the incomplete sequence).
    pub bytes: &'a [u8],
    /// Why they are malformed.
    pub reason: Reason,
}

impl fmt::Display for InvalidSequence<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.reason, self.offset)
    }
}

impl core::error::Error for InvalidSequence<'_> {}

/// Iterator over the chars of a byte string and its maximal invalid subparts, in order.
#[derive(Clone, Debug)]
pub struct Decode<'a> {
    bytes: &'a [u8],
    pos: usize,
}

/// Decodes `bytes` into chars, yielding an error for each maximal invalid subpart.
pub fn decode(bytes: &[u8]) -> Decode<'_> {
    Decode { bytes, pos: 0 }
}

impl<'a> Decode<'a> {
    /// Offset of the next item in the input.
    pub fn offset(&self) -> usize {
        self.pos
    }
}

/// The scalar value of a sequence `sequence` accepted.
#[inline]
fn scalar(seq: &[u8]) -> char {
    let cont = |k: usize| u32::from(seq[k] & 0x3F);
    let cp = match seq.len() {
        1 => u32::from(seq[0]),
        2 => (u32::from(seq[0] & 0x1F) << 6) | cont(1),
        3 => (u32::from(seq[0] & 0x0F) << 12) | (cont(1) << 6) | cont(2),
        _ => (u32::from(seq[0] & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3),
    };
    // `sequence` admits only scalar values, so the fallback is never taken.
    char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER)
}

impl<'a> Iterator for Decode<'a> {
    type Item = Result<char, InvalidSequence<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let bytes = self.bytes;
        let start = self.pos;
        let &b = bytes.get(start)?;
        if b < 0x80 {
            self.pos += 1;
            return Some(Ok(char::from(b)));
        }
        match sequence(bytes, start) {
            Ok(width) => {
                self.pos += width;
                Some(Ok(scalar(&bytes[start..start + width])))
            }
            Err((error_len, reason)) => {
                let len = error_len.map_or(bytes.len() - start, usize::from);
                self.pos += len;
                Some(Err(InvalidSequence {
                    offset: start,
                    bytes: &bytes[start..start + len],
                    reason,
                }))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let rest = self.bytes.len() - self.pos;
        (rest.div_ceil(4), Some(rest))
    }
}

impl core::iter::FusedIterator for Decode<'_> {}

/// Iterator over the chars of a byte string with one U+FFFD per maximal invalid subpart, as
/// `String::from_utf8_lossy` produces.
#[derive(Clone, Debug)]
pub struct Lossy<'a> {
    inner: Decode<'a>,
}

/// Decodes `bytes`, replacing each maximal invalid subpart by one U+FFFD.
pub fn lossy(bytes: &[u8]) -> Lossy<'_> {
    Lossy {
        inner: decode(bytes),
    }
}

impl Iterator for Lossy<'_> {
    type Item = char;

    fn next(&mut self) -> Option<char> {
        self.inner
            .next()
            .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl core::iter::FusedIterator for Lossy<'_> {}

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
#[derive(Clone, Debug)]
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
        let (valid, invalid, reason) = match validate(self.rest) {
            Ok(()) => (self.rest, &[][..], None),
            Err(e) => {
                let (valid, after) = self.rest.split_at(e.valid_up_to());
                let len = e.error_len().unwrap_or(after.len());
                (valid, &after[..len], Some(e.reason()))
            }
        };
        self.rest = &self.rest[valid.len() + invalid.len()..];
        Some(Chunk {
            // SAFETY: `validate` accepted every byte before `valid_up_to` (all of them on `Ok`).
            valid: unsafe { core::str::from_utf8_unchecked(valid) },
            invalid,
            reason,
        })
    }
}

impl core::iter::FusedIterator for Chunks<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(bytes: &[u8]) -> (usize, Option<usize>, Reason) {
        let e = validate(bytes).unwrap_err();
        (e.valid_up_to(), e.error_len(), e.reason())
    }

    #[test]
    fn reasons_of_each_class() {
        assert_eq!(err(b"\xC0\xAF"), (0, Some(1), Reason::Overlong));
        assert_eq!(err(b"a\xE0\x80\xAF"), (1, Some(1), Reason::Overlong));
        assert_eq!(err(b"\xED\xA0\x80"), (0, Some(1), Reason::Surrogate));
        assert_eq!(err(b"\xF4\x90\x80\x80"), (0, Some(1), Reason::BeyondMax));
        assert_eq!(
            err(b"\xF8\x88\x80\x80\x80"),
            (0, Some(1), Reason::InvalidLead)
        );
        assert_eq!(err(b"\x80"), (0, Some(1), Reason::UnexpectedContinuation));
        assert_eq!(err(b"\xE2\x82"), (0, None, Reason::Truncated));
        assert_eq!(err(b"\xE2\x82a"), (0, Some(2), Reason::Truncated));
    }

    #[test]
    fn ascii_fast_path_finds_late_bytes() {
        for len in 0..40 {
            for at in 0..len {
                let mut v = [b'a'; 40];
                v[at] = 0xFF;
                assert_eq!(err(&v[..len]).0, at, "len {len} at {at}");
            }
            assert!(is_valid(&[b'a'; 40][..len]));
        }
    }

    #[test]
    fn noncharacters_are_valid() {
        assert_eq!(
            from_utf8("\u{FFFE}\u{FFFF}\u{FEFF}".as_bytes()).ok(),
            Some("\u{FFFE}\u{FFFF}\u{FEFF}")
        );
    }
}
