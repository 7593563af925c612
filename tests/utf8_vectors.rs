//! The strict decoder agrees with Rust's std (`str::from_utf8`, `String::from_utf8_lossy`,
//! `<[u8]>::utf8_chunks`) on the shared test vectors, exhaustively on short inputs, and on random
//! input; and it gives the documented reason for each malformed class.

use proptest::prelude::*;
use std::path::PathBuf;
use utf8fs::utf8::{self, Reason};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// Validity, `valid_up_to` and `error_len` as std reports them.
fn std_verdict(bytes: &[u8]) -> Result<(), (usize, Option<usize>)> {
    std::str::from_utf8(bytes)
        .map(|_| ())
        .map_err(|e| (e.valid_up_to(), e.error_len()))
}

fn our_verdict(bytes: &[u8]) -> Result<(), (usize, Option<usize>)> {
    utf8::validate(bytes).map_err(|e| (e.valid_up_to(), e.error_len()))
}

/// Validation only: the check run on millions of inputs.
fn agree_validate(bytes: &[u8]) {
    assert_eq!(our_verdict(bytes), std_verdict(bytes), "input {bytes:02X?}");
}

/// Everything: validation, `from_utf8`, `is_valid`, chunks, lossy and decode, without allocating.
fn agree(bytes: &[u8]) {
    agree_validate(bytes);
    assert_eq!(
        utf8::from_utf8(bytes).ok(),
        std::str::from_utf8(bytes).ok(),
        "input {bytes:02X?}"
    );
    assert_eq!(utf8::is_valid(bytes), std::str::from_utf8(bytes).is_ok());

    let mut ours = utf8::chunks(bytes);
    for theirs in bytes.utf8_chunks() {
        let Some(c) = ours.next() else {
            panic!("input {bytes:02X?}: chunks ended early");
        };
        assert_eq!(c.valid, theirs.valid(), "input {bytes:02X?}");
        assert_eq!(c.invalid, theirs.invalid(), "input {bytes:02X?}");
        assert_eq!(
            c.reason.is_some(),
            !c.invalid.is_empty(),
            "input {bytes:02X?}"
        );
    }
    assert_eq!(ours.next(), None, "input {bytes:02X?}: extra chunks");

    let std_lossy = bytes.utf8_chunks().flat_map(|c| {
        let bad = (!c.invalid().is_empty()).then_some(char::REPLACEMENT_CHARACTER);
        c.valid().chars().chain(bad)
    });
    assert!(
        utf8::lossy(bytes).eq(std_lossy),
        "input {bytes:02X?}: lossy"
    );

    // Decode: chars and invalid subparts tile the input in order, and the errors are exactly
    // the invalid parts of the chunks.
    let mut offset = 0;
    let mut bad = utf8::chunks(bytes).filter(|c| !c.invalid.is_empty());
    for item in utf8::decode(bytes) {
        match item {
            Ok(c) => {
                let mut buf = [0; 4];
                let enc = c.encode_utf8(&mut buf).as_bytes();
                assert_eq!(&bytes[offset..offset + enc.len()], enc);
                offset += enc.len();
            }
            Err(e) => {
                assert_eq!(e.offset, offset, "input {bytes:02X?}");
                let chunk = bad.next().expect("an error without an invalid chunk");
                assert_eq!(e.bytes, chunk.invalid, "input {bytes:02X?}");
                assert_eq!(Some(e.reason), chunk.reason, "input {bytes:02X?}");
                offset += e.bytes.len();
            }
        }
    }
    assert_eq!(offset, bytes.len());
    assert!(bad.next().is_none(), "input {bytes:02X?}: missed an error");
}

fn unhex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|h| u8::from_str_radix(h, 16).unwrap_or_else(|_| panic!("bad hex {h:?}")))
        .collect()
}

#[test]
fn shared_vectors_agree_with_std_and_with_their_expectations() {
    let text = std::fs::read_to_string(data("utf8-vectors.tsv")).expect("read utf8-vectors.tsv");
    let mut rows = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')).skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let [id, hex, valid, lossy_hex, ..] = cols[..] else {
            panic!("short row {line:?}");
        };
        let bytes = unhex(hex);
        agree(&bytes);
        assert_eq!(utf8::is_valid(&bytes), valid == "true", "{id}");
        let lossy: String = utf8::lossy(&bytes).collect();
        assert_eq!(lossy.as_bytes(), unhex(lossy_hex), "{id}");
        rows += 1;
    }
    assert!(rows >= 347, "only {rows} vectors read");
}

#[test]
fn kuhn_stress_test_agrees_with_std() {
    let text = std::fs::read(data("kuhn-UTF-8-test.txt")).expect("read kuhn-UTF-8-test.txt");
    agree(&text);
    for line in text.split(|&b| b == b'\n') {
        agree(line);
    }
}

