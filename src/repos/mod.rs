//! Resident repository state: each configured repository opened once with gix (on first use),
//! pools of warm handles under one bound, the ref snapshot kept fresh by change detection
//! (inotify watches, stat stamps where there is no watch), and the index's catalog.

mod catalog;
mod commits;
mod digest;
mod objects;
mod pool;
mod refs;
mod stamp;
mod watch;

pub use catalog::{Catalog, Query, Selection};
pub use digest::ContentHash;
pub use objects::ObjectStores;
pub use pool::Budget;
pub use refs::{Branch, Decoration, DecorationKind, RefEntry, RefListing, RefSnapshot, Tag};
pub use watch::Watcher;

use crate::config::{Config, RepoConfig};
use crate::git;
use crate::git::commit_graph::BloomFilters;
use crate::git::commit_index::CommitIndex;
use prometheus_client::metrics::counter::Counter;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long a ref snapshot is trusted before its stamp is checked again.
const REF_CHECK_INTERVAL: Duration = Duration::from_millis(250);
/// Warm handles kept per repository (and at most `max-warm-handles` over all repositories).
const MAX_POOLED_HANDLES: usize = 8;
/// Object cache per handle.
const OBJECT_CACHE_BYTES: usize = 2 << 20;
/// Delta-base cache per handle: a byte cap instead of gix's 64-entry default, whose entries
/// can be whole large objects (hundreds of MiB over a pool of handles). Small, as trees and
/// blobs are read through the pack reader (`git::packs`) and its caches; gix reads commits
/// and tags, which are seldom deltas.
const DELTA_BASE_CACHE: &str = "core.deltaBaseCacheLimit=2m";

/// Why a repository could not be used (for logs: the messages name server paths).
#[derive(Debug, Clone, thiserror::Error)]
pub enum RepoError {
    /// The configured path is not a repository gix can open.
    #[error("Not a git repository: '{}'", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: Arc<gix::Error>,
    },
    /// The repository's HEAD cannot be read any more (the repository went away).
    #[error("Failed to open repository '{}'", path.display())]
    Vanished {
        path: PathBuf,
        #[source]
        source: Arc<std::io::Error>,
    },
    /// The refs could not be listed.
    #[error("reading refs")]
    Refs {
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync + 'static>,
    },
}

impl RepoError {
    pub(crate) fn refs(e: impl std::error::Error + Send + Sync + 'static) -> RepoError {
        RepoError::Refs {
            source: Arc::new(e),
        }
    }
}

/// All repositories of one configuration, by url.
pub struct Repos {
    by_url: HashMap<String, Arc<RepoState>>,
    /// Ref snapshot rebuilds, over all repositories (a metric).
    pub snapshot_rebuilds: Counter,
    /// Repositories opened with gix, on first use (a metric; a reload opens only new ones).
    pub opened: Counter,
    /// The opened object stores, one per distinct object source (kept across reloads).
    pub object_stores: Arc<ObjectStores>,
    /// The bound on pooled repository handles over all repositories (kept across reloads).
    pub handle_budget: Arc<Budget>,
    /// Ref snapshots shared by repositories with the same refs (kept across reloads).
    pub snapshots: Arc<SharedSnapshots>,
    /// What the index lists, with its orders.
    pub catalog: Catalog,
    /// The ref watches (kept across reloads).
    pub watcher: Arc<Watcher>,
}

/// Ref snapshots by [`version`](RefSnapshot::version), a hash of the ref values: repositories
/// whose refs are the same — a repository and its forks nobody pushed to — use one snapshot,
/// built once (its tags and branch tips read once) and held once in memory.
#[derive(Default)]
pub struct SharedSnapshots {
    by_version: Mutex<HashMap<u64, std::sync::Weak<RefSnapshot>>>,
    /// By the content hash of `HEAD` and `packed-refs`, for repositories without loose refs:
    /// forks whose ref files are byte-identical take a snapshot over without parsing them.
    by_files: Mutex<HashMap<u128, std::sync::Weak<RefSnapshot>>>,
    /// Snapshots taken over from another repository with the same refs (a metric).
    pub reused: Counter,
}

