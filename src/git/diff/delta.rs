//! git's delta encoding (the pack "copy/insert" instruction format) producing the same
//! instructions as git itself, so `GIT binary patch` sections match git byte for byte.
//!
//! The source is indexed by a rolling Rabin fingerprint of 16-byte blocks; the target is
//! scanned with the same fingerprint, and the longest source match at each position becomes a
//! copy, everything else an insert.

/// Bytes covered by one fingerprint.
const WINDOW: usize = 16;
/// Right shift that yields the fingerprint's top byte.
const SHIFT: u32 = 23;
/// Most entries kept per hash bucket.
const BUCKET_LIMIT: usize = 64;
/// A match this long is good enough: stop searching.
const GOOD_MATCH: usize = 4096;
/// Longest single copy instruction.
const MAX_COPY: usize = 0x10000;
/// Largest instruction, with the header and a full insert window (bounds the output check).
const MAX_OP_SIZE: usize = 5 + 5 + 1 + WINDOW + 7;
/// Low 31 bits of the fingerprint's modulus polynomial (x^31 is implied).
const POLYNOMIAL: u32 = 0x2b59_b4d1;

/// `byte(x) * x^shift mod P`, the polynomial arithmetic behind both tables.
const fn reduce(byte: u32, shift: u32) -> u32 {
    let mut value = byte;
    let mut i = 0;
    while i < shift {
        value <<= 1;
        if value & (1 << 31) != 0 {
            value ^= (1 << 31) | POLYNOMIAL;
        }
        i += 1;
    }
    value
}

/// `reduce(byte, shift)` for every byte, with the byte's low bit also moved to bit 31 when
/// `keep_bit31` (which cancels the bit the 8-bit shift leaves there).
const fn table(shift: u32, keep_bit31: bool) -> [u32; 256] {
    let mut table = [0; 256];
    let mut i = 0;
    while i < 256 {
        let byte = i as u32;
        let bit31 = if keep_bit31 { (byte & 1) << 31 } else { 0 };
        table[i] = bit31 ^ reduce(byte, shift);
        i += 1;
    }
    table
}

/// Folds the byte shifted out at the top back into the fingerprint (bit 31 of the shifted
/// value is cleared here too, keeping fingerprints at 31 bits).
const SHIFT_OUT: [u32; 256] = table(31, true);

/// Removes the contribution of the byte leaving the window (shifted in 15 bytes ago).
const LEAVING: [u32; 256] = table(8 * (WINDOW as u32 - 1), false);

fn push_byte(fingerprint: u32, byte: u8) -> u32 {
    ((fingerprint << 8) | u32::from(byte)) ^ SHIFT_OUT[(fingerprint >> SHIFT) as usize]
}

fn fingerprint(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0, |f, &b| push_byte(f, b))
}

/// A fingerprint of the source block ending at `end`, whose matching starts at `end`.
#[derive(Clone, Copy)]
struct Block {
    fingerprint: u32,
    end: usize,
}

/// Source blocks grouped by fingerprint bucket.
struct Index {
    mask: u32,
    /// `blocks[starts[b]..starts[b + 1]]` is bucket `b`.
    starts: Vec<usize>,
    blocks: Vec<Block>,
}

impl Index {
    fn new(source: &[u8]) -> Self {
        let count = (source.len() - 1) / WINDOW;
        let mut bits = 4;
        while (1usize << bits) < count / 4 {
            bits += 1;
        }
        let buckets = 1usize << bits;
        let mask = (buckets - 1) as u32;
        let found = source_blocks(source, count);
        // Group by bucket, lowest offsets first within each (a counting sort).
        let mut starts = vec![0; buckets + 1];
        for block in &found {
            starts[(block.fingerprint & mask) as usize + 1] += 1;
        }
        for b in 0..buckets {
            starts[b + 1] += starts[b];
        }
        let mut next = starts.clone();
        let mut grouped = found.clone();
        for block in found.iter().rev() {
            let b = (block.fingerprint & mask) as usize;
            grouped[next[b]] = *block;
            next[b] += 1;
        }
        // Thin out overfull buckets, compacting as we go.
        let mut blocks = Vec::with_capacity(grouped.len());
        for b in 0..buckets {
            let bucket = &grouped[starts[b]..starts[b + 1]];
            starts[b] = blocks.len();
            thin_out(bucket, &mut blocks);
        }
        starts[buckets] = blocks.len();
        Index {
            mask,
            starts,
            blocks,
        }
    }

    fn bucket(&self, fingerprint: u32) -> &[Block] {
        let b = (fingerprint & self.mask) as usize;
        &self.blocks[self.starts[b]..self.starts[b + 1]]
    }
}

