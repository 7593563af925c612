//! Backing name ⇄ shown name, per mode (`-o malformed=`).
//!
//! Pure: no I/O. The mount (`fs`) and `utf8fsck` both use it, so a tree repaired offline gets
//! exactly the names the mount showed. [`Mapper`] maps one name on its own; [`DirIndex`] resolves
//! the names of one whole directory (collisions and shortening).
//!
//! # Rules
//!
//! 1. **Valid names are never changed** (except to a normalization form, rule 9). A backing
//!    name that is strict UTF-8 is shown as itself in every mode, and a literal valid name
//!    always keeps its own name, whatever else the directory holds. `reject` hides malformed
//!    names; `audit` shows every name byte for byte.
//! 2. **escape** (OPTU-8 style): each byte `b` of a maximal invalid subpart is shown as the
//!    private-use character U+EF00+`b` (bytes 80..FF become U+EF80..U+EFFF; an invalid subpart
//!    never holds a byte below 80). So that the escape form stays reversible, a literal
//!    U+EF80..U+EFFF character in the valid text of a *malformed* name is escaped too: each of
//!    its three UTF-8 bytes becomes U+EF00+byte. In an escape form every U+EF80..U+EFFF
//!    character therefore stands for exactly one raw byte, and the backing name is computed back
//!    from the shown name alone. Example: `caf\xE9.txt` → `caf\u{EFE9}.txt`.
//! 3. **replace**: each maximal invalid subpart is shown as U+FFFD, as `String::from_utf8_lossy`
//!    does (`caf\xE9.txt` → `caf�.txt`). Several names can map to the same shown name; rule 6
//!    keeps them apart, and such names are found back through the directory index.
//! 4. **transcode** with a charset (default `windows-1252`; every WHATWG label, plus `cp437` and
//!    `cp850`): the whole malformed name is decoded with the charset (`caf\xE9.txt` →
//!    `café.txt`). Bytes the charset cannot decode, and bytes that decode to NUL, `/`, a C1
//!    control (U+0080..U+009F) or a character of the escape range U+EF80..U+EFFF, are shown in the
//!    escape form of rule 2 instead (bytes below 80 in such a sequence as themselves; bytes
//!    that decode to nothing, such as an ISO-2022-JP mode switch, go with the character that
//!    follows them, or are shown as bytes when a malformed byte or the end follows). A valid
//!    name is never transcoded.
//! 5. **Every shown name is a legal name**: strict UTF-8, 1 to 255 bytes, never `.` or `..`,
//!    without `/` or NUL. A malformed name always shows at least one escape character, U+FFFD
//!    or (transcode) non-ASCII character, so the overlong `..` (`C0 AE C0 AE`) shows as
//!    `\u{EFC0}\u{EFAE}\u{EFC0}\u{EFAE}`, `����` or `À®À®`, never as `..`. Should a charset ever
//!    decode a name to something illegal or pure ASCII, the escape form is shown instead.
//! 6. **Collisions** inside one directory are resolved by [`DirIndex::build`], independently of
//!    the order the names are listed in:
//!    (a) every valid backing name claims itself;
//!    (b) the malformed names, in ascending byte order, claim their plain shown form if it is
//!    still free;
//!    (c) the others, in ascending byte order, get a tagged name: `~` and 8 lowercase hex digits
//!    of the name hash are inserted before the extension (`caf�~1a2b3c4d.txt`); if that is taken,
//!    `~` and 16 hex digits; then `~2`, `~3`, … are appended to the 16-digit tag
//!    (`caf�~0123456789abcdef~2.txt`) until the name is free.
//!    The extension is the part from the last `.` when that dot is not the first character and
//!    at most 16 bytes follow it. A name's shown form depends only on its own bytes and on the
//!    names it collides with, never on unrelated entries.
//! 7. **Shortening**: a shown form longer than 255 bytes (a 250-byte Latin-1 name triples in
//!    escape mode) is cut at a character boundary and tagged with `~` and the 16 hex digits of
//!    the name hash, keeping a short extension, so that it is at most 255 bytes. Rule 6 (c) then
//!    applies to the cut form when needed.
//! 8. **The name hash** is FNV-1a 64 (offset basis `0xcbf29ce484222325`, prime `0x100000001b3`)
//!    of the full backing name bytes. The 16-digit tag is that value in lowercase hex; the
//!    8-digit tag is its upper 32 bits XOR its lower 32 bits. This never changes between versions:
//!    `utf8fsck` writes these names to disk and users type them.
//! 9. **Normalization form** (`-o unicode=nfc|nfd`, [`Mapper::with_form`]): every shown name is
//!    in that form. A valid backing name that is not in it is shown mapped, in the form (NFD
//!    `cafe\u{301}` shows as NFC `caf\u{E9}` under `nfc`), exactly like a malformed name: a name
//!    already in the form keeps it (rule 6 a), so when both spellings exist the other one gets
//!    the `~hash` tag of rule 6 (c), and a name that grows past 255 bytes when normalized is
//!    shortened by rule 7 (the cut stem stays in the form). The shown forms of malformed names
//!    (rules 2–4) are normalized too; escape characters are unaffected by normalization. In
//!    `reject` and `audit` modes only valid names are mapped this way. Names from clients are
//!    normalized first ([`Mapper::client_name`]): lookups are normalization-insensitive and
//!    created names are written in the form.
//!
//! # Lookups
//!
//! A client's name is first put in the normalization form, if any ([`Mapper::client_name`]).
//! A shown name that exists literally is that entry. Otherwise [`Mapper::inversions`] computes
//! the backing name of plain escape and transcode forms, and of the other normalization form
//! (NFD for NFC and the reverse), without listing the directory (valid only if that name
//! exists and the directory's index shows it under this name); tagged (collided or shortened)
//! names, replace forms, other unnormalized spellings and failed inversions need the
//! directory's [`DirIndex`]. [`Mapper::may_be_mapped`] tells which names can be shown forms at
//! all (they hold an escape character, U+FFFD, a non-ASCII character in transcode mode or with
//! a form, or a `~hex` tag), so a failed lookup of an ordinary name never reads the directory.
//!
//! # Memory
//!
//! A [`DirIndex`] keeps only the mapped entries (malformed names, and with a normalization form
//! the valid names not in it): per mapped entry, 36 bytes of table
//! (two boxed byte slices and a 4-byte position) plus the backing and shown bytes in two heap
//! blocks, i.e. `36 + B + S` bytes plus the allocator's overhead of two blocks (about 16 bytes
//! each with glibc). [`DirIndex::heap_bytes`] reports it. Names shown as themselves cost
//! nothing: a directory without mapped names has an empty index. While it builds, the index also holds a set of
//! references to the valid names that could collide (those [`Mapper::may_be_mapped`] accepts).

use crate::policy::{is_normalized, normalize, Form, NAME_MAX};
use crate::utf8;
use encoding_rs::{DecoderResult, EncoderResult, Encoding};
use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

/// First code point of the escape range: raw byte `b` (80..FF) is shown as U+EF00+`b`.
const ESCAPE_BASE: u32 = 0xEF00;
/// Escape characters actually produced: U+EF80..=U+EFFF.
const ESCAPE_RANGE: std::ops::RangeInclusive<char> = '\u{EF80}'..='\u{EFFF}';
/// Longest extension (bytes after the dot) kept after a tag.
const MAX_EXTENSION: usize = 16;

/// The charset used by `transcode` when none is given.
pub const DEFAULT_CHARSET: &str = "windows-1252";

