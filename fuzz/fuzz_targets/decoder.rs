//! Compares the strict decoder with Rust's std on arbitrary bytes: validity, `valid_up_to`,
//! `error_len`, lossy output, chunks, and that decode tiles the input.
#![no_main]

use libfuzzer_sys::fuzz_target;

// The decoder is core-only; compiling its file directly keeps the FUSE dependencies out of the
// instrumented build.
#[path = "../../src/utf8.rs"]
#[allow(dead_code)]
mod utf8;

fuzz_target!(|data: &[u8]| {
    let theirs = std::str::from_utf8(data);
    let ours = utf8::from_utf8(data);
    assert_eq!(ours.ok(), theirs.ok());
    assert_eq!(
        utf8::validate(data).map_err(|e| (e.valid_up_to(), e.error_len())),
        theirs
            .map(|_| ())
            .map_err(|e| (e.valid_up_to(), e.error_len()))
    );
    assert_eq!(utf8::is_valid(data), theirs.is_ok());

    let lossy: String = utf8::lossy(data).collect();
    assert_eq!(lossy, String::from_utf8_lossy(data));

    let mut ours = utf8::chunks(data);
    for chunk in data.utf8_chunks() {
        let c = ours.next().expect("chunks ended early");
        assert_eq!((c.valid, c.invalid), (chunk.valid(), chunk.invalid()));
        assert_eq!(c.reason.is_some(), !c.invalid.is_empty());
    }
    assert!(ours.next().is_none());

    let mut offset = 0;
    for item in utf8::decode(data) {
        offset += match item {
            Ok(c) => c.len_utf8(),
            Err(e) => {
                assert_eq!(e.offset, offset);
                assert_eq!(&data[offset..offset + e.bytes.len()], e.bytes);
                e.bytes.len()
            }
        };
    }
    assert_eq!(offset, data.len());
});
