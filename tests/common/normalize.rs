//! Checks shared by the normalizing-mode tests (escape, replace, transcode): a backing tree
//! holding every malformed class, collisions of each kind, long legacy names, a malformed
//! directory with children and links to malformed names, and the rules a client relies on.
//!
//! Every regular file holds `content:` followed by its backing path, and every directory an `id`
//! file holding its backing path, so that what a shown name reaches is checked by reading it.

use super::*;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use utf8fs::mapping::DirIndex;

/// A malformed Latin-1 name whose transcoded (windows-1252) form is also present literally.
pub const LATIN1: &[u8] = b"caf\xE9.txt";
/// Collides with [`LATIN1`] under replace (both show as `caf\u{FFFD}.txt`).
pub const LATIN1_TWIN: &[u8] = b"caf\xE8.txt";
/// A malformed name whose shown form in the mode under test also exists as a literal name.
pub const SHADOWED: &[u8] = b"lit\xE9";
/// A malformed directory with a valid child, a malformed child and a malformed subdirectory.
pub const BAD_DIR: &[u8] = b"dir\xFF";
/// An empty malformed directory.
pub const EMPTY_BAD_DIR: &[u8] = b"rm\xFE";
/// A symlink with a malformed name whose target is [`LATIN1`].
pub const BAD_LINK: &[u8] = b"link\xE9";
/// A valid symlink whose target goes through two malformed components.
pub const DEEP_LINK: &[u8] = b"tolink";
/// Its escape form (U+EFE9 then `literal`) is also present as a literal valid name.
pub const ESCAPE_TWIN: &[u8] = b"\xE9literal";
/// Shift_JIS for 日本語.txt.
pub const SJIS: &[u8] = b"\x93\xfa\x96\x7b\x8c\xea.txt";

/// The two 250-byte Latin-1 names: they differ only near the end, so their shortened forms
/// must still differ.
pub fn long_names() -> [Vec<u8>; 2] {
    let mut a = vec![0xE9u8; 246];
    a.extend_from_slice(b".txt");
    let mut b = vec![0xE9u8; 245];
    b.extend_from_slice(b"\xE8.txt");
    [a, b]
}

/// The content of the backing file at `rel`.
pub fn content_of(rel: &[u8]) -> Vec<u8> {
    [b"content:", rel].concat()
}

fn file(src: &Path, rel: &[u8]) {
    write(&join(src, rel), &content_of(rel));
}

fn dir(src: &Path, rel: &[u8]) {
    fs::create_dir(join(src, rel)).unwrap_or_else(|e| panic!("mkdir {}: {e}", show(rel)));
    write(&join(src, &[rel, b"/id"].concat()), rel);
}

/// The literal valid name equal to the shown form of [`SHADOWED`] in `mode`.
pub fn shadow_literal(mode: Mode) -> Option<Vec<u8>> {
    let c = Mapper::new(mode).candidate(SHADOWED)?;
    (std::str::from_utf8(&c).is_ok() && *c != *SHADOWED).then(|| c.into_owned())
}

/// Fills the backing directory for `mode`.
pub fn populate(src: &Path, mode: Mode) {
    for n in [
        &b"plain.txt"[..],
        "ünï".as_bytes(),
        "café.txt".as_bytes(),
        "\u{EFE9}literal".as_bytes(),
    ] {
        file(src, n);
    }
    for n in [LATIN1, LATIN1_TWIN, SHADOWED, SJIS, ESCAPE_TWIN] {
        file(src, n);
    }
    if let Some(lit) = shadow_literal(mode) {
        file(src, &lit);
    }
    for (_, bad) in MALFORMED {
        if !src.join(OsStr::from_bytes(bad)).exists() {
            file(src, bad);
        }
    }
    for n in long_names() {
        file(src, &n);
    }
    dir(src, BAD_DIR);
    file(src, &[BAD_DIR, b"/child"].concat());
    file(src, &[BAD_DIR, b"/kid\xE9"].concat());
    file(src, &[BAD_DIR, b"/\xC0\xAE\xC0\xAE"].concat());
    dir(src, &[BAD_DIR, b"/sub\xC0"].concat());
    file(src, &[BAD_DIR, b"/sub\xC0/deep"].concat());
    fs::create_dir(join(src, EMPTY_BAD_DIR)).unwrap();
    std::os::unix::fs::symlink(OsStr::from_bytes(LATIN1), join(src, BAD_LINK)).unwrap();
    std::os::unix::fs::symlink(OsStr::from_bytes(b"dir\xFF/kid\xE9"), join(src, DEEP_LINK))
        .unwrap();
    // A link climbing out of the malformed directory to the malformed twin of a literal name.
    std::os::unix::fs::symlink(OsStr::from_bytes(b"../lit\xE9"), join(src, b"dir\xFF/up")).unwrap();
}

