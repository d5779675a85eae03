//! Scheduling git work by cost.
//!
//! Git work is blocking and CPU-bound, so it runs on a fixed set of dedicated worker threads
//! (`cgitd-git-N`; dedicated so that thread-local state such as a warm `gix::Repository`
//! survives from one job to the next). Every job has a [`CostClass`]:
//!
//! - A free worker always takes cheap work before expensive work.
//! - Expensive jobs run on at most [`Limits::expensive_workers`] workers at once, so with two or
//!   more workers one is always free for cheap pages, whatever a crawler asks for.
//! - Each class has a bounded queue; a newcomer to a full queue is refused at once with
//!   [`ShedReason::QueueFull`] (for the expensive class, unless the fairness rule below evicts
//!   someone else's job for it).
//! - A job that waited longer than its class's deadline is not run: its caller gets
//!   [`ShedReason::Deadline`]. The caller's own future enforces the deadline with a timer, so
//!   the answer comes on time even when every worker is busy with long jobs.
//! - Adaptive LIFO + CoDel (as in Facebook's "Fail at Scale"): a class's queue is *standing*
//!   when no job dequeued during the last [`Limits::interval`] waited at most [`Limits::target`]
//!   and the queue was never empty in that time, i.e. the minimum queueing delay over the
//!   interval exceeded the target. A standing queue is served newest-first (the newest waiter is
//!   the one whose client is most likely still there), and waiters older than the class's
//!   short overload limit are shed with [`ShedReason::Deadline`], so a backlog cannot build up.
//!   When the queue drains, it is served first-in-first-out again.
//! - A waiter whose caller went away (its future was dropped: the client disconnected, or an
//!   outer timeout fired) is taken out of the queue at once and never run.
//! - Fairness inside the expensive class, by an opaque client key (the caller derives it from
//!   the IP's /24 or /56): when the expensive queue is full and the newcomer's client holds fewer
//!   expensive slots (running + queued) than the heaviest other client, the heaviest client's
//!   newest queued job is evicted ([`ShedReason::OverShare`]) and the newcomer admitted; the next
//!   expensive job to run is one of a client with the fewest running expensive jobs. A client
//!   alone may use the whole class.
//!
//! - Under memory pressure ([`Scheduler::set_memory_pressure`], set by `super::memory`) new
//!   expensive work is refused with [`ShedReason::MemoryPressure`]; cheap pages go on.
//!
//! - [`Scheduler::run_first`] queues a job ahead of every other job of its class, never shed
//!   for its wait: for work whose client does not retry a 503 (git's clones and fetches). Its
//!   caller bounds how many such jobs are queued at once.
//!
//! [`Scheduler::run`] returns [`Done`] with the value, the queue wait and the run time, so
//! the caller can log "class, queue wait, render time" per request. A job that panics does not
//! take its worker down: the panic is caught and logged, and the caller gets
//! [`ShedReason::Panicked`] (answer 500, not 503).

use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

pub use crate::request::page::CostClass;
pub use outcome::{Done, Shed, ShedReason};

mod metrics;
mod outcome;
mod queue;
#[cfg(test)]
mod tests;

use metrics::Metrics;
use outcome::retry_after;
use queue::{Entry, Inner, Job, Lane, Queue, State};

/// How much nicer than the process a worker thread is. Git work is CPU-bound and keeps every
/// core busy under a crawl; the runtime's threads, which accept, answer from the cache and write
/// responses, then still run as soon as they wake instead of taking turns with the workers.
const WORKER_NICENESS: i32 = 5;

/// Makes the calling thread (on Linux, `setpriority` with no pid is the calling thread, not the
/// whole process) `WORKER_NICENESS` nicer; a failure is logged and the thread runs as it is.
fn lower_priority() {
    let lowered = rustix::process::getpriority_process(None).and_then(|nice| {
        rustix::process::setpriority_process(None, (nice + WORKER_NICENESS).min(19))
    });
    if let Err(e) = lowered {
        tracing::warn!(error = %e, "git worker priority not lowered");
    }
}

