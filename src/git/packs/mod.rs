//! Objects read straight from pack files, with the full objects at the bottom of delta chains
//! and every fourth step up a chain kept in one byte-bounded cache for every repository.
//!
//! In a pack written by git most versions of a file or a directory are deltas, chained down
//! to a few full objects: in git.git, 98 % of the deltified trees rest on 16 MiB of full trees.
//! gix inflates a chain's full object again for every chain it resolves (its cache holds only
//! a chain's result), which was most of the time of a page at an old commit. Here the full
//! object, or a step kept on the way up (a waypoint), comes from the cache, and only the deltas
//! above it are inflated and applied.
//!
//! An object this reader does not find in a pack of its set (a loose object, a pack written
//! since the set was read, a delta on an object of another pack) is the caller's to read
//! through gix.

use super::error::GitError;
use super::pack_index::{self, Fan};
use crate::byte_lru::ByteLru;
use gix::hash::oid;
use gix::object::Kind;
use gix::odb::pack;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use std::time::{Duration, Instant, SystemTime};

mod mapping;
use mapping::{advise_will_need, map_for_random_reads, reverse_index};

/// How long a listing of the pack directories is used before they are looked at again.
const RECHECK: Duration = Duration::from_secs(1);
/// Longest delta chain followed (git writes at most 50 by default; 4095 is git's own bound).
const MAX_CHAIN: usize = 4095;
/// Bytes of recent chain results kept per thread. Chains meet on their way down (every root
/// tree of git.git rests on a few bases), so a recent result is often a step of the next
/// chain; and the older side of a diff is usually one delta on the newer side just read.
const RECENT_BYTES: usize = 8 << 20;

/// Bytes of a pack asked for at once when all of it is read ahead.
const WHOLE_READ_STEP: u64 = 2 << 20;

/// Shards of the kept bases and waypoints.
const SHARDS: usize = 16;
/// Every this many deltas up a chain, the result is kept with the chain bases, so that the
/// chains through it resolve from there.
const WAYPOINT: usize = 4;

/// Where an entry is: its pack's serial and its data offset.
type Key = (u32, u64);

/// One pack file and its index, shared by every set that holds it.
struct Pack {
    serial: u32,
    bundle: pack::Bundle,
    fan: Fan,
    /// The index positions in the order their entries are stored (git's reverse index, or
    /// sorted on first use): what follows an entry, and which object a delta's base offset
    /// names.
    stored_order: OnceLock<Vec<u32>>,
}

impl Pack {
    /// The position of `id` in this pack's index, if the pack holds it.
    fn position(&self, id: &oid) -> Option<u32> {
        pack_index::lookup(&self.bundle.index, &self.fan, id)
    }
}

/// Every pack opened, by index path, and the chain bases and waypoints read from them.
pub struct Packs {
    opened: Mutex<HashMap<PathBuf, Weak<Pack>>>,
    next_serial: AtomicU32,
    next_set_serial: AtomicU64,
    /// In shards by key, so that the workers' lookups at every step of their chains seldom
    /// wait for each other.
    bases: Vec<Mutex<Kept>>,
    /// Bytes of chain bases and waypoints kept at most.
    limit: usize,
}

/// Objects by key, the least recently used dropped first when over their bytes: the chain
/// bases and waypoints of a shard, and a thread's recent chain results.
type Kept = ByteLru<Key, Object>;

fn kept(limit: usize) -> Kept {
    ByteLru::new(limit, |_, (_, bytes)| bytes.len())
}

/// The packs of one object directory and its alternates: listed on first use, and again when
/// a pack directory changed (looked at a second after the last look at the earliest, so that
/// a new pack is used and a pack deleted by a repack is let go).
pub struct PackSet {
    /// Which set this is, unique in the process (what is kept for a set is kept by it).
    pub serial: u64,
    pack_dirs: Vec<PathBuf>,
    hash: gix::hash::Kind,
    loaded: RwLock<Loaded>,
}

struct Loaded {
    packs: Vec<Arc<Pack>>,
    /// The pack directories' modification times when they were listed.
    stamps: Vec<Option<SystemTime>>,
    checked: Option<Instant>,
}

