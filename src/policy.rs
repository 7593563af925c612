//! What a file name component may be: strict UTF-8, 1 to 255 bytes, not `.` or `..`, without
//! `/` or NUL. Shared by the mount (names clients send) and utf8fsck (names found on disk).
//!
//! On top of that, optional hygiene rules ([`Deny`], [`check_hygiene`], [`fix_hygiene`]) and
//! Unicode normalization forms ([`Form`], [`normalize`]).

use crate::utf8::{self, Utf8Error};
use std::borrow::Cow;
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

/// Displays a byte string with every byte that is not part of valid UTF-8 written as `\xHH`,
/// C0 controls and DEL as `\xHH`, C1 controls and bidirectional formatting characters as
/// `\u{HHHH}` (so a logged name cannot reorder the terminal line: Trojan Source), and `\` as
/// `\\`: `caf\xE9` can be logged and read back.
pub struct Escaped<'a>(pub &'a [u8]);

/// Characters [`Escaped`] writes as an escape rather than as themselves.
fn needs_escape(c: char) -> bool {
    c == '\\' || c < '\u{20}' || ('\u{7f}'..='\u{9f}').contains(&c) || is_bidi(c)
}

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for chunk in utf8::chunks(self.0) {
            // Plain runs are written whole; only `\\`, controls and bidi characters one by one.
            let mut rest = chunk.valid;
            while let Some(i) = rest.find(needs_escape) {
                f.write_str(&rest[..i])?;
                let c = rest[i..].chars().next().unwrap_or('\\');
                match c {
                    '\\' => f.write_str("\\\\")?,
                    c if c <= '\u{7f}' => write!(f, "\\x{:02X}", c as u32)?,
                    c => write!(f, "\\u{{{:04X}}}", c as u32)?,
                }
                rest = &rest[i + c.len_utf8()..];
            }
            f.write_str(rest)?;
            for b in chunk.invalid {
                write!(f, "\\x{b:02X}")?;
            }
        }
        Ok(())
    }
}

/// One name hygiene rule of `deny=LIST` (see [`Deny`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// C0 controls U+0001–U+001F, DEL U+007F and C1 controls U+0080–U+009F.
    Control,
    /// Bidirectional formatting characters U+200E, U+200F, U+202A–U+202E, U+2066–U+2069
    /// (Trojan Source, CVE-2021-42574).
    Bidi,
    /// A leading `-`, which tools read as an option.
    LeadingDash,
    /// A leading `~`, which shells expand to a home directory.
    LeadingTilde,
    /// Leading or trailing white space (Unicode `White_Space`).
    Space,
    /// Not portable to Windows: `<>:"\|?*`, a reserved device name (CON, PRN, AUX, NUL,
    /// COM1–COM9, LPT1–LPT9, any case, with or without extension), a trailing dot or space.
    Windows,
    /// A leading byte order mark U+FEFF.
    Bom,
    /// A noncharacter: U+FDD0–U+FDEF and U+xFFFE, U+xFFFF of every plane.
    Nonchar,
    /// Shell metacharacters (opt-in, not part of `all`): ``* ? [ ] { } ( ) < > | & ; $ ` ' " \ !``
    /// and a leading `#`.
    Shell,
}

/// Every rule, in the order reports and `deny=all` list them.
pub const RULES: [Rule; 9] = [
    Rule::Control,
    Rule::Bidi,
    Rule::LeadingDash,
    Rule::LeadingTilde,
    Rule::Space,
    Rule::Windows,
    Rule::Bom,
    Rule::Nonchar,
    Rule::Shell,
];