/// Mounts the populated tree in `mode`.
pub fn mount(mode: Mode) -> Mount {
    Mount::populated(mode, |src| populate(src, mode))
}

/// What the mapping says a backing directory shows: backing name → shown name.
pub fn expected_view(mode: Mode, backing_dir: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let names = list(backing_dir);
    let mapper = Mapper::new(mode);
    let index = DirIndex::build(&mapper, names.iter().map(Vec::as_slice));
    names
        .iter()
        .map(|b| {
            let s = index
                .shown(b)
                .unwrap_or_else(|| panic!("the mapping hides {} in {mode:?}", show(b)));
            (b.clone(), s.to_vec())
        })
        .collect()
}

/// Rule 2 on the listing of mounted directory `rel` (backing directory `brel`): every shown
/// name is strict UTF-8, 1 to 255 bytes, not `.`/`..`, and appears once; `.` and `..` appear
/// once each in the raw listing; there are as many names as backing entries.
#[track_caller]
pub fn check_listing_rules(m: &Mount, brel: &[u8], rel: &[u8]) -> Vec<Vec<u8>> {
    let raw = list_raw(&m.mnt_path(rel));
    assert_eq!(
        raw.iter().filter(|n| n.as_slice() == b".").count(),
        1,
        "`.` once in {}",
        show(rel)
    );
    assert_eq!(
        raw.iter().filter(|n| n.as_slice() == b"..").count(),
        1,
        "`..` once in {}",
        show(rel)
    );
    let names: Vec<Vec<u8>> = raw
        .into_iter()
        .filter(|n| n != b"." && n != b"..")
        .collect();
    let mut seen = BTreeSet::new();
    for n in &names {
        assert!(
            std::str::from_utf8(n).is_ok(),
            "shown name {} is not UTF-8",
            show(n)
        );
        assert!(
            !n.is_empty() && n.len() <= 255,
            "shown name {} is {} bytes",
            show(n),
            n.len()
        );
        assert!(
            !n.contains(&b'/') && !n.contains(&0),
            "shown name {} holds / or NUL",
            show(n)
        );
        assert!(
            seen.insert(n.clone()),
            "shown name {} listed twice in {}",
            show(n),
            show(rel)
        );
    }
    let backing = m.list_src(brel);
    assert_eq!(
        names.len(),
        backing.len(),
        "every backing entry of {} is listed once (backing {:?}, shown {:?})",
        show(rel),
        backing.iter().map(|b| show(b)).collect::<Vec<_>>(),
        names.iter().map(|b| show(b)).collect::<Vec<_>>()
    );
    let mut sorted = names;
    sorted.sort();
    sorted
}

/// Checks that the shown name `shown` in mounted directory `rel` reaches backing entry
/// `backing` of backing directory `brel`: same kind, and the same content (files) or identity
/// file (directories).
#[track_caller]
pub fn check_reaches(m: &Mount, brel: &[u8], rel: &[u8], shown: &[u8], backing: &[u8]) {
    let sep = |d: &[u8], n: &[u8]| {
        if d.is_empty() {
            n.to_vec()
        } else {
            [d, b"/", n].concat()
        }
    };
    let (mp, sp) = (
        m.mnt_path(&sep(rel, shown)),
        m.src_path(&sep(brel, backing)),
    );
    let what = format!(
        "{} (shown as {})",
        show(&sep(brel, backing)),
        show(&sep(rel, shown))
    );
    let mmd =
        fs::symlink_metadata(&mp).unwrap_or_else(|e| panic!("lstat {what} through the mount: {e}"));
    let smd = fs::symlink_metadata(&sp).unwrap();
    assert_eq!(mmd.file_type(), smd.file_type(), "{what}: kind");
    assert_eq!(mmd.mode(), smd.mode(), "{what}: mode");
    if smd.is_file() {
        assert_eq!(mmd.len(), smd.len(), "{what}: size");
        assert_eq!(read(&mp), read(&sp), "{what}: content");
    } else if smd.is_dir() && sp.join("id").exists() {
        assert_eq!(
            read(&mp.join("id")),
            read(&sp.join("id")),
            "{what}: directory identity"
        );
    }
}

