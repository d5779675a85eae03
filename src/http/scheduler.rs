//! Scheduling git work by cost (DESIGN.md §2, item 2).
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
//! - [`Scheduler::run_first`] queues a job ahead of every other job of its class, never shed
//!   for its wait: for work whose client does not retry a 503 (git's clones and fetches). Its
//!   caller bounds how many such jobs are queued at once.
//!
//! [`Scheduler::run`] returns [`Done`] with the value, the queue wait and the run time, so
//! the caller can log "class, queue wait, render time" per request. A job that panics does not
//! take its worker down: the panic is caught and logged, and the caller gets
//! [`ShedReason::Panicked`] (answer 500, not 503).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

pub use crate::request::page::CostClass;

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
            ShedReason::Panicked => "panicked",
        }
    }

    fn index(self) -> usize {
        match self {
            ShedReason::QueueFull => 0,
            ShedReason::Deadline => 1,
            ShedReason::OverShare => 2,
            ShedReason::ShuttingDown => 3,
            ShedReason::Panicked => 4,
        }
    }

    const ALL: [ShedReason; 5] = [
        ShedReason::QueueFull,
        ShedReason::Deadline,
        ShedReason::OverShare,
        ShedReason::ShuttingDown,
        ShedReason::Panicked,
    ];
}

impl fmt::Display for ShedReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShedReason::QueueFull => "too many requests are waiting",
            ShedReason::Deadline => "the request waited too long",
            ShedReason::OverShare => "this client has more than its share of expensive requests",
            ShedReason::ShuttingDown => "the server is shutting down",
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
const EXPENSIVE_RETRY: Duration = Duration::from_secs(5);
const OVER_SHARE_RETRY: Duration = Duration::from_secs(15);

fn retry_after(class: CostClass, reason: ShedReason) -> Duration {
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

/// A queued job, type-erased: it is either run or answered with a [`Shed`].
trait Task: Send {
    /// The caller went away; nobody wants the answer.
    fn abandoned(&self) -> bool;
    /// Runs the job; the answer is sent by [`Ran::reply`] once the worker has done its
    /// accounting, so a caller that has its answer sees the worker free in the stats.
    fn run(self: Box<Self>, waited: Duration) -> Ran;
    fn shed(self: Box<Self>, shed: Shed);
}

struct Job<F, R> {
    job: F,
    reply: oneshot::Sender<Result<Done<R>, Shed>>,
}

impl<F, R> Task for Job<F, R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    fn abandoned(&self) -> bool {
        self.reply.is_closed()
    }

    fn run(self: Box<Self>, waited: Duration) -> Ran {
        let Job { job, reply } = *self;
        let started = Instant::now();
        let cpu_before = crate::cache::thread_cpu_time();
        let outcome = catch_unwind(AssertUnwindSafe(job));
        let ran = started.elapsed();
        let cpu = crate::cache::thread_cpu_time().saturating_sub(cpu_before);
        let (answer, panicked) = match outcome {
            Ok(value) => (
                Ok(Done {
                    value,
                    waited,
                    ran,
                    cpu,
                }),
                false,
            ),
            Err(payload) => {
                let what = payload
                    .downcast_ref::<&str>()
                    .copied()
                    .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                    .unwrap_or("(no message)");
                tracing::error!("a git job panicked after {ran:?}: {what}");
                let shed = Shed {
                    reason: ShedReason::Panicked,
                    retry_after: Duration::ZERO,
                };
                (Err(shed), true)
            }
        };
        Ran {
            panicked,
            reply: Box::new(move || {
                let _ = reply.send(answer);
            }),
        }
    }

    fn shed(self: Box<Self>, shed: Shed) {
        let _ = self.reply.send(Err(shed));
    }
}

/// A job that ran: did it panic, and its answer, to send.
struct Ran {
    panicked: bool,
    reply: Box<dyn FnOnce() + Send>,
}

struct Entry {
    id: u64,
    client: u64,
    enqueued: Instant,
    task: Box<dyn Task>,
}

/// Where a job waits in its class's queue.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lane {
    /// With the class's deadline, CoDel and fairness rules.
    Bounded,
    /// Ahead of the bounded lane, without a deadline.
    First,
}

struct Queue {
    /// The bounded lane, in order of arrival (and so of id).
    entries: VecDeque<Entry>,
    /// The first lane, in order of arrival.
    first: VecDeque<Entry>,
    running: usize,
    /// The last time this queue was empty or a job left it having waited at most the target.
    last_low: Instant,
}

impl Queue {
    fn new(now: Instant) -> Queue {
        Queue {
            entries: VecDeque::new(),
            first: VecDeque::new(),
            running: 0,
            last_low: now,
        }
    }

