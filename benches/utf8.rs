//! Placeholder benchmark.
fn main() {}
