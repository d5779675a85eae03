//! One object store per distinct object source: repositories whose objects are all in the same
//! directory — a repository and its `git clone --shared` forks that have no objects of their
//! own (everything reached through `objects/info/alternates`) — use one opened
//! `gix::odb::Store` (one set of pack index and pack maps) and one pool of warm object handles
//! (their pack delta-base and object caches), so the first request through an untouched fork
//! finds the packs mapped and the caches warm.
//!
//! gix opens one store per repository (`ThreadSafeRepository::objects`, an `Arc<Store>` that
//! also searches the alternates), and a store cannot borrow another store's packs; but the field
//! is public, and so is `Repository::objects`, the per-handle object access with its caches. So a
//! fork's own store is replaced, before it ever loads anything, by the shared one, and each
//! request borrows a warm object handle from the store's pool. A fork that has objects of its
//! own (it was pushed to) keeps its own store, which maps the alternate's packs again, and so
//! does a repository with replacement refs (they are applied inside its store).

use super::commits::{IndexMetrics, IndexSlot};
use super::pool::{Budget, Pool};
use prometheus_client::metrics::counter::Counter;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

/// Warm object handles kept per store (and at most `max-warm-handles` over all stores).
const MAX_WARM_HANDLES: usize = 8;

/// Bytes of delta-chain bases and waypoints kept over all stores (crawling git.git: 48 MiB
/// made 1,213-1,215 pages/s at 436-447 MiB RssAnon, 96 MiB 1,353-1,384 at 498-502 MiB).
const CHAIN_BASE_BYTES: usize = 64 << 20;

/// Where a repository's objects come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ObjectSource {
    /// The objects directory whose store serves the repository (canonical).
    pub key: PathBuf,
    /// Whether that is another directory than the repository's own `objects/` (an untouched
    /// fork served by its alternate's store).
    pub borrowed: bool,
    /// Whether the store is the repository's alone: its replacement refs (`refs/replace/`)
    /// apply to it and to no other repository.
    pub private: bool,
}

impl ObjectSource {
    /// The source of the repository at `git_dir`: its alternate when its own objects
    /// directory holds no objects and names exactly one alternate, else its own directory.
    pub fn of(git_dir: &Path) -> ObjectSource {
        let own = git_dir.join("objects");
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        if !has_own_objects(&own)
            && let Some(alternate) = single_alternate(&own)
        {
            return ObjectSource {
                key: canonical(&alternate),
                borrowed: true,
                private: false,
            };
        }
        ObjectSource {
            key: canonical(&own),
            borrowed: false,
            private: false,
        }
    }

    /// The repository's own objects directory, in a store of its own.
    pub fn private(git_dir: &Path) -> ObjectSource {
        ObjectSource {
            key: git_dir.join("objects"),
            borrowed: false,
            private: true,
        }
    }
}

/// Whether `objects_dir` holds objects itself: a pack, or a loose object.
pub(super) fn has_own_objects(objects_dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(objects_dir) else {
        return true;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let name = name.as_encoded_bytes();
        if name == b"pack" {
            let packs = std::fs::read_dir(entry.path());
            if packs.is_ok_and(|mut p| {
                p.any(|e| e.is_ok_and(|e| e.file_name().as_encoded_bytes().ends_with(b".pack")))
            }) {
                return true;
            }
        } else if name.len() == 2
            && name.iter().all(u8::is_ascii_hexdigit)
            && std::fs::read_dir(entry.path()).is_ok_and(|mut d| d.next().is_some())
        {
            return true;
        }
    }
    false
}

/// The stats of a repository's own `objects/` and `objects/pack/` directories: a new pack or
/// a new loose-object directory changes one of them. Racy (not to be trusted) when one changed
/// within a second of the stat, as ref stamps are.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct DirStamp {
    entries: [(u64, i64, i64); 2],
    racy: bool,
}

impl DirStamp {
    pub fn read(git_dir: &Path) -> DirStamp {
        use std::os::unix::fs::MetadataExt;
        let taken = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let stat = |p: PathBuf| {
            std::fs::metadata(p).map_or((0, 0, 0), |m| (m.ino(), m.mtime(), m.mtime_nsec()))
        };
        let objects = git_dir.join("objects");
        let entries = [stat(objects.join("pack")), stat(objects)];
        let racy = entries.iter().any(|&(_, mtime, _)| mtime >= taken - 1);
        DirStamp { entries, racy }
    }

