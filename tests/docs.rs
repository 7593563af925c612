//! The documentation says what the programs do: every option of `--help` is in the man pages and
//! the README, the README's set-up is the two documented commands, `scripts/install` puts the
//! files where it says, and the installed `utf8fs` really mounts through `mount -t fuse.utf8fs`,
//! the example /etc/fstab line and the example systemd mount unit. Mount tests run as root in a
//! private mount namespace, so the machine's own /usr/local/bin and /etc/fstab are never touched.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const UTF8FS: &str = env!("CARGO_BIN_EXE_utf8fs");
const UTF8FSCK: &str = env!("CARGO_BIN_EXE_utf8fsck");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(rel: &str) -> String {
    let path = Path::new(ROOT).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn help(bin: &str) -> String {
    let out = Command::new(bin).arg("--help").output().unwrap();
    assert!(out.status.success(), "{bin} --help failed");
    String::from_utf8(out.stdout).unwrap()
}

/// The option key of a help entry: `malformed=MODE` → `malformed`, `-j,` → `-j`.
fn key(entry: &str) -> String {
    let entry = entry.trim_end_matches(',');
    let end = entry.find(['=', '[']).unwrap_or(entry.len());
    entry[..end].trim_end_matches("...").to_owned()
}

/// Option keys of `utf8fs --help`: entries start their line after exactly two spaces (several
/// entries of one line are separated by ", "; `-o debug` is one), plus the list of options that
/// are accepted and ignored.
fn utf8fs_keys(help: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut lines = help.lines();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("  accepted and ignored") {
            let mut list = rest.split_once(':').map_or("", |(_, l)| l).to_owned();
            for more in lines.by_ref().take_while(|l| !l.trim().is_empty()) {
                list.push(' ');
                list.push_str(more);
            }
            keys.extend(list.split([',', ' ']).filter(|w| !w.is_empty()).map(key));
            continue;
        }
        let Some(rest) = line.strip_prefix("  ") else {
            continue;
        };
        if rest.starts_with(' ') || rest.is_empty() {
            continue;
        }
        let mut prev = "";
        for (i, word) in rest.split_whitespace().enumerate() {
            let after_o = prev == "-o" && i > 1;
            if i > 0 && !prev.ends_with(',') && !after_o {
                break;
            }
            keys.push(key(word));
            prev = word;
        }
    }
    keys.sort();
    keys.dedup();
    keys
}

/// Option keys of `utf8fsck --help`: flags (`-n, --no`, `--plan FILE`) and the `-o` options and
/// `--deny` rules, which start a line with one word followed by two spaces.
fn utf8fsck_keys(help: &str) -> Vec<String> {
    let mut keys = Vec::new();
    for line in help.lines().filter(|l| l.starts_with("  ")) {
        let text = line.trim_start();
        let first = text.split("  ").next().unwrap_or("");
        if first.starts_with('-') {
            keys.extend(
                first
                    .split(", ")
                    .map(|flag| key(flag.split(' ').next().unwrap_or(""))),
            );
        } else if !first.contains(' ')
            && first.len() < text.len()
            && first.starts_with(|c: char| c.is_ascii_lowercase())
        {
            keys.push(key(first));
        }
    }
    keys.sort();
    keys.dedup();
    keys
}

/// Man page source as text: `\-` → `-`, font changes and zero-width escapes removed.
fn roff_text(roff: &str) -> String {
    let mut s = roff
        .replace("\\-", "-")
        .replace("\\&", "")
        .replace("\\e", "\\");
    for font in ["\\fB", "\\fI", "\\fR", "\\fP"] {
        s = s.replace(font, "");
    }
    s
}

/// Whether `key` occurs in `text` as a whole option name.
fn mentions(text: &str, key: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(key).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + key.len()..].chars().next();
        !before.is_some_and(|c| ident(c) || c == '-')
            && (key.ends_with('-') || !after.is_some_and(|c| ident(c) || c == '-'))
    })
}

fn assert_documented(program: &str, keys: &[String], man_page: &str) {
    let man = roff_text(&read(man_page));
    let readme = read("README.md");
    let missing_man: Vec<&String> = keys.iter().filter(|k| !mentions(&man, k)).collect();
    let missing_readme: Vec<&String> = keys.iter().filter(|k| !mentions(&readme, k)).collect();
    assert!(
        missing_man.is_empty(),
        "{man_page} lacks {program} options {missing_man:?}"
    );
    assert!(
        missing_readme.is_empty(),
        "README.md lacks {program} options {missing_readme:?}"
    );
}

#[test]
fn help_parsers_find_the_options() {
    let fs = utf8fs_keys(&help(UTF8FS));
    for k in [
        "-f",
        "-d",
        "debug",
        "-o",
        "--help",
        "malformed",
        "cache",
        "dev",
        "nodev",
        "dirsync",
        "nofail",
        "comment",
        "x-",
    ] {
        assert!(fs.contains(&k.to_owned()), "utf8fs: {k} not parsed: {fs:?}");
    }
    assert!(!fs.contains(&"escape".to_owned()), "{fs:?}");
    let fsck = utf8fsck_keys(&help(UTF8FSCK));
    for k in [
        "-n",
        "--no",
        "--fix",
        "--plan",
        "--undo-log",
        "--cross-mounts",
        "-j",
        "malformed",
        "charset",
        "control",
        "leading-tilde",
        "shell",
        "none",
        "--json",
    ] {
        assert!(
            fsck.contains(&k.to_owned()),
            "utf8fsck: {k} not parsed: {fsck:?}"
        );
    }
}

