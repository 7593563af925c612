//! utf8fsck -y, --plan/--apply and --undo: renames to the mapping's names, never overwriting,
//! and restoring the exact original bytes.

mod fsck_common;
use fsck_common::*;
use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use utf8fs::mapping::{DirIndex, Mapper, Mode};

fn all_valid(dir: &std::path::Path) -> bool {
    names(dir).iter().all(|n| std::str::from_utf8(n).is_ok())
}

#[test]
fn fix_renames_to_the_mounts_names_and_undo_restores_bytes() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    std::fs::create_dir(&root).unwrap();
    let bad = [
        &b"caf\xe9"[..],
        b"\xc0\xae\xc0\xae",
        b"a\x80b",
        b"x\xed\xa0\x80",
        b"\xf4\x90\x80\x80",
    ];
    for n in bad {
        file(&root, n);
    }
    file(&root, b"good");
    let d = dir(&root, b"dir\xe9");
    file(&d, b"child\xff");
    let before_root = names(&root);
    let before_child = names(&d);
    let index = DirIndex::build(
        &Mapper::new(Mode::Escape),
        before_root.iter().map(|n| n.as_slice()),
    );
    let log = t.path().join("undo.log");

    let out = run([
        root.as_os_str(),
        "-y".as_ref(),
        "--undo-log".as_ref(),
        log.as_os_str(),
    ]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let after: BTreeSet<Vec<u8>> = before_root
        .iter()
        .map(|n| index.shown(n).unwrap().to_vec())
        .collect();
    assert_eq!(names(&root), after, "renamed exactly to DirIndex::shown");
    let new_dir = p(&root, index.shown(b"dir\xe9").unwrap());
    assert!(
        all_valid(&new_dir),
        "children of a renamed directory are fixed too"
    );
    // Contents followed their names.
    let moved = p(&root, index.shown(b"caf\xe9").unwrap());
    assert_eq!(std::fs::read(moved).unwrap(), b"caf\xe9");
    assert_eq!(run([&root]).code, 0, "second run is clean");

    let undo = run(["--undo".as_ref(), log.as_os_str()]);
    assert_eq!(undo.code, 1, "{}{}", undo.stdout, undo.stderr);
    assert_eq!(names(&root), before_root);
    assert_eq!(names(&d), before_child);
}

#[test]
fn nothing_is_ever_overwritten() {
    let t = tempfile::tempdir().unwrap();
    file(t.path(), b"caf\xe9");
    // A literal file that already has the escape form: it keeps its name and content.
    file(t.path(), "caf\u{efe9}".as_bytes());
    // Two names that replace to the same shown name.
    file(t.path(), b"x\xe9");
    file(t.path(), b"x\xff");
    file(t.path(), "x\u{fffd}".as_bytes());
    let before = names(t.path());
    for mode in ["escape", "replace"] {
        let out = run([
            t.path().as_os_str(),
            "-y".as_ref(),
            "-o".as_ref(),
            format!("malformed={mode}").as_ref(),
        ]);
        assert_eq!(out.code & 4, 0, "{mode}: {}{}", out.stdout, out.stderr);
        assert_eq!(names(t.path()).len(), before.len(), "{mode}: no entry lost");
        assert!(all_valid(t.path()));
    }
    assert_eq!(
        std::fs::read(t.path().join("caf\u{efe9}")).unwrap(),
        "caf\u{efe9}".as_bytes()
    );
    assert_eq!(
        std::fs::read(t.path().join("x\u{fffd}")).unwrap(),
        "x\u{fffd}".as_bytes()
    );
    // Every original content is still there exactly once.
    let contents: BTreeSet<Vec<u8>> = names(t.path())
        .iter()
        .map(|n| std::fs::read(p(t.path(), n)).unwrap())
        .collect();
    assert_eq!(contents, before);
}