impl SharedSnapshots {
    /// The snapshot of a repository whose ref files hashed to `key`, if one is alive.
    fn by_files(&self, key: u128) -> Option<Arc<RefSnapshot>> {
        let map = self.by_files.lock().unwrap_or_else(|e| e.into_inner());
        let found = map.get(&key).and_then(std::sync::Weak::upgrade);
        if found.is_some() {
            self.reused.inc();
        }
        found
    }

    fn remember_files(&self, key: u128, snapshot: &Arc<RefSnapshot>) {
        let mut map = self.by_files.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= 64 && map.len().is_power_of_two() {
            map.retain(|_, s| s.strong_count() > 0);
        }
        map.insert(key, Arc::downgrade(snapshot));
    }

    /// The snapshot of `listing`: one already built for the same refs, else built now.
    fn get_or_build(&self, repo: &git::Repo, listing: RefListing) -> Arc<RefSnapshot> {
        let version = listing.version;
        let found = {
            let map = self.by_version.lock().unwrap_or_else(|e| e.into_inner());
            map.get(&version).and_then(std::sync::Weak::upgrade)
        };
        if let Some(snapshot) = found {
            self.reused.inc();
            return snapshot;
        }
        let snapshot = Arc::new(RefSnapshot::from_listing(repo, listing));
        let mut map = self.by_version.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= 64 && map.len().is_power_of_two() {
            map.retain(|_, s| s.strong_count() > 0);
        }
        map.insert(version, Arc::downgrade(&snapshot));
        snapshot
    }
}

impl Repos {
    /// Builds the registry for `config`, keeping the open git state of `previous` for
    /// repositories whose path did not change.
    pub fn new(config: &Config, previous: Option<&Repos>) -> Repos {
        let snapshot_rebuilds = previous
            .map(|p| p.snapshot_rebuilds.clone())
            .unwrap_or_default();
        let opened = previous.map(|p| p.opened.clone()).unwrap_or_default();
        let max_warm = config.globals.max_warm_handles;
        let object_stores = previous.map_or_else(
            || Arc::new(ObjectStores::new(max_warm)),
            |p| Arc::clone(&p.object_stores),
        );
        let handle_budget =
            previous.map_or_else(|| Budget::new(max_warm), |p| Arc::clone(&p.handle_budget));
        let snapshots = previous
            .map(|p| Arc::clone(&p.snapshots))
            .unwrap_or_default();
        let watcher = previous.map_or_else(
            || Arc::new(Watcher::new(config.globals.watch_refs)),
            |p| Arc::clone(&p.watcher),
        );
        let mut by_path: HashMap<PathBuf, Arc<GitRepo>> = HashMap::new();
        if let Some(prev) = previous {
            for state in prev.by_url.values() {
                by_path.insert(state.git.path.clone(), Arc::clone(&state.git));
            }
        }
        let mut by_url = HashMap::new();
        let mut used = std::collections::HashSet::new();
        let globals = digest::globals_hash(&config.globals);
        for cfg in config.repos.iter().filter(|r| !r.ignore) {
            let git_dir = git_dir_of(&cfg.path);
            used.insert(git_dir.clone());
            let git = Arc::clone(by_path.entry(git_dir.clone()).or_insert_with(|| {
                let git = GitRepo::new(
                    git_dir,
                    snapshot_rebuilds.clone(),
                    Arc::clone(&object_stores),
                    Arc::clone(&snapshots),
                    watcher.signal(),
                    opened.clone(),
                    &handle_budget,
                );
                watcher.watch(&git.path, &git.signal);
                Arc::new(git)
            }));
            let state = RepoState {
                config: Arc::clone(cfg),
                git,
                globals_hash: globals,
                config_hash: OnceLock::new(),
            };
            by_url.entry(cfg.url.clone()).or_insert(Arc::new(state));
        }
        for gone in by_path.keys().filter(|p| !used.contains(*p)) {
            watcher.unwatch(gone);
        }
        let catalog = Catalog::new(&config.repos, &by_url, &config.globals, &watcher);
        Repos {
            by_url,
            catalog,
            watcher,
            opened,
            handle_budget,
            snapshot_rebuilds,
            object_stores,
            snapshots,
        }
    }