/// A legacy character set for `malformed=transcode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Charset {
    kind: CharsetKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CharsetKind {
    /// A WHATWG encoding, through encoding_rs.
    Whatwg(&'static Encoding),
    /// DOS code page 437, through oem_cp.
    Cp437,
    /// DOS code page 850, through oem_cp.
    Cp850,
}

impl Charset {
    /// Looks up a WHATWG label (`latin1`, `windows-1252`, `shift_jis`, …) or `cp437`/`cp850`
    /// (also `ibm437`, `437`, `ibm850`, `850`), ignoring case and surrounding spaces.
    pub fn from_label(label: &str) -> Option<Charset> {
        if let Some(e) = Encoding::for_label(label.as_bytes()) {
            return Some(Charset {
                kind: CharsetKind::Whatwg(e),
            });
        }
        let kind = match label.trim().to_ascii_lowercase().as_str() {
            "cp437" | "ibm437" | "437" | "cspc8codepage437" => CharsetKind::Cp437,
            "cp850" | "ibm850" | "850" | "cspc850multilingual" => CharsetKind::Cp850,
            _ => return None,
        };
        Some(Charset { kind })
    }

    /// Canonical name of the charset (`windows-1252`, `Shift_JIS`, `cp437`, …).
    pub fn name(&self) -> &'static str {
        match self.kind {
            CharsetKind::Whatwg(e) => e.name(),
            CharsetKind::Cp437 => "cp437",
            CharsetKind::Cp850 => "cp850",
        }
    }

    /// Decodes a whole malformed name, with the escape form for what cannot be shown (rule 4).
    fn decode(&self, bytes: &[u8], out: &mut String) {
        match self.kind {
            CharsetKind::Whatwg(e) => decode_whatwg(e, bytes, out),
            CharsetKind::Cp437 => decode_oem(&oem_cp::code_table::DECODING_TABLE_CP437, bytes, out),
            CharsetKind::Cp850 => decode_oem(&oem_cp::code_table::DECODING_TABLE_CP850, bytes, out),
        }
    }

    /// Encodes text back to the charset; `None` when some character has no encoding.
    fn encode(&self, text: &str, out: &mut Vec<u8>) -> Option<()> {
        let table = match self.kind {
            CharsetKind::Whatwg(e) => return encode_whatwg(e, text, out),
            CharsetKind::Cp437 => &oem_cp::code_table::ENCODING_TABLE_CP437,
            CharsetKind::Cp850 => &oem_cp::code_table::ENCODING_TABLE_CP850,
        };
        for c in text.chars() {
            out.push(if c.is_ascii() {
                c as u8
            } else {
                *table.get(&c)?
            });
        }
        Some(())
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

/// Why a `malformed=`/`charset=` pair was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseModeError {
    /// The mode name is not one of reject, escape, replace, transcode, audit.
    UnknownMode(String),
    /// The charset label is neither a WHATWG label nor cp437/cp850.
    UnknownCharset(String),
    /// A charset was given for a mode other than transcode.
    CharsetWithoutTranscode(Mode),
}

impl fmt::Display for ParseModeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseModeError::UnknownMode(m) => write!(
                f,
                "unknown mode malformed={m:?} (expected reject, escape, replace, transcode or audit)"
            ),
            ParseModeError::UnknownCharset(c) => write!(
                f,
                "unknown charset {c:?} (expected a WHATWG encoding label such as windows-1252, \
                 iso-8859-2, shift_jis, or cp437/cp850)"
            ),
            ParseModeError::CharsetWithoutTranscode(m) => {
                write!(f, "charset= only applies to malformed=transcode, not malformed={m}")
            }
        }
    }
}

impl std::error::Error for ParseModeError {}

impl Mode {
    /// Parses the `malformed=` value and the optional `charset=` label (transcode only;
    /// default [`DEFAULT_CHARSET`]).
    pub fn parse(name: &str, charset: Option<&str>) -> Result<Mode, ParseModeError> {
        let mode = match name {
            "reject" => Mode::Reject,
            "escape" => Mode::Escape,
            "replace" => Mode::Replace,
            "audit" => Mode::Audit,
            "transcode" => {
                let label = charset.unwrap_or(DEFAULT_CHARSET);
                return Charset::from_label(label)
                    .map(Mode::Transcode)
                    .ok_or_else(|| ParseModeError::UnknownCharset(label.to_string()));
            }
            other => return Err(ParseModeError::UnknownMode(other.to_string())),
        };
        match charset {
            Some(_) => Err(ParseModeError::CharsetWithoutTranscode(mode)),
            None => Ok(mode),
        }
    }

    /// The mode's option value: `reject`, `escape`, `replace`, `transcode`, `audit`.
    pub fn name(&self) -> &'static str {
        match self {
            Mode::Reject => "reject",
            Mode::Escape => "escape",
            Mode::Replace => "replace",
            Mode::Transcode(_) => "transcode",
            Mode::Audit => "audit",
        }
    }
}

impl fmt::Display for Mode {
    /// `escape`, or `transcode (windows-1252)` with the charset.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mode::Transcode(c) => write!(f, "transcode ({})", c.name()),
            m => f.write_str(m.name()),
        }
    }
}

/// Maps single names for one mode (and optionally one Unicode normalization form); cheap to
/// clone and share between threads.
#[derive(Clone, Debug)]
pub struct Mapper {
    mode: Mode,
    form: Option<Form>,
}

/// What a backing name shows as, before collisions are resolved.
enum Full {
    /// Its own bytes.
    Itself,
    /// Nothing: hidden.
    Hidden,
    /// This text (not yet shortened).
    Mapped(String),
}

impl Mapper {
    /// A mapper for `mode`, without a normalization form.
    pub fn new(mode: Mode) -> Mapper {
        Mapper { mode, form: None }
    }

    /// The same mapper, also showing valid names in the normalization form `form`
    /// (`-o unicode=nfc|nfd`, rule 9); `None` shows valid names as they are.
    pub fn with_form(self, form: Option<Form>) -> Mapper {
        Mapper { form, ..self }
    }

    /// The mode this mapper implements.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The normalization form shown names are in, if any.
    pub fn form(&self) -> Option<Form> {
        self.form
    }

    /// True when some backing names may show under another name, so that a directory needs
    /// collision handling: the modes that map malformed names (escape, replace, transcode), and
    /// every mode with a normalization form.
    pub fn normalizes(&self) -> bool {
        self.maps_malformed() || self.form.is_some()
    }

    /// True for the modes that show malformed names under another name.
    fn maps_malformed(&self) -> bool {
        matches!(self.mode, Mode::Escape | Mode::Replace | Mode::Transcode(_))
    }

