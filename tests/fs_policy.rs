//! Name policies through a real mount: `deny=` hygiene rules (EINVAL, nothing created, existing
//! entries still usable, audit mode logging instead), `unicode=` normalization forms (created in
//! the form, looked up in either form, listed in the form, both forms side by side), symlink
//! targets mapped through the directories they name, and the cache presets.

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use utf8fs::fs::{CachePolicy, FsConfig, FsStats, Utf8Fs};
use utf8fs::mapping::{Mapper, Mode};
use utf8fs::policy::{Deny, Form, Rule};

struct Mounted {
    _session: fuser::BackgroundSession,
    source: tempfile::TempDir,
    mnt: tempfile::TempDir,
    stats: Arc<FsStats>,
}

impl Mounted {
    fn src(&self, p: impl AsRef<Path>) -> PathBuf {
        self.source.path().join(p)
    }
    fn mnt(&self, p: impl AsRef<Path>) -> PathBuf {
        self.mnt.path().join(p)
    }
    /// Names the mount lists in `dir`.
    fn list(&self, dir: &str) -> BTreeSet<OsString> {
        listing(&self.mnt(dir))
    }
    /// Names the backing store holds in `dir`.
    fn backing(&self, dir: &str) -> BTreeSet<OsString> {
        listing(&self.src(dir))
    }
}

fn listing(dir: &Path) -> BTreeSet<OsString> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect()
}

fn mount(mode: Mode, set: impl FnOnce(&mut FsConfig), prepare: impl FnOnce(&Path)) -> Mounted {
    let source = tempfile::tempdir().expect("tempdir");
    prepare(source.path());
    let mnt = tempfile::tempdir().expect("tempdir");
    let mut cfg = FsConfig::new(source.path(), Mapper::new(mode));
    set(&mut cfg);
    let fs = Utf8Fs::new(cfg).expect("new");
    let stats = fs.stats();
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        fuser::MountOption::FSName("utf8fs-test".into()),
        fuser::MountOption::DefaultPermissions,
    ];
    config.n_threads = Some(2);
    let session = fuser::spawn_mount(fs, mnt.path(), &config).expect("mount");
    Mounted {
        _session: session,
        source,
        mnt,
        stats,
    }
}

fn errno<T: std::fmt::Debug>(r: std::io::Result<T>) -> i32 {
    r.expect_err("expected an error")
        .raw_os_error()
        .unwrap_or(0)
}

fn os(b: &[u8]) -> &OsStr {
    OsStr::from_bytes(b)
}

fn mkfifo(p: &Path) -> std::io::Result<()> {
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: NUL-terminated path.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o644) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// One name breaking each rule.
const VIOLATIONS: &[(Rule, &str)] = &[
    (Rule::Control, "a\u{1}b"),
    (Rule::Control, "tab\there"),
    (Rule::Bidi, "abc\u{202e}gpj.exe"),
    (Rule::LeadingDash, "-rf"),
    (Rule::LeadingTilde, "~x"),
    (Rule::Space, " lead"),
    (Rule::Space, "trail "),
    (Rule::Windows, "a:b"),
    (Rule::Windows, "CON"),
    (Rule::Windows, "aux.txt"),
    (Rule::Windows, "dot."),
    (Rule::Bom, "\u{feff}x"),
    (Rule::Nonchar, "a\u{fffe}"),
    (Rule::Shell, "a$b"),
];

fn deny_all() -> Deny {
    Deny::ALL.with(Rule::Shell)
}

#[test]
fn each_deny_rule_refuses_new_names_with_einval() {
    let m = mount(
        Mode::Reject,
        |c| c.deny = deny_all(),
        |s| {
            fs::write(s.join("ok"), b"ok").unwrap();
            fs::create_dir(s.join("d")).unwrap();
        },
    );
    let before = m.backing("d");
    for &(rule, name) in VIOLATIONS {
        // Each rule on its own refuses its name; the others let it through.
        let p = m.mnt("d").join(name);
        let what = format!("{rule}: {name:?}");
        assert_eq!(errno(fs::write(&p, b"x")), libc::EINVAL, "create {what}");
        let excl = fs::OpenOptions::new().write(true).create_new(true).open(&p);
        assert_eq!(errno(excl), libc::EINVAL, "create_new {what}");
        assert_eq!(errno(fs::create_dir(&p)), libc::EINVAL, "mkdir {what}");
        assert_eq!(errno(mkfifo(&p)), libc::EINVAL, "mknod {what}");
        assert_eq!(errno(symlink("ok", &p)), libc::EINVAL, "symlink {what}");
        assert_eq!(
            errno(fs::hard_link(m.mnt("ok"), &p)),
            libc::EINVAL,
            "link {what}"
        );
        assert_eq!(
            errno(fs::rename(m.mnt("ok"), &p)),
            libc::EINVAL,
            "rename {what}"
        );
    }
    // Nothing was created, and the refusals are not EILSEQ.
    assert_eq!(m.backing("d"), before);
    assert_eq!(fs::read(m.src("ok")).unwrap(), b"ok");
    // Clean names still work.
    fs::write(m.mnt("d/clean-name~"), b"c").unwrap();
    assert_eq!(fs::read(m.src("d/clean-name~")).unwrap(), b"c");
}