    pub fn get(&self, url: &str) -> Option<&Arc<RepoState>> {
        self.by_url.get(url)
    }
}

/// One configured repository: its options and its (shared) git state.
pub struct RepoState {
    pub config: Arc<RepoConfig>,
    git: Arc<GitRepo>,
    globals_hash: u128,
    config_hash: OnceLock<u128>,
}

impl RepoState {
    /// A content hash of everything in the configuration this repository's pages render with
    /// (globals and its own options, not its path on disk), for validators; computed on first use.
    pub fn config_hash(&self) -> u128 {
        *self
            .config_hash
            .get_or_init(|| digest::repo_config_hash(self.globals_hash, &self.config))
    }

    /// Runs `f` with a warm gix handle of this repository.
    pub fn with_repo<R>(&self, f: impl Fn(&git::Repo) -> R) -> Result<R, RepoError> {
        self.git.with_handle(f)
    }

    /// The current ref snapshot, rebuilt when the refs changed on disk.
    pub fn refs(&self, repo: &git::Repo) -> Result<Arc<RefSnapshot>, RepoError> {
        self.git.refs(repo)
    }

    /// The version of the current ref snapshot when it is known to be current, without a git
    /// handle (the rate-limited stamp check alone); `None` when the refs have not been read
    /// yet or changed since, so that only a render can tell the version.
    pub fn refs_version(&self) -> Option<u64> {
        self.git.refs_version()
    }

    /// cgit's default branch: `repo.defbranch`, else the branch HEAD points to, else `master`.
    pub fn defbranch(&self, refs: &RefSnapshot) -> String {
        self.config
            .defbranch
            .clone()
            .or_else(|| refs.head_branch.clone())
            .unwrap_or_else(|| "master".into())
    }

    /// The changed-path Bloom filters of the repository's commit-graph, if it has any
    /// (re-opened when the commit-graph is rewritten).
    pub fn bloom(&self) -> Option<Arc<BloomFilters>> {
        self.git.bloom()
    }

    pub fn git_dir(&self) -> &Path {
        &self.git.path
    }

    /// How many ref changes the watch reported; `None` when the repository is not watched.
    pub(crate) fn ref_changes(&self) -> Option<u64> {
        self.git.signal.changes()
    }

    /// The commit index of this repository's object store as it is now; when it lacks tips
    /// of `refs`, a background build adds them (see `commits.rs`).
    pub fn commit_index(&self, refs: &RefSnapshot) -> Option<Arc<CommitIndex>> {
        let opened = self.git.opened()?;
        opened.store.commits.get(refs, &opened.repo)
    }

    /// Whether the commit index holds every tip of the current refs, as far as that is
    /// known without a git handle.
    pub fn commit_index_ready(&self) -> bool {
        let version = self.refs_version();
        let opened = self.git.opened();
        version
            .zip(opened)
            .is_some_and(|(v, o)| o.store.commits.covers(v))
    }

    /// The objects directory whose (shared) store serves this repository, once opened.
    pub fn object_source(&self) -> Option<PathBuf> {
        Some(self.git.opened()?.source.key.clone())
    }
}

/// The content hash of `HEAD` and `packed-refs` (absent: empty), which, without loose refs,
/// determine every ref; `None` when HEAD cannot be read.
fn ref_files_hash(git_dir: &Path) -> Option<u128> {
    let head = std::fs::read(git_dir.join("HEAD")).ok()?;
    let packed = std::fs::read(git_dir.join("packed-refs")).unwrap_or_default();
    Some(ContentHash::new().bytes(&head).bytes(&packed).finish())
}