#[test]
fn hygiene_fixes_per_rule() {
    let cases: &[(&str, &str, &str)] = &[
        ("control", "a\nb", "a_b"),
        ("bidi", "abc\u{202e}gpj.exe", "abcgpj.exe"),
        ("leading-dash", "-rf", "_-rf"),
        ("leading-tilde", "~root", "_~root"),
        ("space", "  x  ", "x"),
        ("windows", "a<b>.txt", "a_b_.txt"),
        ("windows", "CON", "CON_"),
        ("windows", "end. ", "end"),
        ("bom", "\u{feff}bom", "bom"),
        ("nonchar", "n\u{ffff}", "n"),
        ("shell", "a$(b)", "a__b_"),
    ];
    for (rule, from, to) in cases {
        let t = tempfile::tempdir().unwrap();
        file(t.path(), from.as_bytes());
        let out = run([
            t.path().as_os_str(),
            "-y".as_ref(),
            format!("--deny={rule}").as_ref(),
        ]);
        assert_eq!(out.code, 1, "{rule} {from:?}: {}{}", out.stdout, out.stderr);
        assert_eq!(
            names(t.path()),
            BTreeSet::from([to.as_bytes().to_vec()]),
            "{rule} {from:?}"
        );
    }
}

#[test]
fn hygiene_collision_gets_a_tag_and_the_existing_file_survives() {
    let t = tempfile::tempdir().unwrap();
    file(t.path(), b"-x");
    file(t.path(), b"_-x");
    let out = run([
        t.path().as_os_str(),
        "-y".as_ref(),
        "--deny=leading-dash".as_ref(),
    ]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let now = names(t.path());
    assert!(now.contains(b"_-x".as_slice()));
    assert_eq!(std::fs::read(t.path().join("_-x")).unwrap(), b"_-x");
    let tagged = now
        .iter()
        .find(|n| n.starts_with(b"_-x~"))
        .expect("tagged name");
    assert_eq!(tagged.len(), b"_-x~12345678".len());
    assert_eq!(std::fs::read(p(t.path(), tagged)).unwrap(), b"-x");
}

#[test]
fn nfc_nfd_conversion_and_both_forms_collision() {
    let t = tempfile::tempdir().unwrap();
    let nfc = "caf\u{e9}.txt";
    let nfd = "cafe\u{301}.txt";
    file(t.path(), nfd.as_bytes());
    file(t.path(), "\u{e9}t\u{e9}".as_bytes());
    let out = run([
        t.path().as_os_str(),
        "-y".as_ref(),
        "--unicode=nfd".as_ref(),
    ]);
    assert_eq!(out.code, 1);
    assert_eq!(
        names(t.path()),
        BTreeSet::from([
            nfd.as_bytes().to_vec(),
            "e\u{301}te\u{301}".as_bytes().to_vec()
        ])
    );
    let out = run([
        t.path().as_os_str(),
        "-y".as_ref(),
        "-o".as_ref(),
        "unicode=nfc".as_ref(),
    ]);
    assert_eq!(out.code, 1);
    assert_eq!(
        names(t.path()),
        BTreeSet::from([nfc.as_bytes().to_vec(), "\u{e9}t\u{e9}".as_bytes().to_vec()])
    );
    // Both forms present: the NFC file keeps its name, the NFD one gets a tag.
    std::fs::write(t.path().join(nfc), nfc).unwrap();
    file(t.path(), nfd.as_bytes());
    let out = run([
        t.path().as_os_str(),
        "-y".as_ref(),
        "--unicode=nfc".as_ref(),
    ]);
    assert_eq!(out.code, 1);
    let now = names(t.path());
    assert_eq!(now.len(), 3);
    assert_eq!(std::fs::read(t.path().join(nfc)).unwrap(), nfc.as_bytes());
    let tagged = now
        .iter()
        .find(|n| n.starts_with("caf\u{e9}~".as_bytes()))
        .unwrap();
    assert!(tagged.ends_with(b".txt"));
    assert_eq!(std::fs::read(p(t.path(), tagged)).unwrap(), nfd.as_bytes());
}

#[test]
fn plan_then_apply() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    std::fs::create_dir(&root).unwrap();
    let d = dir(&root, b"d\xe9");
    file(&d, b"f\xe9");
    file(&root, b"-dash");
    let before = names(&root);
    let plan = t.path().join("plan");
    let out = run([
        root.as_os_str(),
        "--plan".as_ref(),
        plan.as_os_str(),
        "--deny=all".as_ref(),
    ]);
    assert_eq!(out.code, 4, "planned, not corrected");
    assert_eq!(names(&root), before, "--plan changes nothing");
    let text = std::fs::read_to_string(&plan).unwrap();
    assert!(text.starts_with("# utf8fsck plan v1"));
    let records: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(records.len(), 3);
    assert!(records.iter().all(|r| r.split(' ').count() == 5));

    let log = t.path().join("undo");
    let out = run([
        "--apply".as_ref(),
        plan.as_os_str(),
        "--undo-log".as_ref(),
        log.as_os_str(),
    ]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(all_valid(&root));
    assert_eq!(run([root.as_os_str(), "--deny=all".as_ref()]).code, 0);
    // Applying again refuses everything: the sources are gone.
    assert_eq!(run(["--apply".as_ref(), plan.as_os_str()]).code, 4);
    assert_eq!(run(["--undo".as_ref(), log.as_os_str()]).code, 1);
    assert_eq!(names(&root), before);
    assert_eq!(
        names(&p(&root, b"d\xe9")),
        BTreeSet::from([b"f\xe9".to_vec()])
    );
}

#[test]
fn apply_refuses_a_changed_entry_and_an_existing_target() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    std::fs::create_dir(&root).unwrap();
    let a = file(&root, b"a\xe9");
    file(&root, b"b\xe9");
    let plan = t.path().join("plan");
    assert_eq!(
        run([root.as_os_str(), "--plan".as_ref(), plan.as_os_str()]).code,
        4
    );
    // a\xE9 replaced by another file of the same name (other inode).
    let ino = std::fs::metadata(&a).unwrap().ino();
    let other = t.path().join("other");
    std::fs::write(&other, b"new").unwrap();
    std::fs::rename(&other, &a).unwrap();
    assert_ne!(std::fs::metadata(&a).unwrap().ino(), ino);
    // b\xE9's target now exists.
    let index = DirIndex::build(&Mapper::new(Mode::Escape), [&b"b\xe9"[..]]);
    file(&root, index.shown(b"b\xe9").unwrap());
    let out = run(["--apply".as_ref(), plan.as_os_str(), "--json".as_ref()]);
    assert_eq!(out.code, 4, "{}", out.stdout);
    let lines = json_lines(&out);
    assert!(lines.iter().all(|o| o["action"] == "refused"));
    assert!(out.stdout.contains("changed since"));
    assert!(out.stdout.contains("exists"));
    assert_eq!(std::fs::read(&a).unwrap(), b"new");
    assert_eq!(std::fs::read(p(&root, b"b\xe9")).unwrap(), b"b\xe9");
}

#[test]
fn undo_refuses_when_the_original_name_is_taken() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    std::fs::create_dir(&root).unwrap();
    file(&root, b"-x");
    let log = t.path().join("undo");
    let out = run([
        root.as_os_str(),
        "-y".as_ref(),
        "--deny=all".as_ref(),
        "--undo-log".as_ref(),
        log.as_os_str(),
    ]);
    assert_eq!(out.code, 1);
    std::fs::write(root.join("-x"), b"newcomer").unwrap();
    assert_eq!(run(["--undo".as_ref(), log.as_os_str()]).code, 4);
    assert_eq!(std::fs::read(root.join("-x")).unwrap(), b"newcomer");
    assert_eq!(std::fs::read(root.join("_-x")).unwrap(), b"-x");
}