    pub fn is_racy(&self) -> bool {
        self.racy
    }
}

/// The one alternate objects directory `objects_dir/info/alternates` names, if it names one.
fn single_alternate(objects_dir: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(objects_dir.join("info/alternates")).ok()?;
    let mut lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'));
    let first = lines.next()?;
    if lines.next().is_some() || first.starts_with('"') {
        return None;
    }
    let path = objects_dir.join(first);
    path.is_dir().then_some(path)
}

/// An opened object store, its warm handles and its commit index.
pub(super) struct SharedStore {
    pub store: Arc<gix::odb::Store>,
    /// Its packs for the shared pack reader (none for a store with replacement refs, which
    /// only gix applies).
    pub packs: Option<crate::git::packs::PackSet>,
    warm: Arc<Pool<gix::OdbHandle>>,
    pub commits: Arc<IndexSlot>,
}

impl SharedStore {
    fn new(
        store: Arc<gix::odb::Store>,
        packs: Option<crate::git::packs::PackSet>,
        budget: &Arc<Budget>,
        indexes: &IndexMetrics,
    ) -> Arc<SharedStore> {
        Arc::new(SharedStore {
            store,
            packs,
            warm: Pool::new(budget, MAX_WARM_HANDLES),
            commits: Arc::new(IndexSlot::new(indexes.clone())),
        })
    }

    /// A warm handle, if one is free.
    pub fn checkout(&self) -> Option<gix::OdbHandle> {
        self.warm.take()
    }

    pub fn checkin(&self, handle: gix::OdbHandle) {
        self.warm.put(handle);
    }
}

/// The object stores of all repositories, by source (kept across reloads).
pub struct ObjectStores {
    stores: Mutex<HashMap<PathBuf, Weak<SharedStore>>>,
    /// Distinct object stores opened (a metric).
    pub opened: Counter,
    /// The bound on warm object handles (with their caches) over all stores.
    pub budget: Arc<Budget>,
    /// The commit indexes' metrics.
    pub commit_indexes: IndexMetrics,
    /// The pack reader of every store's packs.
    pub packs: crate::git::packs::Packs,
    /// The decoded commits of every store read through the pack reader.
    pub commits: crate::git::commit::Commits,
}

impl ObjectStores {
    /// No stores yet; at most `max_warm` warm object handles over all of them.
    pub fn new(max_warm: usize) -> ObjectStores {
        ObjectStores {
            stores: Mutex::default(),
            opened: Counter::default(),
            budget: Budget::new(max_warm),
            commit_indexes: IndexMetrics::default(),
            packs: crate::git::packs::Packs::new(CHAIN_BASE_BYTES),
            commits: crate::git::commit::Commits::default(),
        }
    }

    /// The store for `source`; opened from `own` (the repository's own, not yet used store)
    /// when the source is the repository's own directory, else at the source directory.
    pub(super) fn get(
        &self,
        source: &ObjectSource,
        own: &Arc<gix::odb::Store>,
    ) -> std::io::Result<Arc<SharedStore>> {
        if source.private {
            self.opened.inc();
            return Ok(SharedStore::new(
                own.clone(),
                None,
                &self.budget,
                &self.commit_indexes,
            ));
        }
        let mut stores = self.stores.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(shared) = stores.get(&source.key).and_then(Weak::upgrade) {
            return Ok(shared);
        }
        let store = if source.borrowed {
            Arc::new(gix::odb::Store::at_opts(
                source.key.clone(),
                own.object_hash(),
                &mut std::iter::empty(),
                gix::odb::store::init::Options {
                    use_multi_pack_index: own.use_multi_pack_index(),
                    ..Default::default()
                },
            )?)
        } else {
            own.clone()
        };
        let packs = self.packs.set(store.path(), store.object_hash());
        let shared = SharedStore::new(store, Some(packs), &self.budget, &self.commit_indexes);
        stores.retain(|_, s| s.strong_count() > 0);
        stores.insert(source.key.clone(), Arc::downgrade(&shared));
        self.opened.inc();
        Ok(shared)
    }

    /// Object stores in use now.
    pub fn live(&self) -> usize {
        let stores = self.stores.lock().unwrap_or_else(|e| e.into_inner());
        stores.values().filter(|s| s.strong_count() > 0).count()
    }
}
