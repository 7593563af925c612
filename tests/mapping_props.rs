//! Property tests of the shown view of random directories, in every mode: the listing is
//! injective, every shown name is legal and looks up to its own backing entry, valid names are
//! never changed (but for a normalization form, in which every shown name then is), and nothing
//! depends on the order the directory is listed in.

use proptest::prelude::*;
use proptest::sample::{select, Index};
use proptest::test_runner::FileFailurePersistence;
use std::collections::{BTreeSet, HashSet};
use utf8fs::mapping::{DirIndex, Mapper, Mode};
use utf8fs::policy::{check_component, is_normalized, Form};
use utf8fs::utf8;

/// Bytes that make collisions likely: ASCII, Latin-1 letters (one byte each, so `caf\xE9` and
/// `caf\xE8` both replace to `caf�`), the lead/continuation bytes of U+EF80..U+EFFF (so literal
/// escape characters appear), `~` and hex digits (so tags appear), Shift_JIS and C1 bytes.
const ALPHABET: &[u8] = b"a.~0\xE9\xE8\xC3\xA9\x80\xBF\xFF\xEE\xBE\xBD\xEF\x93\xFA\x85\x81";

fn legal_backing(name: &[u8]) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name != b"."
        && name != b".."
        && !name.contains(&b'/')
        && !name.contains(&0)
}

fn name() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => prop::collection::vec(select(ALPHABET), 1..6),
        2 => prop::collection::vec(1u8..=255, 1..40),
        1 => prop::collection::vec(select(&b"\xE9\xE8a.\x80"[..]), 200..=255),
        1 => "[a-zé\u{EF80}-\u{EFFF}\u{FFFD}~.]{1,12}".prop_map(String::into_bytes),
        // Both normalization forms, combining marks in both orders, Hangul, the Kelvin sign.
        2 => "[ae\u{E9}\u{301}\u{323}\u{1EB9}\u{AC00}\u{1100}\u{1161}K\u{212A}.~]{1,10}"
            .prop_map(String::into_bytes),
        1 => prop::collection::vec(select(&["e\u{301}", "\u{E9}", "a"][..]), 60..=130)
            .prop_map(|v| v.concat().into_bytes()),
    ]
    .prop_filter("a name that can exist on disk", |n| legal_backing(n))
}

fn form() -> impl Strategy<Value = Option<Form>> {
    prop_oneof![2 => Just(None), 1 => Just(Some(Form::Nfc)), 1 => Just(Some(Form::Nfd))]
}

/// A mapper: a normalizing mode, or any mode with a normalization form.
fn mapper() -> impl Strategy<Value = Mapper> {
    (mode(), form(), any::<bool>()).prop_map(|(mode, form, plain)| match (form, plain) {
        (Some(f), true) => Mapper::new(Mode::Reject).with_form(Some(f)),
        (form, _) => Mapper::new(mode).with_form(form),
    })
}

/// True when `b` shows as itself: valid, and in the mapper's form if it has one.
fn shows_itself(m: &Mapper, b: &[u8]) -> bool {
    std::str::from_utf8(b).is_ok_and(|t| m.form().is_none_or(|f| is_normalized(t, f)))
}

fn mode() -> impl Strategy<Value = Mode> {
    const LABELS: &[&str] = &[
        "windows-1252",
        "iso-8859-2",
        "shift_jis",
        "gb18030",
        "big5",
        "euc-kr",
        "iso-2022-jp",
        "utf-16le",
        "koi8-r",
        "utf-16be",
        "utf-8",
        "x-user-defined",
        "iso-2022-kr",
        "euc-jp",
        "windows-1258",
        "cp437",
        "cp850",
    ];
    prop_oneof![
        Just(Mode::Escape),
        Just(Mode::Replace),
        select(LABELS).prop_map(|l| Mode::parse("transcode", Some(l)).unwrap()),
    ]
}

/// A directory: random names, plus literal valid names equal to the plain or resolved shown
/// names of some of them (the collisions the rules must survive).
fn directory() -> impl Strategy<Value = (Mapper, Vec<Vec<u8>>)> {
    (
        mapper(),
        prop::collection::vec(name(), 0..30),
        prop::collection::vec(any::<Index>(), 0..4),
        prop::collection::vec(any::<Index>(), 0..3),
    )
        .prop_map(|(mapper, names, plain, resolved)| {
            let mut set: BTreeSet<Vec<u8>> = names.into_iter().collect();
            let base: Vec<Vec<u8>> = set.iter().cloned().collect();
            if !base.is_empty() {
                let index = DirIndex::build(&mapper, base.iter().map(Vec::as_slice));
                for i in plain {
                    if let Some(c) = mapper.candidate(i.get::<Vec<u8>>(&base)) {
                        set.insert(c.into_owned());
                    }
                }
                for i in resolved {
                    if let Some(s) = index.shown(i.get::<Vec<u8>>(&base)) {
                        set.insert(s.to_vec());
                    }
                }
            }
            (mapper, set.into_iter().collect())
        })
}

