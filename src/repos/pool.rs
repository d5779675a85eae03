//! Pools of warm handles under one bound over all repositories: each pool (a repository's
//! gix handles, an object store's handles with their caches) keeps a few handles, and a
//! [`Budget`] caps how many all pools of one kind hold together. Past the cap, the pools used
//! least recently give theirs back; pools unused for [`IDLE_RELEASE`] give theirs back too.

use lru::LruCache;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// How long a pool may go unused before its handles are released.
pub const IDLE_RELEASE: Duration = Duration::from_secs(60);

/// Something whose handles can be released.
trait Release: Send + Sync {
    /// Drops every pooled handle; how many there were.
    fn release(&self) -> usize;
}

struct Used {
    pool: Weak<dyn Release>,
    at: Instant,
}

/// The bound on pooled handles of one kind, over all pools.
pub struct Budget {
    cap: usize,
    state: Mutex<(LruCache<u64, Used>, usize)>,
    next_id: AtomicU64,
    /// Handles pooled now (a metric).
    pub held: Gauge,
    /// Handles released to stay within the cap or because their pool was idle (a metric).
    pub released: Counter,
}

impl Budget {
    /// A budget of at most `cap` pooled handles (at least one), with a thread that releases
    /// idle pools' handles for as long as the budget is in use.
    pub fn new(cap: usize) -> Arc<Budget> {
        let budget = Arc::new(Budget {
            cap: cap.max(1),
            state: Mutex::new((LruCache::unbounded(), 0)),
            next_id: AtomicU64::new(0),
            held: Gauge::default(),
            released: Counter::default(),
        });
        let weak = Arc::downgrade(&budget);
        let _ = std::thread::Builder::new()
            .name("idle-handles".into())
            .spawn(move || sweep_while_alive(&weak));
        budget
    }

    /// Records that pool `id` now holds one more handle, then releases the least recently
    /// used other pools while over the cap, and any pool idle too long.
    fn added(&self, id: u64, pool: Weak<dyn Release>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        state.0.put(id, Used { pool, at: now });
        state.1 += 1;
        while let Some((&oldest, used)) = state.0.peek_lru() {
            let idle = now.duration_since(used.at) >= IDLE_RELEASE;
            if oldest == id || (state.1 <= self.cap && !idle) {
                break;
            }
            self.release_oldest(&mut state);
        }
        self.held.set(state.1 as i64);
    }

    /// Releases the handles of the pool used least recently.
    fn release_oldest(&self, state: &mut (LruCache<u64, Used>, usize)) {
        if let Some((_, used)) = state.0.pop_lru() {
            let n = used.pool.upgrade().map_or(0, |p| p.release());
            state.1 -= n.min(state.1);
            self.released.inc_by(n as u64);
        }
    }

    /// Records that a pool handed out (or dropped) `n` handles.
    fn removed(&self, n: usize) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.1 -= n.min(state.1);
        self.held.set(state.1 as i64);
    }

    /// Releases the handles of pools unused for [`IDLE_RELEASE`].
    pub fn release_idle(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        while let Some((_, used)) = state.0.peek_lru() {
            if now.duration_since(used.at) < IDLE_RELEASE {
                break;
            }
            self.release_oldest(&mut state);
        }
        self.held.set(state.1 as i64);
    }
}

fn sweep_while_alive(budget: &Weak<Budget>) {
    loop {
        std::thread::sleep(IDLE_RELEASE / 4);
        let Some(budget) = budget.upgrade() else {
            return;
        };
        budget.release_idle();
    }
}

/// A pool of at most `max` handles, counted against a [`Budget`].
pub struct Pool<T> {
    id: u64,
    max: usize,
    items: Mutex<Vec<T>>,
    budget: Arc<Budget>,
    me: Weak<Pool<T>>,
}

impl<T: Send + 'static> Pool<T> {
    pub fn new(budget: &Arc<Budget>, max: usize) -> Arc<Pool<T>> {
        let id = budget.next_id.fetch_add(1, Ordering::Relaxed);
        Arc::new_cyclic(|me| Pool {
            id,
            max,
            items: Mutex::new(Vec::new()),
            budget: Arc::clone(budget),
            me: me.clone(),
        })
    }

    /// A pooled handle, if there is one.
    pub fn take(&self) -> Option<T> {
        let item = self.lock().pop();
        if item.is_some() {
            self.budget.removed(1);
        }
        item
    }

    /// Keeps `item` for later (unless the pool is full); may release other pools' handles.
    pub fn put(&self, item: T) {
        {
            let mut items = self.lock();
            if items.len() >= self.max {
                return;
            }
            items.push(item);
        }
        let me: Weak<dyn Release> = self.me.clone();
        self.budget.added(self.id, me);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<T>> {
        self.items.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T: Send + 'static> Release for Pool<T> {
    fn release(&self) -> usize {
        std::mem::take(&mut *self.lock()).len()
    }
}

impl<T> Drop for Pool<T> {
    fn drop(&mut self) {
        let n = self.items.get_mut().map_or(0, |items| items.len());
        if n > 0 {
            self.budget.removed(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_pools_give_back_their_handles_past_the_cap() {
        let budget = Budget::new(3);
        let pools: Vec<_> = (0..3).map(|_| Pool::new(&budget, 8)).collect();
        pools[0].put(1);
        pools[0].put(2);
        pools[1].put(3);
        assert_eq!(budget.held.get(), 3);
        pools[2].put(4);
        // Over the cap: pool 0, used least recently, gives back both of its handles.
        assert_eq!(budget.held.get(), 2);
        assert_eq!(budget.released.get(), 2);
        assert_eq!(pools[0].take(), None);
        assert_eq!(pools[1].take(), Some(3));
        assert_eq!(budget.held.get(), 1);
        drop(pools);
        assert_eq!(budget.held.get(), 0);
    }
}
