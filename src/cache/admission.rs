//! The admission rule every cache shares: keep what was costly to make, or asked for before.

use std::hash::{BuildHasher, Hash, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A result that took at least this much CPU time to make is kept the first time.
pub const COSTLY: Duration = Duration::from_millis(10);

/// The CPU time the calling thread has used.
pub fn thread_cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec.max(0) as u64, t.tv_nsec as u32)
}

/// Keys remembered as asked for once: a crawler at 1,500 pages a second takes about 40 s to
/// push a key out, a person's reload comes much sooner.
const SEEN_SLOTS: usize = 1 << 16;

/// Which results a cache keeps: those that cost at least [`COSTLY`] to make, and those whose
/// key was asked for before. A crawler never asks for a URL twice, so its cheap pages pass by
/// without evicting the pages people come back to, and without the cost of keeping them.
///
/// The keys asked for once are remembered as hashes in a fixed table, one per slot, the newest
/// winning: a collision forgets a key (it is kept a request later) or, rarely, admits one early.
pub struct Admission {
    seen: Box<[AtomicU64]>,
    hasher: RandomState,
}

impl Default for Admission {
    fn default() -> Self {
        Admission {
            seen: (0..SEEN_SLOTS).map(|_| AtomicU64::new(0)).collect(),
            hasher: RandomState::new(),
        }
    }
}

impl Admission {
    /// Whether the result for `key`, which took `cost` of CPU time to make, is worth keeping.
    pub fn admits(&self, key: &impl Hash, cost: Duration) -> bool {
        let hash = self.hasher.hash_one(key) | 1;
        let slot = &self.seen[(hash >> 48) as usize % SEEN_SLOTS];
        let asked_before = slot.swap(hash, Ordering::Relaxed) == hash;
        asked_before || cost >= COSTLY
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_keeps_the_costly_and_the_asked_for_again() {
        let admission = Admission::default();
        let cheap = Duration::from_micros(100);
        assert!(!admission.admits(&"once", cheap));
        assert!(admission.admits(&"once", cheap), "asked for again");
        assert!(admission.admits(&"slow", COSTLY), "costly the first time");
        let crawled = (0..1000).filter(|n| admission.admits(n, cheap)).count();
        assert_eq!(crawled, 0, "distinct keys asked for once are not kept");
    }
}
