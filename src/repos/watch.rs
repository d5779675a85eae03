//! Ref change notifications: inotify watches (through `notify`) on each repository's git
//! directory (for `HEAD` and `packed-refs`) and, recursively, its `refs/`, which mark the
//! repository's refs dirty. Watches are added off the request path, one repository after
//! another; a repository whose watch cannot be added (watches ran out, a filesystem without
//! inotify, `watch-refs=0`) keeps the stat check of [`super::stamp`].

use notify::event::{AccessKind, AccessMode, EventKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, RwLock};

/// What the watches say about one repository's refs.
pub(super) struct Signal {
    watched: AtomicBool,
    dirty: AtomicBool,
    changes: AtomicU64,
    stamp_checks: Counter,
}

impl Signal {
    /// Counts a stat check of the refs (made because no watch vouches for them).
    pub(super) fn count_stamp_check(&self) {
        self.stamp_checks.inc();
    }

    fn mark(&self) {
        self.dirty.store(true, Ordering::SeqCst);
        self.changes.fetch_add(1, Ordering::SeqCst);
    }

    /// Whether a watch reports this repository's changes (else its stamp must be checked).
    pub(super) fn watched(&self) -> bool {
        self.watched.load(Ordering::SeqCst)
    }

    /// Whether the refs may have changed since the last call; clears the mark, so a change
    /// after this call marks them again.
    pub(super) fn take_dirty(&self) -> bool {
        self.dirty.swap(false, Ordering::SeqCst)
    }

    /// Whether the refs may have changed, leaving the mark.
    pub(super) fn is_dirty(&self) -> bool {
        self.dirty.load(Ordering::SeqCst)
    }

    /// Makes the next check read the refs again.
    pub(super) fn keep_dirty(&self) {
        self.dirty.store(true, Ordering::SeqCst);
    }

    /// How many changes the watch reported, when the repository is watched.
    pub(super) fn changes(&self) -> Option<u64> {
        self.watched().then(|| self.changes.load(Ordering::SeqCst))
    }
}

type Targets = Arc<RwLock<HashMap<PathBuf, Arc<Signal>>>>;
/// A git directory to watch, with its signal, or (`None`) to stop watching.
type Request = (PathBuf, Option<Arc<Signal>>);

/// The watches of all repositories (shared by every configuration since the start).
pub struct Watcher {
    /// Git directories to watch, for the thread that adds watches; `None` when disabled.
    queue: Option<Mutex<mpsc::Sender<Request>>>,
    /// Bumped on every reported change and every added watch (a cheap "anything new?").
    epoch: Arc<AtomicU64>,
    /// Repositories whose refs are watched (a metric).
    pub watched: Gauge,
    /// Stat checks of refs, for repositories without a watch or after a reported change (a
    /// metric).
    pub stamp_checks: Counter,
}

impl Watcher {
    /// A watcher, or with `enabled` false (or without inotify) one that watches nothing.
    pub fn new(enabled: bool) -> Watcher {
        let epoch = Arc::new(AtomicU64::new(0));
        let watched = Gauge::default();
        let queue = enabled
            .then(|| start(Arc::clone(&epoch), watched.clone()))
            .flatten()
            .map(Mutex::new);
        Watcher {
            queue,
            epoch,
            watched,
            stamp_checks: Counter::default(),
        }
    }

    /// The signal of a new repository, not watched yet.
    pub(super) fn signal(&self) -> Arc<Signal> {
        Arc::new(Signal {
            watched: AtomicBool::new(false),
            dirty: AtomicBool::new(false),
            changes: AtomicU64::new(0),
            stamp_checks: self.stamp_checks.clone(),
        })
    }

    /// Asks for `git_dir` to be watched; until it is, its refs are checked by stats.
    pub(super) fn watch(&self, git_dir: &Path, signal: &Arc<Signal>) {
        if let Some(queue) = &self.queue {
            let queue = queue.lock().unwrap_or_else(|e| e.into_inner());
            // The thread lives as long as the process; a send cannot fail before exit.
            let _ = queue.send((git_dir.to_path_buf(), Some(Arc::clone(signal))));
        }
    }

    /// Stops watching `git_dir` (a repository no longer configured).
    pub(super) fn unwatch(&self, git_dir: &Path) {
        if let Some(queue) = &self.queue {
            let queue = queue.lock().unwrap_or_else(|e| e.into_inner());
            let _ = queue.send((git_dir.to_path_buf(), None));
        }
    }

    /// A counter that changes whenever any watched repository's refs may have changed.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }
}

