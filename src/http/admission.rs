//! Admission control: expensive pages take a permit from a small pool, so a crawler flood of
//! expensive URLs never starves the cheap pages; no permit within a short wait → 503.

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Expensive pages rendering at once.
const EXPENSIVE_PERMITS: usize = 2;
/// How long an expensive request waits for a permit before it is turned away.
const EXPENSIVE_WAIT: Duration = Duration::from_secs(2);

pub struct Admission {
    expensive: Arc<Semaphore>,
}

impl Default for Admission {
    fn default() -> Self {
        Admission {
            expensive: Arc::new(Semaphore::new(EXPENSIVE_PERMITS)),
        }
    }
}

impl Admission {
    /// A permit for an expensive request; `None` when none frees up in time.
    pub async fn admit_expensive(&self) -> Option<OwnedSemaphorePermit> {
        tokio::time::timeout(EXPENSIVE_WAIT, Arc::clone(&self.expensive).acquire_owned())
            .await
            .ok()?
            .ok()
    }
}
