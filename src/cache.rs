//! A byte-bounded LRU of rendered fragments that are pure functions of object ids and render
//! options (diff bodies, highlighted blobs), keyed by those — not by repository — so the same
//! commit in many forks is rendered once; and the admission rule it shares with the response
//! cache: keep what was costly to make, or asked for before.

use crate::byte_lru::ByteLru;
use crate::git::log::{WalkIds, WalkMemo};
use lru::LruCache;
use prometheus_client::metrics::counter::Counter;
use std::hash::{BuildHasher, Hash, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A result that took at least this much CPU time to make is kept the first time.
pub const COSTLY: Duration = Duration::from_millis(10);

/// The CPU time the calling thread has used.
pub fn thread_cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec.max(0) as u64, t.tv_nsec as u32)
}

/// Keys remembered as asked for once: a crawler at 1,500 pages a second takes about 40 s to
/// push a key out, a person's reload comes much sooner.
const SEEN_SLOTS: usize = 1 << 16;

/// Which results a cache keeps: those that cost at least [`COSTLY`] to make, and those whose
/// key was asked for before. A crawler never asks for a URL twice, so its cheap pages pass by
/// without evicting the pages people come back to, and without the cost of keeping them.
///
/// The keys asked for once are remembered as hashes in a fixed table, one per slot, the newest
/// winning: a collision forgets a key (it is kept a request later) or, rarely, admits one early.
pub struct Admission {
    seen: Box<[AtomicU64]>,
    hasher: RandomState,
}

impl Default for Admission {
    fn default() -> Self {
        Admission {
            seen: (0..SEEN_SLOTS).map(|_| AtomicU64::new(0)).collect(),
            hasher: RandomState::new(),
        }
    }
}

impl Admission {
    /// Whether the result for `key`, which took `cost` of CPU time to make, is worth keeping.
    pub fn admits(&self, key: &impl Hash, cost: Duration) -> bool {
        let hash = self.hasher.hash_one(key) | 1;
        let slot = &self.seen[(hash >> 48) as usize % SEEN_SLOTS];
        let asked_before = slot.swap(hash, Ordering::Relaxed) == hash;
        asked_before || cost >= COSTLY
    }
}

/// Hit, miss and eviction counts (exported as metrics).
#[derive(Default, Debug, Clone)]
pub struct CacheStats {
    pub hits: Counter,
    pub misses: Counter,
    pub evictions: Counter,
}

/// The fragment cache. Cloning shares it.
pub struct FragmentCache {
    budget: usize,
    entries: Mutex<ByteLru<String, Arc<str>>>,
    admission: Admission,
    pub stats: CacheStats,
}

impl FragmentCache {
    /// A cache holding at most `budget` bytes of keys and values.
    pub fn new(budget: usize) -> FragmentCache {
        FragmentCache {
            budget,
            entries: Mutex::new(ByteLru::new(budget, |k, v| k.len() + v.len())),
            admission: Admission::default(),
            stats: CacheStats::default(),
        }
    }

    /// The cached fragment for `key`, or the one `render` makes (cached when it fits and the
    /// [`Admission`] rule keeps it).
    pub fn get_or_render<E>(
        &self,
        key: &str,
        render: impl FnOnce() -> Result<String, E>,
    ) -> Result<Arc<str>, E> {
        if let Some(hit) = self.lock().get(key).cloned() {
            self.stats.hits.inc();
            return Ok(hit);
        }
        self.stats.misses.inc();
        let started = thread_cpu_time();
        let value: Arc<str> = render()?.into();
        if self
            .admission
            .admits(&key, thread_cpu_time().saturating_sub(started))
        {
            self.insert(key, Arc::clone(&value));
        }
        Ok(value)
    }

    fn insert(&self, key: &str, value: Arc<str>) {
        let size = key.len() + value.len();
        if size > self.budget {
            return;
        }
        let evicted = self.lock().put(key.to_string(), value);
        self.stats.evictions.inc_by(evicted as u64);
    }