/// An object's kind and bytes.
pub type Object = (Kind, Arc<Vec<u8>>);

/// Per-thread buffers and the results of recent chains.
struct Scratch {
    inflate: libdeflater::Decompressor,
    /// For the first bytes of a delta only (libdeflate inflates whole streams).
    partial_inflate: gix::zlib::Inflate,
    delta: Vec<u8>,
    work: Vec<u8>,
    chain: Vec<pack::data::Entry>,
    recent: Kept,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            inflate: libdeflater::Decompressor::new(),
            partial_inflate: gix::zlib::Inflate::default(),
            delta: Vec::new(),
            work: Vec::new(),
            chain: Vec::new(),
            recent: kept(RECENT_BYTES),
        }
    }
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// Bytes of recent chain results kept by all threads together (their `Scratch::recent`).
static RECENT_HELD: AtomicUsize = AtomicUsize::new(0);

/// Bytes of recent chain results kept now, summed over the threads (at most [`RECENT_BYTES`]
/// each).
pub fn recent_bytes() -> usize {
    RECENT_HELD.load(Ordering::Relaxed)
}

/// Counts a change of a thread's recent chain results from `before` to `after` bytes.
fn recent_changed(before: usize, after: usize) {
    if after >= before {
        RECENT_HELD.fetch_add(after - before, Ordering::Relaxed);
    } else {
        RECENT_HELD.fetch_sub(before - after, Ordering::Relaxed);
    }
}

impl Packs {
    /// No packs open yet; at most `limit` bytes of chain bases and waypoints kept.
    pub fn new(limit: usize) -> Packs {
        Packs {
            opened: Mutex::default(),
            next_serial: AtomicU32::new(0),
            next_set_serial: AtomicU64::new(0),
            bases: (0..SHARDS)
                .map(|_| Mutex::new(kept(limit / SHARDS)))
                .collect(),
            limit,
        }
    }

    /// The packs of `objects_dir` and of its alternates, listed on first use (a pack of
    /// several sets, an alternate's, is opened once).
    pub fn set(&self, objects_dir: &Path, hash: gix::hash::Kind) -> PackSet {
        let mut dirs = vec![objects_dir.to_path_buf()];
        if let Ok(alternates) = gix::odb::alternate::resolve(objects_dir.to_path_buf(), objects_dir)
        {
            dirs.extend(alternates);
        }
        let pack_dirs: Vec<PathBuf> = dirs.into_iter().map(|d| d.join("pack")).collect();
        let loaded = Loaded {
            packs: Vec::new(),
            stamps: vec![None; pack_dirs.len()],
            checked: None,
        };
        PackSet {
            serial: self.next_set_serial.fetch_add(1, Ordering::Relaxed),
            pack_dirs,
            hash,
            loaded: RwLock::new(loaded),
        }
    }

    /// Lists the pack directories again if they changed since they were last listed.
    fn refresh(&self, set: &PackSet) {
        let stamps: Vec<Option<SystemTime>> = set.pack_dirs.iter().map(|d| modified(d)).collect();
        {
            let mut loaded = set.write();
            let first = loaded.checked.is_none();
            loaded.checked = Some(Instant::now());
            if !first && loaded.stamps == stamps {
                return;
            }
        }
        let packs = self.load(&set.pack_dirs, set.hash);
        let mut loaded = set.write();
        loaded.packs = packs;
        loaded.stamps = stamps;
    }

