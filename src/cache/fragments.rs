//! A byte-bounded LRU of rendered fragments that are pure functions of object ids and render
//! options (diff bodies, highlighted blobs), keyed by those — not by repository — so the same
//! commit in many forks is rendered once.

use super::admission::{Admission, thread_cpu_time};
use crate::byte_lru::ByteLru;
use prometheus_client::metrics::counter::Counter;
use std::sync::{Arc, Mutex};

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

    /// Forgets every fragment (to give memory back).
    pub fn clear(&self) {
        self.lock().clear();
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
}
