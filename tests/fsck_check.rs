//! utf8fsck -n: what it reports, how (text and JSON), and its exit codes.

mod fsck_common;
use fsck_common::*;
use utf8fs::mapping::{DirIndex, Mapper, Mode};

/// One name per malformed class, with the decoder's reason and offset.
const MALFORMED: &[(&[u8], &str, u64)] = &[
    (b"caf\xe9", "truncated sequence", 3),
    (b"a\x80b", "unexpected continuation byte", 1),
    (b"\xff.txt", "invalid lead byte", 0),
    (b"\xc0\xae\xc0\xae", "overlong encoding", 0),
    (b"x\xe0\x80\xaf", "overlong encoding", 1),
    (b"\xed\xa0\x80", "surrogate code point", 0),
    (b"\xf4\x90\x80\x80", "code point beyond U+10FFFF", 0),
    (b"ab\xe2\x82", "truncated sequence", 2),
];

#[test]
fn clean_tree_exits_0() {
    let t = tempfile::tempdir().unwrap();
    file(t.path(), "café".as_bytes());
    let d = dir(t.path(), b"sub");
    file(&d, b"plain");
    let out = run([t.path()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "");
}

#[test]
fn every_malformed_class_reported_with_json() {
    let t = tempfile::tempdir().unwrap();
    let d = dir(t.path(), b"d");
    for (name, _, _) in MALFORMED {
        file(&d, name);
    }
    file(&d, b"ok");
    let out = run([t.path().as_os_str(), "--json".as_ref()]);
    assert_eq!(out.code, 4, "{}", out.stderr);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), MALFORMED.len());
    let all = names(&d);
    let index = DirIndex::build(&Mapper::new(Mode::Escape), all.iter().map(|n| n.as_slice()));
    for (name, reason, offset) in MALFORMED {
        let path = p(&d, name);
        let path_hex = hex(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()));
        let obj = lines
            .iter()
            .find(|o| o["path_hex"] == path_hex.as_str())
            .expect("reported");
        assert_eq!(obj["kind"], "malformed");
        assert_eq!(obj["reason"], *reason, "{name:?}");
        assert_eq!(obj["offset"], *offset, "{name:?}");
        assert_eq!(obj["action"], "report");
        let shown = index.shown(name).unwrap();
        assert_eq!(obj["proposed_hex"], hex(shown).as_str());
        assert_eq!(obj["proposed"], std::str::from_utf8(shown).unwrap());
        assert!(
            obj["path"].as_str().unwrap().contains("\\x"),
            "escaped: {obj}"
        );
    }
    // Nothing changed with -n.
    assert!(names(&d).contains(b"caf\xe9".as_slice()));
}

#[test]
fn text_report_names_path_offset_reason_and_proposal() {
    let t = tempfile::tempdir().unwrap();
    file(t.path(), b"caf\xe9");
    let out = run([t.path()]);
    assert_eq!(out.code, 4);
    let line = out.stdout.lines().next().unwrap();
    assert!(
        line.contains("caf\\xE9: not UTF-8 (truncated sequence) at byte 3"),
        "{line}"
    );
    assert!(line.contains("would rename to caf\u{efe9}"), "{line}");
}

#[test]
fn replace_and_transcode_proposals_follow_the_mapping() {
    let t = tempfile::tempdir().unwrap();
    file(t.path(), b"caf\xe9.txt");
    let out = run([
        t.path().as_os_str(),
        "--json".as_ref(),
        "-o".as_ref(),
        "malformed=replace".as_ref(),
    ]);
    assert_eq!(json_lines(&out)[0]["proposed"], "caf\u{fffd}.txt");
    let out = run([
        t.path().as_os_str(),
        "--json".as_ref(),
        "-o".as_ref(),
        "malformed=transcode,charset=latin1".as_ref(),
    ]);
    assert_eq!(json_lines(&out)[0]["proposed"], "café.txt");
}