#[test]
fn one_rule_at_a_time() {
    for &(rule, name) in VIOLATIONS {
        let m = mount(Mode::Reject, |c| c.deny = Deny::NONE.with(rule), |_| {});
        assert_eq!(
            errno(fs::write(m.mnt(name), b"x")),
            libc::EINVAL,
            "{rule}: {name:?}"
        );
        assert!(m.backing(".").is_empty());
        // A name breaking only other rules passes.
        let other = if rule == Rule::LeadingDash {
            "~y"
        } else {
            "-y"
        };
        fs::write(m.mnt(other), b"y").unwrap();
        assert!(m.src(other).exists());
    }
}

#[test]
fn existing_violating_entries_stay_usable() {
    let m = mount(
        Mode::Reject,
        |c| c.deny = deny_all(),
        |s| {
            for (i, &(_, name)) in VIOLATIONS.iter().enumerate() {
                fs::write(s.join(name), i.to_string()).unwrap();
            }
            fs::create_dir(s.join("-dir")).unwrap();
            fs::write(s.join("-dir/inner"), b"in").unwrap();
        },
    );
    let listed = m.list(".");
    for (i, &(_, name)) in VIOLATIONS.iter().enumerate() {
        assert!(listed.contains(OsStr::new(name)), "{name:?} listed");
        assert_eq!(fs::read(m.mnt(name)).unwrap(), i.to_string().as_bytes());
        // Opening an existing entry with O_CREAT is not a new name.
        let mut f = fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(m.mnt(name))
            .unwrap();
        f.write_all(b"+").unwrap();
    }
    assert_eq!(fs::read(m.mnt("-dir/inner")).unwrap(), b"in");
    // Creating an existing violating name exclusively says it exists.
    let excl = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(m.mnt("-rf"));
    assert_eq!(errno(excl), libc::EEXIST);
    assert_eq!(errno(fs::create_dir(m.mnt("-dir"))), libc::EEXIST);
    // Renaming away from a violating name (the migration) and unlinking work.
    fs::rename(m.mnt("-rf"), m.mnt("rf")).unwrap();
    assert_eq!(fs::read(m.src("rf")).unwrap(), b"3+");
    fs::remove_file(m.mnt("CON")).unwrap();
    assert!(!m.src("CON").exists());
    fs::remove_file(m.mnt("-dir/inner")).unwrap();
    fs::remove_dir(m.mnt("-dir")).unwrap();
    assert!(!m.src("-dir").exists());
}

#[test]
fn audit_mode_logs_violations_instead() {
    let m = mount(Mode::Audit, |c| c.deny = deny_all(), |_| {});
    fs::write(m.mnt("-rf"), b"x").unwrap();
    fs::create_dir(m.mnt("CON")).unwrap();
    assert!(m.src("-rf").exists() && m.src("CON").is_dir());
    assert_eq!(m.stats.hygiene_logged(), 2);
    // Logged once per name.
    fs::remove_file(m.mnt("-rf")).unwrap();
    fs::write(m.mnt("-rf"), b"y").unwrap();
    fs::rename(m.mnt("-rf"), m.mnt("a:b")).unwrap();
    assert_eq!(m.stats.hygiene_logged(), 3);
    assert_eq!(fs::read(m.src("a:b")).unwrap(), b"y");
}

const NFC: &str = "caf\u{e9}";
const NFD: &str = "cafe\u{301}";

fn nfc(c: &mut FsConfig) {
    c.unicode = Some(Form::Nfc);
}