/// The first `count` blocks of the source, from the end backwards; of a run of blocks with
/// the same fingerprint only the lowest is kept.
fn source_blocks(source: &[u8], count: usize) -> Vec<Block> {
    let mut found: Vec<Block> = Vec::with_capacity(count);
    for start in (0..count).rev().map(|i| i * WINDOW) {
        let end = start + WINDOW;
        let fp = fingerprint(&source[start + 1..=end]);
        match found.last_mut() {
            Some(last) if last.fingerprint == fp => last.end = end,
            _ => found.push(Block {
                fingerprint: fp,
                end,
            }),
        }
    }
    found
}

/// Appends the blocks of a bucket to `kept`; of an overfull one only `BUCKET_LIMIT`, the
/// others dropped evenly over it.
fn thin_out(list: &[Block], kept: &mut Vec<Block>) {
    if list.len() <= BUCKET_LIMIT {
        kept.extend_from_slice(list);
        return;
    }
    let excess = (list.len() - BUCKET_LIMIT) as isize;
    // Each kept block earns `excess`; every `BUCKET_LIMIT` earned drops the next block.
    let mut credit = 0isize;
    let mut i = 0;
    while i < list.len() {
        kept.push(list[i]);
        credit += excess;
        i += 1;
        while credit > 0 {
            i += 1;
            credit -= BUCKET_LIMIT as isize;
        }
    }
}

/// The instruction stream being written: pending inserts share one length byte.
struct Writer {
    out: Vec<u8>,
    /// Where the length byte of the open insert run is.
    insert_at: Option<usize>,
    /// Emulates git's output buffer growth, whose limit check decides when to give up.
    capacity: usize,
    max_size: usize,
}

impl Writer {
    fn insert(&mut self, byte: u8) {
        let at = *self.insert_at.get_or_insert_with(|| {
            self.out.push(0);
            self.out.len() - 1
        });
        self.out.push(byte);
        if self.out.len() - at - 1 == 0x7f {
            self.close_insert();
        }
    }

    fn inserted(&self) -> usize {
        self.insert_at.map_or(0, |at| self.out.len() - at - 1)
    }

    /// Takes back the last inserted byte (it became part of a copy).
    fn uninsert(&mut self) {
        self.out.pop();
        if self.inserted() == 0 {
            self.out.pop();
            self.insert_at = None;
        }
    }

    fn close_insert(&mut self) {
        if let Some(at) = self.insert_at.take() {
            self.out[at] = (self.out.len() - at - 1) as u8;
        }
    }

    fn copy(&mut self, offset: usize, size: usize) {
        self.close_insert();
        let op = self.out.len();
        self.out.push(0x80);
        for (i, shift) in [0, 8, 16, 24].into_iter().enumerate() {
            let byte = (offset >> shift) as u8;
            if byte != 0 {
                self.out.push(byte);
                self.out[op] |= 1 << i;
            }
        }
        for (i, shift) in [0, 8].into_iter().enumerate() {
            let byte = (size >> shift) as u8;
            if byte != 0 {
                self.out.push(byte);
                self.out[op] |= 0x10 << i;
            }
        }
    }

    /// git's check after each instruction: false once the delta is known to be too big.
    fn room_left(&mut self) -> bool {
        if self.out.len() < self.capacity - MAX_OP_SIZE {
            return true;
        }
        self.capacity = self.capacity * 3 / 2;
        if self.capacity >= self.max_size {
            self.capacity = self.max_size + MAX_OP_SIZE + 1;
        }
        self.out.len() <= self.max_size
    }
}