    /// The minimum queueing delay over the last interval exceeded the target.
    fn standing(&self, now: Instant, interval: Duration) -> bool {
        !self.entries.is_empty() && now.saturating_duration_since(self.last_low) > interval
    }

    fn len(&self) -> usize {
        self.entries.len() + self.first.len()
    }

    /// Takes the queued entry `id` out of either lane.
    fn remove(&mut self, id: u64) -> Option<Entry> {
        for lane in [&mut self.entries, &mut self.first] {
            if let Ok(at) = lane.binary_search_by_key(&id, |e| e.id) {
                return lane.remove(at);
            }
        }
        None
    }
}

/// A client's hold on the expensive class.
#[derive(Default)]
struct Usage {
    running: usize,
    queued: usize,
}

struct State {
    queues: [Queue; 2],
    /// Expensive-class usage by client; entries with nothing running or queued are removed.
    clients: HashMap<u64, Usage>,
    next_id: u64,
    shutting_down: bool,
}

impl State {
    /// Accounts for an entry that left the queue without running.
    fn dequeued(&mut self, class: CostClass, client: u64) {
        if class == CostClass::Expensive {
            self.usage(client, |u| u.queued -= 1);
        }
    }

    fn usage(&mut self, client: u64, change: impl FnOnce(&mut Usage)) {
        let usage = self.clients.entry(client).or_default();
        change(usage);
        if usage.running == 0 && usage.queued == 0 {
            self.clients.remove(&client);
        }
    }

    fn held(&self, client: u64) -> usize {
        self.clients
            .get(&client)
            .map_or(0, |u| u.running + u.queued)
    }
}

/// Jobs that leave the queue without running, to answer with a shed (or, with no reason,
/// whose caller is gone, just to drop) once the lock is released: dropping a job drops what
/// it captured, which must not happen under the lock.
type Sheds = Vec<(CostClass, Box<dyn Task>, Option<ShedReason>)>;

struct Inner {
    limits: Limits,
    state: Mutex<State>,
    /// Signalled when work is queued (or a slot for expensive work frees up).
    work: Condvar,
    metrics: Metrics,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Jobs never run under the lock, so a poisoned lock still holds consistent state.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn shed(&self, class: CostClass, reason: ShedReason) -> Shed {
        self.metrics.class[class.index()].shed[reason.index()].inc();
        Shed {
            reason,
            retry_after: retry_after(class, reason),
        }
    }

    fn finish(&self, sheds: Sheds) {
        for (class, task, reason) in sheds {
            match reason {
                Some(reason) => task.shed(self.shed(class, reason)),
                None => drop(task),
            }
        }
    }

    fn publish(&self, state: &State) {
        for class in CostClass::ALL {
            let (q, m) = (
                &state.queues[class.index()],
                &self.metrics.class[class.index()],
            );
            m.queued.set(q.len() as i64);
            m.running.set(q.running as i64);
        }
    }

    /// Queues a job, or refuses it at once.
    fn submit(
        &self,
        class: CostClass,
        client: u64,
        lane: Lane,
        task: Box<dyn Task>,
    ) -> Result<u64, Shed> {
        let now = Instant::now();
        let mut sheds = Sheds::new();
        let mut state = self.lock();
        if state.shutting_down {
            drop(state);
            return Err(self.shed(class, ShedReason::ShuttingDown));
        }
        self.shed_stale(&mut state, class, now, &mut sheds);
        let q = class.index();
        if lane == Lane::Bounded && state.queues[q].entries.len() >= self.limits.queue(class).max(1)
        {
            let evicted = match class {
                CostClass::Cheap => None,
                CostClass::Expensive => self.evict_for(&mut state, client),
            };
            match evicted {
                Some(entry) => sheds.push((class, entry.task, Some(ShedReason::OverShare))),
                None => {
                    drop(state);
                    self.finish(sheds);
                    return Err(self.shed(class, ShedReason::QueueFull));
                }
            }
        }
        let id = state.next_id;
        state.next_id += 1;
        let queue = &mut state.queues[q];
        let entry = Entry {
            id,
            client,
            enqueued: now,
            task,
        };
        match lane {
            Lane::Bounded => {
                if queue.entries.is_empty() {
                    queue.last_low = now;
                }
                queue.entries.push_back(entry);
            }
            Lane::First => queue.first.push_back(entry),
        }
        if class == CostClass::Expensive {
            state.usage(client, |u| u.queued += 1);
        }
        self.publish(&state);
        drop(state);
        self.work.notify_one();
        self.finish(sheds);
        Ok(id)
    }

