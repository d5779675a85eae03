//! Admission of clones and fetches to the git workers. git does not retry a 503, so a fetch
//! does not take the crawler pages' short queue deadline: fetches wait their turn here in
//! arrival order, at most a fixed number at once go on to the workers (where they run ahead
//! of queued pages of their class, see [`super::scheduler::Scheduler::run_first`]), and only a
//! fetch that finds too many waiting, or waits too long, is refused.

use super::scheduler::{Shed, ShedReason};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a refused fetch is told to wait before it tries again.
const RETRY: Duration = Duration::from_secs(10);

/// The gate: `slots` fetches at once, up to `max_waiting` more waiting up to `patience`.
pub(super) struct FetchGate {
    slots: Arc<Semaphore>,
    waiting: AtomicUsize,
    max_waiting: usize,
    patience: Duration,
}

impl FetchGate {
    pub(super) fn new(slots: usize, max_waiting: usize, patience: Duration) -> FetchGate {
        FetchGate {
            slots: Arc::new(Semaphore::new(slots.max(1))),
            waiting: AtomicUsize::new(0),
            max_waiting,
            patience,
        }
    }

    /// Waits for a slot; the fetch holds it until the permit is dropped.
    pub(super) async fn enter(&self) -> Result<OwnedSemaphorePermit, Shed> {
        if let Ok(permit) = Arc::clone(&self.slots).try_acquire_owned() {
            return Ok(permit);
        }
        if self.waiting.fetch_add(1, Ordering::SeqCst) >= self.max_waiting {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            return Err(refused(ShedReason::QueueFull));
        }
        let _waiter = Waiter(&self.waiting);
        let acquire = Arc::clone(&self.slots).acquire_owned();
        match tokio::time::timeout(self.patience, acquire).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) => Err(refused(ShedReason::ShuttingDown)),
            Err(_) => Err(refused(ShedReason::Deadline)),
        }
    }
}

fn refused(reason: ShedReason) -> Shed {
    Shed {
        reason,
        retry_after: RETRY,
    }
}

/// Counts a waiter out when it stops waiting, whether it got a slot, timed out or went away.
struct Waiter<'a>(&'a AtomicUsize);

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fetches_past_the_slots_wait_and_past_the_waiters_are_refused() {
        let gate = Arc::new(FetchGate::new(1, 1, Duration::from_secs(30)));
        let first = gate.enter().await.unwrap();
        let waiter = tokio::spawn({
            let gate = Arc::clone(&gate);
            async move { gate.enter().await.map(drop) }
        });
        while gate.waiting.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        let third = gate.enter().await.unwrap_err();
        assert_eq!(third.reason, ShedReason::QueueFull);
        drop(first);
        waiter.await.unwrap().unwrap();
        assert_eq!(gate.waiting.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_fetch_that_waits_too_long_is_refused() {
        let gate = FetchGate::new(1, 4, Duration::from_millis(20));
        let _first = gate.enter().await.unwrap();
        let late = gate.enter().await.unwrap_err();
        assert_eq!(late.reason, ShedReason::Deadline);
        assert_eq!(late.retry_after_secs(), 10);
        assert_eq!(gate.waiting.load(Ordering::SeqCst), 0);
    }
}
