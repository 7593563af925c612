//! The strict decoder against `std::str::from_utf8` on (a) every file name under /usr, each
//! validated on its own as the mount does, and (b) 4 KiB of mixed-script text.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use utf8fs::utf8;

/// Most names collected, to bound start-up time and memory.
const MAX_NAMES: usize = 200_000;

/// File names under `root`, stored back to back with their end offsets; symlinks are not followed
/// and unreadable directories are skipped.
struct Names {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Names {
    fn collect(root: &str) -> Names {
        let mut names = Names {
            bytes: Vec::new(),
            ends: Vec::new(),
        };
        let mut dirs = vec![PathBuf::from(root)];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                if names.ends.len() >= MAX_NAMES {
                    return names;
                }
                names.bytes.extend_from_slice(entry.file_name().as_bytes());
                names.ends.push(names.bytes.len());
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    dirs.push(entry.path());
                }
            }
        }
        names
    }

    fn iter(&self) -> impl Iterator<Item = &[u8]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts.zip(&self.ends).map(|(s, &e)| &self.bytes[s..e])
    }
}

/// About 4 KiB of text cycling through Latin, Greek, Cyrillic, CJK and emoji snippets.
fn mixed_text() -> String {
    const SNIPPETS: &[&str] = &[
        "Le cœur a ses raisons que la raison ne connaît point. ",
        "Ἐν ἀρχῇ ἦν ὁ λόγος, καὶ ὁ λόγος ἦν πρὸς τὸν θεόν. ",
        "Съешь же ещё этих мягких французских булок, да выпей чаю. ",
        "春眠不覺曉，處處聞啼鳥。夜來風雨聲，花落知多少。",
        "🦀 🚀 📁 ✅ 🎉 👩‍💻 🇫🇷 ",
        "Grüße aus Köln, naïve façade, smörgåsbord. ",
        "日本語のファイル名と한국어 파일 이름. ",
    ];
    let mut text = String::new();
    for snippet in SNIPPETS.iter().cycle() {
        for c in snippet.chars() {
            if text.len() + c.len_utf8() > 4096 {
                return text;
            }
            text.push(c);
        }
    }
    text
}

fn file_names(c: &mut Criterion) {
    let names = Names::collect("/usr");
    let non_ascii = names.iter().filter(|n| !n.is_ascii()).count();
    let invalid = names.iter().filter(|n| !utf8::is_valid(n)).count();
    eprintln!(
        "corpus: {} names under /usr, {} bytes (mean {:.1}), {} not ASCII, {} not UTF-8",
        names.ends.len(),
        names.bytes.len(),
        names.bytes.len() as f64 / names.ends.len().max(1) as f64,
        non_ascii,
        invalid
    );
    let mut group = c.benchmark_group("file_names");
    group.throughput(Throughput::Bytes(names.bytes.len() as u64));
    group.bench_function("std", |b| {
        b.iter(|| {
            names
                .iter()
                .filter(|n| std::str::from_utf8(black_box(n)).is_ok())
                .count()
        })
    });
    group.bench_function("utf8fs", |b| {
        b.iter(|| {
            names
                .iter()
                .filter(|n| utf8::from_utf8(black_box(n)).is_ok())
                .count()
        })
    });
    group.finish();
}

fn mixed_script(c: &mut Criterion) {
    let text = mixed_text();
    let bytes = text.as_bytes();
    let mut group = c.benchmark_group("mixed_script_4k");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("std", |b| {
        b.iter(|| std::str::from_utf8(black_box(bytes)).is_ok())
    });
    group.bench_function("utf8fs", |b| {
        b.iter(|| utf8::from_utf8(black_box(bytes)).is_ok())
    });
    group.finish();
}

criterion_group!(benches, file_names, mixed_script);
criterion_main!(benches);
