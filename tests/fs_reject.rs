//! Reject mode (the default): every malformed name a client sends gets EILSEQ and changes
//! nothing on the backing store; malformed backing entries are hidden but kept intact.

mod common;

use common::*;
use std::fs::{self, OpenOptions};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use utf8fs::mapping::Mode;

/// A backing tree holding, for each malformed class, a hidden file (its name) and a hidden
/// directory (its name followed by `d`), next to valid siblings.
fn populate(src: &Path) {
    write(&src.join("good"), b"good");
    fs::create_dir(src.join("gooddir")).unwrap();
    write(&src.join("gooddir/inner"), b"inner");
    for (i, (_, bad)) in MALFORMED.iter().enumerate() {
        write(&join(src, bad), format!("bad file {i}").as_bytes());
        let d = join(src, &[*bad, b"d"].concat());
        fs::create_dir(&d).unwrap();
        write(&d.join("child"), format!("child of bad dir {i}").as_bytes());
    }
}

fn mount() -> Mount {
    Mount::populated(Mode::Reject, populate)
}

/// Runs `op` for every malformed class and checks that it fails with EILSEQ and leaves the
/// backing store exactly as it was.
fn each_class_rejected(what: &str, op: impl Fn(&Mount, &[u8]) -> std::io::Result<()>) {
    let m = mount();
    let before = snapshot(&m.src);
    for (class, bad) in MALFORMED {
        let res = op(&m, bad);
        expect_errno(
            res,
            libc::EILSEQ,
            &format!("{what} with {class} name {}", show(bad)),
        );
        assert_eq!(
            snapshot(&m.src),
            before,
            "{what} with {class}: backing store changed"
        );
    }
    drop(m);
}

#[test]
fn lookup_and_stat_rejected() {
    // The hidden entry itself, a name that exists nowhere, and the same inside a subdirectory.
    each_class_rejected("stat of a hidden entry", |m, bad| {
        fs::symlink_metadata(m.mnt_path(bad)).map(drop)
    });
    each_class_rejected("stat of a missing name", |m, bad| {
        fs::symlink_metadata(m.mnt_path(&[b"new-", bad].concat())).map(drop)
    });
    each_class_rejected("stat in a subdirectory", |m, bad| {
        fs::symlink_metadata(m.mnt_path(&[b"gooddir/", bad].concat())).map(drop)
    });
    each_class_rejected("stat of a path through a malformed directory", |m, bad| {
        fs::symlink_metadata(m.mnt_path(&[bad, b"d/child"].concat())).map(drop)
    });
    each_class_rejected("read of a hidden entry", |m, bad| {
        fs::read(m.mnt_path(bad)).map(drop)
    });
}

#[test]
fn create_rejected() {
    each_class_rejected("open O_CREAT", |m, bad| {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(m.mnt_path(&[b"new-", bad].concat()))
            .map(drop)
    });
    each_class_rejected("open O_CREAT|O_EXCL", |m, bad| {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(m.mnt_path(&[b"gooddir/", bad].concat()))
            .map(drop)
    });
    each_class_rejected("open O_CREAT over a hidden entry", |m, bad| {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(m.mnt_path(bad))
            .map(drop)
    });
}

#[test]
fn mknod_and_mkdir_rejected() {
    each_class_rejected("mknod fifo", |m, bad| {
        mkfifo(&m.mnt_path(&[b"fifo-", bad].concat()), 0o644)
    });
    each_class_rejected("mkdir", |m, bad| {
        fs::create_dir(m.mnt_path(&[b"dir-", bad].concat()))
    });
    each_class_rejected("mkdir over a hidden entry", |m, bad| {
        fs::create_dir(m.mnt_path(bad))
    });
}

#[test]
fn symlink_rejected() {
    each_class_rejected("symlink with a malformed link name", |m, bad| {
        std::os::unix::fs::symlink("good", m.mnt_path(&[b"ln-", bad].concat()))
    });
    each_class_rejected("symlink whose target is a malformed name", |m, bad| {
        std::os::unix::fs::symlink(join(Path::new(""), bad), m.mnt_path(b"goodlink"))
    });
    each_class_rejected(
        "symlink whose target has a malformed component",
        |m, bad| {
            let target = [b"gooddir/", bad, b"/x"].concat();
            std::os::unix::fs::symlink(join(Path::new(""), &target), m.mnt_path(b"goodlink"))
        },
    );
    each_class_rejected(
        "symlink whose absolute target has a malformed component",
        |m, bad| {
            let target = [b"/tmp/", bad].concat();
            std::os::unix::fs::symlink(join(Path::new(""), &target), m.mnt_path(b"goodlink"))
        },
    );
}

#[test]
fn link_rejected() {
    each_class_rejected("link to a malformed new name", |m, bad| {
        fs::hard_link(m.mnt_path(b"good"), m.mnt_path(&[b"ln-", bad].concat()))
    });
    each_class_rejected("link from a hidden entry", |m, bad| {
        fs::hard_link(m.mnt_path(bad), m.mnt_path(b"newlink"))
    });
}

