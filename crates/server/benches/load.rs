//! Load check for `tabgate serve` (filled in below).

fn main() {}
