//! Changed-path Bloom filters from the repository's commit-graph (BIDX/BDAT chunks), read
//! through memory maps. gix does not use them, so path-limited history asks here first whether
//! a commit can have changed a path, and compares trees only when the answer is "maybe".
//!
//! Format: git's Documentation/gitformat-commit-graph and bloom.c semantics — keys are hashed
//! with seeded 32-bit murmur3, `num_hashes` bit positions by double hashing; filters describe the
//! diff against the first parent; an empty filter means "unknown".

use memmap2::Mmap;
use std::fs::File;
use std::path::{Path, PathBuf};

const SEED0: u32 = 0x293a_e76f;
const SEED1: u32 = 0x7e64_6e2c;

/// One commit-graph file's lookup table and filters.
#[derive(Debug)]
struct Layer {
    map: Mmap,
    fanout: usize,
    oid_lookup: usize,
    commits: usize,
    hash_len: usize,
    bidx: usize,
    bdat: usize,
    bdat_end: usize,
    num_hashes: u32,
    version: u32,
}

/// The Bloom filters of every commit-graph layer of a repository.
#[derive(Debug)]
pub struct BloomFilters {
    layers: Vec<Layer>,
}

impl BloomFilters {
    /// Opens the commit-graph (single file or split chain) below `git_dir`; `None` when there
    /// is none or it carries no changed-path filters.
    pub fn open(git_dir: &Path) -> Option<BloomFilters> {
        let layers: Vec<Layer> = graph_files(git_dir)
            .iter()
            .filter_map(|path| Layer::open(path))
            .collect();
        (!layers.is_empty()).then_some(BloomFilters { layers })
    }

    /// The files whose metadata decides whether an opened index is still current.
    pub fn sources(git_dir: &Path) -> Vec<PathBuf> {
        let info = git_dir.join("objects/info");
        vec![
            info.join("commit-graph"),
            info.join("commit-graphs/commit-graph-chain"),
        ]
    }

    /// Whether `commit` may have changed `path` relative to its first parent: `Some(false)` is
    /// certain, `Some(true)` is a maybe, `None` means no filter covers the commit.
    pub fn maybe_changed(&self, commit: &[u8], path: &[u8]) -> Option<bool> {
        self.layers
            .iter()
            .find_map(|layer| layer.position(commit).map(|pos| (layer, pos)))
            .and_then(|(layer, pos)| layer.contains(pos, path))
    }
}

/// The single commit-graph file, or the files of a split chain.
fn graph_files(git_dir: &Path) -> Vec<PathBuf> {
    let info = git_dir.join("objects/info");
    let single = info.join("commit-graph");
    if single.is_file() {
        return vec![single];
    }
    let dir = info.join("commit-graphs");
    std::fs::read_to_string(dir.join("commit-graph-chain"))
        .map(|chain| {
            chain
                .lines()
                .filter(|l| l.len() >= 40 && l.bytes().all(|b| b.is_ascii_hexdigit()))
                .map(|hash| dir.join(format!("graph-{hash}.graph")))
                .collect()
        })
        .unwrap_or_default()
}

fn be32(data: &[u8], at: usize) -> Option<u32> {
    let bytes = data.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes(bytes.try_into().ok()?))
}

fn be64(data: &[u8], at: usize) -> Option<u64> {
    let bytes = data.get(at..at.checked_add(8)?)?;
    Some(u64::from_be_bytes(bytes.try_into().ok()?))
}

/// Filters have 7 hash functions in every git so far; a count far beyond that is garbage
/// (and would make every lookup loop for a long time).
const MAX_HASHES: u32 = 64;

impl Layer {
    /// The layer in the file at `path`; `None` unless the file is a commit-graph whose
    /// header, chunk table and the chunks used here are all complete and consistent, so that
    /// every later read stays inside the file.
    fn open(path: &Path) -> Option<Layer> {
        // (not opening what is not a file: a FIFO would block)
        if !std::fs::metadata(path).ok()?.is_file() {
            return None;
        }
        let file = File::open(path).ok()?;
        // SAFETY: git replaces commit-graph files by renaming new ones into place and never
        // writes into an existing file, so the mapped bytes do not change under us.
        let map = unsafe { Mmap::map(&file) }.ok()?;
        let header = map.get(0..8)?;
        if &header[0..4] != b"CGPH" || header[4] != 1 {
            return None;
        }
        let hash_len = match header[5] {
            1 => 20,
            2 => 32,
            _ => return None,
        };
        let chunks = usize::from(header[6]);
        // The table has one entry per chunk and a terminating one whose offset ends the last
        // chunk; each chunk ends where the next entry's chunk begins.
        let find = |id: &[u8; 4]| -> Option<(usize, usize)> {
            (0..chunks).find_map(|i| {
                let entry = 8 + i * 12;
                (map.get(entry..entry + 4)? == id).then_some(())?;
                let start = usize::try_from(be64(&map, entry + 4)?).ok()?;
                let end = usize::try_from(be64(&map, entry + 16)?).ok()?;
                (start <= end && end <= map.len()).then_some((start, end))
            })
        };
        let (fanout, fanout_end) = find(b"OIDF")?;
        let (oid_lookup, oid_lookup_end) = find(b"OIDL")?;
        let (bidx, bidx_end) = find(b"BIDX")?;
        let (bdat, bdat_end) = find(b"BDAT")?;
        if fanout_end - fanout < 256 * 4 {
            return None;
        }
        let commits = usize::try_from(be32(&map, fanout + 255 * 4)?).ok()?;
        let fits = |start: usize, end: usize, width: usize| {
            commits
                .checked_mul(width)
                .is_some_and(|len| len <= end - start)
        };
        if !fits(oid_lookup, oid_lookup_end, hash_len) || !fits(bidx, bidx_end, 4) {
            return None;
        }
        if bdat_end - bdat < 12 {
            return None;
        }
        let version = be32(&map, bdat)?;
        let num_hashes = be32(&map, bdat + 4)?;
        if !(1..=2).contains(&version) || !(1..=MAX_HASHES).contains(&num_hashes) {
            return None;
        }
        Some(Layer {
            map,
            fanout,
            oid_lookup,
            commits,
            hash_len,
            bidx,
            bdat: bdat + 12,
            bdat_end,
            num_hashes,
            version,
        })
    }