    fn load(&self, pack_dirs: &[PathBuf], hash: gix::hash::Kind) -> Vec<Arc<Pack>> {
        let mut packs = Vec::new();
        for dir in pack_dirs {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut indexes: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "idx"))
                .collect();
            indexes.sort();
            packs.extend(indexes.iter().filter_map(|p| self.open(p, hash)));
        }
        packs
    }

    fn open(&self, index: &Path, hash: gix::hash::Kind) -> Option<Arc<Pack>> {
        let mut opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pack) = opened.get(index).and_then(Weak::upgrade) {
            return Some(pack);
        }
        let (bundle, fan) = match map_for_random_reads(index, hash) {
            Ok(opened) => opened,
            Err(e) => {
                tracing::warn!(index = %index.display(), error = %e, "pack not opened");
                return None;
            }
        };
        let pack = Arc::new(Pack {
            serial: self.next_serial.fetch_add(1, Ordering::Relaxed),
            fan,
            bundle,
            stored_order: OnceLock::new(),
        });
        opened.retain(|_, p| p.strong_count() > 0);
        opened.insert(index.to_path_buf(), Arc::downgrade(&pack));
        Some(pack)
    }

    /// Object `id` of `set`: its kind and bytes (shared with the caches, not copied out of
    /// them), or `None` when no pack of the set can produce it alone.
    pub fn read(&self, set: &PackSet, id: &oid) -> Result<Option<Object>, GitError> {
        let Some((pack, offset)) = self.locate(set, id) else {
            return Ok(None);
        };
        SCRATCH.with_borrow_mut(|scratch| self.resolve(&pack, offset, scratch))
    }

    /// The size of object `id` of `set`, from its entry's header or, for a delta, from the
    /// delta's own header (it states its result's size): no chain is followed and nothing
    /// inflated but a delta's first bytes. `None` when no pack of the set holds it.
    pub fn size(&self, set: &PackSet, id: &oid) -> Result<Option<u64>, GitError> {
        let Some((pack, offset)) = self.locate(set, id) else {
            return Ok(None);
        };
        let data = &pack.bundle.pack;
        let entry = data.entry(offset).map_err(GitError::internal)?;
        if !entry.header.is_delta() {
            return Ok(Some(entry.decompressed_size));
        }
        let mut head = [0u8; 20];
        let head_len = entry.decompressed_size.min(head.len() as u64) as usize;
        let input = compressed(data, &entry)?;
        let produced = SCRATCH.with_borrow_mut(|scratch| {
            scratch.partial_inflate.reset();
            scratch
                .partial_inflate
                .once(input, &mut head[..head_len])
                .map(|(_, _, produced)| produced)
                .map_err(|e| GitError::internal_msg(format!("delta header not inflated: {e}")))
        })?;
        let mut header = &head[..produced];
        delta_size(&mut header)?;
        Ok(Some(delta_size(&mut header)? as u64))
    }

    /// Where object `id` of `set` is stored, when a pack of the set holds it.
    pub fn place(&self, set: &PackSet, id: &oid) -> Option<Place> {
        self.locate(set, id)
            .map(|(pack, offset)| Place { pack, offset })
    }

    /// Where `id` is in the set's packs (listed again first when due; an object missed in
    /// between is read through gix, which is never wrong, only slower).
    fn locate(&self, set: &PackSet, id: &oid) -> Option<(Arc<Pack>, u64)> {
        let due = set
            .loaded
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .checked
            .is_none_or(|c| c.elapsed() >= RECHECK);
        if due {
            self.refresh(set);
        }
        set.find(id)
    }

    /// Resolves the entry at `offset` of `pack`: down its chain to a full object or a kept
    /// result, then up again applying each delta, keeping every `WAYPOINT`th result on the way.
    fn resolve(
        &self,
        pack: &Pack,
        offset: u64,
        scratch: &mut Scratch,
    ) -> Result<Option<Object>, GitError> {
        let data = &pack.bundle.pack;
        let mut entry = data.entry(offset).map_err(GitError::internal)?;
        let top = (pack.serial, entry.data_offset);
        scratch.chain.clear();
        let (kind, start) = loop {
            let key = (pack.serial, entry.data_offset);
            if let Some(found) = scratch
                .recent
                .get(&key)
                .cloned()
                .or_else(|| self.lock_bases(key).get(&key).cloned())
            {
                break found;
            }
            let base = match entry.header {
                pack::data::entry::Header::OfsDelta { base_distance } => entry
                    .checked_base_pack_offset(base_distance)
                    .ok_or_else(|| GitError::internal_msg("delta base before the pack's start"))?,
                pack::data::entry::Header::RefDelta { base_id } => match pack.position(&base_id) {
                    Some(i) => pack.bundle.index.pack_offset_at_index(i),
                    None => return Ok(None),
                },
                header => {
                    let kind = header.as_kind().expect("not a delta");
                    let mut bytes = Vec::new();
                    inflate_into(data, &entry, &mut scratch.inflate, &mut bytes)?;
                    let bytes = Arc::new(bytes);
                    if scratch.chain.is_empty() {
                        return Ok(Some((kind, bytes)));
                    }
                    self.keep(key, kind, &bytes);
                    break (kind, bytes);
                }
            };
            if scratch.chain.len() == MAX_CHAIN {
                return Err(GitError::internal_msg("delta chain too long"));
            }
            scratch.chain.push(entry);
            entry = data.entry(base).map_err(GitError::internal)?;
        };
        if scratch.chain.is_empty() {
            return Ok(Some((kind, start)));
        }
        // Apply from the deepest delta up, between the result and the work buffer. A kept
        // waypoint is the next step's base as it is, not a copy.
        let chain = std::mem::take(&mut scratch.chain);
        let mut kept = Some(start);
        let mut result = Vec::new();
        let mut other = std::mem::take(&mut scratch.work);
        for (applied, delta) in chain.iter().rev().enumerate() {
            inflate_into(data, delta, &mut scratch.inflate, &mut scratch.delta)?;
            let base: &[u8] = kept.as_deref().unwrap_or(&result);
            apply_delta(base, &scratch.delta, &mut other)?;
            std::mem::swap(&mut result, &mut other);
            kept = None;
            let level = applied + 1;
            if level < chain.len() && level % WAYPOINT == 0 {
                let waypoint = Arc::new(fitted(std::mem::take(&mut result)));
                self.keep((pack.serial, delta.data_offset), kind, &waypoint);
                kept = Some(waypoint);
            }
        }
        scratch.chain = chain;
        scratch.work = other;
        let result = Arc::new(fitted(result));
        scratch.remember(top, kind, &result);
        Ok(Some((kind, result)))
    }

    /// Keeps a chain base or waypoint (not one over a quarter of its shard).
    fn keep(&self, key: Key, kind: Kind, bytes: &Arc<Vec<u8>>) {
        if bytes.len() <= self.limit / SHARDS / 4 {
            self.lock_bases(key).put(key, (kind, Arc::clone(bytes)));
        }
    }

    /// Bytes of chain bases and waypoints kept now (over every shard).
    pub fn bytes(&self) -> usize {
        (0..SHARDS)
            .map(|shard| self.lock_shard(shard).bytes())
            .sum()
    }

    fn lock_bases(&self, (serial, offset): Key) -> std::sync::MutexGuard<'_, Kept> {
        self.lock_shard((offset ^ u64::from(serial)) as usize % SHARDS)
    }

    fn lock_shard(&self, shard: usize) -> std::sync::MutexGuard<'_, Kept> {
        self.bases[shard].lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Where an object is stored: its pack (kept mapped while this lives) and its entry's offset.