/// Rules 1–4 and 8 for the backing directory `brel`, shown as `rel`: lookups of the expected
/// names first (no listing before), then the listing, which must be exactly the mapping's view.
pub fn check_view(m: &Mount, mode: Mode, brel: &[u8], rel: &[u8]) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let view = expected_view(mode, &m.src_path(brel));
    for (b, s) in &view {
        if std::str::from_utf8(b).is_ok() {
            assert_eq!(b, s, "rule 1: valid name {} shown unchanged", show(b));
        }
        check_reaches(m, brel, rel, s, b);
    }
    let listed = check_listing_rules(m, brel, rel);
    let mut want: Vec<Vec<u8>> = view.values().cloned().collect();
    want.sort();
    assert_eq!(
        listed.iter().map(|n| show(n)).collect::<Vec<_>>(),
        want.iter().map(|n| show(n)).collect::<Vec<_>>(),
        "listing of {} is the mapping's view",
        show(rel)
    );
    view
}

/// The shown name, in a fresh listing of mounted directory `rel`, of the regular file whose
/// backing name is `backing` (found by its content, as a user would find it with ls and cat).
pub fn find_shown_file(m: &Mount, rel: &[u8], backing: &[u8]) -> Vec<u8> {
    let path = if rel.is_empty() {
        backing.to_vec()
    } else {
        [rel, b"/", backing].concat()
    };
    let want = content_of(&path);
    for n in m.list_mnt(rel) {
        let p = m.mnt_path(&if rel.is_empty() {
            n.clone()
        } else {
            [rel, b"/", &n].concat()
        });
        if fs::symlink_metadata(&p)
            .map(|md| md.is_file())
            .unwrap_or(false)
            && read(&p) == want
        {
            return n;
        }
    }
    panic!("no shown name in {} reads as {}", show(rel), show(&path))
}

/// The malformed regular files of the root of the populated tree.
pub fn malformed_files(m: &Mount) -> Vec<Vec<u8>> {
    m.list_src(b"")
        .into_iter()
        .filter(|b| std::str::from_utf8(b).is_err())
        .filter(|b| fs::symlink_metadata(m.src_path(b)).unwrap().is_file())
        .collect()
}

/// Rules 1–4 and 8: the whole tree, looked up before any listing, then listed; again after a
/// remount; plus the documented forms a user types.
pub fn check_tree(mode: Mode) {
    let mut m = mount(mode);
    for round in 0..2 {
        let root = check_view(&m, mode, b"", b"");
        let bad_dir = root[BAD_DIR].clone();
        let sub = check_view(&m, mode, BAD_DIR, &bad_dir);
        let sub_bad = sub[&b"sub\xC0"[..]].clone();
        check_view(
            &m,
            mode,
            b"dir\xFF/sub\xC0",
            &[&bad_dir[..], b"/", &sub_bad].concat(),
        );
        // Rule 4: both long names reachable under distinct names of at most 255 bytes.
        let [l1, l2] = long_names();
        assert_ne!(root[&l1], root[&l2], "the two long names show differently");
        // Rule 2: the overlong ".." never shows as "..".
        assert_ne!(root[&b"\xC0\xAE\xC0\xAE"[..]], b"..");
        assert_ne!(root[&b"\xC0\xAE"[..]], b".");
        // Rule 3: a literal valid name keeps its own name in a collision.
        if let Some(lit) = shadow_literal(mode) {
            assert_eq!(root[&lit], lit, "the literal {} keeps its name", show(&lit));
            assert_ne!(
                root[SHADOWED],
                lit,
                "the malformed twin of {} shows elsewhere",
                show(&lit)
            );
        }
        assert_eq!(root["café.txt".as_bytes()], "café.txt".as_bytes());
        if round == 0 {
            m.remount();
        }
    }
}