#[test]
fn every_utf8fs_option_is_in_the_man_page_and_readme() {
    let keys = utf8fs_keys(&help(UTF8FS));
    assert!(keys.len() > 50, "{keys:?}");
    assert_documented("utf8fs", &keys, "man/utf8fs.8");
}

#[test]
fn every_utf8fsck_option_is_in_the_man_page_and_readme() {
    let keys = utf8fsck_keys(&help(UTF8FSCK));
    assert!(keys.len() > 30, "{keys:?}");
    assert_documented("utf8fsck", &keys, "man/utf8fsck.8");
}

#[test]
fn readme_set_up_is_the_demo_and_the_test_command() {
    let readme = read("README.md");
    let start = readme
        .find("\n## Set-up\n")
        .expect("README.md has a ## Set-up section");
    let section = &readme[start + 1..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    let mut commands = Vec::new();
    let mut in_code = false;
    for line in section.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if in_code && !line.trim().is_empty() && !line.trim_start().starts_with('#') {
            commands.push(line.trim());
        }
    }
    assert_eq!(commands, ["scripts/demo", "scripts/test"]);
    for script in ["scripts/demo", "scripts/test", "scripts/setup", ".ci/run"] {
        assert!(Path::new(ROOT).join(script).is_file(), "{script} missing");
    }
}

#[test]
fn readme_and_man_page_show_the_example_files() {
    let readme = read("README.md");
    let man = roff_text(&read("man/utf8fs.8"));
    let line = fstab_line();
    assert!(
        readme.contains(&line),
        "README.md lacks the fstab line {line:?}"
    );
    assert!(
        man.contains(&line),
        "utf8fs.8 lacks the fstab line {line:?}"
    );
    for unit_line in unit_body().lines() {
        assert!(readme.contains(unit_line), "README.md lacks {unit_line:?}");
        assert!(man.contains(unit_line), "utf8fs.8 lacks {unit_line:?}");
    }
}

/// The one entry of examples/fstab.
fn fstab_line() -> String {
    let fstab = read("examples/fstab");
    let lines: Vec<&str> = fstab
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    lines[0].to_owned()
}

/// examples/srv-share.mount without its leading comment.
fn unit_body() -> String {
    let unit = read("examples/srv-share.mount");
    let body: Vec<&str> = unit.lines().skip_while(|l| l.starts_with('#')).collect();
    body.join("\n")
}

/// `Key=` of the example unit's [Mount] section.
fn unit_value(key: &str) -> String {
    let body = unit_body();
    let prefix = format!("{key}=");
    let line = body.lines().find(|l| l.starts_with(&prefix));
    line.unwrap_or_else(|| panic!("unit lacks {key}="))[prefix.len()..].to_owned()
}

fn install(prefix: &Path, destdir: Option<&Path>) -> Output {
    let bins = Path::new(UTF8FS).parent().unwrap();
    let mut cmd = Command::new(Path::new(ROOT).join("scripts/install"));
    cmd.arg(prefix).env("BUILD_DIR", bins);
    match destdir {
        Some(d) => cmd.env("DESTDIR", d),
        None => cmd.env_remove("DESTDIR"),
    };
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "scripts/install: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn assert_installed(root: &Path) {
    use std::os::unix::fs::PermissionsExt;
    for (file, mode, source) in [
        ("bin/utf8fs", 0o755, UTF8FS.to_owned()),
        ("bin/utf8fsck", 0o755, UTF8FSCK.to_owned()),
        (
            "share/man/man8/utf8fs.8",
            0o644,
            format!("{ROOT}/man/utf8fs.8"),
        ),
        (
            "share/man/man8/utf8fsck.8",
            0o644,
            format!("{ROOT}/man/utf8fsck.8"),
        ),
    ] {
        let path = root.join(file);
        let meta = std::fs::metadata(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            meta.permissions().mode() & 0o777,
            mode,
            "{}",
            path.display()
        );
        assert!(
            std::fs::read(&path).unwrap() == std::fs::read(&source).unwrap(),
            "{} differs from {source}",
            path.display()
        );
    }
}