    /// A name a client sent, in this mapper's normalization form: the name lookups resolve
    /// and creations write (rule 9). Borrowed when unchanged: no form, not UTF-8, or already
    /// in the form (ASCII always is).
    pub fn client_name<'a>(&self, name: &'a [u8]) -> Cow<'a, [u8]> {
        let Some(form) = self.form else {
            return Cow::Borrowed(name);
        };
        match utf8::from_utf8(name) {
            Ok(text) => match normalize(text, form) {
                Cow::Borrowed(_) => Cow::Borrowed(name),
                Cow::Owned(n) => Cow::Owned(n.into_bytes()),
            },
            Err(_) => Cow::Borrowed(name),
        }
    }

    /// The shown form of one backing name, before collisions with its siblings are resolved
    /// (rules 1–5, 7 and 9). Borrowed when unchanged; `None` when the name is hidden (reject
    /// mode, or a malformed byte string that cannot be a name at all: empty, or holding `/` or
    /// NUL). Valid names in the form (or without a form) cost one validity check and do not
    /// allocate.
    pub fn candidate<'a>(&self, backing: &'a [u8]) -> Option<Cow<'a, [u8]>> {
        match self.full(backing) {
            Full::Itself => Some(Cow::Borrowed(backing)),
            Full::Hidden => None,
            Full::Mapped(s) => Some(Cow::Owned(self.fit(s, backing).into_bytes())),
        }
    }

    /// For a shown name that does not exist literally: the backing name it stands for when that
    /// can be computed without listing the directory (plain escape and transcode forms, or with
    /// a normalization form the same text in the other form). The result maps back to exactly
    /// `shown`; the caller checks that it exists and that the directory's index shows it as
    /// `shown`. See [`Mapper::inversions`] for every computable candidate.
    pub fn invert(&self, shown: &[u8]) -> Option<Vec<u8>> {
        self.inversions(shown).next()
    }

    /// Every backing name [`Mapper::invert`] can compute for `shown`, most likely first: the
    /// malformed name of an escape or transcode form, then (with a normalization form) the
    /// valid name in the other form (NFD for NFC and the reverse), as macOS and HFS+ write.
    pub fn inversions(&self, shown: &[u8]) -> impl Iterator<Item = Vec<u8>> {
        let text = utf8::from_utf8(shown).ok();
        let malformed = text.and_then(|t| self.invert_malformed(t));
        let other = text.and_then(|t| self.invert_form(t));
        malformed.into_iter().chain(other)
    }

    /// The valid name in the other form that shows as `text`, if it differs from `text`.
    fn invert_form(&self, text: &str) -> Option<Vec<u8>> {
        let form = self.form?;
        if text.is_ascii() {
            return None;
        }
        let other = match form {
            Form::Nfc => Form::Nfd,
            Form::Nfd => Form::Nfc,
        };
        let backing = normalize(text, other).into_owned().into_bytes();
        if backing == text.as_bytes() || backing.len() > NAME_MAX {
            return None;
        }
        match self.candidate(&backing) {
            Some(c) if *c == *text.as_bytes() => Some(backing),
            _ => None,
        }
    }

    /// The malformed backing name of a plain escape or transcode form.
    fn invert_malformed(&self, text: &str) -> Option<Vec<u8>> {
        let shown = text.as_bytes();
        let backing = match self.mode {
            Mode::Escape => {
                if !text.chars().any(is_escape_char) {
                    return None;
                }
                let mut out = Vec::with_capacity(text.len());
                for c in text.chars() {
                    push_unescaped(c, &mut out);
                }
                out
            }
            Mode::Transcode(charset) => {
                if text.is_ascii() {
                    return None;
                }
                let mut out = Vec::with_capacity(text.len());
                let mut run = 0;
                for (i, c) in text.char_indices() {
                    if is_escape_char(c) {
                        charset.encode(&text[run..i], &mut out)?;
                        push_unescaped(c, &mut out);
                        run = i + c.len_utf8();
                    }
                }
                charset.encode(&text[run..], &mut out)?;
                out
            }
            Mode::Reject | Mode::Replace | Mode::Audit => return None,
        };
        if utf8::is_valid(&backing) || !could_be_component(&backing) {
            return None;
        }
        match self.candidate(&backing) {
            Some(c) if *c == *shown => Some(backing),
            _ => None,
        }
    }

    /// Whether `shown` could be the shown form of a backing name shown under another name, so
    /// that a directory listing is worth reading when it does not exist literally. True for
    /// names holding an escape character (escape, transcode), U+FFFD (replace) or any non-ASCII
    /// character (transcode, and every mode with a normalization form), ASCII names holding a
    /// character that a canonical singleton normalizes to (`K` from U+212A KELVIN SIGN, `;` from
    /// U+037E, `` ` `` from U+1FEF; with a form), and names with a `~hex` tag (8 or 16 lowercase
    /// hex digits after a `~`, followed by the end, `.` or `~`) whenever [`Mapper::normalizes`].
    pub fn may_be_mapped(&self, shown: &[u8]) -> bool {
        utf8::from_utf8(shown).is_ok_and(|text| self.may_be_mapped_text(text))
    }

    /// [`Mapper::may_be_mapped`] for text already known to be valid.
    fn may_be_mapped_text(&self, text: &str) -> bool {
        if !self.normalizes() {
            return false;
        }
        let marked = match self.mode {
            Mode::Reject | Mode::Audit => false,
            Mode::Escape => text.chars().any(is_escape_char),
            Mode::Replace => text.contains('\u{FFFD}'),
            Mode::Transcode(_) => !text.is_ascii(),
        };
        let formed = self.form.is_some()
            && (!text.is_ascii() || text.bytes().any(|b| SINGLETON_TARGETS.contains(&b)));
        marked || formed || has_tag(text.as_bytes())
    }

    /// What `backing` shows as before collisions and shortening.
    fn full(&self, backing: &[u8]) -> Full {
        match utf8::from_utf8(backing) {
            Ok(text) => match self.valid_full(text) {
                Some(s) => Full::Mapped(s),
                None => Full::Itself,
            },
            Err(_) if self.mode == Mode::Audit => Full::Itself,
            Err(_) => match self.malformed_full(backing) {
                Some(s) => Full::Mapped(s),
                None => Full::Hidden,
            },
        }
    }

    /// The normalized form of a valid name that is not in the mapper's form (rule 9); `None`
    /// when it shows as itself.
    fn valid_full(&self, text: &str) -> Option<String> {
        let form = self.form?;
        match normalize(text, form) {
            Cow::Borrowed(_) => None,
            Cow::Owned(n) => legal_text(&n).then_some(n),
        }
    }

    /// The shown text of a malformed name, in the mapper's form; `None` when it is hidden.
    fn malformed_full(&self, backing: &[u8]) -> Option<String> {
        let full = self.full_form(backing)?;
        let Some(form) = self.form else {
            return Some(full);
        };
        match normalize(&full, form) {
            Cow::Borrowed(_) => Some(full),
            Cow::Owned(n) if legal_text(&n) && !n.is_ascii() => Some(n),
            // Escape characters are normalization-stable, so this form still shows them.
            Cow::Owned(_) => Some(normalize(&escape_form(backing), form).into_owned()),
        }
    }

    /// Rule 7: the plain shown form, shortened and tagged when the full form is too long.
    fn fit(&self, full: String, backing: &[u8]) -> String {
        if full.len() <= NAME_MAX {
            full
        } else {
            with_tag(&full, &tag(name_hash(backing), 1), self.form)
        }
    }

    /// The untagged, unshortened shown form of a malformed name; `None` when it is hidden.
    fn full_form(&self, backing: &[u8]) -> Option<String> {
        if !could_be_component(backing) {
            return None;
        }
        match self.mode {
            Mode::Reject | Mode::Audit => None,
            Mode::Escape => Some(escape_form(backing)),
            Mode::Replace => {
                let mut out = String::with_capacity(backing.len() + 8);
                for chunk in utf8::chunks(backing) {
                    out.push_str(chunk.valid);
                    if !chunk.invalid.is_empty() {
                        out.push('\u{FFFD}');
                    }
                }
                Some(out)
            }
            Mode::Transcode(charset) => {
                let mut out = String::with_capacity(backing.len() * 2);
                charset.decode(backing, &mut out);
                let legal =
                    !out.is_ascii() && out != "." && out != ".." && !out.contains(['/', '\0']);
                Some(if legal { out } else { escape_form(backing) })
            }
        }
    }
}

/// The ASCII characters that a canonical singleton decomposes to (U+037E → `;`, U+1FEF → `` ` ``,
/// U+212A → `K`): with a normalization form, an ASCII name holding one of them may be the shown
/// form of a non-ASCII backing name.
const SINGLETON_TARGETS: &[u8] = b";`K";

/// Whether normalized text is still a legal shown name (canonical normalization never adds
/// `/` or NUL, but is checked rather than trusted).
fn legal_text(text: &str) -> bool {
    !text.is_empty() && text != "." && text != ".." && !text.contains(['/', '\0'])
}

/// Whether a byte string could be a directory entry's name at all.
fn could_be_component(name: &[u8]) -> bool {
    !name.is_empty() && !name.contains(&b'/') && !name.contains(&0)
}

fn is_escape_char(c: char) -> bool {
    ESCAPE_RANGE.contains(&c)
}

/// Appends the shown form of one raw byte: U+EF00+`b` for 80..FF, the byte itself below.
fn push_escaped_byte(b: u8, out: &mut String) {
    match char::from_u32(ESCAPE_BASE + u32::from(b)) {
        Some(c) if b >= 0x80 => out.push(c),
        _ => out.push(char::from(b)),
    }
}

fn push_escaped_bytes(bytes: &[u8], out: &mut String) {
    for &b in bytes {
        push_escaped_byte(b, out);
    }
}