/// Rule 6: renaming each shown malformed name to a clean name renames exactly that backing
/// entry; nothing else changes.
pub fn check_rename_to_clean(mode: Mode) {
    let m = mount(mode);
    for (i, b) in malformed_files(&m).into_iter().enumerate() {
        let before = snapshot(&m.src);
        let shown = find_shown_file(&m, b"", &b);
        let clean = format!("clean-{i}");
        fs::rename(m.mnt_path(&shown), m.mnt_path(clean.as_bytes()))
            .unwrap_or_else(|e| panic!("rename {} (shown as {}): {e}", show(&b), show(&shown)));
        let mut want: Vec<_> = before
            .into_iter()
            .map(|(p, k, c)| {
                if p == b {
                    (clean.clone().into_bytes(), k, c)
                } else {
                    (p, k, c)
                }
            })
            .collect();
        want.sort();
        assert_eq!(
            snapshot(&m.src),
            want,
            "rename of {} renamed exactly that entry",
            show(&b)
        );
        assert_eq!(read(&m.mnt_path(clean.as_bytes())), content_of(&b));
    }
    // A malformed directory renamed to a clean name keeps its children.
    let shown = expected_view(mode, &m.src)[BAD_DIR].clone();
    fs::rename(m.mnt_path(&shown), m.mnt_path(b"clean-dir")).unwrap();
    assert!(!m.src_path(BAD_DIR).exists());
    assert_eq!(
        read(&m.src_path(b"clean-dir/child")),
        content_of(b"dir\xFF/child")
    );
    assert_eq!(
        read(&m.src_path(b"clean-dir/kid\xE9")),
        content_of(b"dir\xFF/kid\xE9")
    );
    // Moving a malformed child into a valid directory keeps it reachable there.
    let kid = expected_view(mode, &m.src_path(b"clean-dir"))[&b"kid\xE9"[..]].clone();
    fs::create_dir(m.mnt_path(b"target")).unwrap();
    fs::rename(
        m.mnt_path(&[b"clean-dir/", &kid[..]].concat()),
        m.mnt_path(b"target/kid"),
    )
    .unwrap();
    assert_eq!(
        read(&m.src_path(b"target/kid")),
        content_of(b"dir\xFF/kid\xE9")
    );
    // The remaining tree still satisfies the rules.
    check_view(&m, mode, b"", b"");
    check_view(&m, mode, b"clean-dir", b"clean-dir");
}

/// Rule 3 for unlink, rmdir, link and the xattr calls: each reaches exactly its entry.
pub fn check_entry_ops(mode: Mode) {
    let m = mount(mode);
    let files = malformed_files(&m);
    for (i, b) in files.iter().enumerate() {
        let shown = find_shown_file(&m, b"", b);
        let name = format!("user.t{i}");
        set_xattr(&m.mnt_path(&shown), &name, b.as_slice())
            .unwrap_or_else(|e| panic!("setxattr on {} (shown as {}): {e}", show(b), show(&shown)));
        assert_eq!(
            get_xattr(&m.src_path(b), &name).unwrap(),
            *b,
            "xattr reached {}",
            show(b)
        );
        assert_eq!(get_xattr(&m.mnt_path(&shown), &name).unwrap(), *b);
        assert!(list_xattr(&m.mnt_path(&shown))
            .unwrap()
            .contains(&name.clone().into_bytes()));
        remove_xattr(&m.mnt_path(&shown), &name).unwrap();
        expect_errno(
            get_xattr(&m.src_path(b), &name),
            libc::ENODATA,
            "xattr removed from the entry",
        );

        let hl = format!("hardlink-{i}");
        fs::hard_link(m.mnt_path(&shown), m.mnt_path(hl.as_bytes()))
            .unwrap_or_else(|e| panic!("link {} (shown as {}): {e}", show(b), show(&shown)));
        assert_eq!(
            fs::metadata(m.src_path(hl.as_bytes())).unwrap().ino(),
            fs::metadata(m.src_path(b)).unwrap().ino(),
            "the link made through {} is a link to {}",
            show(&shown),
            show(b)
        );
        assert_eq!(fs::metadata(m.mnt_path(&shown)).unwrap().nlink(), 2);
        fs::remove_file(m.mnt_path(hl.as_bytes())).unwrap();
        assert_eq!(fs::metadata(m.src_path(b)).unwrap().nlink(), 1);
    }
    for b in &files {
        let before = snapshot(&m.src);
        let shown = find_shown_file(&m, b"", b);
        fs::remove_file(m.mnt_path(&shown))
            .unwrap_or_else(|e| panic!("unlink {} (shown as {}): {e}", show(b), show(&shown)));
        let mut want = before;
        want.retain(|(p, _, _)| p != b);
        assert_eq!(
            snapshot(&m.src),
            want,
            "unlink of {} removed exactly that entry",
            show(b)
        );
    }
    let view = expected_view(mode, &m.src);
    expect_errno(
        fs::remove_dir(m.mnt_path(&view[BAD_DIR])),
        libc::ENOTEMPTY,
        "rmdir of a non-empty malformed dir",
    );
    fs::remove_dir(m.mnt_path(&view[EMPTY_BAD_DIR])).unwrap();
    assert!(
        !m.src_path(EMPTY_BAD_DIR).exists(),
        "rmdir removed the empty malformed directory"
    );
    assert!(m.src_path(BAD_DIR).exists());
    fs::remove_file(m.mnt_path(&view[BAD_LINK])).unwrap();
    assert!(
        !m.src_path(BAD_LINK).exists(),
        "unlink removed the malformed symlink"
    );
}