/// A permutation of `names` drawn from `seed`.
fn shuffled(names: &[Vec<u8>], mut seed: u64) -> Vec<Vec<u8>> {
    let mut v = names.to_vec();
    for i in (1..v.len()).rev() {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        v.swap(i, (seed >> 33) as usize % (i + 1));
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn view_is_injective_legal_and_reversible((mapper, names) in directory()) {
        let index = DirIndex::build(&mapper, names.iter().map(Vec::as_slice));
        let mut seen = HashSet::new();
        let mut mapped = 0;
        for b in &names {
            let Some(s) = index.shown(b) else {
                prop_assert!(mapper.mode() == Mode::Reject && !utf8::is_valid(b));
                continue;
            };
            prop_assert!(seen.insert(s.to_vec()), "two entries show as {:?}", String::from_utf8_lossy(s));
            if let Some(f) = mapper.form() {
                let text = std::str::from_utf8(s);
                prop_assert!(text.is_ok_and(|t| is_normalized(t, f)), "{:?} not in {}", s, f);
            }
            if shows_itself(&mapper, b) {
                prop_assert_eq!(s, &b[..]);
                prop_assert_eq!(index.backing(s), None);
            } else {
                mapped += 1;
                prop_assert!(check_component(s).is_ok(), "illegal shown name {:?}", s);
                prop_assert_eq!(index.backing(s), Some(&b[..]));
                prop_assert!(mapper.may_be_mapped(s));
            }
        }
        prop_assert_eq!(index.len(), mapped);
    }

    #[test]
    fn view_does_not_depend_on_listing_order((mapper, names) in directory(), seed: u64) {
        let a = DirIndex::build(&mapper, names.iter().map(Vec::as_slice));
        let perm = shuffled(&names, seed);
        let b = DirIndex::build(&mapper, perm.iter().map(Vec::as_slice));
        prop_assert_eq!(a.iter().collect::<Vec<_>>(), b.iter().collect::<Vec<_>>());
    }

    #[test]
    fn new_valid_name_that_is_not_shown_changes_nothing(
        (mapper, names) in directory(),
        extra in "[a-zé\u{EF80}-\u{EFFF}\u{FFFD}~0-9.\u{301}]{1,20}",
    ) {
        let before = DirIndex::build(&mapper, names.iter().map(Vec::as_slice));
        let extra = extra.into_bytes();
        let clash = names.iter().any(|b| before.shown(b) == Some(&extra[..]));
        prop_assume!(!clash && legal_backing(&extra) && shows_itself(&mapper, &extra));
        let after = DirIndex::build(
            &mapper,
            names.iter().map(Vec::as_slice).chain(std::iter::once(&extra[..])),
        );
        for b in &names {
            prop_assert_eq!(before.shown(b), after.shown(b));
        }
    }

    #[test]
    fn invert_is_consistent((mapper, names) in directory()) {
        let index = DirIndex::build(&mapper, names.iter().map(Vec::as_slice));
        for b in &names {
            let Some(shown) = index.shown(b) else { continue };
            for s in [shown.to_vec(), mapper.candidate(b).unwrap().into_owned()] {
                for back in mapper.inversions(&s) {
                    prop_assert!(!shows_itself(&mapper, &back));
                    let again = mapper.candidate(&back);
                    prop_assert_eq!(again.as_deref(), Some(&s[..]));
                }
            }
            // Escape forms that fit are computed back without the directory.
            let plain = mapper.candidate(b).unwrap();
            if mapper.mode() == Mode::Escape
                && mapper.form().is_none()
                && !utf8::is_valid(b)
                && !plain.contains(&b'~')
            {
                prop_assert_eq!(mapper.invert(&plain), Some(b.clone()));
            }
            // So are the other-form spellings of names that fit.
            if utf8::is_valid(b) && !shows_itself(&mapper, b) && !plain.contains(&b'~') {
                let all: Vec<_> = mapper.inversions(&plain).collect();
                let nfc_nfd = all.contains(b);
                let other = std::str::from_utf8(b).ok().and_then(|t| {
                    let f = match mapper.form()? { Form::Nfc => Form::Nfd, Form::Nfd => Form::Nfc };
                    Some(is_normalized(t, f))
                });
                if other == Some(true) {
                    prop_assert!(nfc_nfd, "{:?} not among the inversions of {:?}", b, plain);
                }
            }
        }
    }

    #[test]
    fn invert_of_any_text_is_consistent(
        mapper in mapper(),
        text in "[a-z.~é\u{EF80}-\u{EFFF}\u{FFFD}日本\u{80}-\u{FF}\u{301}\u{AC00}]{1,16}",
    ) {
        for back in mapper.inversions(text.as_bytes()) {
            prop_assert!(!shows_itself(&mapper, &back));
            let again = mapper.candidate(&back);
            prop_assert_eq!(again.as_deref(), Some(text.as_bytes()));
            prop_assert!(mapper.may_be_mapped(text.as_bytes()));
        }
    }

    #[test]
    fn reject_hides_and_audit_passes(names in prop::collection::vec(name(), 0..20)) {
        let reject = Mapper::new(Mode::Reject);
        let audit = Mapper::new(Mode::Audit);
        let r = DirIndex::build(&reject, names.iter().map(Vec::as_slice));
        let a = DirIndex::build(&audit, names.iter().map(Vec::as_slice));
        prop_assert!(r.is_empty() && a.is_empty());
        for b in &names {
            let valid = utf8::is_valid(b);
            prop_assert_eq!(r.shown(b), valid.then_some(&b[..]));
            prop_assert_eq!(a.shown(b), Some(&b[..]));
            prop_assert!(!reject.may_be_mapped(b) && !audit.may_be_mapped(b));
        }
    }
}
