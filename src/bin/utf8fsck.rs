//! `utf8fsck [OPTIONS] DIR...`: check and repair file names offline (see `--help`).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use utf8fs::fsck::{self, Action, Config, Replay, EXIT_OPERATIONAL, EXIT_USAGE};
use utf8fs::mapping::{Mapper, Mode};
use utf8fs::policy::{Deny, Form};

const HELP: &str = "\
Usage: utf8fsck [OPTIONS] DIR...
       utf8fsck --apply PLAN [--undo-log FILE] [--json]
       utf8fsck --undo LOG [--json]

Checks every file name below each DIR (DIR itself excluded): each must be strict UTF-8
(RFC 3629) and, when asked, follow hygiene rules (--deny) and a Unicode form (--unicode).
Offending names are renamed to the name the utf8fs mount shows for them (-o malformed=MODE),
never overwriting anything: a name already taken gets a ~HASH suffix.

What to do:
  -n, --no              Report only, change nothing (the default)
  -y, --yes, --fix      Rename each offending entry to its proposed name
      --plan FILE       Write the renames to FILE for review instead of doing them
      --apply FILE      Do the renames of a reviewed plan, refusing any entry that changed
                        since (other device or inode) or whose new name now exists
      --undo FILE       Undo the renames recorded in FILE by --undo-log, newest first,
                        restoring the exact original bytes; refuses if a name is taken
      --undo-log FILE   Append every rename done (--fix, --apply, --undo) to FILE

