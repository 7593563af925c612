//! `malformed=transcode`: malformed names decoded as a legacy charset (windows-1252, the
//! default, and Shift_JIS), escape for what the charset cannot decode.

mod common;

use common::normalize::*;
use common::*;

mod windows_1252 {
    use super::*;
    normalize_tests!(transcode("windows-1252"));

    #[test]
    fn documented_windows_1252_forms() {
        let mode = transcode("windows-1252");
        let m = mount(mode);
        // Valid "café.txt" keeps its name; the Latin-1 caf\xE9.txt that decodes to it is tagged.
        assert_eq!(
            read(&m.mnt_path("café.txt".as_bytes())),
            content_of("café.txt".as_bytes())
        );
        let view = expected_view(mode, &m.src);
        let tagged = String::from_utf8(view[LATIN1].clone()).unwrap();
        assert!(
            tagged.starts_with("café~") && tagged.ends_with(".txt"),
            "tagged form: {tagged}"
        );
        assert_eq!(read(&m.mnt_path(tagged.as_bytes())), content_of(LATIN1));
        assert_eq!(
            read(&m.mnt_path("cafè.txt".as_bytes())),
            content_of(LATIN1_TWIN)
        );
        // A 250-byte Latin-1 name doubles in UTF-8: shortened and still reachable.
        for l in long_names() {
            assert!(view[&l].len() <= 255);
            assert!(String::from_utf8(view[&l].clone())
                .unwrap()
                .starts_with("éééé"));
            assert_eq!(read(&m.mnt_path(&view[&l])), content_of(&l));
        }
    }
}

mod shift_jis {
    use super::*;
    normalize_tests!(transcode("shift_jis"));

    #[test]
    fn documented_shift_jis_forms() {
        let m = mount(transcode("shift_jis"));
        assert_eq!(read(&m.mnt_path("日本語.txt".as_bytes())), content_of(SJIS));
        let view = expected_view(transcode("shift_jis"), &m.src);
        assert_eq!(view[SJIS], "日本語.txt".as_bytes());
    }
}