/// The git directory of a configured path: the path itself, or a work tree's `.git`.
fn git_dir_of(path: &Path) -> PathBuf {
    let dot_git = path.join(".git");
    if !path.join("HEAD").is_file() && dot_git.join("HEAD").is_file() {
        dot_git
    } else {
        path.to_path_buf()
    }
}

/// The git side of a repository, shared by every configuration that names its path.
struct GitRepo {
    path: PathBuf,
    stores: Arc<ObjectStores>,
    snapshots: Arc<SharedSnapshots>,
    opened: Mutex<Option<Result<Arc<Opened>, RepoError>>>,
    /// Pooled handles, with the generation of the [`Opened`] they come from.
    handles: Arc<pool::Pool<(u64, gix::Repository)>>,
    refs: Mutex<Option<CachedRefs>>,
    /// Ref changes reported by the watch, when there is one.
    signal: Arc<watch::Signal>,
    /// Counts openings (shared by all repositories).
    opens: Counter,
    rebuilds: Counter,
    bloom: Mutex<Option<CachedBloom>>,
}

struct CachedBloom {
    filters: Option<Arc<BloomFilters>>,
    stamp: Vec<Option<(u64, i64, i64)>>,
    checked: Instant,
}

/// Inode and mtime of each commit-graph source file, to notice rewrites.
fn bloom_stamp(git_dir: &Path) -> Vec<Option<(u64, i64, i64)>> {
    use std::os::unix::fs::MetadataExt;
    BloomFilters::sources(git_dir)
        .iter()
        .map(|p| {
            std::fs::metadata(p)
                .ok()
                .map(|m| (m.ino(), m.mtime(), m.mtime_nsec()))
        })
        .collect()
}

/// The opened repository: gix's thread-safe repository with its object store replaced by the
/// store of its object source (shared with every repository of the same source).
struct Opened {
    repo: gix::ThreadSafeRepository,
    source: objects::ObjectSource,
    store: Arc<objects::SharedStore>,
    /// Counts reopenings, so handles of an earlier opening are not pooled again.
    generation: u64,
    /// For a borrowed source: what the repository's own objects directories looked like when
    /// they were found empty (a push into the fork changes it).
    own_objects: Mutex<objects::DirStamp>,
}

struct CachedRefs {
    snapshot: Arc<RefSnapshot>,
    stamp: stamp::RefStamp,
    checked: Instant,
    /// Whether the refs were watched when these were read or last found unchanged by a stat:
    /// then any later change is reported, and no stat is needed until one is.
    watched: bool,
}

impl Opened {
    /// Whether the repository's own objects directories may have changed since they were found
    /// empty (with `force`: always). Two stats; an unchanged but racy stamp counts as changed.
    fn own_objects_may_have_changed(&self, git_dir: &Path, force: bool) -> bool {
        let now = objects::DirStamp::read(git_dir);
        let mut seen = self.own_objects.lock().unwrap_or_else(|e| e.into_inner());
        let changed = force || *seen != now || seen.is_racy();
        *seen = now;
        changed
    }
}

impl GitRepo {
    fn new(
        path: PathBuf,
        rebuilds: Counter,
        stores: Arc<ObjectStores>,
        snapshots: Arc<SharedSnapshots>,
        signal: Arc<watch::Signal>,
        opens: Counter,
        budget: &Arc<Budget>,
    ) -> GitRepo {
        GitRepo {
            rebuilds,
            path,
            stores,
            snapshots,
            opened: Mutex::new(None),
            handles: pool::Pool::new(budget, MAX_POOLED_HANDLES),
            refs: Mutex::new(None),
            signal,
            opens,
            bloom: Mutex::new(None),
        }
    }

    /// The repository as opened last, if it was.
    fn opened(&self) -> Option<Arc<Opened>> {
        let opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        opened.as_ref()?.as_ref().ok().cloned()
    }

