//! Admission control: expensive pages take a permit from a small pool, so a crawler flood of
//! expensive URLs never starves the cheap pages; no permit within a short wait → 503.

use crate::pages::PageRequest;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Expensive pages rendering at once.
const EXPENSIVE_PERMITS: usize = 2;
/// How long an expensive request waits for a permit before it is turned away.
const EXPENSIVE_WAIT: Duration = Duration::from_secs(2);

/// Pages whose cost grows with history or repository size.
pub fn is_expensive(req: &PageRequest) -> bool {
    let q = &req.query;
    match req.page.as_deref() {
        Some("blame" | "stats" | "snapshot") => true,
        Some("atom") => req.path.is_some(),
        Some("log") => (req.path.is_some() && q.ofs > 0) || q.q.is_some(),
        _ => false,
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_pages() {
        let mut req = PageRequest {
            page: Some("log".into()),
            ..PageRequest::default()
        };
        assert!(!is_expensive(&req));
        req.query.q = Some("fix".into());
        assert!(is_expensive(&req));
        req.page = Some("commit".into());
        assert!(!is_expensive(&req));
        req.page = Some("snapshot".into());
        assert!(is_expensive(&req));
        req.page = Some("atom".into());
        assert!(!is_expensive(&req));
        req.path = Some("src".into());
        assert!(is_expensive(&req));
    }
}
