//! Similarity of blobs as git's rename detection measures it: bytes counted per chunk of
//! content, and how many of one blob's bytes another one shares.

use crate::git::tree::is_binary;
use std::collections::HashMap;

/// Byte counts per chunk hash: chunks end at a newline or after 64 bytes (git's
/// `diffcore-delta`); CR before LF is ignored in text.
pub fn span_counts(data: &[u8]) -> Vec<(u32, u64)> {
    const HASHBASE: u32 = 107_927;
    let text = !is_binary(data);
    let mut counts: HashMap<u32, u64> = HashMap::new();
    let (mut accum1, mut accum2, mut n) = (0u32, 0u32, 0u64);
    let mut flush = |a1: u32, a2: u32, n: u64| {
        let hash = a1.wrapping_add(a2.wrapping_mul(0x61)) % HASHBASE;
        *counts.entry(hash).or_default() += n;
    };
    for (i, &c) in data.iter().enumerate() {
        if text && c == b'\r' && data.get(i + 1) == Some(&b'\n') {
            continue;
        }
        let old1 = accum1;
        accum1 = (accum1 << 7) ^ (accum2 >> 25);
        accum2 = (accum2 << 7) ^ (old1 >> 25);
        accum1 = accum1.wrapping_add(u32::from(c));
        n += 1;
        if n < 64 && c != b'\n' {
            continue;
        }
        flush(accum1, accum2, n);
        n = 0;
        accum1 = 0;
        accum2 = 0;
    }
    if n > 0 {
        flush(accum1, accum2, n);
    }
    let mut sorted: Vec<(u32, u64)> = counts.into_iter().collect();
    sorted.sort_unstable();
    sorted
}

/// Bytes of `dst` that also occur in `src`, chunk by chunk.
pub fn copied_bytes(src: &[(u32, u64)], dst: &[(u32, u64)]) -> u64 {
    let mut copied = 0;
    let mut j = 0;
    for &(hash, count) in src {
        while j < dst.len() && dst[j].0 < hash {
            j += 1;
        }
        if j < dst.len() && dst[j].0 == hash {
            copied += count.min(dst[j].1);
        }
    }
    copied
}