#[test]
fn rename_rejected() {
    each_class_rejected("rename from a malformed (hidden) name", |m, bad| {
        fs::rename(m.mnt_path(bad), m.mnt_path(b"renamed"))
    });
    each_class_rejected("rename to a malformed name", |m, bad| {
        fs::rename(m.mnt_path(b"good"), m.mnt_path(&[b"new-", bad].concat()))
    });
    each_class_rejected("rename over a hidden entry", |m, bad| {
        fs::rename(m.mnt_path(b"good"), m.mnt_path(bad))
    });
    each_class_rejected("rename a directory to a malformed name", |m, bad| {
        fs::rename(m.mnt_path(b"gooddir"), m.mnt_path(&[b"dir-", bad].concat()))
    });
    each_class_rejected("RENAME_NOREPLACE to a malformed name", |m, bad| {
        rename2(
            &m.mnt_path(b"good"),
            &m.mnt_path(&[b"n-", bad].concat()),
            libc::RENAME_NOREPLACE,
        )
    });
    each_class_rejected("RENAME_EXCHANGE with a hidden entry", |m, bad| {
        rename2(
            &m.mnt_path(b"good"),
            &m.mnt_path(bad),
            libc::RENAME_EXCHANGE,
        )
    });
}

#[test]
fn unlink_and_rmdir_rejected() {
    each_class_rejected("unlink of a hidden file", |m, bad| {
        fs::remove_file(m.mnt_path(bad))
    });
    each_class_rejected("rmdir of a hidden directory", |m, bad| {
        fs::remove_dir(m.mnt_path(&[bad, b"d"].concat()))
    });
    each_class_rejected("unlink of a missing malformed name", |m, bad| {
        fs::remove_file(m.mnt_path(&[b"gooddir/", bad].concat()))
    });
}

#[test]
fn xattr_on_malformed_name_rejected() {
    each_class_rejected("setxattr on a hidden entry", |m, bad| {
        set_xattr(&m.mnt_path(bad), "user.x", b"1")
    });
    each_class_rejected("getxattr on a hidden entry", |m, bad| {
        get_xattr(&m.mnt_path(bad), "user.x").map(drop)
    });
}

#[test]
fn name_length_limit() {
    let m = mount();
    let before = snapshot(&m.src);
    let long = vec![b'a'; 256];
    expect_errno(
        fs::write(m.mnt_path(&long), b"x"),
        libc::ENAMETOOLONG,
        "create 256-byte name",
    );
    expect_errno(
        fs::create_dir(m.mnt_path(&long)),
        libc::ENAMETOOLONG,
        "mkdir 256-byte name",
    );
    expect_errno(
        fs::symlink_metadata(m.mnt_path(&long)),
        libc::ENAMETOOLONG,
        "stat 256-byte name",
    );
    expect_errno(
        fs::rename(m.mnt_path(b"good"), m.mnt_path(&long)),
        libc::ENAMETOOLONG,
        "rename to 256-byte name",
    );
    let euro86 = "€".repeat(86).into_bytes();
    expect_errno(
        fs::write(m.mnt_path(&euro86), b"x"),
        libc::ENAMETOOLONG,
        "create 258-byte UTF-8 name",
    );
    assert_eq!(
        snapshot(&m.src),
        before,
        "failed long names leave the backing store alone"
    );

    for name in [
        vec![b'a'; 255],
        "€".repeat(85).into_bytes(),
        [vec![b'b'; 251], "😀".as_bytes().to_vec()].concat(),
    ] {
        assert_eq!(name.len(), 255);
        write(&m.mnt_path(&name), &name);
        assert_eq!(
            read(&m.src_path(&name)),
            name,
            "255-byte name on the backing store"
        );
        assert!(m.list_mnt(b"").contains(&name), "255-byte name listed");
        fs::rename(m.mnt_path(&name), m.mnt_path(b"short")).unwrap();
        fs::rename(m.mnt_path(b"short"), m.mnt_path(&name)).unwrap();
        fs::remove_file(m.mnt_path(&name)).unwrap();
        assert!(!m.src_path(&name).exists());
    }
    let d = vec![b'd'; 255];
    fs::create_dir(m.mnt_path(&d)).unwrap();
    assert!(m.src_path(&d).is_dir());
}

/// Valid names at the edges of the code space, including the noncharacters and the BOM that
/// some tools treat specially: all are strict UTF-8 and must work.
const VALID_EDGES: &[&[u8]] = &[
    "\u{FFFE}".as_bytes(),
    "\u{FFFF}x".as_bytes(),
    "\u{FEFF}bom".as_bytes(),
    "\u{80}".as_bytes(),
    "\u{D7FF}".as_bytes(),
    "\u{E000}".as_bytes(),
    "\u{10FFFF}".as_bytes(),
    "\u{FFFD}".as_bytes(),
    "e\u{301}".as_bytes(),
];

