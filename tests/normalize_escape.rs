//! `malformed=escape`: each byte of a maximal invalid subpart is shown as U+EF00+byte.

mod common;

use common::normalize::*;
use common::*;
use utf8fs::mapping::Mode;

normalize_tests!(Mode::Escape);

/// The documented forms a user reads in a listing and types back.
#[test]
fn documented_escape_forms() {
    let m = mount(Mode::Escape);
    for (shown, backing) in [
        ("caf\u{EFE9}.txt", LATIN1),
        ("caf\u{EFE8}.txt", LATIN1_TWIN),
        ("\u{EFC0}\u{EFAE}\u{EFC0}\u{EFAE}", &b"\xC0\xAE\xC0\xAE"[..]),
        ("\u{EFED}\u{EFA0}\u{EF80}", &b"\xED\xA0\x80"[..]),
        ("\u{EFFF}", &b"\xFF"[..]),
    ] {
        assert_eq!(
            read(&m.mnt_path(shown.as_bytes())),
            content_of(backing),
            "{shown} reaches {}",
            show(backing)
        );
    }
    // The literal U+EFE9 name keeps its name; the malformed name it spells shows elsewhere.
    assert_eq!(
        read(&m.mnt_path("\u{EFE9}literal".as_bytes())),
        content_of("\u{EFE9}literal".as_bytes())
    );
    let view = expected_view(Mode::Escape, &m.src);
    assert_ne!(view[ESCAPE_TWIN], "\u{EFE9}literal".as_bytes());
    assert_eq!(
        read(&m.mnt_path(&view[ESCAPE_TWIN])),
        content_of(ESCAPE_TWIN)
    );
    // A 250-byte Latin-1 name (750 bytes escaped) is shortened to at most 255 bytes.
    for l in long_names() {
        assert!(view[&l].len() <= 255);
        assert_eq!(read(&m.mnt_path(&view[&l])), content_of(&l));
    }
}
