//! `malformed=replace`: each maximal invalid subpart is shown as U+FFFD; names that replace to
//! the same text are kept apart by the collision rule.

mod common;

use common::normalize::*;
use common::*;
use utf8fs::mapping::Mode;

normalize_tests!(Mode::Replace);

#[test]
fn documented_replace_forms() {
    let m = mount(Mode::Replace);
    // caf\xE8.txt sorts first and claims the plain form; caf\xE9.txt gets a tagged one.
    assert_eq!(
        read(&m.mnt_path("caf\u{FFFD}.txt".as_bytes())),
        content_of(LATIN1_TWIN)
    );
    let view = expected_view(Mode::Replace, &m.src);
    let tagged = String::from_utf8(view[LATIN1].clone()).unwrap();
    assert!(
        tagged.starts_with("caf\u{FFFD}~") && tagged.ends_with(".txt"),
        "collided name tagged before the extension: {tagged}"
    );
    assert_eq!(read(&m.mnt_path(tagged.as_bytes())), content_of(LATIN1));
    // The overlong ".." is one maximal subpart per byte: four U+FFFD.
    assert_eq!(
        view[&b"\xC0\xAE\xC0\xAE"[..]],
        "\u{FFFD}".repeat(4).as_bytes()
    );
    // The literal "lit\u{FFFD}" keeps its name.
    assert_eq!(
        read(&m.mnt_path("lit\u{FFFD}".as_bytes())),
        content_of("lit\u{FFFD}".as_bytes())
    );
}