fn write_size(out: &mut Vec<u8>, mut size: usize) {
    while size >= 0x80 {
        out.push(size as u8 | 0x80);
        size >>= 7;
    }
    out.push(size as u8);
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The delta turning `source` into `target`, as git computes it, or None when either is
/// empty or the delta would be longer than `max_size` bytes.
pub fn delta(source: &[u8], target: &[u8], max_size: usize) -> Option<Vec<u8>> {
    if source.is_empty() || target.is_empty() {
        return None;
    }
    let index = Index::new(source);
    let mut w = Writer {
        out: Vec::new(),
        insert_at: None,
        capacity: if 8192 >= max_size {
            max_size + MAX_OP_SIZE + 1
        } else {
            8192
        },
        max_size,
    };
    write_size(&mut w.out, source.len());
    write_size(&mut w.out, target.len());
    let head = &target[..target.len().min(WINDOW)];
    w.out.push(0);
    w.insert_at = Some(w.out.len() - 1);
    w.out.extend_from_slice(head);
    let mut fp = fingerprint(head);
    let mut pos = head.len();
    let (mut match_at, mut match_len) = (0usize, 0usize);
    while pos < target.len() {
        if match_len < GOOD_MATCH {
            fp ^= LEAVING[target[pos - WINDOW] as usize];
            fp = push_byte(fp, target[pos]);
            for block in index.bucket(fp) {
                if block.fingerprint != fp {
                    continue;
                }
                let limit = (source.len() - block.end).min(target.len() - pos);
                if limit <= match_len {
                    break;
                }
                let len = common_prefix(&source[block.end..block.end + limit], &target[pos..]);
                if len > match_len {
                    match_len = len;
                    match_at = block.end;
                    if match_len >= GOOD_MATCH {
                        break;
                    }
                }
            }
        }
        if match_len < 4 {
            w.insert(target[pos]);
            pos += 1;
            match_len = 0;
        } else {
            // Extend the match backwards over bytes just inserted.
            while w.inserted() > 0 && match_at > 0 && source[match_at - 1] == target[pos - 1] {
                match_at -= 1;
                pos -= 1;
                match_len += 1;
                w.uninsert();
            }
            let rest = match_len.saturating_sub(MAX_COPY);
            let len = match_len - rest;
            w.copy(match_at, len);
            pos += len;
            match_at += len;
            match_len = if match_at > 0xffff_ffff { 0 } else { rest };
            if match_len < GOOD_MATCH {
                fp = fingerprint(&target[pos - WINDOW..pos]);
            }
        }
        if !w.room_left() {
            break;
        }
    }
    w.close_insert();
    (w.out.len() <= max_size).then_some(w.out)
}

/// Applies a delta (the inverse of [`delta`], used to check it).
#[cfg(test)]
fn apply(source: &[u8], delta: &[u8]) -> Vec<u8> {
    fn size(d: &[u8], i: &mut usize) -> usize {
        let (mut value, mut shift) = (0, 0);
        loop {
            let b = d[*i];
            *i += 1;
            value |= usize::from(b & 0x7f) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                return value;
            }
        }
    }
    let mut i = 0;
    assert_eq!(size(delta, &mut i), source.len());
    let target_len = size(delta, &mut i);
    let mut out = Vec::new();
    while i < delta.len() {
        let op = delta[i];
        i += 1;
        if op & 0x80 == 0 {
            out.extend_from_slice(&delta[i..i + usize::from(op)]);
            i += usize::from(op);
            continue;
        }
        let mut fields = [0usize; 2];
        for bit in 0..7 {
            if op & (1 << bit) != 0 {
                let (field, shift) = if bit < 4 {
                    (0, bit * 8)
                } else {
                    (1, (bit - 4) * 8)
                };
                fields[field] |= usize::from(delta[i]) << shift;
                i += 1;
            }
        }
        let len = if fields[1] == 0 { MAX_COPY } else { fields[1] };
        out.extend_from_slice(&source[fields[0]..fields[0] + len]);
    }
    assert_eq!(out.len(), target_len);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pseudo_random(len: usize, seed: u32) -> Vec<u8> {
        let mut x = seed;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect()
    }

    #[test]
    fn deltas_reproduce_the_target() {
        let source = pseudo_random(200_000, 7);
        let mut target = source.clone();
        target[1000] ^= 1;
        target.splice(5000..5000, pseudo_random(300, 9));
        target.extend_from_slice(&source[..70_000]);
        let d = delta(&source, &target, usize::MAX).unwrap();
        assert!(d.len() < 1000, "delta of {} bytes", d.len());
        assert_eq!(apply(&source, &d), target);
    }

    #[test]
    fn unrelated_data_is_inserted_and_a_size_bound_gives_up() {
        let (source, target) = (pseudo_random(5000, 1), pseudo_random(3000, 2));
        let d = delta(&source, &target, usize::MAX).unwrap();
        assert_eq!(apply(&source, &d), target);
        assert!(delta(&source, &target, 100).is_none());
        assert!(delta(b"", &target, usize::MAX).is_none());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 300, ..Default::default() })]

        /// Whatever the edits, a delta rebuilds its target and respects its size bound.
        #[test]
        fn deltas_always_apply(
            seed in 0u32..1000,
            len in 1usize..20_000,
            edits in proptest::collection::vec((0usize..20_000, 0usize..300, 0u32..1000), 0..8),
            bound in 1usize..30_000,
        ) {
            // Repetitive sources fill hash buckets; random ones do not.
            let source: Vec<u8> = if seed % 2 == 0 {
                pseudo_random(len, seed + 1)
            } else {
                b"abcdefghijklmnop".iter().copied().cycle().take(len).collect()
            };
            let mut target = source.clone();
            for (at, n, s) in edits {
                let at = at.min(target.len());
                let end = (at + n).min(target.len());
                target.splice(at..end, pseudo_random(n / 2, s + 1));
            }
            if let Some(d) = delta(&source, &target, usize::MAX) {
                proptest::prop_assert_eq!(apply(&source, &d), target.clone());
            }
            if let Some(d) = delta(&source, &target, bound) {
                proptest::prop_assert!(d.len() <= bound);
                proptest::prop_assert_eq!(apply(&source, &d), target);
            }
        }
    }

    #[test]
    fn short_inputs_work() {
        for (s, t) in [
            (&b"a"[..], &b"b"[..]),
            (b"abcdefgh", b"abcdefgh"),
            (b"x", b""),
        ] {
            if let Some(d) = delta(s, t, usize::MAX) {
                assert_eq!(apply(s, &d), t);
            }
        }
    }
}