/// Rule 5: names clients send are written as sent; an escape form of nothing creates that
/// literal name; a malformed name from a client is EILSEQ.
pub fn check_client_names(mode: Mode) {
    let m = mount(mode);
    let mapper = Mapper::new(mode);
    let ghost = mapper.candidate(b"ghost\xE9").unwrap().into_owned();
    assert!(std::str::from_utf8(&ghost).is_ok());
    write(&m.mnt_path(&ghost), b"literal");
    assert_eq!(
        read(&m.src_path(&ghost)),
        b"literal",
        "created under its literal UTF-8 name"
    );
    assert!(
        !m.src_path(b"ghost\xE9").exists(),
        "not under the name it would stand for"
    );
    let gdir = mapper.candidate(b"gdir\xFF").unwrap().into_owned();
    fs::create_dir(m.mnt_path(&gdir)).unwrap();
    assert!(m.src_path(&gdir).is_dir());
    assert!(!m.src_path(b"gdir\xFF").exists());

    // The shown name of an existing entry is that entry: O_EXCL fails, O_CREAT opens it.
    let view = expected_view(mode, &m.src);
    let shown = view[LATIN1].clone();
    expect_errno(
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(m.mnt_path(&shown)),
        libc::EEXIST,
        "O_EXCL on the shown name of an existing malformed entry",
    );
    expect_errno(
        fs::create_dir(m.mnt_path(&shown)),
        libc::EEXIST,
        "mkdir at a shown name",
    );
    fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(m.mnt_path(&shown))
        .unwrap();
    assert_eq!(read(&m.src_path(LATIN1)), content_of(LATIN1));

    // Renaming a clean file onto a shown name replaces that entry.
    write(&m.mnt_path(b"replacement"), b"new");
    fs::rename(m.mnt_path(b"replacement"), m.mnt_path(&shown)).unwrap();
    assert_eq!(
        read(&m.src_path(LATIN1)),
        b"new",
        "rename over a shown name replaces its entry"
    );

    let before = snapshot(&m.src);
    for (class, bad) in MALFORMED {
        let n = [b"new-", *bad].concat();
        expect_errno(
            fs::write(m.mnt_path(&n), b"x"),
            libc::EILSEQ,
            &format!("create {class}"),
        );
        expect_errno(
            fs::create_dir(m.mnt_path(&n)),
            libc::EILSEQ,
            &format!("mkdir {class}"),
        );
        expect_errno(
            fs::rename(m.mnt_path(b"plain.txt"), m.mnt_path(&n)),
            libc::EILSEQ,
            &format!("rename to {class}"),
        );
        expect_errno(
            std::os::unix::fs::symlink("plain.txt", m.mnt_path(&n)),
            libc::EILSEQ,
            &format!("symlink named {class}"),
        );
        expect_errno(
            fs::hard_link(m.mnt_path(b"plain.txt"), m.mnt_path(&n)),
            libc::EILSEQ,
            &format!("link named {class}"),
        );
    }
    assert_eq!(snapshot(&m.src), before, "refused names changed nothing");
    for n in [ghost, gdir] {
        assert!(m.list_mnt(b"").contains(&n), "{} listed", show(&n));
    }
}

