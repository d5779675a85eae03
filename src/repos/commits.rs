//! The commit index of each object store ([`CommitIndex`]): the commits belong to the object
//! database, so every repository a store serves uses one index. It is loaded or built on one
//! thread for all stores (one build at a time), never by a request, and extended (from the new tips only) when a
//! repository's refs name commits it lacks; until then readers use the index they find and
//! walk the objects for tips it does not hold.

use super::refs::RefSnapshot;
use crate::git::commit_index::CommitIndex;
use gix::ObjectId;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, OnceLock};

/// Ref versions remembered as held by an index (forks with refs of their own each add one).
const MAX_COVERED: usize = 64;

/// The metrics of all commit indexes.
#[derive(Clone, Default)]
pub struct IndexMetrics {
    /// Bytes held by commit indexes.
    pub bytes: Gauge,
    /// Commit indexes loaded, built or extended (by at least one commit).
    pub builds: Counter,
}

/// One store's commit index and its refresh state.
pub(super) struct IndexSlot {
    state: Mutex<SlotState>,
    metrics: IndexMetrics,
}

#[derive(Default)]
struct SlotState {
    index: Option<Arc<CommitIndex>>,
    /// The ref version a thread is bringing the index up to date with.
    building: Option<u64>,
    /// Ref versions whose every tip the index holds.
    covered: Vec<u64>,
    /// Ref versions whose build failed (not retried).
    failed: Vec<u64>,
    /// Tips that arrived while a build ran: built next.
    pending: Option<Work>,
}

/// What a build is to add: the tips of one ref version, read through `repo`.
struct Work {
    version: u64,
    tips: Vec<ObjectId>,
    repo: gix::ThreadSafeRepository,
}

impl IndexSlot {
    pub fn new(metrics: IndexMetrics) -> IndexSlot {
        IndexSlot {
            state: Mutex::default(),
            metrics,
        }
    }

    /// The index as it is now (`None` before the first build finished). When it does not hold
    /// every tip of `refs`, a background build is started to add them.
    pub fn get(
        self: &Arc<Self>,
        refs: &RefSnapshot,
        repo: &gix::ThreadSafeRepository,
    ) -> Option<Arc<CommitIndex>> {
        let mut state = self.lock();
        let current = state.index.clone();
        let version = refs.version;
        let known = state.covered.contains(&version) || state.failed.contains(&version);
        if known || state.building == Some(version) {
            return current;
        }
        let tips = tips(refs);
        if let Some(index) = &current
            && tips.iter().all(|t| index.position(t).is_some())
        {
            state.cover(version);
            return current;
        }
        let work = Work {
            version,
            tips,
            repo: repo.clone(),
        };
        if state.building.is_some() {
            state.pending = Some(work);
        } else if self.queue(work) {
            // (the builder locks the state before it starts, so it sees this)
            state.building = Some(version);
        }
        current
    }

    /// Whether the index holds every tip of the ref version `version`.
    pub fn covers(&self, version: u64) -> bool {
        self.lock().covered.contains(&version)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands `work` to the builder thread; false when there is none.
    fn queue(self: &Arc<Self>, work: Work) -> bool {
        builder().send((Arc::clone(self), work)).is_ok()
    }

    /// Builds for `work`, then for whatever arrived meanwhile.
    fn build_all(&self, mut work: Work) {
        loop {
            self.build(&work);
            let mut state = self.lock();
            match state.pending.take() {
                Some(next) => {
                    state.building = Some(next.version);
                    work = next;
                }
                None => {
                    state.building = None;
                    return;
                }
            }
        }
    }

    fn build(&self, work: &Work) {
        let repo = work.repo.to_thread_local();
        let current = self.lock().index.clone();
        let built = match &current {
            Some(index) => index.extended(&repo, &work.tips),
            None => CommitIndex::load(&repo, &work.tips).map(Some),
        };
        let mut state = self.lock();
        match built {
            Ok(None) => {
                if let Some(index) = &current
                    && work.tips.iter().all(|t| index.position(t).is_some())
                {
                    state.cover(work.version);
                }
            }
            Ok(Some(index)) => {
                let index = Arc::new(index);
                self.metrics.builds.inc();
                let old = state.index.as_ref().map_or(0, |i| i.heap_bytes());
                self.metrics.bytes.inc_by(index.heap_bytes() as i64);
                self.metrics.bytes.dec_by(old as i64);
                if work.tips.iter().all(|t| index.position(t).is_some()) {
                    state.cover(work.version);
                }
                state.index = Some(index);
            }
            Err(e) => {
                tracing::warn!("commit index of {}: {e}", repo.git_dir().display());
                if state.failed.len() >= MAX_COVERED {
                    state.failed.clear();
                }
                state.failed.push(work.version);
            }
        }
    }
}

/// The one thread that builds commit indexes, one at a time, whatever the number of
/// repositories whose first pages arrive at once (each build is a walk of a whole history).
fn builder() -> &'static Sender<(Arc<IndexSlot>, Work)> {
    static BUILDER: OnceLock<Sender<(Arc<IndexSlot>, Work)>> = OnceLock::new();
    BUILDER.get_or_init(|| {
        let (send, receive) = std::sync::mpsc::channel::<(Arc<IndexSlot>, Work)>();
        let spawned = std::thread::Builder::new()
            .name("commit-index".into())
            .spawn(move || {
                for (slot, work) in receive {
                    slot.build_all(work);
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("no commit index thread: {e}");
        }
        send
    })
}

impl SlotState {
    fn cover(&mut self, version: u64) {
        if self.covered.len() >= MAX_COVERED {
            self.covered.remove(0);
        }
        self.covered.push(version);
    }
}

impl Drop for IndexSlot {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(index) = &state.index {
            self.metrics.bytes.dec_by(index.heap_bytes() as i64);
        }
    }
}

/// The commits the refs of a snapshot point to: branches, remote-tracking branches and tags
/// of commits.
fn tips(refs: &RefSnapshot) -> Vec<ObjectId> {
    let mut tips: Vec<ObjectId> = refs
        .branches
        .iter()
        .chain(&refs.remotes)
        .map(|b| b.id)
        .chain(
            refs.tags
                .iter()
                .filter(|t| t.target_kind == gix::object::Kind::Commit)
                .map(|t| t.target),
        )
        .collect();
    tips.sort_unstable();
    tips.dedup();
    tips
}
