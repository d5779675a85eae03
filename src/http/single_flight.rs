//! Single flight: concurrent requests for the same key share one computation.
//!
//! The first caller for a key (the leader) runs its future; callers that arrive while it runs
//! (followers) wait for the leader's value instead of doing the work again. The key is forgotten
//! as soon as the value is there, so a later call computes afresh (caching is someone else's
//! job). If the leader's future is dropped or panics before it has a value, its followers wake
//! up and one of them becomes the new leader with its own future: no follower waits on work
//! that nobody is doing, and no key stays stuck.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard};
use tokio::sync::watch;

/// Shares in-flight computations by key. `V` is cloned once per follower (make it cheap to
/// clone: `Arc`, `Bytes`).
pub struct SingleFlight<K, V> {
    flights: Mutex<HashMap<K, watch::Sender<Option<V>>>>,
}

impl<K, V> Default for SingleFlight<K, V> {
    fn default() -> Self {
        SingleFlight {
            flights: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash + Clone, V: Clone> SingleFlight<K, V> {
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of `make`, or of the future of a concurrent caller with the same key that
    /// started first. `make` is only polled if this caller becomes the leader.
    pub async fn run(&self, key: K, make: impl Future<Output = V>) -> V {
        loop {
            let follow = {
                let mut flights = self.lock();
                match flights.get(&key) {
                    Some(flight) => Some(flight.subscribe()),
                    None => {
                        flights.insert(key.clone(), watch::channel(None).0);
                        None
                    }
                }
            };
            let Some(mut flight) = follow else {
                let lead = Lead {
                    flights: &self.flights,
                    key: &key,
                    done: false,
                };
                let value = make.await;
                lead.finish(&value);
                return value;
            };
            // Err: the leader went away without a value; try again (perhaps as the leader).
            let shared = flight
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|value| value.clone());
            if let Some(value) = shared {
                return value;
            }
        }
    }

    /// Keys being computed now.
    pub fn in_flight(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<K, watch::Sender<Option<V>>>> {
        // No code that can panic runs under the lock; a poisoned map is still consistent.
        self.flights.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[cfg(test)]
    fn followers(&self, key: &K) -> usize {
        self.lock().get(key).map_or(0, |f| f.receiver_count())
    }
}

/// The leader's hold on its key: removed when the leader finishes, or when its future is
/// dropped (which closes the channel and wakes the followers).
struct Lead<'a, K: Eq + Hash, V> {
    flights: &'a Mutex<HashMap<K, watch::Sender<Option<V>>>>,
    key: &'a K,
    /// The key was removed already; another leader may hold it by now.
    done: bool,
}

impl<K: Eq + Hash, V> Lead<'_, K, V> {
    fn take(&self) -> Option<watch::Sender<Option<V>>> {
        let mut flights = self.flights.lock().unwrap_or_else(|e| e.into_inner());
        flights.remove(self.key)
    }
}

impl<K: Eq + Hash, V: Clone> Lead<'_, K, V> {
    fn finish(mut self, value: &V) {
        if let Some(flight) = self.take() {
            flight.send_replace(Some(value.clone()));
        }
        self.done = true;
    }
}

impl<K: Eq + Hash, V> Drop for Lead<'_, K, V> {
    fn drop(&mut self) {
        if !self.done {
            drop(self.take());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Waits (politely) until `cond` holds; fails the test after 10 s instead of hanging.
    async fn until(what: &str, cond: impl Fn() -> bool) {
        let give_up = tokio::time::Instant::now() + Duration::from_secs(10);
        while !cond() {
            assert!(tokio::time::Instant::now() < give_up, "never: {what}");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_identical_calls_run_once() {
        let flights = Arc::new(SingleFlight::<String, u64>::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let (release, released) = watch::channel(false);
        let mut tasks = Vec::new();
        for _ in 0..16 {
            let (flights, runs, mut released) =
                (Arc::clone(&flights), Arc::clone(&runs), released.clone());
            tasks.push(tokio::spawn(async move {
                flights
                    .run("blame/a.c".to_string(), async move {
                        runs.fetch_add(1, Ordering::SeqCst);
                        let _ = released.wait_for(|r| *r).await;
                        42
                    })
                    .await
            }));
        }
        let key = "blame/a.c".to_string();
        until("15 followers", || flights.followers(&key) == 15).await;
        assert_eq!(flights.in_flight(), 1);
        release.send_replace(true);
        for task in tasks {
            assert_eq!(task.await.unwrap(), 42);
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(flights.in_flight(), 0, "the key is forgotten when done");
        // A later call computes afresh.
        assert_eq!(flights.run(key, async { 7 }).await, 7);
    }

    #[tokio::test]
    async fn distinct_keys_do_not_share() {
        let flights = SingleFlight::<u32, u32>::new();
        let (a, b) = tokio::join!(flights.run(1, async { 10 }), flights.run(2, async { 20 }));
        assert_eq!((a, b), (10, 20));
        assert_eq!(flights.in_flight(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dropped_leader_does_not_strand_followers() {
        let flights = Arc::new(SingleFlight::<u32, &'static str>::new());
        let leader = {
            let flights = Arc::clone(&flights);
            tokio::spawn(async move { flights.run(1, std::future::pending()).await })
        };
        until("a leader", || flights.in_flight() == 1).await;
        let follower = {
            let flights = Arc::clone(&flights);
            tokio::spawn(async move { flights.run(1, async { "follower's own" }).await })
        };
        until("a follower", || flights.followers(&1) == 1).await;
        leader.abort();
        assert!(leader.await.unwrap_err().is_cancelled());
        assert_eq!(follower.await.unwrap(), "follower's own");
        assert_eq!(flights.in_flight(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_leader_does_not_strand_followers() {
        let flights = Arc::new(SingleFlight::<u32, u32>::new());
        let (release, released) = watch::channel(false);
        let leader = {
            let (flights, mut released) = (Arc::clone(&flights), released.clone());
            tokio::spawn(async move {
                flights
                    .run(1, async move {
                        let _ = released.wait_for(|r| *r).await;
                        panic!("leader fails");
                    })
                    .await
            })
        };
        until("a leader", || flights.in_flight() == 1).await;
        let follower = {
            let flights = Arc::clone(&flights);
            tokio::spawn(async move { flights.run(1, async { 5 }).await })
        };
        until("a follower", || flights.followers(&1) == 1).await;
        release.send_replace(true);
        assert!(leader.await.unwrap_err().is_panic());
        assert_eq!(follower.await.unwrap(), 5);
        assert_eq!(flights.in_flight(), 0);
    }
}
