//! Recent revision walks, so paging through a log does not walk from the tip again.

use crate::git::log::{WalkIds, WalkMemo};
use lru::LruCache;
use std::sync::{Arc, Mutex};

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
    /// Bytes the kept walks hold: their keys and their ids' buffers.
    pub fn bytes(&self) -> usize {
        self.lock()
            .iter()
            .map(|(key, walk)| {
                key.len() + walk.ids.capacity() * std::mem::size_of::<gix::ObjectId>()
            })
            .sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<String, Arc<WalkIds>>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}