/// Appends the backing bytes of one shown character of an escape form.
fn push_unescaped(c: char, out: &mut Vec<u8>) {
    if is_escape_char(c) {
        // In the escape range, so the difference is 0x80..=0xFF.
        out.push((u32::from(c) - ESCAPE_BASE) as u8);
    } else {
        out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
    }
}

/// Rule 2: the escape form of a malformed name.
fn escape_form(backing: &[u8]) -> String {
    let mut out = String::with_capacity(backing.len() + 16);
    for chunk in utf8::chunks(backing) {
        for c in chunk.valid.chars() {
            if is_escape_char(c) {
                push_escaped_bytes(c.encode_utf8(&mut [0; 4]).as_bytes(), &mut out);
            } else {
                out.push(c);
            }
        }
        push_escaped_bytes(chunk.invalid, &mut out);
    }
    out
}

/// Characters a transcoded name must not show (rule 4).
fn unsafe_decoded(c: char) -> bool {
    matches!(c, '\0' | '/' | '\u{80}'..='\u{9F}') || is_escape_char(c)
}

/// Appends the decoding of `src` when it is safe to show, otherwise the escape form of `src`.
fn push_decoded(src: &[u8], text: &str, out: &mut String) {
    if text.is_empty() || text.chars().any(unsafe_decoded) {
        push_escaped_bytes(src, out);
    } else {
        out.push_str(text);
    }
}

/// Decodes with a WHATWG encoding one byte at a time, so that each decoded sequence is known
/// with its source bytes and malformed or unsafe ones fall back to the escape form.
fn decode_whatwg(encoding: &'static Encoding, bytes: &[u8], out: &mut String) {
    let mut decoder = encoding.new_decoder_without_bom_handling();
    let mut text = String::with_capacity(32);
    // `start`: first byte not yet shown; `consumed`: bytes fed to the decoder so far.
    let (mut start, mut consumed) = (0usize, 0usize);
    for i in 0..=bytes.len() {
        let last = i == bytes.len();
        let mut src = if last { &[][..] } else { &bytes[i..=i] };
        loop {
            let (result, read) = decoder.decode_to_string_without_replacement(src, &mut text, last);
            src = &src[read..];
            consumed += read;
            match result {
                DecoderResult::InputEmpty => break,
                DecoderResult::OutputFull => text.reserve(text.capacity() + 16),
                DecoderResult::Malformed(bad, after) => {
                    let end = consumed.saturating_sub(usize::from(after)).max(start);
                    let bad_start = end.saturating_sub(usize::from(bad)).max(start);
                    push_decoded(&bytes[start..bad_start], &text, out);
                    push_escaped_bytes(&bytes[bad_start..end], out);
                    text.clear();
                    start = end;
                }
            }
        }
        if !text.is_empty() {
            push_decoded(&bytes[start..consumed], &text, out);
            text.clear();
            start = consumed;
        }
    }
    push_escaped_bytes(&bytes[start.min(bytes.len())..], out);
}

/// Decodes with a complete DOS code page table (ASCII as itself).
fn decode_oem(table: &[char; 128], bytes: &[u8], out: &mut String) {
    for &b in bytes {
        let c = if b < 0x80 {
            char::from(b)
        } else {
            table[usize::from(b - 0x80)]
        };
        if unsafe_decoded(c) {
            push_escaped_byte(b, out);
        } else {
            out.push(c);
        }
    }
}

fn encode_whatwg(encoding: &'static Encoding, text: &str, out: &mut Vec<u8>) -> Option<()> {
    let mut encoder = encoding.new_encoder();
    let room = encoder.max_buffer_length_from_utf8_without_replacement(text.len())?;
    out.reserve(room);
    let (result, read) = encoder.encode_from_utf8_to_vec_without_replacement(text, out, true);
    (result == EncoderResult::InputEmpty && read == text.len()).then_some(())
}

/// Rule 8: FNV-1a 64 of the full backing name.
fn name_hash(backing: &[u8]) -> u64 {
    backing.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `full` with tag `n` of rule 6 (c) for backing name `backing`, placed and cut as rule 7 does
/// (`n` = 0: `~` + 8 hex, 1: `~` + 16 hex, then `~` + 16 hex + `~n`). utf8fsck tags its hygiene and
/// Unicode renames with it so that they resolve collisions exactly as malformed names do.
pub fn tagged(full: &str, backing: &[u8], n: usize, form: Option<Form>) -> String {
    with_tag(full, &tag(name_hash(backing), n), form)
}

/// The `n`-th tag of a name with hash `h` (rule 6 c): `~` + 8 hex, `~` + 16 hex, then
/// `~` + 16 hex + `~2`, `~3`, …
fn tag(h: u64, n: usize) -> String {
    match n {
        0 => format!("~{:08x}", (h >> 32) ^ (h & 0xffff_ffff)),
        1 => format!("~{h:016x}"),
        n => format!("~{h:016x}~{n}"),
    }
}

/// Inserts `tag` before the extension of `full`, cutting the stem at a character boundary so
/// that the result fits in [`NAME_MAX`] bytes (and, with a form, so that the cut stem is still
/// in that form: a cut can separate a base character from its combining marks).
fn with_tag(full: &str, tag: &str, form: Option<Form>) -> String {
    let split = match full.rfind('.') {
        Some(dot) if dot > 0 && full.len() - dot - 1 <= MAX_EXTENSION => dot,
        _ => full.len(),
    };
    let (stem, ext) = full.split_at(split);
    let mut keep = NAME_MAX
        .saturating_sub(tag.len() + ext.len())
        .min(stem.len());
    while !stem.is_char_boundary(keep) {
        keep -= 1;
    }
    if let Some(form) = form {
        while keep > 0 && !is_normalized(&stem[..keep], form) {
            keep -= 1;
            while !stem.is_char_boundary(keep) {
                keep -= 1;
            }
        }
    }
    let mut out = String::with_capacity(keep + tag.len() + ext.len());
    out.push_str(&stem[..keep]);
    out.push_str(tag);
    out.push_str(ext);
    out
}

/// Whether `name` holds a `~hex` tag: `~`, exactly 8 or 16 lowercase hex digits, then the end,
/// `.` or `~`.
fn has_tag(name: &[u8]) -> bool {
    name.iter().enumerate().any(|(i, &b)| {
        if b != b'~' || i == 0 {
            return false;
        }
        let rest = &name[i + 1..];
        let digits = rest
            .iter()
            .take_while(|d| matches!(d, b'0'..=b'9' | b'a'..=b'f'))
            .count();
        (digits == 8 || digits == 16) && matches!(rest.get(digits), None | Some(b'.' | b'~'))
    })
}

/// One mapped entry of a [`DirIndex`].
#[derive(Clone, Debug)]
struct Entry {
    backing: Box<[u8]>,
    shown: Box<[u8]>,
}

/// What a [`DirIndex`] does with malformed names that it does not hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Unlisted {
    /// Hidden (reject mode, or a name created after the index was built).
    #[default]
    Hidden,
    /// Shown as themselves (audit mode).
    AsIs,
}

/// The resolved view of one directory (collisions and shortening applied). Holds only the
/// entries shown under another name (malformed names, and with a normalization form the valid
/// names not in it): the others show as themselves.
#[derive(Clone, Debug, Default)]
pub struct DirIndex {
    /// Mapped entries, in ascending backing order.
    entries: Vec<Entry>,
    /// Positions in `entries`, in ascending shown order.
    by_shown: Vec<u32>,
    unlisted: Unlisted,
    form: Option<Form>,
}

