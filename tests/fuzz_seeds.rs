//! The fuzz targets' checks (`fuzz/checks/`) over their seed corpora (`fuzz/seeds/TARGET/`), so
//! that every `cargo test` runs what the fuzzers assert, and every finding kept as a seed stays
//! fixed.

use std::path::Path;

#[path = "../fuzz/checks/mapping.rs"]
mod mapping;
#[path = "../fuzz/checks/options.rs"]
mod options;

/// Every seed file of `target`, as (name, bytes).
fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no seeds in {}", dir.display());
    out
}

#[test]
fn mapping_seeds_in_every_mode_and_form() {
    for (name, data) in seeds("mapping") {
        // Each seed directory in all 10 modes/charsets and 3 forms, whatever its own header says.
        for m in 0..10u8 {
            for f in 0..3u8 {
                let mut input = vec![m, f];
                input.extend_from_slice(data.get(2..).unwrap_or_default());
                let run = std::panic::catch_unwind(|| mapping::check(&input));
                assert!(run.is_ok(), "seed {name}, mode {m}, form {f}");
            }
        }
    }
}

#[test]
fn options_seeds() {
    for (name, data) in seeds("options") {
        let run = std::panic::catch_unwind(|| options::check(&data));
        assert!(run.is_ok(), "seed {name}");
    }
}