pub struct Place {
    pack: Arc<Pack>,
    offset: u64,
}

/// An entry as it is stored: its header, the size of what it inflates to, its zlib stream.
pub struct Stored<'a> {
    pub header: pack::data::entry::Header,
    pub inflated_size: u64,
    pub compressed: &'a [u8],
}

impl Place {
    /// What orders and names entries: the pack's serial and the entry's offset.
    pub fn key(&self) -> (u32, u64) {
        (self.pack.serial, self.offset)
    }

    /// The entry as stored, its end found from the entry stored after it.
    pub fn stored(&self) -> Result<Stored<'_>, GitError> {
        let data = &self.pack.bundle.pack;
        let entry = data.entry(self.offset).map_err(GitError::internal)?;
        let end = self
            .pack
            .entry_after(self.offset)
            .unwrap_or(data.pack_end() as u64);
        let compressed = data
            .entry_slice(entry.data_offset..end)
            .ok_or_else(|| GitError::internal_msg("pack entry beyond the pack's end"))?;
        Ok(Stored {
            header: entry.header,
            inflated_size: entry.decompressed_size,
            compressed,
        })
    }

    /// Has the kernel read the next `bytes` of the pack from this entry on, for a reader going
    /// through the pack in order (it is mapped with readahead off); returns where that ends.
    pub fn read_ahead(&self, bytes: u64) -> u64 {
        let data = &self.pack.bundle.pack;
        let end = self
            .offset
            .saturating_add(bytes)
            .min(data.pack_end() as u64);
        if let Some(ahead) = data.entry_slice(self.offset..end) {
            advise_will_need(ahead);
        }
        end
    }

    /// The id of the object whose entry is at `offset` in the same pack.
    pub fn id_at(&self, offset: u64) -> Option<gix::ObjectId> {
        let index = &self.pack.bundle.index;
        let order = self.pack.stored_order();
        let at = order
            .binary_search_by_key(&offset, |&i| index.pack_offset_at_index(i))
            .ok()?;
        Some(index.oid_at_index(order[at]).to_owned())
    }
}