#[test]
fn targeted_reasons() {
    let cases: &[(&[u8], usize, Option<usize>, Reason)] = &[
        (b"\xC0\xAF", 0, Some(1), Reason::Overlong),
        (b"\xC1\xBF", 0, Some(1), Reason::Overlong),
        (b"\xE0\x80\xAF", 0, Some(1), Reason::Overlong),
        (b"\xF0\x80\x80\xAF", 0, Some(1), Reason::Overlong),
        (b"\xED\xA0\x80", 0, Some(1), Reason::Surrogate),
        (b"\xED\xBF\xBF", 0, Some(1), Reason::Surrogate),
        (b"\xF4\x90\x80\x80", 0, Some(1), Reason::BeyondMax),
        (b"\xF5\x80\x80\x80", 0, Some(1), Reason::InvalidLead),
        (b"\xF8\x88\x80\x80\x80", 0, Some(1), Reason::InvalidLead),
        (b"\xFC\x84\x80\x80\x80\x80", 0, Some(1), Reason::InvalidLead),
        (b"\xFE", 0, Some(1), Reason::InvalidLead),
        (b"\xFF", 0, Some(1), Reason::InvalidLead),
        (b"\x80", 0, Some(1), Reason::UnexpectedContinuation),
        (b"ab\xBF", 2, Some(1), Reason::UnexpectedContinuation),
        (b"\xE2\x82", 0, None, Reason::Truncated),
        (b"\xE2\x82x", 0, Some(2), Reason::Truncated),
        (b"\xF0\x9F\x98", 0, None, Reason::Truncated),
        (b"\xF0\x9F\x98x", 0, Some(3), Reason::Truncated),
        (b"caf\xE9", 3, None, Reason::Truncated),
        (b"caf\xE9!", 3, Some(1), Reason::Truncated),
    ];
    for &(bytes, at, len, reason) in cases {
        let e = utf8::validate(bytes).unwrap_err();
        assert_eq!(
            (e.valid_up_to(), e.error_len(), e.reason()),
            (at, len, reason),
            "input {bytes:02X?}"
        );
        agree(bytes);
        let first = utf8::decode(bytes).find_map(Result::err).expect("an error");
        assert_eq!((first.offset, first.reason), (at, reason));
    }
}

#[test]
fn noncharacters_and_boundaries_are_valid() {
    for s in [
        "\u{FFFE}", "\u{FFFF}", "\u{FEFF}", "\u{0}", "\u{7F}", "\u{80}", "\u{7FF}",
    ] {
        assert_eq!(utf8::from_utf8(s.as_bytes()), Ok(s));
    }
    for s in ["\u{800}", "\u{D7FF}", "\u{E000}", "\u{10000}", "\u{10FFFF}"] {
        assert_eq!(utf8::from_utf8(s.as_bytes()), Ok(s));
    }
}

#[test]
fn exhaustive_up_to_three_bytes() {
    agree(b"");
    for a in 0..=255u8 {
        agree(&[a]);
        for b in 0..=255u8 {
            agree(&[a, b]);
            for c in 0..=255u8 {
                agree(&[a, b, c]);
            }
        }
    }
}

/// Every 4-byte string whose first byte is F0..F4 (5 * 2^24 inputs), compared on validation.
/// In a debug build the last byte runs over one representative of each byte class only, which
/// keeps `cargo test` quick; `cargo test --release` checks all of them.
#[test]
fn exhaustive_four_bytes_from_f0_to_f4() {
    const CLASS_REPRESENTATIVES: &[u8] = &[
        0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1,
        0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF,
    ];
    let full = !cfg!(debug_assertions);
    for a in 0xF0..=0xF4u8 {
        for b in 0..=255u8 {
            for c in 0..=255u8 {
                if full {
                    for d in 0..=255u8 {
                        agree_validate(&[a, b, c, d]);
                    }
                } else {
                    for &d in CLASS_REPRESENTATIVES {
                        agree_validate(&[a, b, c, d]);
                    }
                }
            }
        }
    }
}

/// Short strings with a non-ASCII byte at every position around the 8- and 16-byte blocks of the
/// ASCII fast path.
#[test]
fn every_position_around_the_ascii_blocks() {
    let bad: &[&[u8]] = &[
        b"\xFF",
        b"\xC3\xA9",
        b"\xE2\x82",
        b"\xF0\x9F\x98\x80",
        b"\x80",
    ];
    for len in 0..40 {
        for at in 0..=len {
            for seq in bad {
                let mut v = vec![b'n'; len];
                v.splice(at..at, seq.iter().copied());
                agree(&v);
            }
        }
    }
}

/// A piece of a test input: a char, a random byte, a cut-off sequence or a known bad sequence.
fn piece() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => any::<char>().prop_map(|c| c.to_string().into_bytes()),
        3 => "[a-z0-9._-]{1,12}".prop_map(String::into_bytes),
        2 => any::<u8>().prop_map(|b| vec![b]),
        1 => (any::<char>(), 0..4usize).prop_map(|(c, k)| {
            let s = c.to_string().into_bytes();
            let cut = k.min(s.len().saturating_sub(1));
            s[..cut].to_vec()
        }),
        1 => prop::sample::select(vec![
            &b"\xC0\xAF"[..],
            b"\xE0\x80\xAF",
            b"\xED\xA0\x80",
            b"\xF4\x90\x80\x80",
            b"\xF8\x88\x80\x80\x80",
            b"\xFE\xFF",
        ])
        .prop_map(<[u8]>::to_vec),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn random_bytes_agree_with_std(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        agree(&bytes);
    }

    #[test]
    fn random_mixes_agree_with_std(pieces in prop::collection::vec(piece(), 0..24)) {
        agree(&pieces.concat());
    }
}
