//! The class queues, the choice of the next job and the worker loop.

use super::metrics::Metrics;
use super::outcome::{Done, Shed, ShedReason, retry_after};
use super::{CostClass, Limits};
use std::collections::{HashMap, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// A queued job, type-erased: it is either run or answered with a [`Shed`].
pub(super) trait Task: Send {
    /// The caller went away; nobody wants the answer.
    fn abandoned(&self) -> bool;
    /// Runs the job; the answer is sent by [`Ran::reply`] once the worker has done its
    /// accounting, so a caller that has its answer sees the worker free in the stats.
    fn run(self: Box<Self>, waited: Duration) -> Ran;
    fn shed(self: Box<Self>, shed: Shed);
}

pub(super) struct Job<F, R> {
    pub(super) job: F,
    pub(super) reply: oneshot::Sender<Result<Done<R>, Shed>>,
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
pub(super) struct Ran {
    pub(super) panicked: bool,
    pub(super) reply: Box<dyn FnOnce() + Send>,
}

pub(super) struct Entry {
    pub(super) id: u64,
    pub(super) client: u64,
    pub(super) enqueued: Instant,
    pub(super) task: Box<dyn Task>,
}

/// Where a job waits in its class's queue.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Lane {
    /// With the class's deadline, CoDel and fairness rules.
    Bounded,
    /// Ahead of the bounded lane, without a deadline.
    First,
}

pub(super) struct Queue {
    /// The bounded lane, in order of arrival (and so of id).
    pub(super) entries: VecDeque<Entry>,
    /// The first lane, in order of arrival.
    pub(super) first: VecDeque<Entry>,
    pub(super) running: usize,
    /// The last time this queue was empty or a job left it having waited at most the target.
    pub(super) last_low: Instant,
}

impl Queue {
    pub(super) fn new(now: Instant) -> Queue {
        Queue {
            entries: VecDeque::new(),
            first: VecDeque::new(),
            running: 0,
            last_low: now,
        }
    }

    /// The minimum queueing delay over the last interval exceeded the target.
    pub(super) fn standing(&self, now: Instant, interval: Duration) -> bool {
        !self.entries.is_empty() && now.saturating_duration_since(self.last_low) > interval
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len() + self.first.len()
    }

    /// Takes the queued entry `id` out of either lane.
    pub(super) fn remove(&mut self, id: u64) -> Option<Entry> {
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
pub(super) struct Usage {
    pub(super) running: usize,
    pub(super) queued: usize,
}

pub(super) struct State {
    pub(super) queues: [Queue; 2],
    /// Expensive-class usage by client; entries with nothing running or queued are removed.
    pub(super) clients: HashMap<u64, Usage>,
    pub(super) next_id: u64,
    pub(super) shutting_down: bool,
}

impl State {
    /// Accounts for an entry that left the queue without running.
    pub(super) fn dequeued(&mut self, class: CostClass, client: u64) {
        if class == CostClass::Expensive {
            self.usage(client, |u| u.queued -= 1);
        }
    }

    pub(super) fn usage(&mut self, client: u64, change: impl FnOnce(&mut Usage)) {
        let usage = self.clients.entry(client).or_default();
        change(usage);
        if usage.running == 0 && usage.queued == 0 {
            self.clients.remove(&client);
        }
    }

    pub(super) fn held(&self, client: u64) -> usize {
        self.clients
            .get(&client)
            .map_or(0, |u| u.running + u.queued)
    }
}

/// Jobs that leave the queue without running, to answer with a shed (or, with no reason,
/// whose caller is gone, just to drop) once the lock is released: dropping a job drops what
/// it captured, which must not happen under the lock.
pub(super) type Sheds = Vec<(CostClass, Box<dyn Task>, Option<ShedReason>)>;

pub(super) struct Inner {
    pub(super) limits: Limits,
    pub(super) state: Mutex<State>,
    /// Signalled when work is queued (or a slot for expensive work frees up).
    pub(super) work: Condvar,
    pub(super) metrics: Metrics,
    /// Whether the process is near its memory limit (expensive work is refused meanwhile).
    pub(super) memory_pressure: AtomicBool,
}

impl Inner {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // Jobs never run under the lock, so a poisoned lock still holds consistent state.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn shed(&self, class: CostClass, reason: ShedReason) -> Shed {
        self.metrics.class[class.index()].shed[reason.index()].inc();
        Shed {
            reason,
            retry_after: retry_after(class, reason),
        }
    }

    pub(super) fn finish(&self, sheds: Sheds) {
        for (class, task, reason) in sheds {
            match reason {
                Some(reason) => task.shed(self.shed(class, reason)),
                None => drop(task),
            }
        }
    }

    pub(super) fn publish(&self, state: &State) {
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
    pub(super) fn submit(
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
        if class == CostClass::Expensive && self.memory_pressure.load(Ordering::Relaxed) {
            drop(state);
            return Err(self.shed(class, ShedReason::MemoryPressure));
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
    pub(super) fn evict_for(&self, state: &mut State, client: u64) -> Option<Entry> {
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
    pub(super) fn shed_stale(
        &self,
        state: &mut State,
        class: CostClass,
        now: Instant,
        sheds: &mut Sheds,
    ) {
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
    pub(super) fn withdraw(&self, class: CostClass, id: u64) -> Option<Box<dyn Task>> {
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
    pub(super) fn pick(&self, state: &mut State, sheds: &mut Sheds) -> Option<(CostClass, Entry)> {
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
    pub(super) fn started(state: &mut State, class: CostClass, entry: &Entry) {
        state.queues[class.index()].running += 1;
        if class == CostClass::Expensive {
            state.usage(entry.client, |u| u.running += 1);
        }
    }

    /// The queued expensive job of a client with the fewest running expensive jobs; among
    /// those the oldest, or the newest when the queue is standing.
    pub(super) fn fairest(state: &State, lifo: bool) -> usize {
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
    pub(super) fn work(&self) {
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