    /// Bytes held now (keys and values).
    pub fn bytes(&self) -> usize {
        self.lock().bytes()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ByteLru<String, Arc<str>>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Recent walks by (tips, exclusions, path, order); bounded in entries (each holds at most one
/// walk budget of ids).
#[derive(Debug)]
pub struct WalkCache {
    entries: Mutex<LruCache<String, Arc<WalkIds>>>,
}

/// Walks remembered at once.
const WALKS: usize = 16;

impl Default for WalkCache {
    fn default() -> Self {
        WalkCache {
            entries: Mutex::new(LruCache::new(
                std::num::NonZeroUsize::new(WALKS).expect("non-zero"),
            )),
        }
    }
}

impl WalkMemo for WalkCache {
    fn get(&self, key: &str) -> Option<Arc<WalkIds>> {
        self.lock().get(key).cloned()
    }

    fn put(&self, key: String, walk: Arc<WalkIds>) {
        self.lock().put(key, walk);
    }
}

impl WalkCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<String, Arc<WalkIds>>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Facts about objects by id that never change, in any repository: object sizes (tree
/// listings show one per entry; reading a packed object's header can mean inflating the start
/// of its delta), and which trees hold a single directory (listings collapse those).
///
/// Two generations of plain hash maps, not an LRU: a lookup is one probe with the id inline
/// (no node to chase), an insert allocates nothing until the current generation grows, and
/// when it is full it becomes the old one, whose facts still asked for move over.
#[derive(Debug, Default)]
pub struct IdMemo<V> {
    generations: Mutex<Generations<V>>,
}

/// Object sizes by id.
pub type ObjectSizes = IdMemo<u64>;

type IdMap<V> = std::collections::HashMap<gix::ObjectId, V, gix::hashtable::hash::Builder>;

#[derive(Debug)]
struct Generations<V> {
    current: IdMap<V>,
    old: IdMap<V>,
}

impl<V> Default for Generations<V> {
    fn default() -> Self {
        Generations {
            current: IdMap::default(),
            old: IdMap::default(),
        }
    }
}

/// Facts of one generation (two are kept: for sizes at most about 9 MiB).
const GENERATION: usize = 100_000;

impl<V: Copy> IdMemo<V> {
    /// What is remembered of `id`.
    pub fn get(&self, id: gix::ObjectId) -> Option<V> {
        self.lock().get(&id)
    }

    /// Remembers `value` for `id`.
    pub fn insert(&self, id: gix::ObjectId, value: V) {
        self.lock().insert(id, value);
    }

    /// What is remembered of each of `ids`, else what `read` finds (then remembered). The
    /// memo is locked once to look all of them up and once to remember what was read, not once
    /// an id: a tree listing asks for hundreds while every worker shares the memo.
    pub fn get_or_read_all<E>(
        &self,
        ids: &[gix::ObjectId],
        mut read: impl FnMut(gix::ObjectId) -> Result<V, E>,
    ) -> Result<Vec<V>, E> {
        let remembered: Vec<Option<V>> = {
            let mut generations = self.lock();
            ids.iter().map(|id| generations.get(id)).collect()
        };
        let mut read_now = Vec::new();
        let values = ids
            .iter()
            .zip(remembered)
            .map(|(&id, value)| match value {
                Some(value) => Ok(value),
                None => {
                    let value = read(id)?;
                    read_now.push((id, value));
                    Ok(value)
                }
            })
            .collect::<Result<Vec<V>, E>>()?;
        if !read_now.is_empty() {
            let mut generations = self.lock();
            for (id, value) in read_now {
                generations.insert(id, value);
            }
        }
        Ok(values)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Generations<V>> {
        self.generations.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<V: Copy> Generations<V> {
    fn get(&mut self, id: &gix::ObjectId) -> Option<V> {
        if let Some(value) = self.current.get(id) {
            return Some(*value);
        }
        let value = self.old.remove(id)?;
        self.insert(*id, value);
        Some(value)
    }

    fn insert(&mut self, id: gix::ObjectId, value: V) {
        if self.current.len() >= GENERATION {
            self.old = std::mem::take(&mut self.current);
            self.current.reserve(GENERATION);
        }
        self.current.insert(id, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    fn render(cache: &FragmentCache, key: &str, len: usize) -> Arc<str> {
        cache
            .get_or_render(key, || Ok::<_, Infallible>("x".repeat(len)))
            .unwrap()
    }

    /// Renders `key` twice, the second time kept: a cheap fragment asked for again.
    fn fill(cache: &FragmentCache, key: &str, len: usize) -> Arc<str> {
        render(cache, key, len);
        render(cache, key, len)
    }

    #[test]
    fn admission_keeps_the_costly_and_the_asked_for_again() {
        let admission = Admission::default();
        let cheap = Duration::from_micros(100);
        assert!(!admission.admits(&"once", cheap));
        assert!(admission.admits(&"once", cheap), "asked for again");
        assert!(admission.admits(&"slow", COSTLY), "costly the first time");
        let crawled = (0..1000).filter(|n| admission.admits(n, cheap)).count();
        assert_eq!(crawled, 0, "distinct keys asked for once are not kept");
    }

    #[test]
    fn a_cheap_fragment_asked_for_once_is_not_kept() {
        let cache = FragmentCache::new(10_000);
        render(&cache, "once", 100);
        assert!(cache.is_empty());
        fill(&cache, "twice", 100);
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.stats.misses.get(), 3);
    }

    #[test]
    fn stays_within_its_byte_budget() {
        let cache = FragmentCache::new(10_000);
        for i in 0..100 {
            fill(&cache, &format!("key{i}"), 900);
            assert!(cache.bytes() <= 10_000, "over budget after {i}");
        }
        assert!(cache.len() <= 11);
        assert!(cache.stats.evictions.get() >= 89);
        assert_eq!(cache.stats.misses.get(), 200);
    }

    #[test]
    fn hits_return_the_cached_value_and_refresh_recency() {
        let cache = FragmentCache::new(3_000);
        fill(&cache, "a", 900);
        fill(&cache, "b", 900);
        let again = cache
            .get_or_render("a", || -> Result<String, Infallible> { panic!("must hit") })
            .unwrap();
        assert_eq!(again.len(), 900);
        fill(&cache, "c", 900);
        fill(&cache, "d", 900);
        assert_eq!(cache.stats.hits.get(), 1);
        // "b" was least recently used, so it went first; "a" survived.
        let mut rendered = false;
        cache
            .get_or_render("a", || {
                rendered = true;
                Ok::<_, Infallible>(String::new())
            })
            .unwrap();
        assert!(!rendered);
    }

    #[test]
    fn values_larger_than_the_budget_are_not_kept() {
        let cache = FragmentCache::new(100);
        fill(&cache, "big", 1000);
        assert!(cache.is_empty());
        assert_eq!(cache.bytes(), 0);
    }

    #[test]
    fn errors_are_not_cached() {
        let cache = FragmentCache::new(100);
        assert!(
            cache
                .get_or_render("k", || Err::<String, _>("boom"))
                .is_err()
        );
        assert!(cache.is_empty());
    }

    /// Distinct ids whose first bytes look random, as a hash's do (the memo's hasher uses them).
    fn id(n: usize) -> gix::ObjectId {
        let mut bytes = [0u8; 20];
        let mixed = (n as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        bytes[..8].copy_from_slice(&mixed.to_le_bytes());
        bytes[12..].copy_from_slice(&(n as u64).to_le_bytes());
        gix::ObjectId::from_bytes_or_panic(&bytes)
    }

    #[test]
    fn id_memo_keeps_what_is_asked_for_and_forgets_the_rest() {
        let memo = IdMemo::<u64>::default();
        for n in 0..GENERATION {
            memo.insert(id(n), n as u64);
        }
        // a full generation turns old; what is still asked for moves over
        memo.insert(id(GENERATION), 0);
        assert_eq!(memo.get(id(7)), Some(7));
        for n in GENERATION + 1..3 * GENERATION {
            memo.insert(id(n), n as u64);
        }
        assert_eq!(memo.get(id(8)), None, "two generations later it is gone");
        assert_eq!(
            memo.get(id(3 * GENERATION - 1)),
            Some(3 * GENERATION as u64 - 1)
        );
        let generations = memo.lock();
        let kept = generations.current.len() + generations.old.len();
        assert!(kept <= 2 * GENERATION, "{kept} facts kept");
    }

    #[test]
    fn id_memo_reads_only_what_it_does_not_remember() {
        let memo = IdMemo::<u64>::default();
        memo.insert(id(1), 10);
        let mut read = Vec::new();
        let values = memo.get_or_read_all::<Infallible>(&[id(1), id(2), id(3)], |i| {
            read.push(i);
            Ok(read.len() as u64 * 100)
        });
        assert_eq!(values.unwrap(), [10, 100, 200]);
        assert_eq!(read, [id(2), id(3)]);
        assert_eq!(memo.get(id(3)), Some(200), "what was read is remembered");
        let failed = memo.get_or_read_all(&[id(1), id(4)], |_| Err("unreadable"));
        assert_eq!(failed, Err("unreadable"));
        assert_eq!(memo.get(id(4)), None);
    }
}