    fn open_now(&self, generation: u64) -> Result<Arc<Opened>, RepoError> {
        let options = gix::open::Options::isolated()
            .open_path_as_is(true)
            .config_overrides([DELTA_BASE_CACHE]);
        let open_error = |e: gix::Error| RepoError::Open {
            path: self.path.clone(),
            source: Arc::new(e),
        };
        let mut repo =
            gix::ThreadSafeRepository::open_opts(&self.path, options).map_err(open_error)?;
        self.opens.inc();
        let source = if repo.objects.replacements().next().is_some() {
            objects::ObjectSource::private(&self.path)
        } else {
            objects::ObjectSource::of(&self.path)
        };
        let store = self
            .stores
            .get(&source, &repo.objects)
            .map_err(|e| open_error(gix::Error::from_error(e)))?;
        let own_objects = objects::DirStamp::read(&self.path);
        // The repository's own store has loaded nothing yet (gix loads indices on first use).
        repo.objects = Arc::clone(&store.store);
        Ok(Arc::new(Opened {
            repo,
            source,
            store,
            generation,
            own_objects: Mutex::new(own_objects),
        }))
    }

    /// The opened repository. A fork served by its alternate's store is checked for objects of
    /// its own — a push to it — (cheaply by two stats, fully with `force`) and then reopened
    /// with its own store.
    fn open(&self, force: bool) -> Result<Arc<Opened>, RepoError> {
        let mut slot = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        let generation = match slot.as_ref() {
            None => 0,
            Some(Err(e)) => return Err(e.clone()),
            Some(Ok(opened)) => {
                if !opened.source.borrowed
                    || !opened.own_objects_may_have_changed(&self.path, force)
                {
                    return Ok(Arc::clone(opened));
                }
                if objects::ObjectSource::of(&self.path) == opened.source {
                    return Ok(Arc::clone(opened));
                }
                opened.generation + 1
            }
        };
        let opened = self.open_now(generation);
        *slot = Some(opened.clone());
        opened
    }

    /// Runs `f` with a pooled handle. A fork on its alternate's store that gained objects of
    /// its own while `f` ran (a push landing in between) runs `f` again on its own store, so
    /// that no page is rendered from refs whose objects the handle cannot read.
    fn with_handle<R>(&self, f: impl Fn(&git::Repo) -> R) -> Result<R, RepoError> {
        let opened = self.open(false)?;
        let result = self.with_handle_of(&opened, &f);
        if !opened.source.borrowed {
            return Ok(result);
        }
        let now = self.open(false)?;
        if Arc::ptr_eq(&now, &opened) {
            return Ok(result);
        }
        Ok(self.with_handle_of(&now, &f))
    }

    fn with_handle_of<R>(&self, opened: &Opened, f: &impl Fn(&git::Repo) -> R) -> R {
        let pooled = self.handles.take();
        let mut repo = match pooled {
            Some((generation, repo)) if generation == opened.generation => repo,
            _ => {
                let mut repo = opened.repo.to_thread_local();
                repo.object_cache_size(OBJECT_CACHE_BYTES);
                repo
            }
        };
        // Object access with warm caches, shared by every repository of this store.
        let own = opened
            .store
            .checkout()
            .map(|warm| std::mem::replace(&mut repo.objects, warm));
        let shared = opened
            .store
            .packs
            .as_ref()
            .map(|set| (&self.stores.packs, set, &self.stores.commits));
        let result = f(&git::Repo::new(&repo, shared));
        let own = own.unwrap_or_else(|| repo.objects.clone());
        opened
            .store
            .checkin(std::mem::replace(&mut repo.objects, own));
        self.handles.put((opened.generation, repo));
        result
    }

    fn bloom(&self) -> Option<Arc<BloomFilters>> {
        let mut cached = self.bloom.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = cached.as_ref()
            && c.checked.elapsed() < REF_CHECK_INTERVAL
        {
            return c.filters.clone();
        }
        let stamp = bloom_stamp(&self.path);
        match cached.as_mut() {
            Some(c) if c.stamp == stamp => c.checked = Instant::now(),
            _ => {
                *cached = Some(CachedBloom {
                    filters: BloomFilters::open(&self.path).map(Arc::new),
                    stamp,
                    checked: Instant::now(),
                })
            }
        }
        cached.as_ref().and_then(|c| c.filters.clone())
    }