/// Starts inotify and the thread that adds watches; `None` (logged) when inotify is missing.
fn start(epoch: Arc<AtomicU64>, watched: Gauge) -> Option<mpsc::Sender<Request>> {
    let targets: Targets = Arc::default();
    let handler = {
        let (targets, epoch) = (Arc::clone(&targets), Arc::clone(&epoch));
        move |event: notify::Result<notify::Event>| {
            if on_event(&targets, event) {
                epoch.fetch_add(1, Ordering::SeqCst);
            }
        }
    };
    let watcher = match RecommendedWatcher::new(handler, notify::Config::default()) {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!("ref watches unavailable ({e}): checking refs by stat every 250 ms");
            return None;
        }
    };
    let (send, receive) = mpsc::channel();
    std::thread::Builder::new()
        .name("ref-watches".into())
        .spawn(move || add_watches(watcher, &targets, &epoch, &watched, receive))
        .ok()?;
    Some(send)
}

/// Adds and removes the watches asked for, for as long as the process runs.
fn add_watches(
    mut watcher: RecommendedWatcher,
    targets: &Targets,
    epoch: &AtomicU64,
    watched: &Gauge,
    receive: mpsc::Receiver<Request>,
) {
    let mut warned = false;
    for (git_dir, signal) in receive {
        let Some(signal) = signal else {
            let gone = targets
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&git_dir);
            if gone.is_some_and(|s| s.watched()) {
                watched.dec();
            }
            unwatch(&mut watcher, &git_dir);
            continue;
        };
        targets
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(git_dir.clone(), Arc::clone(&signal));
        let added = watcher
            .watch(&git_dir, RecursiveMode::NonRecursive)
            .and_then(|()| watcher.watch(&git_dir.join("refs"), RecursiveMode::Recursive));
        match added {
            Ok(()) => {
                // Refs read before this keep their stat check until one finds them unchanged.
                if !signal.watched.swap(true, Ordering::SeqCst) {
                    watched.inc();
                }
                epoch.fetch_add(1, Ordering::SeqCst);
            }
            Err(e) => {
                unwatch(&mut watcher, &git_dir);
                if !warned {
                    tracing::warn!(
                        "cannot watch the refs of {} ({e}): checking refs by stat every 250 ms \
                         for it and for any other repository that cannot be watched",
                        git_dir.display()
                    );
                    warned = true;
                }
            }
        }
    }
}

fn unwatch(watcher: &mut RecommendedWatcher, git_dir: &Path) {
    // Either may not be watched (a watch that failed half-way).
    let _ = watcher.unwatch(git_dir);
    let _ = watcher.unwatch(&git_dir.join("refs"));
}

/// Marks the repositories an event may concern (all of them when events were lost); whether
/// it marked any.
fn on_event(targets: &Targets, event: notify::Result<notify::Event>) -> bool {
    let targets = targets.read().unwrap_or_else(|e| e.into_inner());
    let event = match event {
        Ok(event) if !event.need_rescan() => event,
        _ => {
            targets.values().for_each(|s| s.mark());
            return true;
        }
    };
    if let EventKind::Access(kind) = event.kind
        && kind != AccessKind::Close(AccessMode::Write)
    {
        return false;
    }
    let mut marked = false;
    for signal in event.paths.iter().filter_map(|p| concerned(&targets, p)) {
        signal.mark();
        marked = true;
    }
    marked
}

/// The repository whose refs a changed `path` belongs to: the git directory itself, its
/// `HEAD`, `packed-refs` or `refs`, or anything below `refs/`.
fn concerned<'a>(
    targets: &'a HashMap<PathBuf, Arc<Signal>>,
    path: &Path,
) -> Option<&'a Arc<Signal>> {
    if let Some(signal) = targets.get(path) {
        return Some(signal);
    }
    let mut below = path;
    while let Some(parent) = below.parent() {
        if let Some(signal) = targets.get(parent) {
            let name = below.file_name()?;
            let direct = below == path;
            return (name == "refs" || (direct && (name == "HEAD" || name == "packed-refs")))
                .then_some(signal);
        }
        below = parent;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ref_paths_concern_a_repository() {
        let signal = Watcher::new(false).signal();
        let targets = HashMap::from([(PathBuf::from("/srv/r.git"), Arc::clone(&signal))]);
        for yes in [
            "/srv/r.git",
            "/srv/r.git/HEAD",
            "/srv/r.git/packed-refs",
            "/srv/r.git/refs",
            "/srv/r.git/refs/heads/a/b",
        ] {
            assert!(concerned(&targets, Path::new(yes)).is_some(), "{yes}");
        }
        for no in [
            "/srv/r.git/index",
            "/srv/r.git/HEAD.lock",
            "/srv/r.git/objects/pack/x.pack",
            "/srv/r.git/logs/HEAD",
            "/srv/other.git/HEAD",
            "/",
        ] {
            assert!(concerned(&targets, Path::new(no)).is_none(), "{no}");
        }
    }
}
