//! A least-recently-used map bounded by the bytes its entries hold: the eviction rule of the
//! pack reader's kept objects, the kept commits, the fragment cache and the response cache. It
//! depends on nothing of ours, so every layer may use it.

use std::borrow::Borrow;
use std::hash::Hash;

/// The bytes an entry holds (what its key and value keep alive), as its cache counts them.
pub type Weigh<K, V> = fn(&K, &V) -> usize;

pub struct ByteLru<K, V> {
    lru: lru::LruCache<K, V>,
    bytes: usize,
    limit: usize,
    weigh: Weigh<K, V>,
}

impl<K: Hash + Eq, V> ByteLru<K, V> {
    /// Empty; its entries are to hold at most `limit` bytes, each weighed by `weigh`.
    pub fn new(limit: usize, weigh: Weigh<K, V>) -> ByteLru<K, V> {
        ByteLru {
            lru: lru::LruCache::unbounded(),
            bytes: 0,
            limit,
            weigh,
        }
    }

    /// The value under `key`, made the most recently used.
    pub fn get<Q>(&mut self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.lru.get(key)
    }

    /// Puts `value` under `key` (replacing what was there), then drops the least recently used
    /// entries until the rest holds at most the limit; returns how many it dropped. An entry
    /// over the limit by itself drops everything, itself too: callers keep such ones out.
    pub fn put(&mut self, key: K, value: V) -> usize {
        self.bytes += (self.weigh)(&key, &value);
        if let Some((old_key, old)) = self.lru.push(key, value) {
            self.bytes -= (self.weigh)(&old_key, &old);
        }
        let mut dropped = 0;
        while self.bytes > self.limit {
            let Some((key, value)) = self.lru.pop_lru() else {
                break;
            };
            self.bytes -= (self.weigh)(&key, &value);
            dropped += 1;
        }
        dropped
    }

    /// Takes the entry under `key` out.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (key, value) = self.lru.pop_entry(key)?;
        self.bytes -= (self.weigh)(&key, &value);
        Some(value)
    }

    pub fn clear(&mut self) {
        self.lru.clear();
        self.bytes = 0;
    }

    /// Bytes held by the entries, as weighed.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.lru.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lru.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lru(limit: usize) -> ByteLru<String, Vec<u8>> {
        ByteLru::new(limit, |k, v| k.len() + v.len())
    }

    #[test]
    fn the_least_recently_used_go_first_until_the_rest_fits() {
        let mut cache = lru(10);
        assert_eq!(cache.put("a".into(), vec![0; 3]), 0);
        assert_eq!(cache.put("b".into(), vec![0; 3]), 0);
        assert!(cache.get("a").is_some(), "a is now the most recent");
        assert_eq!(cache.put("c".into(), vec![0; 3]), 1);
        assert!(cache.get("b").is_none(), "b was the least recent");
        assert_eq!((cache.len(), cache.bytes()), (2, 8));
    }

    #[test]
    fn replacing_and_removing_keep_the_count_of_bytes() {
        let mut cache = lru(100);
        cache.put("a".into(), vec![0; 10]);
        cache.put("a".into(), vec![0; 4]);
        assert_eq!(cache.bytes(), 5);
        assert_eq!(cache.remove("a").map(|v| v.len()), Some(4));
        assert_eq!(cache.remove("a"), None);
        assert_eq!(cache.bytes(), 0);
        cache.put("b".into(), vec![0; 4]);
        cache.clear();
        assert!(cache.is_empty());
        assert_eq!(cache.bytes(), 0);
    }
}