impl Pack {
    fn stored_order(&self) -> &[u32] {
        self.stored_order.get_or_init(|| {
            if let Some(order) = reverse_index(&self.bundle) {
                return order;
            }
            let index = &self.bundle.index;
            let count = index.num_objects();
            let position_bits = u32::BITS - count.leading_zeros();
            let offset_bits = u64::BITS - (self.bundle.pack.pack_end() as u64).leading_zeros();
            if offset_bits + position_bits > u64::BITS {
                let mut order: Vec<u32> = (0..count).collect();
                order.sort_unstable_by_key(|&i| index.pack_offset_at_index(i));
                return order;
            }
            // Each offset with its position in one word: sorted without reading the index
            // again for every comparison (11.5 M objects: 9 s that way).
            let mut keyed: Vec<u64> = (0..count)
                .map(|i| index.pack_offset_at_index(i) << position_bits | u64::from(i))
                .collect();
            keyed.sort_unstable();
            let position = (1u64 << position_bits) - 1;
            keyed.into_iter().map(|k| (k & position) as u32).collect()
        })
    }

    /// The offset of the entry stored after the one at `offset`, if one is.
    fn entry_after(&self, offset: u64) -> Option<u64> {
        let index = &self.bundle.index;
        let order = self.stored_order();
        let next = order.partition_point(|&i| index.pack_offset_at_index(i) <= offset);
        order.get(next).map(|&i| index.pack_offset_at_index(i))
    }
}

impl PackSet {
    /// Has the kernel read all of the set's packs ahead, in order, on a thread of its own, for
    /// a reader about to go through most of them out of order (a full clone's walk); they are
    /// mapped for random reads, which would otherwise fetch a page at a time.
    pub fn read_all_ahead(&self) {
        let packs = self
            .loaded
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .packs
            .clone();
        let reading = move || {
            for pack in packs {
                let data = &pack.bundle.pack;
                let end = data.pack_end() as u64;
                let mut at = 0;
                while at < end {
                    // The kernel reads at most its read-ahead window for one request.
                    let to = end.min(at + WHOLE_READ_STEP);
                    if let Some(bytes) = data.entry_slice(at..to) {
                        advise_will_need(bytes);
                    }
                    at = to;
                }
            }
        };
        let spawned = std::thread::Builder::new()
            .name("cgitd-read-ahead".into())
            .spawn(reading);
        if let Err(e) = spawned {
            tracing::debug!(error = %e, "no thread to read packs ahead");
        }
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Loaded> {
        self.loaded.write().unwrap_or_else(|e| e.into_inner())
    }

    fn find(&self, id: &oid) -> Option<(Arc<Pack>, u64)> {
        let loaded = self.loaded.read().unwrap_or_else(|e| e.into_inner());
        loaded.packs.iter().find_map(|pack| {
            let i = pack.position(id)?;
            Some((Arc::clone(pack), pack.bundle.index.pack_offset_at_index(i)))
        })
    }
}

impl Scratch {
    fn remember(&mut self, key: Key, kind: Kind, bytes: &Arc<Vec<u8>>) {
        if bytes.len() <= RECENT_BYTES / 16 {
            let before = self.recent.bytes();
            self.recent.put(key, (kind, Arc::clone(bytes)));
            recent_changed(before, self.recent.bytes());
        }
    }
}

impl Drop for Scratch {
    /// A thread that ends takes its recent chain results out of the count.
    fn drop(&mut self) {
        recent_changed(self.recent.bytes(), 0);
    }
}

/// `bytes` in an allocation near its length. A result is made in whichever of the thread's
/// two buffers the chain ended in, which may have held a far larger object before, and kept
/// results are counted by their length.
fn fitted(mut bytes: Vec<u8>) -> Vec<u8> {
    if bytes.capacity() > bytes.len() + bytes.len() / 4 {
        bytes.shrink_to_fit();
    }
    bytes
}

fn modified(dir: &Path) -> Option<SystemTime> {
    std::fs::metadata(dir).and_then(|m| m.modified()).ok()
}

/// The compressed data of `entry`: the rest of the pack, as a zlib stream ends itself.
fn compressed<'a>(
    data: &'a pack::data::File,
    entry: &pack::data::Entry,
) -> Result<&'a [u8], GitError> {
    data.entry_slice(entry.data_offset..data.pack_end() as u64)
        .ok_or_else(|| GitError::internal_msg("pack entry beyond the pack's end"))
}