    fn refs_version(&self) -> Option<u64> {
        let mut cached = self.refs.lock().unwrap_or_else(|e| e.into_inner());
        let c = cached.as_mut()?;
        if self.signal.is_dirty() {
            return None;
        }
        if c.watched || c.checked.elapsed() < REF_CHECK_INTERVAL {
            return Some(c.snapshot.version);
        }
        let watched = self.signal.watched();
        self.signal.count_stamp_check();
        let now = stamp::RefStamp::read(&self.path).ok()?;
        if now == c.stamp && !c.stamp.is_racy() {
            c.checked = Instant::now();
            c.watched = watched;
            return Some(c.snapshot.version);
        }
        // Changed (or not trustworthy): `checked` stays stale, so the next `refs` re-reads;
        // the new version is known only once the refs are read.
        None
    }

    /// The stamp of the refs; on failure the refs stay marked, so that the next request
    /// tries again rather than trusting the watch.
    fn read_stamp(&self) -> Result<stamp::RefStamp, RepoError> {
        stamp::RefStamp::read(&self.path).inspect_err(|_| self.signal.keep_dirty())
    }

    fn refs(&self, repo: &git::Repo) -> Result<Arc<RefSnapshot>, RepoError> {
        let mut cached = self.refs.lock().unwrap_or_else(|e| e.into_inner());
        // The report is taken before the watch state and the refs are read: a change after
        // this marks them again.
        let reported = self.signal.take_dirty();
        let watched = self.signal.watched();
        let mut previous = None;
        if let Some(c) = cached.as_mut() {
            if !reported && (c.watched || c.checked.elapsed() < REF_CHECK_INTERVAL) {
                return Ok(Arc::clone(&c.snapshot));
            }
            self.signal.count_stamp_check();
            let now = self.read_stamp()?;
            c.checked = Instant::now();
            // A racy stamp proves nothing: its refs are read again (git's racy-git rule).
            if now == c.stamp && !c.stamp.is_racy() {
                c.watched = watched;
                return Ok(Arc::clone(&c.snapshot));
            }
            previous = Some(Arc::clone(&c.snapshot));
        }
        // The stamp is read before the refs, so a change while they are read shows next time.
        let stamp = self.read_stamp()?;
        // New refs of a fork served by its alternate's store may name objects pushed into the
        // fork itself (objects are written before refs). If the fork moved to its own store only
        // now, `repo` cannot read them: this request keeps the refs it can read, the next one
        // (with a handle on the new store) reads the new refs.
        let opened = self.open(true)?;
        if !std::ptr::eq(opened.store.store.as_ref(), repo.objects.store_ref())
            && let Some(c) = cached.as_mut()
        {
            c.checked = Instant::now()
                .checked_sub(REF_CHECK_INTERVAL)
                .unwrap_or(c.checked);
            self.signal.keep_dirty();
            return Ok(Arc::clone(&c.snapshot));
        }
        let files = stamp
            .all_packed()
            .then(|| ref_files_hash(&self.path))
            .flatten();
        let known = files.and_then(|key| self.snapshots.by_files(key));
        let snapshot = match known {
            Some(snapshot) => snapshot,
            None => {
                let listing = RefListing::read(repo).inspect_err(|_| self.signal.keep_dirty())?;
                self.rebuilds.inc();
                let snapshot = match previous {
                    Some(previous) if previous.version == listing.version => previous,
                    _ => self.snapshots.get_or_build(repo, listing),
                };
                if let Some(key) = files {
                    self.snapshots.remember_files(key, &snapshot);
                }
                snapshot
            }
        };
        *cached = Some(CachedRefs {
            snapshot: Arc::clone(&snapshot),
            stamp,
            checked: Instant::now(),
            watched,
        });
        Ok(snapshot)
    }
}
