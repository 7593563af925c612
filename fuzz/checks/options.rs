//! The mount-option parser on arbitrary command lines: it never panics, an error is one line
//! without control or bidi formatting characters, and an accepted command line means what it
//! says. Shared by the `options` fuzz target and `tests/fuzz_seeds.rs`.
//!
//! Input: arguments separated by NUL bytes (arguments cannot hold NUL).

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use utf8fs::options::{self, Invocation};

/// Characters an error line or a kernel mount option must not carry raw: C0 and C1 controls,
/// DEL, and the bidi formatting characters of the `bidi` hygiene rule.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Checks every invariant for one input; panics on a violation.
pub fn check(data: &[u8]) {
    let args: Vec<OsString> = data
        .split(|&b| b == 0)
        .map(|a| OsString::from_vec(a.to_vec()))
        .collect();
    let first = options::parse(&args);
    let again = options::parse(&args);
    assert_eq!(
        format!("{first:?}"),
        format!("{again:?}"),
        "not deterministic"
    );
    match first {
        Err(e) => {
            let line = e.to_string();
            assert!(!e.message().is_empty(), "empty error for {args:?}");
            assert!(
                !line.chars().any(is_unsafe),
                "error line {line:?} holds a control character"
            );
        }
        Ok(Invocation::Help | Invocation::Version) => {}
        Ok(Invocation::Mount(m)) => {
            let given: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            // SOURCE and MOUNTPOINT are arguments as given, in that order.
            let s = given
                .iter()
                .position(|a| *a == m.source.as_os_str().as_bytes());
            let t = given
                .iter()
                .rposition(|a| *a == m.mountpoint.as_os_str().as_bytes());
            assert!(
                matches!((s, t), (Some(s), Some(t)) if s < t),
                "paths {:?} {:?} not from {args:?}",
                m.source,
                m.mountpoint
            );
            // What reaches the kernel's option string stays one option each.
            let f = &m.fuse;
            assert!(!f.subtype.is_empty());
            for v in [Some(&f.subtype), f.fsname.as_ref()].into_iter().flatten() {
                assert!(
                    !v.is_empty() && !v.contains(',') && !v.chars().any(is_unsafe),
                    "mount option value {v:?} accepted"
                );
            }
            if m.debug {
                assert!(m.foreground, "-d without foreground");
            }
            if let Some(t) = m.threads {
                assert!(t.get() <= options::MAX_THREADS);
            }
        }
    }
}
