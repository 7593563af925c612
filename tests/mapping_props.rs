//! Property tests of the shown view of random directories, in every mode: the listing is
//! injective, every shown name is legal and looks up to its own backing entry, valid names are
//! never changed, and nothing depends on the order the directory is listed in.

use proptest::prelude::*;
use proptest::sample::{select, Index};
use proptest::test_runner::FileFailurePersistence;
use std::collections::{BTreeSet, HashSet};
use utf8fs::mapping::{DirIndex, Mapper, Mode};
use utf8fs::policy::check_component;
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
    ]
    .prop_filter("a name that can exist on disk", |n| legal_backing(n))
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
fn directory() -> impl Strategy<Value = (Mode, Vec<Vec<u8>>)> {
    (
        mode(),
        prop::collection::vec(name(), 0..30),
        prop::collection::vec(any::<Index>(), 0..4),
        prop::collection::vec(any::<Index>(), 0..3),
    )
        .prop_map(|(mode, names, plain, resolved)| {
            let mapper = Mapper::new(mode);
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
            (mode, set.into_iter().collect())
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
    fn view_is_injective_legal_and_reversible((mode, names) in directory()) {
        let mapper = Mapper::new(mode);
        let index = DirIndex::build(&mapper, names.iter().map(Vec::as_slice));
        let mut seen = HashSet::new();
        for b in &names {
            let s = index.shown(b).expect("every entry is shown in a normalizing mode");
            prop_assert!(seen.insert(s.to_vec()), "two entries show as {:?}", String::from_utf8_lossy(s));
            if utf8::is_valid(b) {
                prop_assert_eq!(s, &b[..]);
                prop_assert_eq!(index.backing(s), None);
            } else {
                prop_assert!(check_component(s).is_ok(), "illegal shown name {:?}", s);
                prop_assert_eq!(index.backing(s), Some(&b[..]));
                prop_assert!(mapper.may_be_mapped(s));
            }
        }
        prop_assert_eq!(index.len(), names.iter().filter(|b| !utf8::is_valid(b)).count());
    }

    #[test]
    fn view_does_not_depend_on_listing_order((mode, names) in directory(), seed: u64) {
        let mapper = Mapper::new(mode);
        let a = DirIndex::build(&mapper, names.iter().map(Vec::as_slice));
        let perm = shuffled(&names, seed);
        let b = DirIndex::build(&mapper, perm.iter().map(Vec::as_slice));
        prop_assert_eq!(a.iter().collect::<Vec<_>>(), b.iter().collect::<Vec<_>>());
    }

    #[test]
    fn new_valid_name_that_is_not_shown_changes_nothing(
        (mode, names) in directory(),
        extra in "[a-zé\u{EF80}-\u{EFFF}\u{FFFD}~0-9.]{1,20}",
    ) {
        let mapper = Mapper::new(mode);
        let before = DirIndex::build(&mapper, names.iter().map(Vec::as_slice));
        let extra = extra.into_bytes();
        let clash = names.iter().any(|b| before.shown(b) == Some(&extra[..]));
        prop_assume!(!clash && legal_backing(&extra));
        let after = DirIndex::build(
            &mapper,
            names.iter().map(Vec::as_slice).chain(std::iter::once(&extra[..])),
        );
        for b in &names {
            prop_assert_eq!(before.shown(b), after.shown(b));
        }
    }

    #[test]
    fn invert_is_consistent((mode, names) in directory()) {
        let mapper = Mapper::new(mode);
        let index = DirIndex::build(&mapper, names.iter().map(Vec::as_slice));
        for b in &names {
            let shown = index.shown(b).unwrap();
            for s in [shown.to_vec(), mapper.candidate(b).unwrap().into_owned()] {
                if let Some(back) = mapper.invert(&s) {
                    prop_assert!(!utf8::is_valid(&back));
                    let again = mapper.candidate(&back);
                    prop_assert_eq!(again.as_deref(), Some(&s[..]));
                }
            }
            // Escape forms that fit are computed back without the directory.
            let plain = mapper.candidate(b).unwrap();
            if mode == Mode::Escape && !utf8::is_valid(b) && !plain.contains(&b'~') {
                prop_assert_eq!(mapper.invert(&plain), Some(b.clone()));
            }
        }
    }

    #[test]
    fn invert_of_any_text_is_consistent(
        mode in mode(),
        text in "[a-z.~é\u{EF80}-\u{EFFF}\u{FFFD}日本\u{80}-\u{FF}]{1,16}",
    ) {
        let mapper = Mapper::new(mode);
        if let Some(back) = mapper.invert(text.as_bytes()) {
            prop_assert!(!utf8::is_valid(&back));
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