#[test]
fn hygiene_rules_reported_per_rule() {
    let cases: &[(&str, &str, u64)] = &[
        ("a\u{1}b", "control", 1),
        ("x\u{85}", "control", 1),
        ("abc\u{202e}txt.exe", "bidi", 3),
        ("-rf", "leading-dash", 0),
        ("~x", "leading-tilde", 0),
        (" lead", "space", 0),
        ("trail\u{a0}", "space", 5),
        ("a:b", "windows", 1),
        ("aux.c", "windows", 0),
        ("dot.", "windows", 3),
        ("\u{feff}bom", "bom", 0),
        ("n\u{fdd0}", "nonchar", 1),
        ("x\u{10ffff}", "nonchar", 1),
        ("a$b", "shell", 1),
    ];
    let t = tempfile::tempdir().unwrap();
    for (name, _, _) in cases {
        file(t.path(), name.as_bytes());
    }
    file(t.path(), b"fine name (1).txt");
    // Without --deny nothing is wrong.
    assert_eq!(run([t.path()]).code, 0);
    for (name, rule, offset) in cases {
        let out = run([
            t.path().as_os_str(),
            "--json".as_ref(),
            format!("--deny={rule}").as_ref(),
        ]);
        assert_eq!(out.code, 4);
        let lines = json_lines(&out);
        let obj = lines
            .iter()
            .find(|o| {
                o["path"]
                    .as_str()
                    .unwrap()
                    .ends_with(&format!("/{}", utf8fs::policy::Escaped(name.as_bytes())))
            })
            .unwrap_or_else(|| panic!("{name:?} not reported for {rule}: {}", out.stdout));
        assert_eq!(obj["kind"], "hygiene");
        assert_eq!(obj["reason"], *rule);
        assert_eq!(obj["offset"], *offset, "{name:?}");
    }
    // `all` covers every rule but shell; -o deny= takes '+' lists.
    let out = run([
        t.path().as_os_str(),
        "--json".as_ref(),
        "--deny=all".as_ref(),
    ]);
    assert_eq!(json_lines(&out).len(), cases.len() - 1);
    let out = run([
        t.path().as_os_str(),
        "--json".as_ref(),
        "-o".as_ref(),
        "deny=all+shell".as_ref(),
    ]);
    assert_eq!(json_lines(&out).len(), cases.len() + 1, "the ( ) name too");
}

#[test]
fn unicode_form_reported() {
    let t = tempfile::tempdir().unwrap();
    file(t.path(), "cafe\u{301}".as_bytes());
    assert_eq!(run([t.path()]).code, 0);
    let out = run([
        t.path().as_os_str(),
        "--unicode=nfc".as_ref(),
        "--json".as_ref(),
    ]);
    let obj = &json_lines(&out)[0];
    assert_eq!(obj["reason"], "not NFC");
    assert_eq!(obj["offset"], 3);
    assert_eq!(obj["proposed"], "caf\u{e9}");
    assert_eq!(
        run([t.path().as_os_str(), "-o".as_ref(), "unicode=nfd".as_ref()]).code,
        0
    );
}

#[test]
fn symlinks_are_not_followed() {
    let t = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    file(outside.path(), b"bad\xff");
    std::os::unix::fs::symlink(outside.path(), t.path().join("link")).unwrap();
    assert_eq!(run([t.path()]).code, 0);
    // The link's own name is checked.
    std::os::unix::fs::symlink("x", p(t.path(), b"l\xff")).unwrap();
    assert_eq!(run([t.path()]).code, 4);
}

#[test]
fn usage_errors_exit_16() {
    let t = tempfile::tempdir().unwrap();
    for args in [
        vec!["--bogus"],
        vec![],
        vec!["--deny=nosuchrule", "."],
        vec!["--unicode=nfkc", "."],
        vec!["-o", "malformed=reject", "."],
        vec!["-o", "malformed=transcode,charset=nope", "."],
        vec!["-n", "-y", "."],
        vec!["--apply", "x", "."],
        vec!["--jobs", "0", "."],
    ] {
        let out = std::process::Command::new(BIN)
            .args(&args)
            .current_dir(t.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(16), "{args:?}");
        assert!(!out.stderr.is_empty());
    }
}

#[test]
fn missing_dir_is_operational_error() {
    let out = run(["/nonexistent/utf8fsck-test"]);
    assert_eq!(out.code, 8);
    assert!(out.stderr.contains("/nonexistent/utf8fsck-test"));
}

#[test]
fn help_documents_every_option() {
    let out = run(["--help"]);
    assert_eq!(out.code, 0);
    for opt in [
        "-n,",
        "-y,",
        "--fix",
        "--plan",
        "--apply",
        "--undo ",
        "--undo-log",
        "-o ",
        "malformed=",
        "charset=",
        "deny=",
        "unicode=",
        "--deny",
        "--unicode",
        "-x,",
        "--one-file-system",
        "--cross-mounts",
        "--jobs",
        "--json",
        "--verbose",
        "--help",
        "--version",
        "control",
        "bidi",
        "leading-dash",
        "leading-tilde",
        "space",
        "windows",
        "bom",
        "nonchar",
        "shell",
        "all",
    ] {
        assert!(out.stdout.contains(opt), "--help lacks {opt}");
    }
    let v = run(["--version"]);
    assert_eq!(v.code, 0);
    assert!(v.stdout.starts_with("utf8fsck "));
}
