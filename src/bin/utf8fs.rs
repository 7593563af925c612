//! `utf8fs SOURCE MOUNTPOINT [-f] [-o OPT[,OPT…]]`: mount a strict-UTF-8 view of SOURCE.

fn main() {
    eprintln!("utf8fs: not yet built");
    std::process::exit(1);
}
