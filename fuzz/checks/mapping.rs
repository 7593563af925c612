//! The name mapping over one random directory, in every mode: each backing name shows as a legal
//! name, no two entries show alike, and looking a shown name up as the mount does finds its own
//! backing entry again (shown → backing → shown). Shared by the `mapping` fuzz target and
//! `tests/fuzz_seeds.rs`.
//!
//! Input: byte 0 picks the mode (and charset), byte 1 the normalization form, the rest is split
//! at `/` and NUL into backing names (empty, `.`, `..` dropped; cut to 255 bytes).

use std::collections::{BTreeSet, HashMap};

use utf8fs::mapping::{DirIndex, Mapper, Mode};
use utf8fs::policy::{check_component, Form};
use utf8fs::utf8;

/// Charsets of transcode mode the input picks from: single-byte, multi-byte and stateful.
const CHARSETS: [&str; 6] = [
    "windows-1252",
    "shift_jis",
    "cp437",
    "cp850",
    "euc-kr",
    "iso-2022-jp",
];

/// The mode the first input byte selects.
fn mode(b: u8) -> Mode {
    match b % 10 {
        0 => Mode::Reject,
        1 => Mode::Escape,
        2 => Mode::Replace,
        3 => Mode::Audit,
        n => Mode::parse("transcode", Some(CHARSETS[usize::from(n - 4)]))
            .unwrap_or_else(|e| panic!("charset {}: {e}", CHARSETS[usize::from(n - 4)])),
    }
}

/// Backing names of one directory, as a directory can hold them.
fn names(data: &[u8]) -> BTreeSet<&[u8]> {
    data.split(|&b| b == b'/' || b == 0)
        .map(|n| &n[..n.len().min(255)])
        .filter(|n| !n.is_empty() && *n != b"." && *n != b"..")
        .collect()
}

/// The backing name the mount resolves a client's `shown` name to, as `Utf8Fs::resolve` does:
/// the literal entry when it exists, else a computed inversion the index confirms, else the
/// index's reverse lookup.
fn resolve(
    mapper: &Mapper,
    index: &DirIndex,
    dir: &BTreeSet<&[u8]>,
    shown: &[u8],
) -> Option<Vec<u8>> {
    let client = mapper.client_name(shown).into_owned();
    if !mapper.normalizes() || dir.contains(client.as_slice()) {
        return dir.contains(client.as_slice()).then_some(client);
    }
    for b in mapper.inversions(&client) {
        if dir.contains(b.as_slice()) && index.shown(&b) == Some(client.as_slice()) {
            return Some(b);
        }
    }
    if !mapper.may_be_mapped(&client) {
        return None;
    }
    index.backing(&client).map(<[u8]>::to_vec)
}

/// Checks every invariant for one input; panics on a violation.
pub fn check(data: &[u8]) {
    let [m, f, rest @ ..] = data else {
        return;
    };
    let form = match f % 3 {
        0 => None,
        1 => Some(Form::Nfc),
        _ => Some(Form::Nfd),
    };
    let mapper = Mapper::new(mode(*m)).with_form(form);
    let dir = names(rest);
    let index = DirIndex::build(&mapper, dir.iter().copied());
    // The index does not depend on the listing order.
    let reversed = DirIndex::build(&mapper, dir.iter().rev().copied());
    let mut seen: HashMap<Vec<u8>, &[u8]> = HashMap::new();
    for &backing in &dir {
        let shown = index.shown(backing);
        assert_eq!(shown, reversed.shown(backing), "order changed {backing:x?}");
        let valid = utf8::is_valid(backing);
        let Some(shown) = shown else {
            assert!(
                !valid && mapper.mode() != Mode::Audit,
                "valid or audited name {backing:x?} hidden"
            );
            continue;
        };
        if mapper.mode() == Mode::Audit && !valid {
            assert_eq!(shown, backing, "audit mode changed {backing:x?}");
        } else {
            // Rule 5: a legal strict UTF-8 component.
            assert!(
                check_component(shown).is_ok() && shown.len() <= 255,
                "{backing:x?} shows as illegal {shown:x?}"
            );
            if let (Some(form), Ok(text)) = (form, std::str::from_utf8(shown)) {
                assert!(
                    utf8fs::policy::is_normalized(text, form),
                    "{backing:x?} shows as {shown:x?}, not in {form:?}"
                );
            }
        }
        if valid && form.is_none() {
            assert_eq!(shown, backing, "valid name {backing:x?} changed");
        }
        // Injective: no two entries show alike.
        if let Some(other) = seen.insert(shown.to_vec(), backing) {
            panic!("{other:x?} and {backing:x?} both show as {shown:x?}");
        }
        // Round trip: the shown name leads back to this entry.
        let found = resolve(&mapper, &index, &dir, shown);
        assert_eq!(
            found.as_deref(),
            Some(backing),
            "{backing:x?} shows as {shown:x?}, which resolves elsewhere"
        );
        // Alone in a directory, a name shows as its candidate form.
        let alone = DirIndex::build(&mapper, [backing]);
        assert_eq!(
            alone.shown(backing),
            mapper.candidate(backing).as_deref(),
            "{backing:x?} alone differs from its candidate"
        );
    }
}
