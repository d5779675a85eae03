//! Packs of clones kept by what was asked (repository, wants, depth, filter, tags): the
//! next identical clone sends the kept file. Files are unlinked temporary files, bounded by
//! their total size; one evicted while it is still being sent lives until that send ends.

use crate::byte_lru::ByteLru;
use crate::git::fetch::Wanted;
use gix::ObjectId;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// A clone's request: the repository's git directory and what it wanted.
pub type PackKey = (PathBuf, Wanted);

/// A written pack and what its response needs besides it.
pub struct KeptPack {
    pub file: std::fs::File,
    pub len: u64,
    pub objects: usize,
    pub commits: usize,
    /// The shallow boundary of a depth-limited fetch.
    pub shallow: Vec<ObjectId>,
    /// The client's shallow commits whose parents the pack brings (none in a kept pack).
    pub unshallow: Vec<ObjectId>,
}

pub struct PackCache {
    packs: Mutex<ByteLru<PackKey, Arc<KeptPack>>>,
    limit: usize,
}

impl PackCache {
    /// Keeps packs up to `limit` bytes in all; 0 keeps none.
    pub fn new(limit: usize) -> PackCache {
        PackCache {
            packs: Mutex::new(ByteLru::new(limit, |_, pack| pack.len as usize)),
            limit,
        }
    }

    /// Whether a fetch's pack may be kept: a clone (nothing had, nothing shallow yet).
    pub fn keeps(&self, wanted: &Wanted) -> bool {
        self.limit > 0 && wanted.is_clone()
    }

    pub fn get(&self, key: &PackKey) -> Option<Arc<KeptPack>> {
        self.lock().get(key).cloned()
    }

    /// Keeps `pack` unless it alone is over the bound.
    pub fn put(&self, key: PackKey, pack: Arc<KeptPack>) {
        if (pack.len as usize) <= self.limit {
            self.lock().put(key, pack);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ByteLru<PackKey, Arc<KeptPack>>> {
        self.packs.lock().unwrap_or_else(|e| e.into_inner())
    }
}