#[test]
fn nfc_create_in_one_form_look_up_in_the_other() {
    let m = mount(Mode::Reject, nfc, |_| {});
    // Created in NFD through the mount: stored in NFC.
    fs::write(m.mnt(NFD), b"one").unwrap();
    assert_eq!(m.backing("."), BTreeSet::from([OsString::from(NFC)]));
    assert_eq!(fs::read(m.mnt(NFC)).unwrap(), b"one");
    assert_eq!(fs::read(m.mnt(NFD)).unwrap(), b"one");
    assert_eq!(m.list("."), BTreeSet::from([OsString::from(NFC)]));
    // Creating the other form exclusively finds the same file.
    let excl = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(m.mnt(NFC));
    assert_eq!(errno(excl), libc::EEXIST);
    fs::create_dir(m.mnt(format!("{NFD}.d"))).unwrap();
    assert!(m.src(format!("{NFC}.d")).is_dir());
    fs::rename(m.mnt(NFD), m.mnt(format!("{NFD}.d/{NFD}"))).unwrap();
    assert_eq!(fs::read(m.src(format!("{NFC}.d/{NFC}"))).unwrap(), b"one");
    fs::remove_file(m.mnt(format!("{NFC}.d/{NFD}"))).unwrap();
    fs::remove_dir(m.mnt(format!("{NFD}.d"))).unwrap();
    assert!(m.backing(".").is_empty());
}

#[test]
fn nfc_lists_existing_nfd_names_in_nfc() {
    let m = mount(Mode::Reject, nfc, |s| {
        fs::create_dir(s.join(NFD)).unwrap();
        fs::write(s.join(NFD).join("r\u{e9}sume\u{301}.txt"), b"cv").unwrap();
        fs::write(s.join("\u{212a}elvin"), b"k").unwrap();
    });
    assert_eq!(
        m.list("."),
        BTreeSet::from([OsString::from(NFC), OsString::from("Kelvin")])
    );
    assert_eq!(
        m.list(NFC),
        BTreeSet::from([OsString::from("r\u{e9}sum\u{e9}.txt")])
    );
    // Lookups without a listing first, in both forms.
    assert_eq!(
        fs::read(m.mnt(format!("{NFC}/r\u{e9}sum\u{e9}.txt"))).unwrap(),
        b"cv"
    );
    assert_eq!(
        fs::read(m.mnt(format!("{NFD}/re\u{301}sume\u{301}.txt"))).unwrap(),
        b"cv"
    );
    assert_eq!(fs::read(m.mnt("Kelvin")).unwrap(), b"k");
    // Renaming a shown name renames the backing entry it stands for (migrating to NFC).
    fs::rename(m.mnt(NFC), m.mnt("plain")).unwrap();
    assert_eq!(
        m.backing("."),
        BTreeSet::from(["plain".into(), "\u{212a}elvin".into()])
    );
}

#[test]
fn both_forms_side_by_side_stay_reachable() {
    let m = mount(Mode::Reject, nfc, |s| {
        fs::write(s.join(NFC), b"composed").unwrap();
        fs::write(s.join(NFD), b"decomposed").unwrap();
    });
    let listed = m.list(".");
    assert_eq!(listed.len(), 2);
    assert!(listed.contains(OsStr::new(NFC)));
    let tagged = listed
        .iter()
        .find(|n| n.as_os_str() != NFC)
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        tagged.starts_with(&format!("{NFC}~")) && tagged.len() == NFC.len() + 9,
        "{tagged}"
    );
    // The name already in the form keeps it, in either spelling.
    assert_eq!(fs::read(m.mnt(NFC)).unwrap(), b"composed");
    assert_eq!(fs::read(m.mnt(NFD)).unwrap(), b"composed");
    assert_eq!(fs::read(m.mnt(&tagged)).unwrap(), b"decomposed");
    fs::rename(m.mnt(&tagged), m.mnt("other")).unwrap();
    assert_eq!(fs::read(m.src("other")).unwrap(), b"decomposed");
    assert!(m.src(NFC).exists());
}