    /// The fairness rule: when the newcomer's client holds fewer expensive slots than the
    /// heaviest other client with a queued job, that client's newest queued job leaves.
    fn evict_for(&self, state: &mut State, client: u64) -> Option<Entry> {
        let mine = state.held(client);
        let (&heavy, usage) = state
            .clients
            .iter()
            .filter(|(c, u)| **c != client && u.queued > 0)
            .max_by_key(|(c, u)| (u.running + u.queued, std::cmp::Reverse(**c)))?;
        if mine >= usage.running + usage.queued {
            return None;
        }
        let queue = &mut state.queues[CostClass::Expensive.index()];
        let at = queue.entries.iter().rposition(|e| e.client == heavy)?;
        let entry = queue.entries.remove(at)?;
        state.dequeued(CostClass::Expensive, heavy);
        Some(entry)
    }

    /// Sheds waiters past their deadline, or, in a standing queue, past the overload limit;
    /// drops abandoned ones at the head.
    fn shed_stale(&self, state: &mut State, class: CostClass, now: Instant, sheds: &mut Sheds) {
        let q = class.index();
        let mut limit = self.limits.deadline(class);
        if state.queues[q].standing(now, self.limits.interval) {
            limit = limit.min(self.limits.overload_wait(class));
        }
        while let Some(head) = state.queues[q].entries.front() {
            let stale = now.saturating_duration_since(head.enqueued) > limit;
            if !stale && !head.task.abandoned() {
                break;
            }
            let Some(entry) = state.queues[q].entries.pop_front() else {
                break;
            };
            state.dequeued(class, entry.client);
            let reason = (stale && !entry.task.abandoned()).then_some(ShedReason::Deadline);
            sheds.push((class, entry.task, reason));
        }
        if state.queues[q].entries.is_empty() {
            state.queues[q].last_low = now;
        }
    }

    /// Takes a queued job out (its caller went away or timed out); `None` if it is not queued
    /// (it runs or ran already).
    fn withdraw(&self, class: CostClass, id: u64) -> Option<Box<dyn Task>> {
        let mut state = self.lock();
        let q = class.index();
        let entry = state.queues[q].remove(id)?;
        state.dequeued(class, entry.client);
        if state.queues[q].entries.is_empty() {
            state.queues[q].last_low = Instant::now();
        }
        self.publish(&state);
        Some(entry.task)
    }

    /// The next job for a free worker: cheap first, then expensive if a slot is free.
    fn pick(&self, state: &mut State, sheds: &mut Sheds) -> Option<(CostClass, Entry)> {
        let now = Instant::now();
        for class in CostClass::ALL {
            let q = class.index();
            if class == CostClass::Expensive
                && state.queues[q].running >= self.limits.expensive_workers
            {
                continue;
            }
            self.shed_stale(state, class, now, sheds);
            while let Some(entry) = state.queues[q].first.pop_front() {
                state.dequeued(class, entry.client);
                if entry.task.abandoned() {
                    sheds.push((class, entry.task, None));
                    continue;
                }
                Self::started(state, class, &entry);
                return Some((class, entry));
            }
            loop {
                let queue = &state.queues[q];
                let lifo = queue.standing(now, self.limits.interval);
                let at = match class {
                    _ if queue.entries.is_empty() => break,
                    CostClass::Cheap if lifo => queue.entries.len() - 1,
                    CostClass::Cheap => 0,
                    CostClass::Expensive => Self::fairest(state, lifo),
                };
                let Some(entry) = state.queues[q].entries.remove(at) else {
                    break;
                };
                state.dequeued(class, entry.client);
                if entry.task.abandoned() {
                    sheds.push((class, entry.task, None));
                    continue;
                }
                let queue = &mut state.queues[q];
                let waited = now.saturating_duration_since(entry.enqueued);
                if waited <= self.limits.target || queue.entries.is_empty() {
                    queue.last_low = now;
                }
                Self::started(state, class, &entry);
                return Some((class, entry));
            }
        }
        None
    }

    /// Accounts for a picked entry that is about to run.
    fn started(state: &mut State, class: CostClass, entry: &Entry) {
        state.queues[class.index()].running += 1;
        if class == CostClass::Expensive {
            state.usage(entry.client, |u| u.running += 1);
        }
    }

    /// The queued expensive job of a client with the fewest running expensive jobs; among
    /// those the oldest, or the newest when the queue is standing.
    fn fairest(state: &State, lifo: bool) -> usize {
        let entries = &state.queues[CostClass::Expensive.index()].entries;
        let running = |at: usize| {
            state
                .clients
                .get(&entries[at].client)
                .map_or(0, |u| u.running)
        };
        let n = entries.len();
        let nth = |i: usize| if lifo { n - 1 - i } else { i };
        let (mut best, mut fewest) = (nth(0), usize::MAX);
        for at in (0..n).map(nth) {
            let r = running(at);
            if r < fewest {
                (best, fewest) = (at, r);
            }
            if fewest == 0 {
                break;
            }
        }
        best
    }