Policy:
  -o OPT[,OPT...]       Options as for the mount:
                          malformed=escape|replace|transcode  how malformed names are
                            renamed (default: escape, which loses nothing)
                          charset=LABEL  legacy charset for transcode (default windows-1252;
                            any WHATWG label, cp437, cp850)
                          deny=RULE[+RULE...]  as --deny ('+' or ':' between rules)
                          unicode=nfc|nfd      as --unicode
      --deny LIST       Hygiene rules names must follow, separated by ',', '+' or ':':
                          control        U+0001-U+001F, U+007F, U+0080-U+009F (replaced by _)
                          bidi           U+200E, U+200F, U+202A-U+202E, U+2066-U+2069 (dropped)
                          leading-dash   a leading - (prefixed with _)
                          leading-tilde  a leading ~ (prefixed with _)
                          space          leading or trailing white space (trimmed)
                          windows        <>:\"\\|?* (replaced by _), CON PRN AUX NUL COM1-9
                                         LPT1-9 with or without extension (suffixed with _),
                                         a trailing dot or space (trimmed)
                          bom            a leading U+FEFF (dropped)
                          nonchar        U+FDD0-U+FDEF, U+xFFFE and U+xFFFF (dropped)
                          shell          * ? [ ] { } ( ) < > | & ; $ ` ' \" \\ ! (replaced by _)
                                         and a leading # (prefixed with _); opt-in
                          all            every rule except shell
                          none           no rule (the default)
      --unicode FORM    Names must be in FORM, nfc or nfd; others are converted

Walk:
  -x, --one-file-system Stay on the filesystem of each DIR (the default)
      --cross-mounts    Also descend into filesystems mounted below DIR
  -j, --jobs N          Walk with N threads (default: the number of CPUs)
                        Symbolic links are never followed.

Output:
      --json            One JSON object per finding, per line, on stdout
  -v, --verbose         A summary line on stderr at the end
                        (a progress line is shown on stderr when it is a terminal)
  -h, --help            This help
  -V, --version         The version

Exit status (added together, as fsck(8)):
  0 no offending name, 1 names renamed, 4 names left as they are,
  8 operational error (e.g. an unreadable directory, reported and skipped), 16 usage error
";

fn usage(msg: &str) -> ! {
    eprintln!("utf8fsck: {msg}\nTry 'utf8fsck --help' for more information.");
    std::process::exit(EXIT_USAGE);
}

#[derive(Default)]
struct Args {
    fix: bool,
    check: bool,
    plan: Option<PathBuf>,
    apply: Option<PathBuf>,
    undo: Option<PathBuf>,
    undo_log: Option<PathBuf>,
    malformed: Option<String>,
    charset: Option<String>,
    deny: Deny,
    unicode: Option<Form>,
    cross_mounts: bool,
    jobs: Option<usize>,
    json: bool,
    verbose: bool,
    dirs: Vec<PathBuf>,
}

impl Args {
    fn mount_options(&mut self, list: &str) {
        for opt in list.split(',').filter(|o| !o.is_empty()) {
            let (key, value) = opt.split_once('=').unwrap_or((opt, ""));
            match key {
                "malformed" => self.malformed = Some(value.to_owned()),
                "charset" => self.charset = Some(value.to_owned()),
                "deny" => self.deny(value),
                "unicode" => self.unicode(value),
                _ => usage(&format!("unknown option '-o {opt}'")),
            }
        }
    }

    fn deny(&mut self, list: &str) {
        match Deny::parse(list) {
            Ok(d) => self.deny = self.deny.union(d),
            Err(e) => usage(&e),
        }
    }

    fn unicode(&mut self, form: &str) {
        match Form::parse(form) {
            Ok(f) => self.unicode = Some(f),
            Err(e) => usage(&e),
        }
    }

    fn parse(argv: Vec<String>) -> Args {
        let mut a = Args::default();
        let mut it = argv.into_iter();
        let mut only_dirs = false;
        while let Some(arg) = it.next() {
            if only_dirs || !arg.starts_with('-') || arg == "-" {
                a.dirs.push(PathBuf::from(arg));
                continue;
            }
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
                _ if !arg.starts_with("--")
                    && arg.len() > 2
                    && matches!(arg.get(..2), Some("-o" | "-j")) =>
                {
                    (arg[..2].to_owned(), Some(arg[2..].to_owned()))
                }
                _ => (arg.clone(), None),
            };
            let mut value = |name: &str| -> String {
                inline.clone().or_else(|| it.next()).unwrap_or_else(|| {
                    usage(&format!("option '{name}' needs a value"));
                })
            };
            match flag.as_str() {
                "--" => only_dirs = true,
                "-n" | "--no" => a.check = true,
                "-y" | "--yes" | "--fix" => a.fix = true,
                "--plan" => a.plan = Some(value("--plan").into()),
                "--apply" => a.apply = Some(value("--apply").into()),
                "--undo" => a.undo = Some(value("--undo").into()),
                "--undo-log" => a.undo_log = Some(value("--undo-log").into()),
                "-o" => {
                    let v = value("-o");
                    a.mount_options(&v);
                }
                "--deny" => {
                    let v = value("--deny");
                    a.deny(&v);
                }
                "--unicode" => {
                    let v = value("--unicode");
                    a.unicode(&v);
                }
                "-x" | "--one-file-system" => a.cross_mounts = false,
                "--cross-mounts" => a.cross_mounts = true,
                "-j" | "--jobs" => {
                    let v = value("--jobs");
                    match v.parse::<usize>() {
                        Ok(n) if n > 0 => a.jobs = Some(n),
                        _ => usage(&format!("--jobs wants a positive number, not '{v}'")),
                    }
                }
                "--json" => a.json = true,
                "-v" | "--verbose" => a.verbose = true,
                "-h" | "--help" => {
                    print!("{HELP}");
                    std::process::exit(0);
                }
                "-V" | "--version" => {
                    println!("utf8fsck {}", env!("CARGO_PKG_VERSION"));
                    std::process::exit(0);
                }
                _ => usage(&format!("unknown option '{arg}'")),
            }
        }
        a
    }

    fn mapper(&self) -> Mapper {
        let name = self.malformed.as_deref().unwrap_or("escape");
        match Mode::parse(name, self.charset.as_deref()) {
            Ok(Mode::Reject | Mode::Audit) => usage(&format!(
                "malformed={name} shows no name to rename to: use escape, replace or transcode"
            )),
            Ok(mode) => Mapper::new(mode),
            Err(e) => usage(&e.to_string()),
        }
    }
}

/// Opens a record file for appending, writing its header when it is new or empty.
fn open_records(path: &Path, kind: &str, truncate: bool) -> File {
    let opened = OpenOptions::new()
        .create(true)
        .append(!truncate)
        .write(true)
        .truncate(truncate)
        .open(path)
        .and_then(|mut f| {
            if f.metadata()?.len() == 0 {
                f.write_all(fsck::header(kind).as_bytes())?;
            }
            Ok(f)
        });
    match opened {
        Ok(f) => f,
        Err(e) => {
            eprintln!("utf8fsck: {}: {e}", path.display());
            std::process::exit(EXIT_OPERATIONAL);
        }
    }
}

fn main() {
    let a = Args::parse(std::env::args().skip(1).collect());
    let replays = [a.apply.is_some(), a.undo.is_some()]
        .iter()
        .filter(|b| **b)
        .count();
    let walks = [a.fix, a.check, a.plan.is_some()]
        .iter()
        .filter(|b| **b)
        .count();
    if replays + walks.min(1) > 1 || walks > 1 {
        usage("choose one of -n, -y, --plan, --apply, --undo");
    }
    if replays == 1 {
        if !a.dirs.is_empty() {
            usage("--apply and --undo take no DIR");
        }
        let (file, how) = match (&a.apply, &a.undo) {
            (Some(f), _) => (f, Replay::Apply),
            (_, Some(f)) => (f, Replay::Undo),
            _ => unreachable!("one of them is set"),
        };
        let records = match fsck::read_records(file) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("utf8fsck: {e}");
                std::process::exit(EXIT_OPERATIONAL);
            }
        };
        let log = a
            .undo_log
            .as_deref()
            .map(|p| open_records(p, "undo", false));
        std::process::exit(fsck::replay(&records, how, a.json, log.as_ref()));
    }
    if a.dirs.is_empty() {
        usage("no DIR given");
    }
    if a.undo_log.is_some() && !a.fix {
        usage("--undo-log goes with -y, --apply or --undo");
    }
    let action = if a.fix {
        Action::Fix {
            undo_log: a
                .undo_log
                .as_deref()
                .map(|p| open_records(p, "undo", false)),
        }
    } else if let Some(p) = &a.plan {
        Action::Plan(open_records(p, "plan", true))
    } else {
        Action::Check
    };
    let cfg = Config {
        mapper: a.mapper(),
        deny: a.deny,
        unicode: a.unicode,
        action,
        cross_mounts: a.cross_mounts,
        json: a.json,
        jobs: a
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get().min(8))),
        // SAFETY: isatty only inspects the descriptor.
        progress: unsafe { libc::isatty(2) } == 1,
        verbose: a.verbose,
    };
    let roots: Vec<&Path> = a.dirs.iter().map(PathBuf::as_path).collect();
    std::process::exit(fsck::run(&cfg, &roots));
}