/// Inflates the data of `entry` (an object, or a delta's instructions) into `out`: exactly the
/// size its header gives, or an error. libdeflate inflates a whole stream in one call, with none
/// of a streaming inflater's state to carry between calls.
fn inflate_into(
    data: &pack::data::File,
    entry: &pack::data::Entry,
    inflate: &mut libdeflater::Decompressor,
    out: &mut Vec<u8>,
) -> Result<(), GitError> {
    let size = usize::try_from(entry.decompressed_size)
        .map_err(|_| GitError::internal_msg("object too large"))?;
    let input = compressed(data, entry)?;
    out.clear();
    out.resize(size, 0);
    match inflate.zlib_decompress(input, out) {
        Ok(written) if written == size => Ok(()),
        Ok(_) => Err(GitError::internal_msg(
            "pack entry shorter than its header says",
        )),
        Err(e) => Err(GitError::internal_msg(format!(
            "pack entry not inflated: {e}"
        ))),
    }
}

/// A delta header's size: seven bits a byte, least significant first.
fn delta_size(data: &mut &[u8]) -> Result<usize, GitError> {
    let mut size = 0usize;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = data
            .split_first()
            .ok_or_else(|| GitError::internal_msg("truncated delta header"))?;
        *data = rest;
        size |= usize::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(size);
        }
    }
    Err(GitError::internal_msg("delta header too long"))
}

fn corrupt() -> GitError {
    GitError::internal_msg("corrupt delta")
}

/// Applies git's delta `delta` to `base`, into `out`: copies of base ranges and inserted bytes.
fn apply_delta(base: &[u8], mut delta: &[u8], out: &mut Vec<u8>) -> Result<(), GitError> {
    if delta_size(&mut delta)? != base.len() {
        return Err(GitError::internal_msg("delta base size mismatch"));
    }
    let size = delta_size(&mut delta)?;
    if out.capacity() < size {
        // a new buffer: growing the old one would copy its stale bytes
        *out = Vec::with_capacity(size);
    }
    out.clear();
    while let Some((&op, rest)) = delta.split_first() {
        delta = rest;
        if op & 0x80 != 0 {
            let mut field = |bits: u8, bytes: usize| -> Result<usize, GitError> {
                let mut value = 0;
                for i in 0..bytes {
                    if bits & (1 << i) != 0 {
                        let (&b, rest) = delta.split_first().ok_or_else(corrupt)?;
                        delta = rest;
                        value |= usize::from(b) << (8 * i);
                    }
                }
                Ok(value)
            };
            let offset = field(op, 4)?;
            let len = match field(op >> 4, 3)? {
                0 => 0x10000,
                n => n,
            };
            let end = offset.checked_add(len).ok_or_else(corrupt)?;
            out.extend_from_slice(base.get(offset..end).ok_or_else(corrupt)?);
        } else if op != 0 {
            let (bytes, rest) = delta
                .split_at_checked(usize::from(op))
                .ok_or_else(corrupt)?;
            out.extend_from_slice(bytes);
            delta = rest;
        } else {
            return Err(corrupt());
        }
    }
    if out.len() != size {
        return Err(GitError::internal_msg("delta result size mismatch"));
    }
    Ok(())
}
