//! utf8fsck walks: 10,000-deep paths, unreadable directories, several roots.

mod fsck_common;
use fsck_common::*;
use std::process::Command;

#[test]
fn ten_thousand_deep() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("deep");
    std::fs::create_dir(&root).unwrap();
    // 10,000 levels named `d`, except two malformed ones; about 20,000 bytes of path.
    let name = |i: usize| match i {
        5_000 | 9_998 => b"d\xe9".to_vec(),
        _ => b"d".to_vec(),
    };
    deep_chain(&root, name, 10_000, b"leaf\xff");
    let out = run([root.as_os_str(), "--json".as_ref()]);
    assert_eq!(out.code, 4, "{}", out.stderr);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 3);
    let longest = lines
        .iter()
        .map(|o| o["path_hex"].as_str().unwrap().len() / 2)
        .max()
        .unwrap();
    assert!(longest > 20_000, "paths beyond PATH_MAX are reported whole");

    let log = t.path().join("undo");
    let out = run([
        root.as_os_str(),
        "-y".as_ref(),
        "--undo-log".as_ref(),
        log.as_os_str(),
    ]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let levels = deep_listing(&root);
    assert_eq!(levels.len(), 10_001);
    assert!(levels
        .iter()
        .flatten()
        .all(|n| std::str::from_utf8(n).is_ok()));
    assert_eq!(run([&root]).code, 0);

    let out = run(["--undo".as_ref(), log.as_os_str()]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let levels = deep_listing(&root);
    for (i, level) in levels[..10_000].iter().enumerate() {
        assert_eq!(level, &vec![name(i)], "level {i}");
    }
    assert_eq!(levels[10_000], vec![b"leaf\xff".to_vec()]);
    remove_deep(&root);
}

/// Runs utf8fsck as root without the capabilities that bypass permissions, so that a mode 000
/// directory is unreadable as it is for any user.
fn run_without_dac_override(args: &[&std::ffi::OsStr]) -> Out {
    let out = Command::new("setpriv")
        .arg("--bounding-set=-dac_override,-dac_read_search")
        .arg("--")
        .arg(BIN)
        .args(args)
        .output()
        .expect("setpriv (util-linux) is needed for this test");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn unreadable_directory_is_reported_and_skipped() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let locked = dir(t.path(), b"locked");
    file(&locked, b"hidden\xff");
    let open = dir(t.path(), b"open");
    file(&open, b"fine");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();

    let out = run_without_dac_override(&[t.path().as_os_str()]);
    assert_eq!(
        out.code, 8,
        "only the operational error: {}{}",
        out.stdout, out.stderr
    );
    assert!(
        out.stderr.contains("locked: cannot open directory"),
        "{}",
        out.stderr
    );

    // A finding elsewhere still counts: 4 + 8.
    file(&open, b"bad\xe9");
    let out = run_without_dac_override(&[t.path().as_os_str(), "--json".as_ref()]);
    assert_eq!(out.code, 12);
    let lines = json_lines(&out);
    assert!(lines.iter().any(|o| o["kind"] == "malformed"));
    assert!(lines
        .iter()
        .any(|o| o["error"].as_str().is_some_and(|e| e.contains("denied"))));
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn several_roots_and_many_entries() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for i in 0..2000u32 {
        let d = format!("d{}", i % 50);
        let _ = std::fs::create_dir(a.path().join(&d));
        let mut name = format!("f{i}").into_bytes();
        if i % 100 == 0 {
            name.push(0xe9);
        }
        file(&a.path().join(&d), &name);
    }
    file(b.path(), b"x\xff");
    let out = run([a.path(), b.path()]);
    assert_eq!(out.code, 4);
    assert_eq!(out.stdout.lines().count(), 21);
    for jobs in ["1", "4"] {
        let out = run([a.path().as_os_str(), "-j".as_ref(), jobs.as_ref()]);
        assert_eq!(out.stdout.lines().count(), 20, "-j {jobs}");
    }
    let out = run([a.path().as_os_str(), "-y".as_ref()]);
    assert_eq!(out.code, 1);
    assert_eq!(run([a.path()]).code, 0);
}