impl Rule {
    /// The rule's name in `deny=LIST`.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Control => "control",
            Rule::Bidi => "bidi",
            Rule::LeadingDash => "leading-dash",
            Rule::LeadingTilde => "leading-tilde",
            Rule::Space => "space",
            Rule::Windows => "windows",
            Rule::Bom => "bom",
            Rule::Nonchar => "nonchar",
            Rule::Shell => "shell",
        }
    }

    /// The rule named `name` in `deny=LIST`.
    pub fn from_name(name: &str) -> Option<Rule> {
        RULES.iter().copied().find(|r| r.as_str() == name)
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of hygiene [`Rule`]s that names must not break (`-o deny=LIST` for the mount,
/// `--deny=LIST` for utf8fsck). Empty by default: only strict UTF-8 is required.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Deny(u16);

impl Deny {
    /// No rule: every valid UTF-8 name is accepted.
    pub const NONE: Deny = Deny(0);
    /// What `all` means: every rule except the opt-in [`Rule::Shell`], which would refuse
    /// ordinary names such as `Song (live).mp3`.
    pub const ALL: Deny = Deny(0x1ff & !(1 << Rule::Shell as u16));

    /// Parses a list of rule names separated by `+`, `:` or `,` (`deny=control+bidi+windows`
    /// inside `-o a,b,c` mount options, where `,` already separates options; `--deny=control,bidi`
    /// on utf8fsck's command line). `all` adds every rule but `shell`; `none` adds nothing.
    pub fn parse(list: &str) -> Result<Deny, String> {
        let mut deny = Deny::NONE;
        for word in list.split(['+', ':', ',']) {
            let word = word.trim();
            match word {
                "" | "none" => {}
                "all" => deny = deny.union(Deny::ALL),
                _ => match Rule::from_name(word) {
                    Some(rule) => deny = deny.with(rule),
                    None => {
                        return Err(format!(
                            "unknown deny rule '{}' (known: all, none, {})",
                            Escaped(word.as_bytes()),
                            RULES.map(Rule::as_str).join(", ")
                        ))
                    }
                },
            }
        }
        Ok(deny)
    }

    /// This set plus `rule`.
    pub const fn with(self, rule: Rule) -> Deny {
        Deny(self.0 | 1 << rule as u16)
    }

    /// Both sets together.
    pub const fn union(self, other: Deny) -> Deny {
        Deny(self.0 | other.0)
    }

    /// True when `rule` is in the set.
    pub fn contains(self, rule: Rule) -> bool {
        self.0 & rule.bit() != 0
    }

    /// True when no rule is in the set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The rules in the set, in [`RULES`] order.
    pub fn rules(self) -> impl Iterator<Item = Rule> {
        RULES.into_iter().filter(move |r| self.contains(*r))
    }
}

impl fmt::Display for Deny {
    /// The canonical `+`-separated list, `none` when empty.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        for (i, rule) in self.rules().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            f.write_str(rule.as_str())?;
        }
        Ok(())
    }
}

/// A name that breaks a hygiene rule: which one, and the byte offset where it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The rule broken.
    pub rule: Rule,
    /// Byte offset in the name of the offending character (0 for whole-name rules such as a
    /// reserved Windows name).
    pub offset: usize,
}

impl Violation {
    /// The errno a client sees: EINVAL, distinct from EILSEQ which means "not UTF-8".
    pub fn errno(&self) -> i32 {
        libc::EINVAL
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "breaks rule '{}' at byte {}", self.rule, self.offset)
    }
}

