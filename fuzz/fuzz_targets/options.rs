//! The mount-option parser on arbitrary command lines: no panic, one clean error line, accepted
//! options that mean what they say (see `checks/options.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../checks/options.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::check(data));