    /// A worker thread's loop.
    fn work(&self) {
        loop {
            let mut sheds = Sheds::new();
            let mut state = self.lock();
            let (class, entry) = loop {
                if let Some(picked) = self.pick(&mut state, &mut sheds) {
                    break picked;
                }
                if state.shutting_down {
                    drop(state);
                    self.finish(sheds);
                    return;
                }
                if !sheds.is_empty() {
                    self.publish(&state);
                    drop(state);
                    self.finish(std::mem::take(&mut sheds));
                    state = self.lock();
                    continue;
                }
                state = self.work.wait(state).unwrap_or_else(|e| e.into_inner());
            };
            self.publish(&state);
            drop(state);
            self.finish(sheds);

            let waited = entry.enqueued.elapsed();
            let metrics = &self.metrics.class[class.index()];
            metrics.wait.observe(waited.as_secs_f64());
            let ran = entry.task.run(waited);
            if ran.panicked {
                metrics.shed[ShedReason::Panicked.index()].inc();
            }

            let mut state = self.lock();
            state.queues[class.index()].running -= 1;
            if class == CostClass::Expensive {
                state.usage(entry.client, |u| u.running -= 1);
            }
            self.publish(&state);
            let more_expensive = state.queues[CostClass::Expensive.index()].len() > 0;
            drop(state);
            (ran.reply)();
            if class == CostClass::Expensive && more_expensive {
                // An expensive slot freed up; a worker idle because of the cap may take it.
                self.work.notify_one();
            }
        }
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

type Labels = Vec<(&'static str, String)>;

fn wait_histogram() -> Histogram {
    // 100 µs … 6.5 s
    Histogram::new(exponential_buckets(0.000_1, 2.0, 17))
}

struct ClassMetrics {
    queued: Gauge,
    running: Gauge,
    wait: Histogram,
    shed: [Counter; 5],
}

struct Metrics {
    queued: Family<Labels, Gauge>,
    running: Family<Labels, Gauge>,
    wait: Family<Labels, Histogram, fn() -> Histogram>,
    shed: Family<Labels, Counter>,
    class: [ClassMetrics; 2],
}

impl Metrics {
    fn new() -> Metrics {
        let queued = Family::<Labels, Gauge>::default();
        let running = Family::<Labels, Gauge>::default();
        let wait = Family::<Labels, Histogram, fn() -> Histogram>::new_with_constructor(
            wait_histogram as fn() -> Histogram,
        );
        let shed = Family::<Labels, Counter>::default();
        let class = CostClass::ALL.map(|class| {
            let labels = vec![("class", class.label().to_string())];
            ClassMetrics {
                queued: queued.get_or_create_owned(&labels),
                running: running.get_or_create_owned(&labels),
                wait: wait.get_or_create_owned(&labels),
                shed: ShedReason::ALL.map(|reason| {
                    shed.get_or_create_owned(&vec![
                        ("class", class.label().to_string()),
                        ("reason", reason.label().to_string()),
                    ])
                }),
            }
        });
        Metrics {
            queued,
            running,
            wait,
            shed,
            class,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::mpsc;
    use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
    use tokio::task::JoinHandle;

    const LONG: Duration = Duration::from_secs(60);

    /// Limits with nothing time-based getting in the way unless a test asks for it.
    fn limits(workers: usize, expensive_workers: usize) -> Limits {
        Limits {
            workers,
            expensive_workers,
            cheap_queue: 16,
            expensive_queue: 16,
            cheap_deadline: LONG,
            expensive_deadline: LONG,
            target: Duration::from_millis(1),
            interval: LONG,
            cheap_overload_wait: LONG,
            expensive_overload_wait: LONG,
        }
    }

    type Answer<R> = JoinHandle<Result<Done<R>, Shed>>;

    fn spawn<R, F>(sched: &Arc<Scheduler>, class: CostClass, client: u64, job: F) -> Answer<R>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        let sched = Arc::clone(sched);
        tokio::spawn(async move { sched.run(class, client, job).await })
    }

    /// Jobs that say when they start and then run until released one by one.
    struct Held {
        started_tx: UnboundedSender<&'static str>,
        started: UnboundedReceiver<&'static str>,
        releases: HashMap<&'static str, mpsc::Sender<()>>,
    }

    impl Held {
        fn new() -> Held {
            let (started_tx, started) = unbounded_channel();
            Held {
                started_tx,
                started,
                releases: HashMap::new(),
            }
        }

        fn job(&mut self, name: &'static str) -> impl FnOnce() -> &'static str + Send + 'static {
            let (release, released) = mpsc::channel();
            self.releases.insert(name, release);
            let started = self.started_tx.clone();
            move || {
                let _ = started.send(name);
                let _ = released.recv();
                name
            }
        }

        fn spawn(
            &mut self,
            sched: &Arc<Scheduler>,
            class: CostClass,
            client: u64,
            name: &'static str,
        ) -> Answer<&'static str> {
            spawn(sched, class, client, self.job(name))
        }

        /// Like [`Held::spawn`], in the first lane.
        fn spawn_first(
            &mut self,
            sched: &Arc<Scheduler>,
            client: u64,
            name: &'static str,
        ) -> Answer<&'static str> {
            let (sched, job) = (Arc::clone(sched), self.job(name));
            tokio::spawn(async move { sched.run_first(CostClass::Expensive, client, job).await })
        }

        async fn started(&mut self) -> &'static str {
            tokio::time::timeout(Duration::from_secs(10), self.started.recv())
                .await
                .expect("no job started")
                .expect("channel open")
        }

        fn release(&mut self, name: &str) {
            let _ = self.releases.remove(name).expect("a held job").send(());
        }

        fn release_all(&mut self) {
            for (_, release) in self.releases.drain() {
                let _ = release.send(());
            }
        }
    }

    /// Waits (politely) until `cond` holds; fails the test after 10 s instead of hanging.
    async fn until(what: &str, cond: impl Fn() -> bool) {
        let give_up = tokio::time::Instant::now() + Duration::from_secs(10);
        while !cond() {
            assert!(tokio::time::Instant::now() < give_up, "never: {what}");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    async fn ok<R>(answer: Answer<R>) -> R {
        answer.await.expect("task").expect("job ran").value
    }

    async fn shed<R>(answer: Answer<R>) -> Shed {
        match answer.await.expect("task") {
            Ok(_) => panic!("the job ran"),
            Err(shed) => shed,
        }
    }

    /// A job that notes whether it ran.
    fn noted(flag: &Arc<AtomicBool>) -> impl FnOnce() + Send + 'static {
        let flag = Arc::clone(flag);
        move || flag.store(true, Ordering::SeqCst)
    }

    #[test]
    fn defaults_leave_a_worker_for_cheap_work() {
        for cores in [1, 2, 3, 4, 8, 64] {
            let l = Limits::for_cores(cores);
            assert!(l.workers >= 2 && l.workers >= cores);
            assert!(l.expensive_workers >= 1 && l.expensive_workers < l.workers);
            assert!(l.expensive_deadline < l.cheap_deadline);
        }
        let two = Limits::for_cores(2);
        assert_eq!((two.workers, two.expensive_workers), (4, 2));
        assert_eq!(Limits::for_cores(1).expensive_workers, 1);
        assert_eq!(Limits::for_cores(8).expensive_workers, 8);
        let l = Limits::default_for_cores();
        assert!(l.expensive_workers < l.workers);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn workers_are_nicer_than_the_runtime() {
        let sched = Scheduler::new(limits(2, 1));
        let nice = || rustix::process::getpriority_process(None).unwrap();
        let runtime = nice();
        let worker = sched.run(CostClass::Cheap, 1, nice).await.unwrap().value;
        assert_eq!(worker, (runtime + WORKER_NICENESS).min(19));
        assert_eq!(nice(), runtime, "only the workers are lowered");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cheap_work_runs_while_every_expensive_slot_is_busy() {
        let sched = Scheduler::new(limits(2, 1));
        let mut held = Held::new();
        let e0 = held.spawn(&sched, CostClass::Expensive, 1, "e0");
        assert_eq!(held.started().await, "e0");
        let queued: Vec<_> = (0..3)
            .map(|i| spawn(&sched, CostClass::Expensive, 2, move || i))
            .collect();
        until("3 expensive queued", || sched.stats().expensive_queued == 3).await;
        for _ in 0..5 {
            let done = sched.run(CostClass::Cheap, 3, || "cheap").await.unwrap();
            assert_eq!(done.value, "cheap");
        }
        let stats = sched.stats();
        assert_eq!((stats.expensive_running, stats.expensive_queued), (1, 3));
        held.release_all();
        assert_eq!(ok(e0).await, "e0");
        for (i, answer) in queued.into_iter().enumerate() {
            assert_eq!(ok(answer).await, i);
        }
        assert_eq!(sched.stats(), SchedulerStats::default());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn expensive_jobs_never_exceed_their_workers() {
        let sched = Scheduler::new(limits(4, 2));
        let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (started_tx, mut started) = unbounded_channel();
        let (release, released) = mpsc::channel::<()>();
        let released = Arc::new(Mutex::new(released));
        let answers: Vec<_> = (0..10)
            .map(|i| {
                let (running, most) = (Arc::clone(&running), Arc::clone(&most));
                let (started_tx, released) = (started_tx.clone(), Arc::clone(&released));
                spawn(&sched, CostClass::Expensive, i % 3, move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    let _ = started_tx.send(());
                    let _ = released.lock().unwrap().recv();
                    running.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        // Two start and hold their workers (a scheduler that ran one at a time fails here
        // instead of hanging); then each release lets exactly one more start.
        for _ in 0..2 {
            let start = tokio::time::timeout(Duration::from_secs(10), started.recv());
            start.await.expect("two expensive jobs at once").unwrap();
        }
        assert_eq!(running.load(Ordering::SeqCst), 2);
        for _ in 2..10 {
            assert!(sched.stats().expensive_running <= 2);
            // Cheap work still gets through meanwhile.
            sched.run(CostClass::Cheap, 7, || ()).await.unwrap();
            release.send(()).unwrap();
            started.recv().await.unwrap();
        }
        for _ in 0..2 {
            release.send(()).unwrap();
        }
        for answer in answers {
            ok(answer).await;
        }
        assert_eq!(most.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_full_queue_refuses_at_once_with_a_retry_after() {
        let sched = Scheduler::new(Limits {
            expensive_queue: 2,
            cheap_queue: 1,
            ..limits(2, 1)
        });
        let mut registry = Registry::default();
        sched.register(&mut registry);
        let mut held = Held::new();
        let e0 = held.spawn(&sched, CostClass::Expensive, 1, "e0");
        assert_eq!(held.started().await, "e0");
        let e1 = held.spawn(&sched, CostClass::Expensive, 1, "e1");
        let e2 = held.spawn(&sched, CostClass::Expensive, 1, "e2");
        until("2 expensive queued", || sched.stats().expensive_queued == 2).await;
        let expensive = sched.run(CostClass::Expensive, 1, || ()).await.unwrap_err();
        assert_eq!(expensive.reason, ShedReason::QueueFull);

        let c0 = held.spawn(&sched, CostClass::Cheap, 2, "c0");
        assert_eq!(held.started().await, "c0");
        let c1 = held.spawn(&sched, CostClass::Cheap, 2, "c1");
        until("1 cheap queued", || sched.stats().cheap_queued == 1).await;
        let cheap = sched.run(CostClass::Cheap, 2, || ()).await.unwrap_err();
        assert_eq!(cheap.reason, ShedReason::QueueFull);
        assert!(!cheap.retry_after.is_zero());
        assert!(expensive.retry_after > cheap.retry_after);
        assert_eq!(
            (cheap.retry_after_secs(), expensive.retry_after_secs()),
            (1, 5)
        );

        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(text.contains(r#"git_jobs_shed_total{class="expensive",reason="queue_full"} 1"#));
        assert!(text.contains(r#"git_jobs_queued{class="expensive"} 2"#));
        assert!(text.contains(r#"git_jobs_running{class="cheap"} 1"#));

        held.release_all();
        for answer in [e0, e1, e2, c0, c1] {
            ok(answer).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_job_past_its_deadline_is_shed_not_run() {
        let sched = Scheduler::new(Limits {
            expensive_deadline: Duration::from_millis(50),
            ..limits(2, 1)
        });
        let mut held = Held::new();
        let e0 = held.spawn(&sched, CostClass::Expensive, 1, "e0");
        assert_eq!(held.started().await, "e0");
        let ran = Arc::new(AtomicBool::new(false));
        let late = sched
            .run(CostClass::Expensive, 2, noted(&ran))
            .await
            .unwrap_err();
        assert_eq!(late.reason, ShedReason::Deadline);
        assert_eq!(sched.stats().expensive_queued, 0);
        held.release_all();
        ok(e0).await;
        sched.run(CostClass::Expensive, 2, || ()).await.unwrap();
        assert!(!ran.load(Ordering::SeqCst));
    }

    /// The only expensive worker runs "e0"; behind it client 2's "page" waits in the bounded
    /// lane, then `clone_client`'s "clone" in the first lane.
    async fn page_then_clone(
        sched: &Arc<Scheduler>,
        held: &mut Held,
        clone_client: u64,
    ) -> [Answer<&'static str>; 3] {
        let e0 = held.spawn(sched, CostClass::Expensive, 1, "e0");
        assert_eq!(held.started().await, "e0");
        let page = held.spawn(sched, CostClass::Expensive, 2, "page");
        until("1 queued", || sched.stats().expensive_queued == 1).await;
        let clone = held.spawn_first(sched, clone_client, "clone");
        until("2 queued", || sched.stats().expensive_queued == 2).await;
        [e0, page, clone]
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_first_lane_job_goes_ahead_and_outwaits_the_deadline() {
        let sched = Scheduler::new(Limits {
            expensive_deadline: Duration::from_millis(50),
            expensive_queue: 1,
            ..limits(2, 1)
        });
        let mut held = Held::new();
        // The bounded queue is full, but the first lane takes the clone all the same.
        let [e0, page, clone] = page_then_clone(&sched, &mut held, 3).await;
        assert_eq!(shed(page).await.reason, ShedReason::Deadline);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(sched.stats().expensive_queued, 1, "the clone still waits");
        held.release_all();
        assert_eq!(ok(e0).await, "e0");
        assert_eq!(ok(clone).await, "clone");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_first_lane_job_runs_before_earlier_bounded_ones() {
        let sched = Scheduler::new(limits(2, 1));
        let mut held = Held::new();
        let [e0, page, clone] = page_then_clone(&sched, &mut held, 2).await;
        held.release("e0");
        assert_eq!(held.started().await, "clone");
        held.release_all();
        assert_eq!(held.started().await, "page");
        for answer in [e0, clone, page] {
            ok(answer).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dropped_callers_job_is_skipped() {
        let sched = Scheduler::new(limits(2, 1));
        let mut held = Held::new();
        let e0 = held.spawn(&sched, CostClass::Expensive, 1, "e0");
        assert_eq!(held.started().await, "e0");
        let ran = Arc::new(AtomicBool::new(false));
        let gone = spawn(&sched, CostClass::Expensive, 2, noted(&ran));
        until("1 expensive queued", || sched.stats().expensive_queued == 1).await;
        gone.abort();
        assert!(gone.await.unwrap_err().is_cancelled());
        assert_eq!(sched.stats().expensive_queued, 0);
        held.release_all();
        ok(e0).await;
        sched.run(CostClass::Expensive, 2, || ()).await.unwrap();
        assert!(!ran.load(Ordering::SeqCst));
    }

    /// Holds the only worker, queues a, b, c in order, optionally lets the queue stand, then
    /// lets everything run and returns the order the jobs ran in.
    async fn order_after(limits: Limits, stand: Duration) -> Vec<&'static str> {
        let sched = Scheduler::new(limits);
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut held = Held::new();
        let first = held.spawn(&sched, CostClass::Cheap, 0, "first");
        assert_eq!(held.started().await, "first");
        let mut answers = Vec::new();
        for (n, name) in ["a", "b", "c"].into_iter().enumerate() {
            let order = Arc::clone(&order);
            answers.push(spawn(&sched, CostClass::Cheap, 0, move || {
                order.lock().unwrap().push(name)
            }));
            until("queued", || sched.stats().cheap_queued == n + 1).await;
        }
        tokio::time::sleep(stand).await;
        held.release_all();
        ok(first).await;
        for answer in answers {
            ok(answer).await;
        }
        Arc::into_inner(order).unwrap().into_inner().unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_short_queue_is_served_first_in_first_out() {
        // An interval far longer than the test: however slow the machine, the queue of three
        // never stands.
        let short = Limits {
            interval: Duration::from_secs(60),
            ..limits(1, 1)
        };
        let order = order_after(short, Duration::ZERO).await;
        assert_eq!(order, ["a", "b", "c"]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_standing_queue_is_served_newest_first() {
        let standing = Limits {
            interval: Duration::from_millis(10),
            ..limits(1, 1)
        };
        let order = order_after(standing, Duration::from_millis(30)).await;
        assert_eq!(order, ["c", "b", "a"]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_standing_queue_sheds_its_stale_waiters() {
        let sched = Scheduler::new(Limits {
            interval: Duration::from_millis(10),
            cheap_overload_wait: Duration::from_millis(200),
            ..limits(1, 1)
        });
        let mut held = Held::new();
        let first = held.spawn(&sched, CostClass::Cheap, 0, "first");
        assert_eq!(held.started().await, "first");
        let stale = [(); 2].map(|_| spawn(&sched, CostClass::Cheap, 0, || ()));
        until("2 queued", || sched.stats().cheap_queued == 2).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        // A newcomer finds a standing queue: the stale waiters leave, the newcomer is served.
        let fresh = spawn(&sched, CostClass::Cheap, 0, || "fresh");
        for answer in stale {
            assert_eq!(shed(answer).await.reason, ShedReason::Deadline);
        }
        held.release_all();
        ok(first).await;
        assert_eq!(ok(fresh).await, "fresh");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_over_its_share_is_shed_before_others() {
        let sched = Scheduler::new(Limits {
            expensive_queue: 3,
            ..limits(2, 1)
        });
        let mut held = Held::new();
        let heavy0 = held.spawn(&sched, CostClass::Expensive, 1, "heavy0");
        assert_eq!(held.started().await, "heavy0");
        let mut heavy = Vec::new();
        for n in 1..=3 {
            heavy.push(spawn(&sched, CostClass::Expensive, 1, move || n));
            until("queued", || sched.stats().expensive_queued == n).await;
        }
        // The queue is full, but client 2 holds nothing: client 1's newest waiter makes room.
        let light = spawn(&sched, CostClass::Expensive, 2, || 20);
        let newest = heavy.pop().unwrap();
        let evicted = shed(newest).await;
        assert_eq!(evicted.reason, ShedReason::OverShare);
        assert!(evicted.retry_after >= EXPENSIVE_RETRY);
        assert_eq!(sched.stats().expensive_queued, 3);
        // Client 1 holds more than client 2 now, so it cannot push client 2 out.
        let more = sched.run(CostClass::Expensive, 1, || 0).await.unwrap_err();
        assert_eq!(more.reason, ShedReason::QueueFull);
        held.release_all();
        ok(heavy0).await;
        assert_eq!(ok(light).await, 20);
        for (n, answer) in heavy.into_iter().enumerate() {
            assert_eq!(ok(answer).await, n + 1);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_single_client_may_use_the_whole_class() {
        let sched = Scheduler::new(Limits {
            expensive_queue: 2,
            ..limits(3, 2)
        });
        let mut held = Held::new();
        let a = held.spawn(&sched, CostClass::Expensive, 1, "a");
        let b = held.spawn(&sched, CostClass::Expensive, 1, "b");
        held.started().await;
        held.started().await;
        let c = held.spawn(&sched, CostClass::Expensive, 1, "c");
        let d = held.spawn(&sched, CostClass::Expensive, 1, "d");
        until("2 queued", || sched.stats().expensive_queued == 2).await;
        assert_eq!(sched.stats().expensive_running, 2);
        held.release_all();
        for answer in [a, b, c, d] {
            ok(answer).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_next_expensive_job_is_of_the_client_running_fewest() {
        let sched = Scheduler::new(limits(3, 2));
        let mut held = Held::new();
        let a = held.spawn(&sched, CostClass::Expensive, 1, "1a");
        let b = held.spawn(&sched, CostClass::Expensive, 1, "1b");
        held.started().await;
        held.started().await;
        let c = held.spawn(&sched, CostClass::Expensive, 1, "1c");
        until("1 queued", || sched.stats().expensive_queued == 1).await;
        let other = held.spawn(&sched, CostClass::Expensive, 2, "2a");
        until("2 queued", || sched.stats().expensive_queued == 2).await;
        held.release("1a");
        assert_eq!(ok(a).await, "1a");
        // Client 1 still runs 1b; client 2 runs nothing, so its later job goes first.
        assert_eq!(held.started().await, "2a");
        held.release_all();
        assert_eq!(held.started().await, "1c");
        for answer in [b, c, other] {
            ok(answer).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_job_does_not_lose_a_worker() {
        let sched = Scheduler::new(limits(1, 1));
        for class in [CostClass::Cheap, CostClass::Expensive] {
            let failed = sched
                .run(class, 1, || -> u32 { panic!("broken page") })
                .await
                .unwrap_err();
            assert_eq!(failed.reason, ShedReason::Panicked);
            assert!(failed.retry_after.is_zero());
        }
        for n in 0..3 {
            let done = sched.run(CostClass::Cheap, 1, move || n).await.unwrap();
            assert_eq!(done.value, n);
        }
        assert_eq!(sched.stats(), SchedulerStats::default());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn done_reports_wait_and_run_time() {
        let sched = Scheduler::new(limits(1, 1));
        let mut held = Held::new();
        let first = held.spawn(&sched, CostClass::Cheap, 0, "first");
        assert_eq!(held.started().await, "first");
        let second = spawn(&sched, CostClass::Cheap, 0, || {
            std::thread::sleep(Duration::from_millis(5));
        });
        until("queued", || sched.stats().cheap_queued == 1).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        held.release_all();
        ok(first).await;
        let done = second.await.unwrap().unwrap();
        assert!(done.waited >= Duration::from_millis(5));
        assert!(done.ran >= Duration::from_millis(5));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shutting_down_sheds_the_queue_and_lets_running_jobs_finish() {
        let sched = Scheduler::new(limits(2, 1));
        let mut held = Held::new();
        let running = held.spawn(&sched, CostClass::Expensive, 1, "running");
        assert_eq!(held.started().await, "running");
        let queued = spawn(&sched, CostClass::Expensive, 1, || ());
        until("queued", || sched.stats().expensive_queued == 1).await;
        sched.shutdown();
        assert_eq!(shed(queued).await.reason, ShedReason::ShuttingDown);
        let late = sched.run(CostClass::Cheap, 1, || ()).await.unwrap_err();
        assert_eq!(late.reason, ShedReason::ShuttingDown);
        held.release_all();
        assert_eq!(ok(running).await, "running");
    }
}