#[test]
fn nfd_mode_and_long_names() {
    let long_nfc = "\u{e9}".repeat(100);
    let m = mount(
        Mode::Escape,
        |c| c.unicode = Some(Form::Nfd),
        |s| {
            fs::write(s.join(&long_nfc), b"long").unwrap();
            fs::write(s.join(os(b"caf\xe9")), b"latin1").unwrap();
        },
    );
    // 100 × é is 200 bytes in NFC, 300 in NFD: shown shortened, in NFD, reachable.
    let listed = m.list(".");
    let long = listed.iter().find(|n| n.len() > 100).unwrap().clone();
    let text = long.to_str().unwrap();
    assert!(
        text.len() <= 255 && text.starts_with("e\u{301}") && text.contains('~'),
        "{text}"
    );
    assert!(utf8fs::policy::is_normalized(text, Form::Nfd));
    assert_eq!(fs::read(m.mnt(&long)).unwrap(), b"long");
    // Malformed names are still escaped; created names are stored in NFD.
    assert!(listed.contains(OsStr::new("caf\u{efe9}")));
    fs::write(m.mnt(NFC), b"new").unwrap();
    assert!(m.src(NFD).exists() && !m.src(NFC).exists());
    // A name that grows past 255 bytes in the form cannot be created.
    assert_eq!(errno(fs::write(m.mnt(&long_nfc), b"")), libc::ENAMETOOLONG);
}

#[test]
fn readlink_maps_components_through_their_directories() {
    let m = mount(
        Mode::Replace,
        |_| {},
        |s| {
            let dir = s.join(os(b"x\xff"));
            fs::create_dir(&dir).unwrap();
            fs::write(dir.join(os(b"caf\xe8.txt")), b"e8").unwrap();
            fs::write(dir.join(os(b"caf\xe9.txt")), b"e9").unwrap();
            symlink(os(b"x\xff/caf\xe9.txt"), s.join("l")).unwrap();
            fs::create_dir(s.join("sub")).unwrap();
            symlink(os(b"../x\xff/./caf\xe9.txt"), s.join("sub/l2")).unwrap();
            symlink(os(b"../../caf\xe9.txt"), s.join("sub/out")).unwrap();
        },
    );
    let listed = m.list("x\u{fffd}");
    let tagged = listed
        .iter()
        .find(|n| n.as_os_str() != "caf\u{fffd}.txt")
        .unwrap()
        .clone();
    assert_eq!(fs::read(m.mnt("x\u{fffd}").join(&tagged)).unwrap(), b"e9");
    // Mapped with the index of the directory: the E9 file is the tagged one.
    let want = Path::new("x\u{fffd}").join(&tagged);
    assert_eq!(fs::read_link(m.mnt("l")).unwrap(), want);
    assert_eq!(fs::read(m.mnt("l")).unwrap(), b"e9");
    let want2 = Path::new("../x\u{fffd}/.").join(&tagged);
    assert_eq!(fs::read_link(m.mnt("sub/l2")).unwrap(), want2);
    assert_eq!(fs::read(m.mnt("sub/l2")).unwrap(), b"e9");
    // Leaving SOURCE: each component is mapped on its own.
    assert_eq!(
        fs::read_link(m.mnt("sub/out")).unwrap(),
        Path::new("../../caf\u{fffd}.txt")
    );
}

#[test]
fn cache_presets_keep_data_consistent() {
    for (name, cache, passthrough) in [
        ("never", CachePolicy::never(), true),
        ("auto", CachePolicy::auto(), false),
        ("auto+passthrough", CachePolicy::auto(), true),
        ("always", CachePolicy::always(), true),
        ("always+writeback", CachePolicy::always(), false),
    ] {
        let m = mount(
            Mode::Reject,
            |c| {
                c.cache = cache;
                c.passthrough = passthrough;
            },
            |s| fs::write(s.join("f"), b"base").unwrap(),
        );
        // Append and write-only opens (writeback reopens them read-write, without O_APPEND).
        let mut f = fs::OpenOptions::new()
            .append(true)
            .open(m.mnt("f"))
            .unwrap();
        f.write_all(b"+1").unwrap();
        f.write_all(b"+2").unwrap();
        drop(f);
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o200)
            .open(m.mnt("w"))
            .unwrap();
        f.write_all(b"write-only").unwrap();
        f.sync_all().unwrap();
        drop(f);
        assert_eq!(fs::read(m.src("f")).unwrap(), b"base+1+2", "{name}");
        assert_eq!(fs::read(m.src("w")).unwrap(), b"write-only", "{name}");
        let mut s = String::new();
        fs::File::open(m.mnt("f"))
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "base+1+2", "{name}");
        // A change underneath is seen after reopening when the cache is not trusted forever.
        if !name.starts_with("always") {
            fs::write(m.src("f"), b"changed underneath").unwrap();
            std::thread::sleep(std::time::Duration::from_millis(1100));
            assert_eq!(
                fs::read(m.mnt("f")).unwrap(),
                b"changed underneath",
                "{name}"
            );
        }
        let names: BTreeSet<OsString> = m.list(".");
        assert_eq!(names, BTreeSet::from(["f".into(), "w".into()]));
    }
}