#[test]
fn noncharacters_and_bom_are_valid() {
    let m = Mount::populated(Mode::Reject, |src| {
        for n in VALID_EDGES {
            write(&join(src, n), n);
        }
    });
    let mut want: Vec<Vec<u8>> = VALID_EDGES.iter().map(|n| n.to_vec()).collect();
    want.sort();
    assert_eq!(m.list_mnt(b""), want, "valid edge names all listed");
    for n in VALID_EDGES {
        assert_eq!(
            &read(&m.mnt_path(n)),
            n,
            "{} reads through the mount",
            show(n)
        );
        let created = [b"new-", *n].concat();
        write(&m.mnt_path(&created), b"c");
        assert_eq!(
            read(&m.src_path(&created)),
            b"c",
            "{} created with its exact bytes",
            show(&created)
        );
        fs::create_dir(m.mnt_path(&[b"dir-", *n].concat())).unwrap();
        fs::rename(
            m.mnt_path(&created),
            m.mnt_path(&[b"dir-", *n, b"/", *n].concat()),
        )
        .unwrap();
        assert_eq!(read(&m.src_path(&[b"dir-", *n, b"/", *n].concat())), b"c");
    }
}

#[test]
fn malformed_backing_entries_hidden_and_untouched() {
    let populate_all = |src: &Path| {
        populate(src);
        write(&src.join("ünï"), b"u");
        fs::create_dir(src.join("onlyhidden")).unwrap();
        write(&join(src, b"onlyhidden/caf\xE9"), b"latin1");
        fs::create_dir(src.join("mixed")).unwrap();
        write(&join(src, b"mixed/ok"), b"ok");
        write(&join(src, b"mixed/\xFF\xFE"), b"ff");
        std::os::unix::fs::symlink("good", join(src, b"link\x80")).unwrap();
    };
    let m = Mount::populated(Mode::Reject, populate_all);
    let before = snapshot(&m.src);
    let before_meta: Vec<_> = MALFORMED
        .iter()
        .map(|(_, bad)| fs::symlink_metadata(m.src_path(bad)).unwrap())
        .collect();

    let listed = m.list_mnt(b"");
    assert_eq!(
        listed,
        vec![
            b"good".to_vec(),
            b"gooddir".to_vec(),
            b"mixed".to_vec(),
            b"onlyhidden".to_vec(),
            "ünï".as_bytes().to_vec()
        ],
        "only the valid names are listed"
    );
    let raw = list_raw(&m.mnt);
    assert_eq!(
        raw.len(),
        listed.len() + 2,
        "readdir returns the valid names plus . and .."
    );
    assert_eq!(m.list_mnt(b"mixed"), vec![b"ok".to_vec()]);
    assert!(m.list_mnt(b"onlyhidden").is_empty());
    // Each hidden entry is logged once, with its directory: listing again logs nothing new.
    let hidden = 2 * MALFORMED.len() + 1 + 1 + 1;
    assert_eq!(
        m.stats.hidden_names() as usize,
        hidden,
        "hidden entries counted once each"
    );
    m.list_mnt(b"");
    m.list_mnt(b"mixed");
    assert_eq!(
        m.stats.hidden_names() as usize,
        hidden,
        "a second listing logs nothing new"
    );
    assert_eq!(read(&m.mnt_path(b"good")), b"good", "valid siblings work");
    assert_eq!(read(&m.mnt_path(b"mixed/ok")), b"ok");

    // A directory that holds only hidden entries is not empty.
    expect_errno(
        fs::remove_dir(m.mnt_path(b"onlyhidden")),
        libc::ENOTEMPTY,
        "rmdir of a dir with a hidden entry",
    );
    fs::remove_file(m.mnt_path(b"mixed/ok")).unwrap();
    expect_errno(
        fs::remove_dir(m.mnt_path(b"mixed")),
        libc::ENOTEMPTY,
        "rmdir after removing the visible entries",
    );
    // A whole-tree removal through the mount leaves the hidden entries and their directories.
    if have("rm") {
        let out = std::process::Command::new("rm")
            .arg("-rf")
            .arg(m.mnt_path(b"mixed"))
            .output()
            .unwrap();
        assert!(
            !out.status.success(),
            "rm -rf of a directory holding a hidden entry must fail"
        );
    }
    assert_eq!(read(&m.src_path(b"mixed/\xFF\xFE")), b"ff");

    // Listing every directory again shows the same; a remount too.
    let mut m = m;
    m.remount();
    assert!(m.list_mnt(b"onlyhidden").is_empty());
    drop(m.list_mnt(b""));
    let src = m.src.clone();
    let keep = m.finish();
    let after = snapshot(&src);
    let mut expect = before.clone();
    expect.retain(|(p, _, _)| p != b"mixed/ok");
    assert_eq!(
        after, expect,
        "backing store after the mount's life: only mixed/ok removed"
    );
    for ((class, bad), md) in MALFORMED.iter().zip(before_meta) {
        let now = fs::symlink_metadata(join(&src, bad)).unwrap();
        assert_eq!(
            (
                now.ino(),
                now.mtime(),
                now.mtime_nsec(),
                now.mode(),
                now.uid()
            ),
            (md.ino(), md.mtime(), md.mtime_nsec(), md.mode(), md.uid()),
            "{class}: backing entry untouched"
        );
    }
    drop(keep);
}
