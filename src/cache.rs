//! A byte-bounded LRU of rendered fragments that are pure functions of object ids and render
//! options (diff bodies, highlighted blobs), keyed by those — not by repository — so the same
//! commit in many forks is rendered once.

use crate::git::log::{WalkIds, WalkMemo};
use lru::LruCache;
use prometheus_client::metrics::counter::Counter;
use std::sync::{Arc, Mutex};

/// Hit, miss and eviction counts (exported as metrics).
#[derive(Default, Debug, Clone)]
pub struct CacheStats {
    pub hits: Counter,
    pub misses: Counter,
    pub evictions: Counter,
}

struct Entries {
    lru: LruCache<String, Arc<str>>,
    bytes: usize,
}

/// The fragment cache. Cloning shares it.
pub struct FragmentCache {
    budget: usize,
    entries: Mutex<Entries>,
    pub stats: CacheStats,
}

impl FragmentCache {
    /// A cache holding at most `budget` bytes of keys and values.
    pub fn new(budget: usize) -> FragmentCache {
        FragmentCache {
            budget,
            entries: Mutex::new(Entries {
                lru: LruCache::unbounded(),
                bytes: 0,
            }),
            stats: CacheStats::default(),
        }
    }

    /// The cached fragment for `key`, or the one `render` makes (cached when it fits).
    pub fn get_or_render<E>(
        &self,
        key: &str,
        render: impl FnOnce() -> Result<String, E>,
    ) -> Result<Arc<str>, E> {
        if let Some(hit) = self.lock().lru.get(key).cloned() {
            self.stats.hits.inc();
            return Ok(hit);
        }
        self.stats.misses.inc();
        let value: Arc<str> = render()?.into();
        self.insert(key, Arc::clone(&value));
        Ok(value)
    }

    fn insert(&self, key: &str, value: Arc<str>) {
        let size = key.len() + value.len();
        if size > self.budget {
            return;
        }
        let mut entries = self.lock();
        if let Some(old) = entries.lru.put(key.to_string(), value) {
            entries.bytes -= key.len() + old.len();
        }
        entries.bytes += size;
        while entries.bytes > self.budget {
            let Some((k, v)) = entries.lru.pop_lru() else {
                break;
            };
            entries.bytes -= k.len() + v.len();
            self.stats.evictions.inc();
        }
    }

    /// Bytes held now (keys and values).
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    pub fn len(&self) -> usize {
        self.lock().lru.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    fn fill(cache: &FragmentCache, key: &str, len: usize) -> Arc<str> {
        cache
            .get_or_render(key, || Ok::<_, Infallible>("x".repeat(len)))
            .unwrap()
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
        assert_eq!(cache.stats.misses.get(), 100);
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

/// Object sizes by id (tree listings show one per entry; reading a packed object's header can
/// mean inflating the start of its delta). Sizes never change for an id, in any repository.
#[derive(Debug)]
pub struct ObjectSizes {
    /// Hashed by the ids' first bytes (they are hashes already), not by SipHash.
    entries: Mutex<LruCache<gix::ObjectId, u64, gix::hashtable::hash::Builder>>,
}

/// Sizes remembered at once (about 8 MiB).
const SIZES: usize = 100_000;

impl Default for ObjectSizes {
    fn default() -> Self {
        ObjectSizes {
            entries: Mutex::new(LruCache::with_hasher(
                std::num::NonZeroUsize::new(SIZES).expect("non-zero"),
                gix::hashtable::hash::Builder,
            )),
        }
    }
}

impl ObjectSizes {
    /// The size of `id`, from the cache or from `read`.
    pub fn get_or_read<E>(
        &self,
        id: gix::ObjectId,
        read: impl FnOnce() -> Result<u64, E>,
    ) -> Result<u64, E> {
        // (`peek`: a size never changes, so entries leave in the order they came, and a
        // lookup writes nothing)
        if let Some(size) = self.lock().peek(&id) {
            return Ok(*size);
        }
        let size = read()?;
        self.lock().put(id, size);
        Ok(size)
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, LruCache<gix::ObjectId, u64, gix::hashtable::hash::Builder>>
    {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}
