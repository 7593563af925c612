//! `malformed=audit`: every name passes through unchanged, malformed ones included, and is
//! usable; nothing is hidden or renamed.

mod common;

use common::normalize::{content_of, populate, BAD_DIR, LATIN1};
use common::*;
use std::fs;
use std::os::unix::fs::MetadataExt;
use utf8fs::mapping::Mode;

fn mount() -> Mount {
    Mount::populated(Mode::Audit, |src| populate(src, Mode::Audit))
}

#[test]
fn malformed_names_listed_as_is() {
    let mut m = mount();
    for _ in 0..2 {
        // Lookups first, without a listing.
        for n in m.list_src(b"") {
            let (mp, sp) = (m.mnt_path(&n), m.src_path(&n));
            let (a, b) = (
                fs::symlink_metadata(&mp).unwrap(),
                fs::symlink_metadata(&sp).unwrap(),
            );
            assert_eq!(a.file_type(), b.file_type(), "{}", show(&n));
            if b.is_file() {
                assert_eq!(read(&mp), read(&sp), "{} reads its own file", show(&n));
            }
        }
        assert_eq!(
            m.list_mnt(b""),
            m.list_src(b""),
            "the listing is the backing listing, byte for byte"
        );
        assert_eq!(m.list_mnt(BAD_DIR), m.list_src(BAD_DIR));
        let raw = list_raw(&m.mnt);
        assert_eq!(raw.len(), m.list_src(b"").len() + 2);
        m.remount();
    }
}

#[test]
fn malformed_names_usable() {
    let m = mount();
    for (i, (class, bad)) in MALFORMED.iter().enumerate() {
        let p = m.mnt_path(bad);
        assert_eq!(read(&p), content_of(bad), "{class}: read");
        set_xattr(&p, "user.audit", bad).unwrap();
        assert_eq!(
            get_xattr(&m.src_path(bad), "user.audit").unwrap(),
            *bad,
            "{class}: xattr"
        );
        let renamed = [b"moved-", *bad].concat();
        fs::rename(&p, m.mnt_path(&renamed)).unwrap();
        assert_eq!(
            read(&m.src_path(&renamed)),
            content_of(bad),
            "{class}: rename keeps bytes"
        );
        assert!(!m.src_path(bad).exists());
        let clean = format!("clean-{i}");
        fs::rename(m.mnt_path(&renamed), m.mnt_path(clean.as_bytes())).unwrap();
        assert_eq!(
            read(&m.src_path(clean.as_bytes())),
            content_of(bad),
            "{class}: renamed to a clean name"
        );
        // A client may create malformed names: they pass through unchanged.
        let created = [b"new-", *bad].concat();
        write(&m.mnt_path(&created), b"created");
        assert_eq!(
            read(&m.src_path(&created)),
            b"created",
            "{class}: created as sent"
        );
        fs::hard_link(m.mnt_path(&created), m.mnt_path(&[b"hl-", *bad].concat())).unwrap();
        assert_eq!(fs::metadata(m.src_path(&created)).unwrap().nlink(), 2);
        fs::remove_file(m.mnt_path(&created)).unwrap();
        assert!(!m.src_path(&created).exists());
    }
    // Directories and links with malformed names.
    fs::create_dir(m.mnt_path(b"newdir\xFF")).unwrap();
    assert!(m.src_path(b"newdir\xFF").is_dir());
    fs::remove_dir(m.mnt_path(b"newdir\xFF")).unwrap();
    assert_eq!(
        read(&m.mnt_path(b"link\xE9")),
        content_of(LATIN1),
        "link to a malformed name"
    );
    assert_eq!(
        fs::read_link(m.mnt_path(b"link\xE9")).unwrap(),
        join(std::path::Path::new(""), LATIN1)
    );
    expect_errno(
        fs::remove_dir(m.mnt_path(BAD_DIR)),
        libc::ENOTEMPTY,
        "rmdir of a non-empty malformed dir",
    );
    fs::remove_dir(m.mnt_path(b"rm\xFE")).unwrap();
    // The name length limit still holds.
    expect_errno(
        fs::write(m.mnt_path(&[0xE9u8; 256]), b"x"),
        libc::ENAMETOOLONG,
        "256-byte name",
    );
}