impl DirIndex {
    /// Builds the view of a directory from all of its backing names (rules 6 and 9). The result
    /// does not depend on the order of `names`; duplicates are ignored. Costs one validity
    /// check (and with a form one normalization quick check) per valid name and O(m log m) for
    /// the m mapped ones; the only other names kept, and only while building, are borrowed
    /// references to those that could collide (see [`Mapper::may_be_mapped`]).
    pub fn build<'a>(mapper: &Mapper, names: impl IntoIterator<Item = &'a [u8]>) -> DirIndex {
        let unlisted = match mapper.mode {
            Mode::Audit => Unlisted::AsIs,
            _ => Unlisted::Hidden,
        };
        let mut index = DirIndex {
            unlisted,
            form: mapper.form,
            ..DirIndex::default()
        };
        if !mapper.normalizes() {
            return index;
        }
        // Every mapped shown form passes `may_be_mapped`, so only the names shown as themselves
        // that pass it can collide; the others are not kept even transiently.
        let mut taken: HashSet<Cow<'a, [u8]>> = HashSet::new();
        let mut mapped: Vec<(&'a [u8], String)> = Vec::new();
        for name in names {
            match utf8::from_utf8(name) {
                Ok(text) => match mapper.valid_full(text) {
                    Some(full) => mapped.push((name, full)),
                    None => {
                        if mapper.may_be_mapped_text(text) {
                            taken.insert(Cow::Borrowed(name));
                        }
                    }
                },
                Err(_) => {
                    if mapper.mode != Mode::Audit {
                        if let Some(full) = mapper.malformed_full(name) {
                            mapped.push((name, full));
                        }
                    }
                }
            }
        }
        if mapped.is_empty() {
            return index;
        }
        mapped.sort_unstable_by(|a, b| a.0.cmp(b.0));
        mapped.dedup_by(|a, b| a.0 == b.0);
        let mut shown: Vec<String> = vec![String::new(); mapped.len()];
        let mut rest = Vec::new();
        for (i, (backing, full)) in mapped.iter().enumerate() {
            let plain = mapper.fit(full.clone(), backing);
            if taken.insert(Cow::Owned(plain.as_bytes().to_vec())) {
                shown[i] = plain;
            } else {
                rest.push(i);
            }
        }
        for i in rest {
            let (backing, full) = &mapped[i];
            let h = name_hash(backing);
            for n in 0.. {
                let name = with_tag(full, &tag(h, n), mapper.form);
                if taken.insert(Cow::Owned(name.as_bytes().to_vec())) {
                    shown[i] = name;
                    break;
                }
            }
        }
        index.entries = mapped
            .iter()
            .zip(shown)
            .map(|((b, _), s)| Entry {
                backing: Box::from(*b),
                shown: s.into_bytes().into_boxed_slice(),
            })
            .collect();
        index.by_shown = (0..index.entries.len() as u32).collect();
        let entries = &index.entries;
        index
            .by_shown
            .sort_unstable_by(|&a, &b| entries[a as usize].shown.cmp(&entries[b as usize].shown));
        index
    }

    /// The shown name of backing entry `backing`, or `None` when it is hidden. Does not
    /// allocate; valid names cost one validity check (and with a form a normalization quick
    /// check, which ASCII names skip).
    pub fn shown<'a>(&'a self, backing: &'a [u8]) -> Option<&'a [u8]> {
        match utf8::from_utf8(backing) {
            Ok(text) => {
                if self.form.is_none_or(|f| is_normalized(text, f)) {
                    return Some(backing);
                }
            }
            Err(_) => {
                if self.unlisted == Unlisted::AsIs {
                    return Some(backing);
                }
            }
        }
        self.entries
            .binary_search_by(|e| (*e.backing).cmp(backing))
            .ok()
            .map(|i| &*self.entries[i].shown)
    }

    /// The backing name shown as `shown`, if a malformed entry shows under it.
    pub fn backing(&self, shown: &[u8]) -> Option<&[u8]> {
        self.by_shown
            .binary_search_by(|&i| (*self.entries[i as usize].shown).cmp(shown))
            .ok()
            .map(|i| &*self.entries[self.by_shown[i] as usize].backing)
    }

    /// Number of mapped entries held (the ones shown under another name).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the directory holds no mapped entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The mapped entries as (backing, shown), in ascending backing order: the rename plan of
    /// `utf8fsck`.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.entries.iter().map(|e| (&*e.backing, &*e.shown))
    }

    /// Bytes of heap this index holds, not counting the allocator's own overhead.
    pub fn heap_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Entry>()
            + self.by_shown.capacity() * std::mem::size_of::<u32>()
            + self
                .entries
                .iter()
                .map(|e| e.backing.len() + e.shown.len())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::check_component;

    fn escape() -> Mapper {
        Mapper::new(Mode::Escape)
    }
    fn replace() -> Mapper {
        Mapper::new(Mode::Replace)
    }
    fn transcode(label: &str) -> Mapper {
        Mapper::new(Mode::parse("transcode", Some(label)).unwrap())
    }

    fn all_modes() -> Vec<Mapper> {
        vec![
            Mapper::new(Mode::Reject),
            escape(),
            replace(),
            transcode("windows-1252"),
            transcode("shift_jis"),
            transcode("cp437"),
            Mapper::new(Mode::Audit),
        ]
    }

    fn cand(m: &Mapper, b: &[u8]) -> Option<String> {
        m.candidate(b)
            .map(|c| String::from_utf8(c.into_owned()).unwrap())
    }

    /// The malformed classes of the strict decoder, each with its name.
    const MALFORMED: &[(&str, &[u8])] = &[
        ("overlong slash", b"\xC0\xAF"),
        ("overlong dotdot", b"\xC0\xAE\xC0\xAE"),
        ("surrogate", b"a\xED\xA0\x80b"),
        ("beyond max", b"\xF4\x90\x80\x80"),
        ("5-byte form", b"\xF8\x88\x80\x80\x80"),
        ("6-byte form", b"\xFC\x84\x80\x80\x80\x80"),
        ("FE", b"x\xFE"),
        ("FF", b"\xFFy"),
        ("truncated", b"euro\xE2\x82"),
        ("truncated before ASCII", b"\xE2A"),
        ("lone continuation", b"\x80"),
        ("latin-1", b"caf\xE9"),
        ("shift_jis", b"\x93\xFA\x96\x7B.txt"),
        ("cp437", b"caf\x82 \x9B"),
    ];

    #[test]
    fn escape_each_class() {
        let m = escape();
        let want = [
            "\u{EFC0}\u{EFAF}",
            "\u{EFC0}\u{EFAE}\u{EFC0}\u{EFAE}",
            "a\u{EFED}\u{EFA0}\u{EF80}b",
            "\u{EFF4}\u{EF90}\u{EF80}\u{EF80}",
            "\u{EFF8}\u{EF88}\u{EF80}\u{EF80}\u{EF80}",
            "\u{EFFC}\u{EF84}\u{EF80}\u{EF80}\u{EF80}\u{EF80}",
            "x\u{EFFE}",
            "\u{EFFF}y",
            "euro\u{EFE2}\u{EF82}",
            "\u{EFE2}A",
            "\u{EF80}",
            "caf\u{EFE9}",
            "\u{EF93}\u{EFFA}\u{EF96}{.txt",
            "caf\u{EF82} \u{EF9B}",
        ];
        for ((what, b), want) in MALFORMED.iter().zip(want) {
            assert_eq!(cand(&m, b).as_deref(), Some(want), "{what}");
            assert_eq!(m.invert(want.as_bytes()).as_deref(), Some(*b), "{what}");
            assert!(m.may_be_mapped(want.as_bytes()), "{what}");
        }
    }

    #[test]
    fn replace_each_class() {
        let m = replace();
        for (what, b) in MALFORMED {
            let lossy = String::from_utf8_lossy(b);
            assert_eq!(cand(&m, b).as_deref(), Some(&*lossy), "{what}");
            assert_eq!(m.invert(lossy.as_bytes()), None, "{what}");
            assert!(m.may_be_mapped(lossy.as_bytes()), "{what}");
        }
        assert_eq!(
            cand(&m, b"\xC0\xAE\xC0\xAE").as_deref(),
            Some("\u{FFFD}".repeat(4).as_str())
        );
        assert_eq!(cand(&m, b"euro\xE2\x82").as_deref(), Some("euro\u{FFFD}"));
    }

    #[test]
    fn transcode_each_class() {
        let m = transcode("windows-1252");
        let want = [
            "À¯",
            "À®À®",
            "aí\u{A0}€b",
            "ô\u{EF90}€€",
            "øˆ€€€",
            "ü„€€€€",
            "xþ",
            "ÿy",
            "euroâ‚",
            "âA",
            "€",
            "café",
            "“ú–{.txt",
            "caf‚ ›",
        ];
        for ((what, b), want) in MALFORMED.iter().zip(want) {
            assert_eq!(cand(&m, b).as_deref(), Some(want), "{what}");
            assert_eq!(m.invert(want.as_bytes()).as_deref(), Some(*b), "{what}");
            assert!(m.may_be_mapped(want.as_bytes()), "{what}");
        }
    }

    #[test]
    fn transcode_legacy_charsets() {
        let sjis = transcode("shift_jis");
        assert_eq!(
            cand(&sjis, b"\x93\xFA\x96\x7B.txt").as_deref(),
            Some("日本.txt")
        );
        assert_eq!(
            sjis.invert("日本.txt".as_bytes()).as_deref(),
            Some(&b"\x93\xFA\x96\x7B.txt"[..])
        );
        // A lead byte followed by a byte that cannot trail: the lead is escaped.
        assert_eq!(cand(&sjis, b"\x93!").as_deref(), Some("\u{EF93}!"));
        assert_eq!(cand(&sjis, b"\x93A").as_deref(), Some("鄭"));
        // Truncated at the end.
        assert_eq!(cand(&sjis, b"a\x93").as_deref(), Some("a\u{EF93}"));
        assert_eq!(
            sjis.invert("a\u{EF93}".as_bytes()).as_deref(),
            Some(&b"a\x93"[..])
        );

        let cp437 = transcode("cp437");
        assert_eq!(cp437.mode().to_string(), "transcode (cp437)");
        assert_eq!(cand(&cp437, b"caf\x82 \x9B").as_deref(), Some("café ¢"));
        assert_eq!(
            cp437.invert("café ¢".as_bytes()).as_deref(),
            Some(&b"caf\x82 \x9B"[..])
        );
        let cp850 = transcode("IBM850");
        assert_eq!(cand(&cp850, b"\x9B").as_deref(), Some("ø"));

        let koi8 = transcode("koi8-r");
        assert_eq!(
            cand(&koi8, b"\xF0\xD2\xC9\xD7\xC5\xD4").as_deref(),
            Some("Привет")
        );

        // iso-8859-2 decodes 80..9F to C1 controls: those bytes are escaped instead.
        let l2 = transcode("iso-8859-2");
        assert_eq!(cand(&l2, b"\x85\xB1").as_deref(), Some("\u{EF85}ą"));
        assert_eq!(
            l2.invert("\u{EF85}ą".as_bytes()).as_deref(),
            Some(&b"\x85\xB1"[..])
        );
        // The WHATWG "replacement" encoding decodes nothing: the bytes are shown escaped.
        let none = transcode("iso-2022-kr");
        assert_eq!(cand(&none, b"caf\xE9").as_deref(), Some("caf\u{EFE9}"));
        // Stateful ISO-2022-JP: bytes above 7F are never part of it.
        let jis = transcode("iso-2022-jp");
        assert_eq!(
            cand(&jis, b"\x1B$B\x46\x7C\x1B(Ba\xFF").as_deref(),
            Some("日a\u{EFFF}")
        );
        // Bytes that decoded to nothing before a malformed byte are shown as bytes.
        assert_eq!(
            cand(&jis, b"\x1B(B\xFF").as_deref(),
            Some("\u{1B}(B\u{EFFF}")
        );
        // windows-1252 leaves 81, 8D, 8F, 90, 9D as C1 controls: escaped too.
        let w = transcode("windows-1252");
        assert_eq!(cand(&w, b"\x81").as_deref(), Some("\u{EF81}"));
    }

    #[test]
    fn transcode_never_shows_escape_range_from_charset() {
        // The GB18030 four-byte form of U+EF80 (malformed as UTF-8) must not show as the escape
        // character it decodes to: its bytes are escaped instead.
        let gb = transcode("gb18030");
        let mut bytes = Vec::new();
        Charset::from_label("gb18030")
            .unwrap()
            .encode("\u{EF80}", &mut bytes)
            .unwrap();
        assert!(!utf8::is_valid(&bytes));
        let shown = cand(&gb, &bytes).unwrap();
        assert!(shown.chars().all(|c| c != '\u{EF80}'));
        assert_eq!(gb.invert(shown.as_bytes()), Some(bytes));
    }

    #[test]
    fn valid_names_unchanged_in_every_mode() {
        for m in all_modes() {
            for name in [
                "café",
                "a",
                "\u{EF80}",
                "\u{FFFD}",
                "x~0123abcd.txt",
                ".",
                "..",
            ] {
                let c = m.candidate(name.as_bytes()).unwrap();
                assert!(matches!(c, Cow::Borrowed(_)));
                assert_eq!(&*c, name.as_bytes());
                let index = DirIndex::build(&m, [name.as_bytes()]);
                assert_eq!(index.shown(name.as_bytes()), Some(name.as_bytes()));
            }
        }
    }

    #[test]
    fn reject_hides_audit_passes() {
        let r = Mapper::new(Mode::Reject);
        let a = Mapper::new(Mode::Audit);
        for (_, b) in MALFORMED {
            assert_eq!(r.candidate(b), None);
            assert_eq!(DirIndex::build(&r, [*b]).shown(b), None);
            assert_eq!(a.candidate(b).as_deref(), Some(*b));
            let index = DirIndex::build(&a, [*b]);
            assert_eq!(index.shown(b), Some(*b));
            assert!(index.is_empty());
            assert!(!r.may_be_mapped(b) && !a.may_be_mapped(b));
        }
    }

    #[test]
    fn shown_names_are_legal() {
        for m in all_modes().into_iter().filter(Mapper::normalizes) {
            for (what, b) in MALFORMED {
                let shown = m.candidate(b).unwrap();
                assert!(check_component(&shown).is_ok(), "{what} in {}", m.mode());
                assert!(m.may_be_mapped(&shown), "{what} in {}", m.mode());
            }
            assert_ne!(&*m.candidate(b"\xC0\xAE\xC0\xAE").unwrap(), b"..");
            assert!(!m.candidate(b"\xC0\xAF").unwrap().contains(&b'/'));
        }
        // Names that cannot exist are hidden rather than shown illegally.
        assert_eq!(escape().candidate(b"a/\xFF"), None);
        assert_eq!(escape().candidate(b"\0\xFF"), None);
    }

    #[test]
    fn literal_escape_chars_in_malformed_names_are_escaped() {
        let m = escape();
        // U+EF80 is EE BE 80: in a malformed name it is shown as three escapes.
        let b = b"\xEE\xBE\x80\xFF";
        let shown = cand(&m, b).unwrap();
        assert_eq!(shown, "\u{EFEE}\u{EFBE}\u{EF80}\u{EFFF}");
        assert_eq!(m.invert(shown.as_bytes()).as_deref(), Some(&b[..]));
        // The raw bytes 80 FF show differently, so the two never collide.
        assert_eq!(cand(&m, b"\x80\xFF").unwrap(), "\u{EF80}\u{EFFF}");
        // A valid name made of escape characters is not an escape form of anything...
        assert_eq!(m.invert("\u{EFC3}\u{EFA9}".as_bytes()), None);
        // ...nor is a non-canonical spelling of a malformed name.
        assert_eq!(m.invert("\u{EFC3}\u{EFA9}\u{EFFF}".as_bytes()), None);
        assert_eq!(m.invert(b"plain"), None);
        assert!(!m.may_be_mapped(b"plain.txt"));
        assert!(!m.may_be_mapped("café".as_bytes()));
    }

    #[test]
    fn may_be_mapped_per_mode() {
        assert!(replace().may_be_mapped("a\u{FFFD}".as_bytes()));
        assert!(!replace().may_be_mapped("café".as_bytes()));
        assert!(!replace().may_be_mapped("\u{EFE9}".as_bytes()));
        let t = transcode("latin1");
        assert!(t.may_be_mapped("café".as_bytes()));
        assert!(!t.may_be_mapped(b"cafe"));
        for m in [escape(), replace(), t] {
            assert!(m.may_be_mapped(b"a~0123abcd"));
            assert!(m.may_be_mapped(b"a~0123abcd.txt"));
            assert!(m.may_be_mapped(b"a~0123456789abcdef~2.txt"));
            assert!(!m.may_be_mapped(b"a~0123ABCD"));
            assert!(!m.may_be_mapped(b"a~0123abc"));
            assert!(!m.may_be_mapped(b"a~0123abcde"));
            assert!(!m.may_be_mapped(b"~0123abcd"));
            assert!(!m.may_be_mapped(b"a~0123abcdx"));
            assert!(!m.may_be_mapped(b"\xFF"));
        }
    }

    #[test]
    fn hash_is_fixed() {
        // FNV-1a 64 reference values.
        assert_eq!(name_hash(b""), 0xcbf29ce484222325);
        assert_eq!(name_hash(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(name_hash(b"foobar"), 0x85944171f73967e8);
        assert_eq!(tag(0x0123456789abcdef, 0), "~88888888");
        assert_eq!(tag(0x0123456789abcdef, 1), "~0123456789abcdef");
        assert_eq!(tag(0x0123456789abcdef, 3), "~0123456789abcdef~3");
        // The shown name of a collided entry is part of the on-disk format after utf8fsck.
        let index = DirIndex::build(&replace(), [&b"caf\xE8.txt"[..], b"caf\xE9.txt"]);
        assert_eq!(
            index.shown(b"caf\xE8.txt"),
            Some("caf\u{FFFD}.txt".as_bytes())
        );
        let h = name_hash(b"caf\xE9.txt");
        let want = format!("caf\u{FFFD}~{:08x}.txt", (h >> 32) ^ (h & 0xffff_ffff));
        assert_eq!(index.shown(b"caf\xE9.txt"), Some(want.as_bytes()));
    }

    fn check_index(m: &Mapper, names: &[&[u8]]) -> DirIndex {
        let index = DirIndex::build(m, names.iter().copied());
        let mut seen = HashSet::new();
        for b in names {
            let s = index.shown(b).unwrap();
            assert!(check_component(s).is_ok());
            assert!(
                seen.insert(s.to_vec()),
                "duplicate shown name {:?}",
                String::from_utf8_lossy(s)
            );
            if !utf8::is_valid(b) {
                assert_eq!(index.backing(s), Some(*b));
                assert!(m.may_be_mapped(s));
            }
        }
        index
    }

    #[test]
    fn collision_two_replacements() {
        let m = replace();
        let names: [&[u8]; 3] = [b"caf\xE9", b"caf\xE8", b"caf\xC3"];
        let index = check_index(&m, &names);
        assert_eq!(index.shown(b"caf\xC3"), Some("caf\u{FFFD}".as_bytes()));
        for b in [&b"caf\xE8"[..], b"caf\xE9"] {
            let s = std::str::from_utf8(index.shown(b).unwrap()).unwrap();
            assert!(
                s.starts_with("caf\u{FFFD}~") && s.len() == "caf\u{FFFD}~".len() + 8,
                "{s}"
            );
        }
    }

    #[test]
    fn collision_literal_equals_escape_form() {
        let m = escape();
        let literal = "caf\u{EFE9}.txt";
        let names: [&[u8]; 2] = [b"caf\xE9.txt", literal.as_bytes()];
        let index = check_index(&m, &names);
        assert_eq!(index.shown(literal.as_bytes()), Some(literal.as_bytes()));
        let s = std::str::from_utf8(index.shown(b"caf\xE9.txt").unwrap()).unwrap();
        assert!(s.starts_with("caf\u{EFE9}~") && s.ends_with(".txt"), "{s}");
        // The plain inversion still computes the bytes; the index says they show elsewhere.
        assert_eq!(
            m.invert(literal.as_bytes()).as_deref(),
            Some(&b"caf\xE9.txt"[..])
        );
        assert_eq!(index.backing(literal.as_bytes()), None);
    }

    #[test]
    fn collision_literal_equals_transcoded_form() {
        let m = transcode("windows-1252");
        let names: [&[u8]; 2] = ["café".as_bytes(), b"caf\xE9"];
        let index = check_index(&m, &names);
        assert_eq!(index.shown("café".as_bytes()), Some("café".as_bytes()));
        let s = std::str::from_utf8(index.shown(b"caf\xE9").unwrap()).unwrap();
        assert!(s.starts_with("café~"), "{s}");
    }

    #[test]
    fn collision_suffix_name_equals_literal() {
        let m = replace();
        let first = DirIndex::build(&m, [&b"caf\xE8"[..], b"caf\xE9"]);
        let suffixed = first.shown(b"caf\xE9").unwrap().to_vec();
        let names: [&[u8]; 3] = [b"caf\xE8", b"caf\xE9", &suffixed];
        let index = check_index(&m, &names);
        assert_eq!(index.shown(&suffixed), Some(&suffixed[..]));
        let h = name_hash(b"caf\xE9");
        let want = format!("caf\u{FFFD}~{h:016x}");
        assert_eq!(index.shown(b"caf\xE9"), Some(want.as_bytes()));
        // And when the 16-digit form is taken too, a counter follows.
        let names: [&[u8]; 4] = [b"caf\xE8", b"caf\xE9", &suffixed, want.as_bytes()];
        let index = check_index(&m, &names);
        let want2 = format!("{want}~2");
        assert_eq!(index.shown(b"caf\xE9"), Some(want2.as_bytes()));
    }

    #[test]
    fn long_latin1_name_in_escape_mode() {
        let m = escape();
        let mut long = vec![0xE9u8; 250];
        let full = cand(&m, &long).unwrap();
        assert!(full.len() <= NAME_MAX);
        assert!(full.ends_with(&format!("~{:016x}", name_hash(&long))));
        assert!(m.may_be_mapped(full.as_bytes()));
        // Only the index knows the shortened name; the plain inversion (if any) is another name.
        assert_ne!(m.invert(full.as_bytes()).as_deref(), Some(&long[..]));
        let index = check_index(&m, &[&long]);
        assert_eq!(index.backing(full.as_bytes()), Some(&long[..]));

        // The extension survives shortening.
        long.truncate(246);
        long.extend_from_slice(b".txt");
        let s = cand(&m, &long).unwrap();
        assert!(s.len() <= NAME_MAX && s.ends_with(&format!("~{:016x}.txt", name_hash(&long))));
        // Two long names sharing their cut prefix stay apart through their hashes.
        let mut other = long.clone();
        other[245] = 0xE8;
        let index = check_index(&m, &[&long, &other]);
        assert_ne!(index.shown(&long), index.shown(&other));

        // The same length in replace mode: 250 U+FFFD do not fit either.
        let r = replace();
        let s = cand(&r, &[0x80; 250]).unwrap();
        assert!(s.len() <= NAME_MAX && check_component(s.as_bytes()).is_ok());
    }

    #[test]
    fn build_is_order_independent() {
        let names: Vec<&[u8]> = vec![
            b"caf\xE9",
            b"caf\xE8",
            "caf\u{FFFD}".as_bytes(),
            b"caf\xC3",
            b"x\xFF.txt",
            b"x\xFE.txt",
            b"plain",
            "caf\u{EFE9}".as_bytes(),
            "café".as_bytes(),
        ];
        for m in all_modes() {
            let sorted = DirIndex::build(&m, names.iter().copied());
            let plan: Vec<_> = sorted.iter().collect();
            let mut perm = names.clone();
            for k in 0..perm.len() {
                perm.rotate_left(k);
                perm.swap(0, k);
                let other = DirIndex::build(&m, perm.iter().copied());
                assert_eq!(other.iter().collect::<Vec<_>>(), plan);
            }
            let reversed = DirIndex::build(&m, names.iter().rev().copied());
            assert_eq!(reversed.iter().collect::<Vec<_>>(), plan);
        }
    }

    #[test]
    fn unrelated_entry_does_not_change_shown_names() {
        let names: Vec<&[u8]> = vec![b"caf\xE9", b"caf\xE8", b"r\xE9sum\xE9.pdf", b"\x80"];
        for m in all_modes().into_iter().filter(Mapper::normalizes) {
            let before = DirIndex::build(&m, names.iter().copied());
            let extra: [&[u8]; 4] = [b"zz\xFF", b"new.txt", "日本".as_bytes(), b"\x81"];
            let after = DirIndex::build(&m, names.iter().copied().chain(extra));
            for b in &names {
                assert_eq!(before.shown(b), after.shown(b), "{}", m.mode());
            }
        }
    }

    #[test]
    fn index_holds_only_malformed_names() {
        let m = escape();
        let index = DirIndex::build(&m, [&b"a"[..], b"b", "\u{EFE9}".as_bytes(), b"\xE9"]);
        assert_eq!(index.len(), 1);
        let (b, s) = index.iter().next().unwrap();
        assert_eq!(b, b"\xE9");
        assert!(std::str::from_utf8(s).unwrap().starts_with("\u{EFE9}~"));
        // The README's formula: 36 bytes per malformed entry plus its backing and shown bytes.
        let bytes: usize = index.iter().map(|(b, s)| 36 + b.len() + s.len()).sum();
        assert_eq!(index.heap_bytes(), bytes);
        assert_eq!(DirIndex::build(&m, [&b"a"[..], b"b"]).heap_bytes(), 0);
        // A name created after the build is not known to it.
        assert_eq!(index.shown(b"\xE8"), None);
        assert_eq!(index.backing(b"a"), None);
    }

    fn nfc(mode: Mode) -> Mapper {
        Mapper::new(mode).with_form(Some(Form::Nfc))
    }

    #[test]
    fn singleton_targets_are_complete() {
        // Every ASCII character some non-ASCII character normalizes into, alone.
        let mut found = std::collections::BTreeSet::new();
        for c in (0x80..=0x10FFFFu32).filter_map(char::from_u32) {
            let s = c.to_string();
            for form in [Form::Nfc, Form::Nfd] {
                let n = normalize(&s, form);
                if n.is_ascii() {
                    found.extend(n.bytes());
                }
            }
        }
        let want: std::collections::BTreeSet<u8> = SINGLETON_TARGETS.iter().copied().collect();
        assert_eq!(found, want);
    }

    #[test]
    fn forms_map_valid_names() {
        let nfc_name = "caf\u{E9}";
        let nfd_name = "cafe\u{301}";
        for mode in [Mode::Reject, Mode::Escape, Mode::Audit] {
            let m = nfc(mode);
            assert!(m.normalizes());
            assert!(matches!(
                m.candidate(nfc_name.as_bytes()),
                Some(Cow::Borrowed(_))
            ));
            assert_eq!(cand(&m, nfd_name.as_bytes()).as_deref(), Some(nfc_name));
            assert_eq!(
                m.invert(nfc_name.as_bytes()).as_deref(),
                Some(nfd_name.as_bytes())
            );
            assert!(m.may_be_mapped(nfc_name.as_bytes()));
            assert!(m.may_be_mapped("K".as_bytes()) && !m.may_be_mapped(b"plain"));
            assert_eq!(m.client_name(nfd_name.as_bytes()), nfc_name.as_bytes());
            assert!(matches!(m.client_name(b"plain"), Cow::Borrowed(_)));
            // Alone, the NFD name shows as NFC; next to the NFC name it gets the tag.
            let index = check_index(&m, &[nfd_name.as_bytes()]);
            assert_eq!(
                index.backing(nfc_name.as_bytes()),
                Some(nfd_name.as_bytes())
            );
            let index = check_index(&m, &[nfd_name.as_bytes(), nfc_name.as_bytes()]);
            assert_eq!(index.shown(nfc_name.as_bytes()), Some(nfc_name.as_bytes()));
            let h = name_hash(nfd_name.as_bytes());
            let want = format!("caf\u{E9}~{:08x}", (h >> 32) ^ (h & 0xffff_ffff));
            assert_eq!(index.shown(nfd_name.as_bytes()), Some(want.as_bytes()));
        }
        // NFD mode is the mirror image.
        let m = Mapper::new(Mode::Reject).with_form(Some(Form::Nfd));
        assert_eq!(cand(&m, nfc_name.as_bytes()).as_deref(), Some(nfd_name));
        assert_eq!(
            m.invert(nfd_name.as_bytes()).as_deref(),
            Some(nfc_name.as_bytes())
        );
        // Kelvin sign shows as K, unless a literal K exists.
        let m = nfc(Mode::Reject);
        let kelvin = "\u{212A}".as_bytes();
        let index = check_index(&m, &[kelvin]);
        assert_eq!(index.shown(kelvin), Some(&b"K"[..]));
        let index = check_index(&m, &[kelvin, b"K"]);
        assert_ne!(index.shown(kelvin), Some(&b"K"[..]));
        // Reject still hides malformed names, audit still passes them.
        assert_eq!(m.candidate(b"caf\xE9"), None);
        assert_eq!(DirIndex::build(&m, [&b"\xE9"[..]]).shown(b"\xE9"), None);
        let a = nfc(Mode::Audit);
        assert_eq!(
            DirIndex::build(&a, [&b"\xE9"[..]]).shown(b"\xE9"),
            Some(&b"\xE9"[..])
        );
    }

    #[test]
    fn forms_normalize_malformed_names_and_long_names() {
        let m = nfc(Mode::Escape);
        let b = "e\u{301}\u{FF}"
            .as_bytes()
            .iter()
            .copied()
            .chain([0xFF])
            .collect::<Vec<_>>();
        let shown = cand(&m, &b).unwrap();
        assert!(
            shown.starts_with('\u{E9}') && shown.ends_with('\u{EFFF}'),
            "{shown:?}"
        );
        assert!(is_normalized(&shown, Form::Nfc));
        let index = check_index(&m, &[&b]);
        assert_eq!(index.backing(shown.as_bytes()), Some(&b[..]));
        // 100 × é is 200 bytes in NFC and 300 in NFD: shortened, still in NFD, reachable.
        let d = Mapper::new(Mode::Reject).with_form(Some(Form::Nfd));
        let long = "\u{E9}".repeat(100);
        let shown = cand(&d, long.as_bytes()).unwrap();
        assert!(
            shown.len() <= NAME_MAX && is_normalized(&shown, Form::Nfd),
            "{shown:?}"
        );
        assert!(d.may_be_mapped(shown.as_bytes()));
        let index = check_index(&d, &[long.as_bytes()]);
        assert_eq!(index.backing(shown.as_bytes()), Some(long.as_bytes()));
    }

    #[test]
    fn parse_modes() {
        assert_eq!(Mode::parse("reject", None), Ok(Mode::Reject));
        assert_eq!(Mode::parse("escape", None), Ok(Mode::Escape));
        assert_eq!(Mode::parse("replace", None), Ok(Mode::Replace));
        assert_eq!(Mode::parse("audit", None), Ok(Mode::Audit));
        let t = Mode::parse("transcode", None).unwrap();
        assert_eq!(t.to_string(), "transcode (windows-1252)");
        assert_eq!(Mode::parse("transcode", Some("latin1")), Ok(t));
        assert_eq!(
            Mode::parse("transcode", Some("SJIS")).unwrap().to_string(),
            "transcode (Shift_JIS)"
        );
        assert_eq!(
            Mode::parse("transcode", Some("437")).unwrap().to_string(),
            "transcode (cp437)"
        );
        let e = Mode::parse("transcode", Some("klingon")).unwrap_err();
        assert_eq!(e, ParseModeError::UnknownCharset("klingon".into()));
        assert!(e.to_string().contains("\"klingon\""));
        assert!(Mode::parse("fix", None)
            .unwrap_err()
            .to_string()
            .contains("\"fix\""));
        assert_eq!(
            Mode::parse("escape", Some("latin1")),
            Err(ParseModeError::CharsetWithoutTranscode(Mode::Escape))
        );
    }
}
