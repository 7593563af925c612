//! Name mapping in every mode over random directories of random byte names: legal shown names,
//! injective, and shown → backing → shown round trips (see `checks/mapping.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../checks/mapping.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::check(data));