#[test]
fn install_honours_destdir_and_prefix() {
    let tmp = tempfile::tempdir().unwrap();
    let stage = tmp.path().join("stage");
    let out = install(Path::new("/usr/local"), Some(&stage));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_installed(&stage.join("usr/local"));

    // A prefix off /bin/sh's default PATH installs, with a note that mount(8) will not find it.
    let prefix = tmp.path().join("prefix");
    let out = install(&prefix, None);
    assert_installed(&prefix);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not on /bin/sh's default PATH"), "{err}");

    let out = Command::new(Path::new(ROOT).join("scripts/install"))
        .arg("relative")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// A SOURCE with a Latin-1 name, a MOUNTPOINT, and a staged install; cleaned up on drop.
struct Setup {
    tmp: tempfile::TempDir,
    src: PathBuf,
    mnt: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        use std::os::unix::ffi::OsStrExt;
        let tmp = tempfile::Builder::new()
            .prefix("utf8fs-docs-")
            .tempdir()
            .unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let (src, mnt) = (root.join("src"), root.join("mnt"));
        std::fs::create_dir(&src).unwrap();
        std::fs::create_dir(&mnt).unwrap();
        let latin1 = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
        std::fs::write(src.join(latin1), b"Latin-1\n").unwrap();
        install(Path::new("/usr/local"), Some(&root.join("stage")));
        Setup { tmp, src, mnt }
    }

    /// Runs `script` with sh in a private mount namespace in which the staged install is
    /// /usr/local/bin; `$SRC`, `$MNT` and `$T` (the temporary directory) are set.
    fn run(&self, script: &str) -> String {
        let root = self.tmp.path().canonicalize().unwrap();
        let full = format!(
            "set -eu\n\
             trap 'umount \"$MNT\" 2>/dev/null || true' EXIT\n\
             mount --bind \"$T/stage/usr/local/bin\" /usr/local/bin\n{script}"
        );
        let out = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", &full])
            .env("SRC", &self.src)
            .env("MNT", &self.mnt)
            .env("T", &root)
            .env("LC_ALL", "C.UTF-8")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }
}

/// What `ls` shows for `caf\xE9.txt` in escape mode: the byte as U+EF00+E9.
const ESCAPED: &str = "caf\u{efe9}.txt";

#[test]
fn installed_utf8fs_mounts_with_mount_t_fuse_utf8fs() {
    let s = Setup::new();
    let out = s.run(
        r#"
        command -v utf8fs
        mount -t fuse.utf8fs "$SRC" "$MNT" -o malformed=escape
        grep -F " $MNT " /proc/self/mountinfo | grep -q -F " - fuse.utf8fs $SRC "
        ls "$MNT"
        cat "$MNT/$(ls "$MNT")"
        umount "$MNT"
        if grep -q -F " $MNT " /proc/self/mountinfo; then exit 1; fi
        "#,
    );
    assert!(out.starts_with("/usr/local/bin/utf8fs\n"), "{out}");
    assert!(out.contains(&format!("\n{ESCAPED}\nLatin-1\n")), "{out}");
}

#[test]
fn example_fstab_line_mounts_with_mount_mountpoint() {
    let s = Setup::new();
    let line = fstab_line();
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields.len(), 6, "{line}");
    assert_eq!(fields[2], "fuse.utf8fs");
    let fstab = format!(
        "{} {} {} {} 0 0\n",
        s.src.display(),
        s.mnt.display(),
        fields[2],
        fields[3]
    );
    std::fs::write(s.tmp.path().join("fstab"), fstab).unwrap();
    let out = s.run(
        r#"
        mount --bind "$T/fstab" /etc/fstab
        mount "$MNT"
        grep -F " $MNT " /proc/self/mountinfo
        ls "$MNT"
        if touch "$MNT/$(printf 'tab\there')" 2>"$T/err"; then exit 1; fi
        cat "$T/err"
        umount "$MNT"
        "#,
    );
    assert!(out.contains(" - fuse.utf8fs "), "{out}");
    assert!(out.contains("allow_other"), "{out}");
    assert!(out.contains(&format!("\n{ESCAPED}\n")), "{out}");
    // deny=control from the example refuses a name with a tab.
    assert!(out.contains("Invalid argument"), "{out}");
    assert_eq!(std::fs::read_dir(&s.src).unwrap().count(), 1);
}

/// systemd starts a mount unit as `mount What Where -t Type -o Options`: the same command here,
/// since systemd is not process 1 in every test environment.
#[test]
fn example_mount_unit_mounts_as_systemd_would() {
    let s = Setup::new();
    assert_eq!(unit_value("What"), "/srv/share-legacy");
    assert_eq!(unit_value("Where"), "/srv/share");
    let script = format!(
        r#"
        mount "$SRC" "$MNT" -t '{}' -o '{}'
        grep -F " $MNT " /proc/self/mountinfo
        ls "$MNT"
        umount "$MNT"
        "#,
        unit_value("Type"),
        unit_value("Options")
    );
    let out = s.run(&script);
    assert!(out.contains(" - fuse.utf8fs "), "{out}");
    assert!(out.contains(&format!("\n{ESCAPED}\n")), "{out}");
}

/// `systemd-analyze verify` checks the unit's syntax, that its name matches Where=, and that the
/// man page it names is installed.
#[test]
fn example_mount_unit_verifies() {
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("systemd-analyze not installed: examples/srv-share.mount not verified");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    install(tmp.path(), None);
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(Path::new(ROOT).join("examples/srv-share.mount"))
        .env("MANPATH", tmp.path().join("share/man"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.trim().is_empty(), "{err}");
}