/// The scheduler's limits. [`Limits::default_for_cores`] gives values that need no tuning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Worker threads. Default: twice the cores. Half of them may run expensive work, which can
    /// then keep every core busy (a flood is served at least as fast as by a CGI that forks per
    /// request), while the other half is always free for cheap pages: the OS shares the cores
    /// with the expensive jobs, so a cheap page is slowed by their share of the CPU instead of
    /// queued behind seconds of their work (measured with `bench/storm.sh`: a person's p99
    /// 4 ms with workers = cores and expensive work capped at one core).
    pub workers: usize,
    /// Workers that may run expensive jobs at once. Default: half the workers, at least 1, so
    /// cheap pages always find a free worker. Clamped to `1..=workers`.
    pub expensive_workers: usize,
    /// Cheap jobs that may wait. Default 512: cheap jobs take milliseconds, so even a full queue
    /// drains in about a second; the bound only stops memory growing without limit under a
    /// flood of cheap requests (which the deadline and CoDel then shed).
    pub cheap_queue: usize,
    /// Expensive jobs that may wait. Default 64: one per connection of a typical crawler flood;
    /// more would only wait past their deadline.
    pub expensive_queue: usize,
    /// The longest a cheap job waits for a worker. Default 5 s: past that a person has given up
    /// and a 503 is more useful than a late page.
    pub cheap_deadline: Duration,
    /// The longest an expensive job waits for a worker. Default 2 s: expensive jobs are the ones
    /// shed first under load; a crawler retries later.
    pub expensive_deadline: Duration,
    /// CoDel target: a queue is standing when no job dequeued in the last `interval` waited at
    /// most this long. Default 20 ms: several cheap pages' worth of render time.
    pub target: Duration,
    /// CoDel interval. Default 100 ms: long enough to ride out a burst, short enough that a
    /// standing queue is noticed before a person does.
    pub interval: Duration,
    /// In a standing cheap queue, waiters older than this are shed. Default 500 ms: while the
    /// queue is served newest-first, the old waiters would otherwise wait until the deadline.
    pub cheap_overload_wait: Duration,
    /// In a standing expensive queue, waiters older than this are shed. Default 500 ms, a
    /// quarter of the deadline: one expensive job can take seconds, so a queue stands behind
    /// it soon; the newest requests are served, the ones that waited longest told to come back.
    pub expensive_overload_wait: Duration,
}

/// The cores this process may run on (`std::thread::available_parallelism()`; 2 when unknown).
pub fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

impl Limits {
    /// Defaults for [`available_cores`]; see each field.
    pub fn default_for_cores() -> Limits {
        Limits::for_cores(available_cores())
    }

    /// The defaults for a machine with `cores` cores.
    pub fn for_cores(cores: usize) -> Limits {
        let workers = (2 * cores).max(2);
        Limits {
            workers,
            expensive_workers: (workers / 2).max(1),
            cheap_queue: 512,
            expensive_queue: 64,
            cheap_deadline: Duration::from_secs(5),
            expensive_deadline: Duration::from_secs(2),
            target: Duration::from_millis(20),
            interval: Duration::from_millis(100),
            cheap_overload_wait: Duration::from_millis(500),
            expensive_overload_wait: Duration::from_millis(500),
        }
    }

    fn queue(&self, class: CostClass) -> usize {
        match class {
            CostClass::Cheap => self.cheap_queue,
            CostClass::Expensive => self.expensive_queue,
        }
    }

    fn deadline(&self, class: CostClass) -> Duration {
        match class {
            CostClass::Cheap => self.cheap_deadline,
            CostClass::Expensive => self.expensive_deadline,
        }
    }

    fn overload_wait(&self, class: CostClass) -> Duration {
        match class {
            CostClass::Cheap => self.cheap_overload_wait,
            CostClass::Expensive => self.expensive_overload_wait,
        }
    }
}

/// Counts at one moment, for tests and logs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedulerStats {
    pub cheap_queued: usize,
    pub expensive_queued: usize,
    pub cheap_running: usize,
    pub expensive_running: usize,
}

/// The scheduler: worker threads, the two queues and their metrics. Dropping it (or calling
/// [`Scheduler::shutdown`]) sheds every queued job; running jobs finish and the threads exit.
pub struct Scheduler {
    inner: Arc<Inner>,
}