fn is_control(c: char) -> bool {
    matches!(c, '\u{1}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
}

/// Bidirectional formatting characters (the `bidi` hygiene rule): they reorder what a terminal
/// shows.
pub(crate) fn is_bidi(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn is_nonchar(c: char) -> bool {
    let u = c as u32;
    (0xfdd0..=0xfdef).contains(&u) || u & 0xfffe == 0xfffe
}

fn is_windows_char(c: char) -> bool {
    matches!(c, '<' | '>' | ':' | '"' | '\\' | '|' | '?' | '*')
}

/// The shell metacharacters of [`Rule::Shell`] (a leading `#` is checked separately).
fn is_shell_char(c: char) -> bool {
    matches!(
        c,
        '*' | '?'
            | '['
            | ']'
            | '{'
            | '}'
            | '('
            | ')'
            | '<'
            | '>'
            | '|'
            | '&'
            | ';'
            | '$'
            | '`'
            | '\''
            | '"'
            | '\\'
            | '!'
    )
}

/// Length of the part of a Windows reserved device name (`CON`, `com1.txt`) that is reserved,
/// or `None` when `name` is not one.
fn windows_reserved(name: &str) -> Option<usize> {
    let base = name.split('.').next().unwrap_or(name);
    let b = base.as_bytes();
    let reserved = match b.len() {
        3 => ["CON", "PRN", "AUX", "NUL"]
            .iter()
            .any(|r| base.eq_ignore_ascii_case(r)),
        4 => {
            (b[..3].eq_ignore_ascii_case(b"COM") || b[..3].eq_ignore_ascii_case(b"LPT"))
                && (b'1'..=b'9').contains(&b[3])
        }
        _ => false,
    };
    reserved.then_some(base.len())
}

fn char_rule(c: char, deny: Deny) -> Option<Rule> {
    if c.is_ascii_alphanumeric() {
        return None;
    }
    if deny.contains(Rule::Control) && is_control(c) {
        Some(Rule::Control)
    } else if deny.contains(Rule::Bidi) && is_bidi(c) {
        Some(Rule::Bidi)
    } else if deny.contains(Rule::Nonchar) && is_nonchar(c) {
        Some(Rule::Nonchar)
    } else if deny.contains(Rule::Windows) && is_windows_char(c) {
        Some(Rule::Windows)
    } else if deny.contains(Rule::Shell) && is_shell_char(c) {
        Some(Rule::Shell)
    } else {
        None
    }
}

/// Checks a (valid UTF-8) name component against the rules in `deny`; on failure returns the
/// first violation by byte offset. Does not allocate. The mount refuses such names with EINVAL.
pub fn check_hygiene(name: &str, deny: Deny) -> Result<(), Violation> {
    if deny.is_empty() {
        return Ok(());
    }
    let fail = |rule, offset| Err(Violation { rule, offset });
    if let Some(first) = name.chars().next() {
        let leading = [
            (Rule::Bom, first == '\u{feff}'),
            (Rule::LeadingDash, first == '-'),
            (Rule::LeadingTilde, first == '~'),
            (Rule::Space, first.is_whitespace()),
            (Rule::Shell, first == '#'),
            (Rule::Windows, windows_reserved(name).is_some()),
        ];
        for (rule, broken) in leading {
            if broken && deny.contains(rule) {
                return fail(rule, 0);
            }
        }
    }
    for (i, c) in name.char_indices() {
        if let Some(rule) = char_rule(c, deny) {
            return fail(rule, i);
        }
    }
    if let Some((i, last)) = name.char_indices().next_back() {
        if deny.contains(Rule::Space) && last.is_whitespace() {
            return fail(Rule::Space, i);
        }
        if deny.contains(Rule::Windows)
            && (last == '.' || last == ' ')
            && name != "."
            && name != ".."
        {
            return fail(Rule::Windows, i);
        }
    }
    Ok(())
}

/// Rewrites `name` so that it passes [`check_hygiene`] for `deny`; borrowed when it already does.
/// The replacement, per rule:
/// - `control`, `windows` and `shell` characters: each replaced by `_`;
/// - `bidi`, `nonchar` characters and a leading BOM (`bom`): dropped (they show nothing);
/// - `space`: leading and trailing white space trimmed; `windows`: trailing dots and spaces trimmed;
/// - `leading-dash`, `leading-tilde`, a leading `#` (`shell`): prefixed with `_`;
/// - `windows` reserved names: `_` appended to the reserved part (`CON` → `CON_`, `aux.c` → `aux_.c`).
///
/// The result is never empty, `.` or `..` (`_` is prefixed instead), and is cut back to
/// [`NAME_MAX`] bytes at a character boundary when the prefix made it longer.
pub fn fix_hygiene(name: &str, deny: Deny) -> Cow<'_, str> {
    if check_hygiene(name, deny).is_ok() {
        return Cow::Borrowed(name);
    }
    let mut s = name.to_owned();
    // Each pass removes or neutralizes characters; a handful of passes always reaches a fixed point.
    for _ in 0..8 {
        if check_hygiene(&s, deny).is_ok() {
            break;
        }
        s = fix_pass(&s, deny);
    }
    Cow::Owned(s)
}

fn fix_pass(name: &str, deny: Deny) -> String {
    let mut s = name;
    if deny.contains(Rule::Bom) {
        s = s.trim_start_matches('\u{feff}');
    }
    let mut out = String::with_capacity(s.len() + 1);
    for c in s.chars() {
        match char_rule(c, deny) {
            Some(Rule::Bidi | Rule::Nonchar) => {}
            Some(_) => out.push('_'),
            None => out.push(c),
        }
    }
    if deny.contains(Rule::Space) {
        out = out.trim().to_owned();
    }
    if deny.contains(Rule::Windows) {
        out = out.trim_end_matches(['.', ' ']).to_owned();
        if let Some(n) = windows_reserved(&out) {
            out.insert(n, '_');
        }
    }
    let prefix = match out.chars().next() {
        Some('-') => deny.contains(Rule::LeadingDash),
        Some('~') => deny.contains(Rule::LeadingTilde),
        Some('#') => deny.contains(Rule::Shell),
        _ => false,
    };
    if prefix || out.is_empty() || out == "." || out == ".." {
        out.insert(0, '_');
    }
    while out.len() > NAME_MAX {
        out.pop();
    }
    out
}

/// A Unicode normalization form (`-o unicode=nfc|nfd`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Form {
    /// Canonical composition (what most systems and macOS's APFS-era tools write).
    Nfc,
    /// Canonical decomposition (what HFS+ stored).
    Nfd,
}

