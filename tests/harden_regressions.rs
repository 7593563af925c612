//! Regression tests for what fuzzing and hardening found, so that none comes back:
//!
//! - `Escaped` wrote C1 controls (U+0080..U+009F) and bidi formatting characters raw, so a
//!   logged or reported name could move the terminal cursor or reorder the line.
//! - Option errors quoted the offending value raw (`deny=`, `unicode=`), so a value holding
//!   ESC or U+202E garbled the one error line.
//! - `fsname=`/`subtype=` accepted control and bidi characters, which then reached the kernel and
//!   every `mount`/`df` listing.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use utf8fs::options::{self, Invocation};
use utf8fs::policy::Escaped;

/// Whether `text` holds a character a terminal acts on rather than shows.
fn has_raw_control(text: &str) -> bool {
    text.chars().any(|c| {
        c.is_control() || matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    })
}

fn parse_error(opt: &[u8]) -> String {
    let args: Vec<OsString> = [&b"src"[..], b"mnt", b"-o", opt]
        .iter()
        .map(|a| OsString::from_vec(a.to_vec()))
        .collect();
    match options::parse(&args) {
        Err(e) => e.to_string(),
        Ok(Invocation::Mount(m)) => panic!("{opt:?} accepted as {:?}", m.fuse),
        Ok(_) => panic!("{opt:?} accepted"),
    }
}

#[test]
fn escaped_writes_c1_controls_and_bidi_characters_as_escapes() {
    let cases: [(&str, &str); 6] = [
        ("a\u{85}b", "a\\u{0085}b"),
        ("\u{80}\u{9F}", "\\u{0080}\\u{009F}"),
        ("evil\u{202E}txt.exe", "evil\\u{202E}txt.exe"),
        ("\u{2066}x\u{2069}", "\\u{2066}x\\u{2069}"),
        ("\u{200E}\u{200F}", "\\u{200E}\\u{200F}"),
        ("\u{1B}[2J\u{7F}", "\\x1B[2J\\x7F"),
    ];
    for (raw, shown) in cases {
        let out = Escaped(raw.as_bytes()).to_string();
        assert_eq!(out, shown);
        assert!(!has_raw_control(&out), "{out:?}");
    }
    // Characters next to the escaped ones are kept; malformed bytes stay \xHH.
    assert_eq!(
        Escaped("é\u{85}\u{A0}".as_bytes()).to_string(),
        "é\\u{0085}\u{A0}"
    );
    assert_eq!(Escaped(b"caf\xE9\xC2\x85").to_string(), "caf\\xE9\\u{0085}");
}

#[test]
fn option_errors_never_hold_c1_or_bidi_characters_raw() {
    for opt in [
        "malformed=\u{85}".as_bytes(),
        "charset=\u{9B}31m".as_bytes(),
        "malformed=transcode,charset=x\u{202E}".as_bytes(),
        "bogus\u{2067}=1".as_bytes(),
        "deny=control+\u{1B}[31m".as_bytes(),
        "deny=\u{202E}".as_bytes(),
        "unicode=nf\u{85}c".as_bytes(),
        "cache=\u{202D}always".as_bytes(),
        "threads=\u{9}4".as_bytes(),
        "entry_timeout=1\u{2066}".as_bytes(),
        b"\xC2\x85\xFF",
    ] {
        let line = parse_error(opt);
        assert!(!has_raw_control(&line), "{opt:?}: {line:?}");
        assert_eq!(line.lines().count(), 1, "{line:?}");
    }
    assert_eq!(
        parse_error("deny=\u{202E}".as_bytes()),
        "option 'deny': unknown deny rule '\\u{202E}' (known: all, none, control, bidi, \
         leading-dash, leading-tilde, space, windows, bom, nonchar, shell) (see utf8fs --help)"
    );
}

#[test]
fn fsname_and_subtype_refuse_control_and_bidi_characters() {
    for opt in [
        "fsname=a\u{85}".as_bytes(),
        b"fsname=a\tb",
        "subtype=u\u{202E}8".as_bytes(),
        b"subtype=\x1b",
    ] {
        let line = parse_error(opt);
        assert!(
            line.contains("control and bidi formatting characters are not allowed"),
            "{line}"
        );
        assert!(!has_raw_control(&line), "{line:?}");
    }
    // Ordinary labels, spaces and non-ASCII letters included, are still accepted.
    let args: Vec<OsString> = ["src", "mnt", "-o", "fsname=my data,subtype=café"]
        .iter()
        .map(OsString::from)
        .collect();
    let Ok(Invocation::Mount(m)) = options::parse(&args) else {
        panic!("refused");
    };
    assert_eq!(m.fuse.fsname.as_deref(), Some("my data"));
    assert_eq!(m.fuse.subtype, "café");
}