    /// The index of `commit` in this layer's sorted id table.
    fn position(&self, commit: &[u8]) -> Option<usize> {
        if commit.len() != self.hash_len {
            return None;
        }
        // The fanout may be garbage: the range is clamped to the table, which `open` checked.
        let first = usize::from(commit[0]);
        let lo = if first == 0 {
            0
        } else {
            be32(&self.map, self.fanout + (first - 1) * 4)? as usize
        };
        let hi = be32(&self.map, self.fanout + first * 4)? as usize;
        let ids = self
            .map
            .get(self.oid_lookup..self.oid_lookup + self.commits * self.hash_len)?;
        let (mut lo, mut hi) = (lo, hi.min(self.commits));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let id = ids.get(mid * self.hash_len..(mid + 1) * self.hash_len)?;
            match id.cmp(commit) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// Whether the filter of the commit at `pos` may contain `path`; `None` when the filter
    /// is empty (unknown) or its offsets do not lie inside the BDAT chunk.
    fn contains(&self, pos: usize, path: &[u8]) -> Option<bool> {
        let start = if pos == 0 {
            0
        } else {
            be32(&self.map, self.bidx + (pos - 1) * 4)? as usize
        };
        let end = be32(&self.map, self.bidx + pos * 4)? as usize;
        let (start, end) = (self.bdat.checked_add(start)?, self.bdat.checked_add(end)?);
        if start >= end || end > self.bdat_end {
            return None;
        }
        let filter = self.map.get(start..end)?;
        let signed = self.version == 1;
        let h0 = murmur3(SEED0, path, signed);
        let h1 = murmur3(SEED1, path, signed);
        let bits = filter.len() as u64 * 8;
        let all_set = (0..self.num_hashes).all(|i| {
            let bit = u64::from(h0.wrapping_add(i.wrapping_mul(h1))) % bits;
            filter
                .get((bit / 8) as usize)
                .is_some_and(|byte| byte & (1 << (bit % 8)) != 0)
        });
        Some(all_set)
    }
}

/// Seeded 32-bit murmur3 as git computes it; version 1 filters sign-extend bytes ≥ 0x80 (a
/// bug git keeps for compatibility).
fn murmur3(seed: u32, data: &[u8], signed: bool) -> u32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;
    let byte = |b: u8| {
        if signed {
            b as i8 as i32 as u32
        } else {
            u32::from(b)
        }
    };
    let mut h = seed;
    let blocks = data.len() / 4;
    for i in 0..blocks {
        let b = &data[i * 4..i * 4 + 4];
        let mut k = byte(b[0]) | byte(b[1]) << 8 | byte(b[2]) << 16 | byte(b[3]) << 24;
        k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h ^= k;
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let tail = &data[blocks * 4..];
    let mut k1 = 0u32;
    if tail.len() == 3 {
        k1 ^= byte(tail[2]) << 16;
    }
    if tail.len() >= 2 {
        k1 ^= byte(tail[1]) << 8;
    }
    if !tail.is_empty() {
        k1 ^= byte(tail[0]);
        k1 = k1.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h ^= k1;
    }
    h ^= data.len() as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

#[cfg(test)]
mod tests {
    use super::murmur3;

    #[test]
    fn murmur3_matches_known_values() {
        // Reference values of the standard 32-bit murmur3 (also in git's t0095-bloom).
        assert_eq!(murmur3(0, b"", false), 0);
        assert_eq!(murmur3(0, b"Hello world!", false), 0x627b_0c2c);
        assert_eq!(
            murmur3(0, b"The quick brown fox jumps over the lazy dog", false),
            0x2e4f_f723
        );
        assert_eq!(
            murmur3(0, b"\x99\xaa\xbb\xcc\xdd\xee\xff", false),
            0xa183_ccfd
        );
        // Version 1 differs only for bytes ≥ 0x80 (checked against git in tests/bloom.rs).
        assert_eq!(
            murmur3(7, b"ascii/path.c", true),
            murmur3(7, b"ascii/path.c", false)
        );
        assert_ne!(murmur3(0, b"\xff", true), murmur3(0, b"\xff", false));
    }
}