impl Scheduler {
    /// Starts `limits.workers` worker threads named `cgitd-git-N`.
    pub fn new(limits: Limits) -> Arc<Scheduler> {
        let mut limits = limits;
        limits.workers = limits.workers.max(1);
        limits.expensive_workers = limits.expensive_workers.clamp(1, limits.workers);
        let now = Instant::now();
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                queues: [Queue::new(now), Queue::new(now)],
                clients: HashMap::new(),
                next_id: 0,
                shutting_down: false,
            }),
            work: Condvar::new(),
            metrics: Metrics::new(),
            limits,
            memory_pressure: AtomicBool::new(false),
        });
        for n in 0..inner.limits.workers {
            let worker = Arc::clone(&inner);
            std::thread::Builder::new()
                .name(format!("cgitd-git-{n}"))
                .spawn(move || {
                    lower_priority();
                    worker.work()
                })
                .expect("cannot start a git worker thread");
        }
        Arc::new(Scheduler { inner })
    }

    /// Refuses new expensive work ([`ShedReason::MemoryPressure`]) while `pressed`; work
    /// already queued or running goes on.
    pub fn set_memory_pressure(&self, pressed: bool) {
        self.inner.memory_pressure.store(pressed, Ordering::Relaxed);
    }

    /// The limits in force (after clamping).
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// Runs `job` on a worker when its class's rules allow, and returns its value with the
    /// queue wait and run time. `client` is an opaque key for the requesting client, used for
    /// fairness inside the expensive class. Dropping the returned future before the job starts
    /// takes the job out of the queue; it is never run (a job already running finishes and
    /// its value is dropped). Await it inside a tokio runtime with the time driver enabled
    /// (the class deadline is a tokio timer).
    ///
    /// `Err(shed)`: answer 503 with `Retry-After: shed.retry_after_secs()`, except for
    /// [`ShedReason::Panicked`], which is a 500.
    pub async fn run<R, F>(&self, class: CostClass, client: u64, job: F) -> Result<Done<R>, Shed>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        self.queue(class, client, Lane::Bounded, job).await
    }

    /// Like [`Scheduler::run`], but the job waits ahead of every job of its class queued
    /// with `run`, and is never shed for its wait (nor refused for a full queue): it runs at
    /// the class's next free slot, or is withdrawn when its caller goes away. The caller
    /// bounds how many such jobs it queues at once.
    pub async fn run_first<R, F>(
        &self,
        class: CostClass,
        client: u64,
        job: F,
    ) -> Result<Done<R>, Shed>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        self.queue(class, client, Lane::First, job).await
    }

    async fn queue<R, F>(
        &self,
        class: CostClass,
        client: u64,
        lane: Lane,
        job: F,
    ) -> Result<Done<R>, Shed>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        let deadline = tokio::time::Instant::now() + self.inner.limits.deadline(class);
        let (reply, mut answer) = oneshot::channel();
        let id = self
            .inner
            .submit(class, client, lane, Box::new(Job { job, reply }))?;
        let mut withdraw = Withdraw {
            inner: &self.inner,
            class,
            id,
            armed: true,
        };
        let waited = match lane {
            Lane::Bounded => tokio::time::timeout_at(deadline, &mut answer).await,
            Lane::First => Ok((&mut answer).await),
        };
        let answer = match waited {
            Ok(answer) => answer,
            Err(_) => match self.inner.withdraw(class, id) {
                Some(task) => {
                    withdraw.armed = false;
                    drop(task);
                    return Err(self.inner.shed(class, ShedReason::Deadline));
                }
                // It started (or was answered) just now: take its answer.
                None => answer.await,
            },
        };
        withdraw.armed = false;
        // A reply dropped unanswered: only when the scheduler went away.
        answer.unwrap_or(Err(Shed {
            reason: ShedReason::ShuttingDown,
            retry_after: retry_after(class, ShedReason::ShuttingDown),
        }))
    }

    /// Counts queued and running jobs per class.
    pub fn stats(&self) -> SchedulerStats {
        let state = self.inner.lock();
        SchedulerStats {
            cheap_queued: state.queues[0].len(),
            expensive_queued: state.queues[1].len(),
            cheap_running: state.queues[0].running,
            expensive_running: state.queues[1].running,
        }
    }

    /// Registers the scheduler's metrics: `git_jobs_queued` and `git_jobs_running` (gauges),
    /// `git_job_queue_wait_seconds` (histogram of the wait of jobs that ran) and `git_jobs_shed`
    /// (counter by reason), all labelled by `class`.
    pub fn register(&self, registry: &mut Registry) {
        let m = &self.inner.metrics;
        registry.register(
            "git_jobs_queued",
            "Git jobs waiting for a worker, by cost class",
            m.queued.clone(),
        );
        registry.register(
            "git_jobs_running",
            "Git jobs running on a worker, by cost class",
            m.running.clone(),
        );
        registry.register(
            "git_job_queue_wait_seconds",
            "Time git jobs waited for a worker before running, by cost class",
            m.wait.clone(),
        );
        registry.register(
            "git_jobs_shed",
            "Git jobs not run (or failed), by cost class and reason",
            m.shed.clone(),
        );
    }

    /// Sheds every queued job ([`ShedReason::ShuttingDown`]) and refuses new ones; running
    /// jobs finish, then the worker threads exit.
    pub fn shutdown(&self) {
        let shed = {
            let mut state = self.inner.lock();
            state.shutting_down = true;
            let mut shed = Vec::new();
            for class in CostClass::ALL {
                let queue = &mut state.queues[class.index()];
                let entries: Vec<Entry> = queue
                    .first
                    .drain(..)
                    .chain(queue.entries.drain(..))
                    .collect();
                for entry in entries {
                    state.dequeued(class, entry.client);
                    shed.push((class, entry.task, Some(ShedReason::ShuttingDown)));
                }
            }
            self.inner.publish(&state);
            shed
        };
        self.inner.work.notify_all();
        self.inner.finish(shed);
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Withdraws a queued job when the caller's future is dropped before the answer came.
struct Withdraw<'a> {
    inner: &'a Inner,
    class: CostClass,
    id: u64,
    armed: bool,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if self.armed {
            drop(self.inner.withdraw(self.class, self.id));
        }
    }
}
