//! The scheduler's tests: real worker threads, jobs that block on channels.

use super::outcome::EXPENSIVE_RETRY;
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