/// Rule 7: symlink targets are mapped component by component, so links to malformed names
/// resolve through the mount.
pub fn check_readlink(mode: Mode) {
    let m = mount(mode);
    let root = expected_view(mode, &m.src);
    let in_dir = expected_view(mode, &m.src_path(BAD_DIR));
    let link = root[BAD_LINK].clone();
    let target = fs::read_link(m.mnt_path(&link)).unwrap();
    assert_eq!(
        show(target.as_os_str().as_bytes()),
        show(&root[LATIN1]),
        "readlink of {}",
        show(BAD_LINK)
    );
    assert_eq!(
        read(&m.mnt_path(&link)),
        content_of(LATIN1),
        "the link resolves through the mount"
    );
    let target = fs::read_link(m.mnt_path(DEEP_LINK)).unwrap();
    let want = [&root[BAD_DIR][..], b"/", &in_dir[&b"kid\xE9"[..]]].concat();
    assert_eq!(
        show(target.as_os_str().as_bytes()),
        show(&want),
        "readlink of {}",
        show(DEEP_LINK)
    );
    assert_eq!(read(&m.mnt_path(DEEP_LINK)), content_of(b"dir\xFF/kid\xE9"));
    // A `..` target is mapped in the directory it names: the shadowed twin, not the literal.
    let up = [&root[BAD_DIR][..], b"/up"].concat();
    let target = fs::read_link(m.mnt_path(&up)).unwrap();
    let want = [&b"../"[..], &root[SHADOWED]].concat();
    assert_eq!(
        show(target.as_os_str().as_bytes()),
        show(&want),
        "readlink of dir\\xFF/up"
    );
    assert_eq!(
        read(&m.mnt_path(&up)),
        content_of(SHADOWED),
        "dir\\xFF/up reaches lit\\xE9"
    );
    // A link created through the mount to a shown name resolves too.
    std::os::unix::fs::symlink(OsStr::from_bytes(&root[LATIN1]), m.mnt_path(b"newlink")).unwrap();
    assert_eq!(read(&m.mnt_path(b"newlink")), content_of(LATIN1));
}

/// Rule 3: an entry's shown name does not change when unrelated entries come and go.
pub fn check_stable_names(mode: Mode) {
    let m = mount(mode);
    let before = check_view(&m, mode, b"", b"");
    write(&m.mnt_path(b"unrelated-new"), b"x");
    fs::remove_file(m.mnt_path(b"plain.txt")).unwrap();
    fs::create_dir(m.mnt_path(b"zzz")).unwrap();
    write(&m.src_path(b"behind\xFF"), b"made behind the mount's back");
    let after = check_view(&m, mode, b"", b"");
    for (b, s) in &before {
        if let Some(s2) = after.get(b) {
            assert_eq!(show(s2), show(s), "shown name of {} changed", show(b));
        }
    }
    assert!(
        after.contains_key(&b"behind\xFF"[..]),
        "an entry made behind the mount shows"
    );
}

/// The standard rule tests for one normalizing mode: `normalize_tests!(prefix, mode_expr)`.
#[macro_export]
macro_rules! normalize_tests {
    ($mode:expr) => {
        #[test]
        fn tree_view_rules_1_to_4_and_8() {
            common::normalize::check_tree($mode);
        }
        #[test]
        fn rename_to_clean_rule_6() {
            common::normalize::check_rename_to_clean($mode);
        }
        #[test]
        fn unlink_rmdir_link_xattr_rule_3() {
            common::normalize::check_entry_ops($mode);
        }
        #[test]
        fn client_names_rule_5() {
            common::normalize::check_client_names($mode);
        }
        #[test]
        fn readlink_maps_targets_rule_7() {
            common::normalize::check_readlink($mode);
        }
        #[test]
        fn stable_names_rule_3() {
            common::normalize::check_stable_names($mode);
        }
    };
}
