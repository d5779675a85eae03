//! What a job's caller gets: the value with its wait and run time, or why it was shed.

use super::CostClass;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Why a job was not run (or not finished).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShedReason {
    /// The class's queue was full.
    QueueFull,
    /// The job waited past its class's deadline (or, in a standing queue, past the short
    /// overload limit).
    Deadline,
    /// The job's client held more than its share of the expensive class and a lighter client
    /// needed the queue slot.
    OverShare,
    /// The scheduler is shutting down.
    ShuttingDown,
    /// The process is near its memory limit: expensive work waits until it is not.
    MemoryPressure,
    /// The job ran and panicked. Not an overload: answer 500, not 503 (`retry_after` is zero).
    Panicked,
}

impl ShedReason {
    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            ShedReason::QueueFull => "queue_full",
            ShedReason::Deadline => "deadline",
            ShedReason::OverShare => "over_share",
            ShedReason::ShuttingDown => "shutting_down",
            ShedReason::MemoryPressure => "memory_pressure",
            ShedReason::Panicked => "panicked",
        }
    }

    pub(super) fn index(self) -> usize {
        match self {
            ShedReason::QueueFull => 0,
            ShedReason::Deadline => 1,
            ShedReason::OverShare => 2,
            ShedReason::ShuttingDown => 3,
            ShedReason::Panicked => 4,
            ShedReason::MemoryPressure => 5,
        }
    }

    pub(super) const ALL: [ShedReason; 6] = [
        ShedReason::QueueFull,
        ShedReason::Deadline,
        ShedReason::OverShare,
        ShedReason::ShuttingDown,
        ShedReason::Panicked,
        ShedReason::MemoryPressure,
    ];
}

impl fmt::Display for ShedReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShedReason::QueueFull => "too many requests are waiting",
            ShedReason::Deadline => "the request waited too long",
            ShedReason::OverShare => "this client has more than its share of expensive requests",
            ShedReason::ShuttingDown => "the server is shutting down",
            ShedReason::MemoryPressure => "the server is short of memory",
            ShedReason::Panicked => "the page failed to render",
        })
    }
}

/// A job the scheduler did not run (or that panicked), with a suggested `Retry-After`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shed {
    pub reason: ShedReason,
    /// Suggested `Retry-After`: 1 s for cheap work, 5 s for expensive work, 15 s for a client
    /// over its share; zero for [`ShedReason::Panicked`].
    pub retry_after: Duration,
}

impl Shed {
    /// `retry_after` in whole seconds for a `Retry-After` header (rounded up; 0 only for
    /// [`ShedReason::Panicked`]).
    pub fn retry_after_secs(&self) -> u64 {
        let d = self.retry_after;
        d.as_secs() + u64::from(d.subsec_nanos() > 0)
    }
}

impl fmt::Display for Shed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.reason)?;
        if !self.retry_after.is_zero() {
            write!(f, "; retry in {} s", self.retry_after.as_secs().max(1))?;
        }
        Ok(())
    }
}

impl std::error::Error for Shed {}

const CHEAP_RETRY: Duration = Duration::from_secs(1);
pub(super) const EXPENSIVE_RETRY: Duration = Duration::from_secs(5);
const OVER_SHARE_RETRY: Duration = Duration::from_secs(15);

pub(super) fn retry_after(class: CostClass, reason: ShedReason) -> Duration {
    match (reason, class) {
        (ShedReason::Panicked, _) => Duration::ZERO,
        (ShedReason::OverShare, _) => OVER_SHARE_RETRY,
        (_, CostClass::Cheap) => CHEAP_RETRY,
        (_, CostClass::Expensive) => EXPENSIVE_RETRY,
    }
}

/// A finished job: its value, how long it waited for a worker, and how long it ran.
#[derive(Clone, Debug)]
pub struct Done<R> {
    pub value: R,
    /// From the call to [`Scheduler::run`] to the start of the job on a worker.
    pub waited: Duration,
    /// The job's own run time on the worker.
    pub ran: Duration,
    /// The CPU time the worker's thread spent on it (what it cost, without time preempted).
    pub cpu: Duration,
}

impl<R> Done<R> {
    /// The same finish, its value behind an `Arc` (for identical requests to share).
    pub fn shared(self) -> Done<Arc<R>> {
        Done {
            value: Arc::new(self.value),
            waited: self.waited,
            ran: self.ran,
            cpu: self.cpu,
        }
    }
}
