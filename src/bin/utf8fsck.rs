//! `utf8fsck [OPTIONS] DIR...`: check and repair file names offline.

fn main() {
    eprintln!("utf8fsck: not yet built");
    std::process::exit(16);
}