impl Form {
    /// Parses `nfc` or `nfd` (any case).
    pub fn parse(s: &str) -> Result<Form, String> {
        match s.to_ascii_lowercase().as_str() {
            "nfc" => Ok(Form::Nfc),
            "nfd" => Ok(Form::Nfd),
            _ => Err(format!(
                "unknown Unicode form '{}' (known: nfc, nfd)",
                Escaped(s.as_bytes())
            )),
        }
    }

    /// `nfc` or `nfd`.
    pub fn as_str(self) -> &'static str {
        match self {
            Form::Nfc => "nfc",
            Form::Nfd => "nfd",
        }
    }
}

impl fmt::Display for Form {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// True when `name` is already in `form` (quick check first; ASCII always is).
pub fn is_normalized(name: &str, form: Form) -> bool {
    use unicode_normalization::{is_nfc_quick, is_nfd_quick, IsNormalized, UnicodeNormalization};
    if name.is_ascii() {
        return true;
    }
    let quick = match form {
        Form::Nfc => is_nfc_quick(name.chars()),
        Form::Nfd => is_nfd_quick(name.chars()),
    };
    match quick {
        IsNormalized::Yes => true,
        IsNormalized::No => false,
        IsNormalized::Maybe => match form {
            Form::Nfc => name.chars().eq(name.nfc()),
            Form::Nfd => name.chars().eq(name.nfd()),
        },
    }
}

/// `name` in `form`; borrowed (no allocation) when it already is.
pub fn normalize(name: &str, form: Form) -> Cow<'_, str> {
    use unicode_normalization::UnicodeNormalization;
    if is_normalized(name, form) {
        return Cow::Borrowed(name);
    }
    Cow::Owned(match form {
        Form::Nfc => name.nfc().collect(),
        Form::Nfd => name.nfd().collect(),
    })
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
        // Trojan Source: a right-to-left override in a name must not reach the terminal.
        assert_eq!(
            Escaped("x\u{202E}txt.exe\u{85}é".as_bytes()).to_string(),
            "x\\u{202E}txt.exe\\u{0085}é"
        );
    }

    fn rule_of(name: &str, deny: Deny) -> Option<(Rule, usize)> {
        check_hygiene(name, deny).err().map(|v| (v.rule, v.offset))
    }

    #[test]
    fn deny_parse() {
        let d = Deny::parse("control+bidi:windows").unwrap();
        assert!(d.contains(Rule::Control) && d.contains(Rule::Bidi) && d.contains(Rule::Windows));
        assert!(!d.contains(Rule::Space));
        assert_eq!(
            Deny::parse("control,bidi").unwrap(),
            Deny::parse("bidi+control").unwrap()
        );
        let all = Deny::parse("all").unwrap();
        assert!(!all.contains(Rule::Shell) && all.contains(Rule::Nonchar));
        assert!(Deny::parse("all+shell").unwrap().contains(Rule::Shell));
        assert!(Deny::parse("").unwrap().is_empty());
        assert!(Deny::parse("bogus").unwrap_err().contains("bogus"));
        assert_eq!(
            Deny::parse("windows+control").unwrap().to_string(),
            "control+windows"
        );
        assert_eq!(Deny::parse(&all.to_string()).unwrap(), all);
    }

    #[test]
    fn each_rule() {
        let one = |r: Rule| Deny::NONE.with(r);
        let cases: &[(Rule, &str, usize)] = &[
            (Rule::Control, "a\u{1}b", 1),
            (Rule::Control, "a\nb", 1),
            (Rule::Control, "ab\u{7f}", 2),
            (Rule::Control, "x\u{85}", 1),
            (Rule::Control, "x\u{9f}", 1),
            (Rule::Bidi, "abc\u{202e}gpj.exe", 3),
            (Rule::Bidi, "\u{200e}", 0),
            (Rule::Bidi, "a\u{2069}", 1),
            (Rule::LeadingDash, "-rf", 0),
            (Rule::LeadingTilde, "~root", 0),
            (Rule::Space, " a", 0),
            (Rule::Space, "a\u{3000}", 1),
            (Rule::Space, "ab\t", 2),
            (Rule::Windows, "a:b", 1),
            (Rule::Windows, "a*", 1),
            (Rule::Windows, "CON", 0),
            (Rule::Windows, "con.txt", 0),
            (Rule::Windows, "Lpt9.tar.gz", 0),
            (Rule::Windows, "com1", 0),
            (Rule::Windows, "name.", 4),
            (Rule::Windows, "name ", 4),
            (Rule::Bom, "\u{feff}x", 0),
            (Rule::Nonchar, "a\u{fffe}", 1),
            (Rule::Nonchar, "a\u{ffff}", 1),
            (Rule::Nonchar, "\u{fdd0}", 0),
            (Rule::Nonchar, "\u{fdef}", 0),
            (Rule::Nonchar, "a\u{1fffe}", 1),
            (Rule::Nonchar, "a\u{10ffff}", 1),
            (Rule::Shell, "a$b", 1),
            (Rule::Shell, "x[1]", 1),
            (Rule::Shell, "#tmp", 0),
            (Rule::Shell, "a;b", 1),
        ];
        for &(rule, name, offset) in cases {
            assert_eq!(rule_of(name, one(rule)), Some((rule, offset)), "{name:?}");
            assert_eq!(rule_of(name, Deny::NONE), None, "{name:?}");
            let fixed = fix_hygiene(name, one(rule));
            assert!(
                check_hygiene(&fixed, one(rule)).is_ok(),
                "{name:?} -> {fixed:?}"
            );
            assert!(!fixed.is_empty() && fixed != "." && fixed != "..");
        }
    }

    #[test]
    fn clean_names_pass() {
        let all = Deny::ALL.with(Rule::Shell);
        for name in [
            "café",
            "a-b",
            "a~",
            "x y",
            "CONSOLE",
            "com10",
            "com0",
            "a.b",
            "\u{fffd}",
            "a\u{feff}",
        ] {
            assert_eq!(check_hygiene(name, all), Ok(()), "{name:?}");
            assert!(matches!(fix_hygiene(name, all), Cow::Borrowed(_)));
        }
        assert_eq!(rule_of("Song (live).mp3", Deny::ALL), None);
        assert_eq!(
            rule_of("Song (live).mp3", Deny::ALL.with(Rule::Shell))
                .unwrap()
                .0,
            Rule::Shell
        );
    }

    #[test]
    fn fixes() {
        let all = Deny::ALL;
        let cases = [
            ("a\nb", "a_b"),
            ("abc\u{202e}gpj.exe", "abcgpj.exe"),
            ("-rf", "_-rf"),
            ("~x", "_~x"),
            ("  a b  ", "a b"),
            ("a<b>c", "a_b_c"),
            ("CON", "CON_"),
            ("aux.c", "aux_.c"),
            ("name. .", "name"),
            ("\u{feff}x", "x"),
            ("\u{feff}-x", "_-x"),
            ("a\u{fffe}", "a"),
            ("\u{fffe}", "_"),
            ("...", "_"),
            (" - ", "_-"),
            ("\u{200e}", "_"),
        ];
        for (from, to) in cases {
            assert_eq!(fix_hygiene(from, all), to, "{from:?}");
        }
        assert_eq!(fix_hygiene("a$(b)", Deny::NONE.with(Rule::Shell)), "a__b_");
        let long = format!("-{}", "a".repeat(254));
        let fixed = fix_hygiene(&long, all);
        assert_eq!(fixed.len(), NAME_MAX);
        assert!(fixed.starts_with("_-"));
    }

    #[test]
    fn errnos() {
        let v = check_hygiene("-x", Deny::ALL).unwrap_err();
        assert_eq!(v.errno(), libc::EINVAL);
        assert_ne!(v.errno(), libc::EILSEQ);
    }

    #[test]
    fn forms() {
        let nfc = "caf\u{e9}";
        let nfd = "cafe\u{301}";
        assert!(matches!(normalize(nfc, Form::Nfc), Cow::Borrowed(_)));
        assert!(matches!(normalize(nfd, Form::Nfd), Cow::Borrowed(_)));
        assert!(matches!(normalize("plain", Form::Nfd), Cow::Borrowed(_)));
        assert_eq!(normalize(nfd, Form::Nfc), nfc);
        assert_eq!(normalize(nfc, Form::Nfd), nfd);
        assert!(is_normalized(nfc, Form::Nfc) && !is_normalized(nfc, Form::Nfd));
        // Hangul: composed syllable vs. jamo.
        assert_eq!(normalize("\u{1100}\u{1161}", Form::Nfc), "\u{ac00}");
        assert_eq!(Form::parse("NFD"), Ok(Form::Nfd));
        assert!(Form::parse("nfkc").is_err());
    }
}
