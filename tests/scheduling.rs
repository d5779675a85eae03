//! Scheduling by cost, end to end: a real server with two git workers (so one may run expensive
//! work), expensive requests held open by a source-filter that waits for a gate file, and the
//! scheduler's state read from the metrics endpoint — behaviour, never timing.

mod common;

use common::*;
use std::path::PathBuf;
use std::sync::LazyLock;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A repository with a few files to blame.
static REPO: LazyLock<PathBuf> = LazyLock::new(|| {
    let dir = shared_dir("scheduling");
    let work = dir.join("work");
    init_repo(&work);
    for i in 0..4 {
        write(&work, &format!("f{i}.txt"), format!("line of file {i}\n"));
    }
    commit_all(&work, "files", "2024-01-02T03:04:05Z");
    work
});

/// The value of one metric line, e.g. `cgitd_git_jobs_running{class="expensive"}`.
/// A served repository whose blame pages block until [`Gated::open`].
struct Gated {
    dir: TempDir,
    server: Server,
}

impl Gated {
    fn start(tag: &str, options: &str) -> Gated {
        let dir = TempDir::new(tag);
        let filter = dir.path().join("gate.sh");
        let script = format!(
            "#!/bin/sh\necho started >> {calls}\nwhile [ ! -e {gate} ]; do sleep 0.02; done\ncat\n",
            calls = dir.path().join("calls").display(),
            gate = dir.path().join("gate").display(),
        );
        std::fs::write(&filter, script).unwrap();
        std::process::Command::new("chmod")
            .args(["+x", filter.to_str().unwrap()])
            .status()
            .unwrap();
        let rc = dir.path().join("cgitrc");
        let text = format!(
            "metrics-path=/metrics\ngit-workers=2\nenable-blame=1\nmax-stats=year\n\
             source-filter={filter}\n\
             {options}\nrepo.url=r\nrepo.path={repo}\n",
            repo = REPO.display(),
            filter = filter.display(),
        );
        std::fs::write(&rc, text).unwrap();
        let server = Server::start(&rc);
        Gated { dir, server }
    }

    /// Requests `target` on a thread of its own, with extra headers.
    fn spawn(&self, target: &str, headers: &[(&str, &str)]) -> JoinHandle<Response> {
        let addr = self.server.addr.clone();
        let target = target.to_string();
        let headers: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        std::thread::spawn(move || {
            let headers: Vec<(&str, &str)> = headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str()))
                .collect();
            request(&addr, "GET", &target, &headers)
        })
    }

    fn calls(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("calls"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    fn open(&self) {
        std::fs::write(self.dir.path().join("gate"), "").unwrap();
    }

    fn metric(&self, name: &str) -> f64 {
        metric(&self.server, name)
    }

    /// Waits until `what` holds (the test fails after a minute).
    fn until(&self, description: &str, what: impl Fn(&Gated) -> bool) {
        let start = Instant::now();
        while !what(self) {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "never: {description}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Gated {
    fn drop(&mut self) {
        self.open();
    }
}

const RUNNING_EXPENSIVE: &str = "cgitd_git_jobs_running{class=\"expensive\"}";
const QUEUED_EXPENSIVE: &str = "cgitd_git_jobs_queued{class=\"expensive\"}";

#[test]
fn cheap_pages_are_answered_while_expensive_work_holds_its_workers() {
    let g = Gated::start("sched-cheap", "");
    let blames: Vec<_> = (0..3)
        .map(|i| g.spawn(&format!("/r/blame/f{i}.txt"), &[]))
        .collect();
    g.until("a blame runs", |g| g.calls() == 1);
    g.until("the other blames wait", |g| {
        g.metric(QUEUED_EXPENSIVE) == 2.0
    });
    for url in ["/r/", "/r/log/", "/r/tree/", "/r/commit/", "/"] {
        g.server.page(url);
    }
    assert_eq!(g.calls(), 1, "the blame was still running");
    assert_eq!(g.metric(RUNNING_EXPENSIVE), 1.0);
    g.open();
    let statuses: Vec<u16> = blames
        .into_iter()
        .map(|b| b.join().unwrap().status)
        .collect();
    assert!(
        statuses.contains(&200),
        "the running blame finished: {statuses:?}"
    );
    // The others waited in a standing queue: served, or shed with a 503 (CoDel).
    assert!(
        statuses.iter().all(|s| [200, 503].contains(s)),
        "{statuses:?}"
    );
}

#[test]
fn waiting_past_the_deadline_is_a_503_with_retry_after() {
    let g = Gated::start("sched-deadline", "queue-deadline-expensive=200");
    let first = g.spawn("/r/blame/f0.txt", &[]);
    g.until("a blame runs", |g| g.calls() == 1);
    let late = g.server.get("/r/blame/f1.txt");
    assert_eq!(late.status, 503, "{}", late.text());
    let retry: u64 = late.header("Retry-After").unwrap().parse().unwrap();
    assert!(retry >= 1);
    assert!(late.text().contains("busy"), "{}", late.text());
    assert_eq!(
        g.metric("cgitd_git_jobs_shed_total{class=\"expensive\",reason=\"deadline\"}"),
        1.0
    );
    g.open();
    assert_eq!(first.join().unwrap().status, 200);
}

#[test]
fn identical_concurrent_requests_render_once() {
    let g = Gated::start("sched-flight", "");
    let first = g.spawn("/r/blame/f2.txt", &[]);
    g.until("the blame runs", |g| g.calls() == 1);
    let same: Vec<_> = (0..3).map(|_| g.spawn("/r/blame/f2.txt", &[])).collect();
    // The followers need no worker: nothing more is queued for them.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(g.metric(QUEUED_EXPENSIVE), 0.0);
    g.open();
    let body = first.join().unwrap().text();
    for r in same {
        let r = r.join().unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.text(), body);
    }
    assert_eq!(g.calls(), 1, "one render served all four requests");
}

#[test]
fn a_client_over_its_share_is_shed_before_others() {
    let g = Gated::start(
        "sched-fair",
        "trusted-proxies=127.0.0.1\nqueue-deadline-expensive=60000",
    );
    let heavy = [("X-Forwarded-For", "198.51.100.1")];
    let light = [("X-Forwarded-For", "203.0.113.1")];
    let first = g.spawn("/r/blame/f0.txt?ofs=0", &heavy);
    g.until("the heavy client's blame runs", |g| g.calls() == 1);
    // 64 more fill the expensive queue (distinct URLs, so none shares a render).
    let mut queued: Vec<_> = (1..=64)
        .map(|i| g.spawn(&format!("/r/blame/f0.txt?ofs={i}"), &heavy))
        .collect();
    g.until("the queue is full", |g| g.metric(QUEUED_EXPENSIVE) == 64.0);
    let newcomer = g.spawn("/r/blame/f1.txt", &light);
    g.until("one heavy request is shed for the newcomer", |g| {
        g.metric("cgitd_git_jobs_shed_total{class=\"expensive\",reason=\"over_share\"}") == 1.0
    });
    let refused = g.server.request("GET", "/r/blame/f0.txt?ofs=99", &heavy);
    assert_eq!(refused.status, 503, "the heavy client gets no more slots");
    assert!(refused.header("Retry-After").is_some());
    g.open();
    assert_eq!(newcomer.join().unwrap().status, 200);
    assert_eq!(first.join().unwrap().status, 200);
    // The queue stood while the gate was shut, so the scheduler serves it newest-first and may
    // shed the oldest waiters (CoDel); every answer is still a page or a 503.
    let statuses: Vec<u16> = queued.drain(..).map(|t| t.join().unwrap().status).collect();
    assert!(
        statuses.iter().all(|s| [200, 503].contains(s)),
        "{statuses:?}"
    );
    assert_eq!(
        g.metric("cgitd_git_jobs_shed_total{class=\"expensive\",reason=\"over_share\"}"),
        1.0,
        "only the heavy client lost a slot to fairness"
    );
}

#[test]
fn scheduling_options_are_checked_and_shown() {
    let dir = TempDir::new("sched-config");
    let rc = dir.path().join("cgitrc");
    std::fs::write(
        &rc,
        "git-workers=3\ngit-expensive-workers=1\ntrusted-proxies=10.0.0.0/8, ::1 nonsense\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cgitd"))
        .args(["check-config", rc.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let shows = |words: &[&str]| {
        text.lines()
            .any(|l| l.split_whitespace().eq(words.iter().copied()))
    };
    assert!(shows(&["git-workers", "3"]), "{text}");
    assert!(shows(&["git-expensive-workers", "1"]), "{text}");
    assert!(shows(&["queue-deadline-cheap", "5000", "ms"]), "{text}");
    assert!(text.contains("'nonsense' is not an address"), "{text}");
}

#[test]
fn expensive_results_are_kept_by_ids_for_every_fork() {
    let g = Gated::start(
        "sched-kept",
        &format!("repo.url=fork\nrepo.path={}\n", REPO.display()),
    );
    g.open();
    let hits = |g: &Gated| g.metric("cgitd_fragment_cache_hits_total");
    let misses = |g: &Gated| g.metric("cgitd_fragment_cache_misses_total");
    for url in [
        "/r/log/f1.txt",
        "/r/log/?qt=grep&q=files",
        "/r/stats/?period=y",
    ] {
        let (hits0, misses0) = (hits(&g), misses(&g));
        // Cheap here (a small repository): kept when asked for a second time.
        g.server.page(url);
        let first = g.server.page(url);
        assert_eq!(misses(&g), misses0 + 2.0, "{url} computed until kept");
        let fork_url = url.replacen("/r/", "/fork/", 1);
        let again = g.server.page(&fork_url);
        assert_eq!(hits(&g), hits0 + 1.0, "{fork_url} reads what {url} found");
        assert_eq!(misses(&g), misses0 + 2.0);
        let rows = |html: &str| html.matches("<tr").count();
        assert_eq!(rows(&first), rows(&again), "{url}");
    }
}

#[test]
fn a_walk_cut_off_by_its_budget_says_so_and_links_onward() {
    let dir = TempDir::new("sched-budget");
    let work = dir.path().join("w");
    init_repo(&work);
    for i in 0..12 {
        write(&work, "n.txt", format!("{i}\n"));
        commit_all(&work, &format!("change {i}"), "2024-01-02T03:04:05Z");
    }
    let rc = dir.path().join("cgitrc");
    std::fs::write(
        &rc,
        format!(
            "metrics-path=/metrics\nwalk-budget=5\nrepo.url=r\nrepo.path={}\n",
            work.display()
        ),
    )
    .unwrap();
    let server = Server::start(&rc);
    let r = server.get("/r/log/?qt=grep&q=nomatch");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Cache-Control"), Some("no-cache"));
    let html = r.text();
    assert!(html.contains("The history search stopped early"), "{html}");
    let onward = hrefs(&html)
        .into_iter()
        .find(|h| h.contains("q=nomatch") && h.contains("id="))
        .expect("a link to search on");
    let next = server.get(&onward.replace("&amp;", "&"));
    assert_eq!(next.status, 200);
    assert!(
        next.text().contains("stopped early"),
        "the next five commits"
    );
    let further = hrefs(&next.text())
        .into_iter()
        .find(|h| h.contains("q=nomatch") && h.contains("id="))
        .expect("a link to search on again");
    assert_ne!(further, onward, "each page goes on from further back");
    let found = server.page("/r/log/?qt=grep&q=change+11");
    assert!(
        found.contains("change 11"),
        "what the budget reached is listed"
    );
    let metrics = server.page("/metrics");
    assert!(
        metrics.contains("cgitd_budget_cutoffs_total 3"),
        "{metrics}"
    );
}

#[test]
fn a_commit_graph_makes_path_limited_and_deep_logs_cheap() {
    let dir = copy_of(REPO.parent().unwrap(), "sched-graph");
    let work = dir.path().join("work");
    let rc = dir.path().join("cgitrc");
    let text = format!(
        "metrics-path=/metrics\nrepo.url=r\nrepo.path={}\n",
        work.display()
    );
    std::fs::write(&rc, text).unwrap();
    let ran = |server: &Server, class: &str| {
        metric(
            server,
            &format!("cgitd_git_job_queue_wait_seconds_count{{class=\"{class}\"}}"),
        )
    };
    // the deep page first: before any render there is no commit index, which would make it
    // cheap too (tests/commit_index.rs)
    let urls = ["/r/log/?ofs=1000", "/r/log/f0.txt", "/r/atom/f0.txt"];
    let serve_urls = || {
        let server = Server::start(&rc);
        for url in urls {
            server.page(url);
        }
        server
    };
    let server = serve_urls();
    assert_eq!(
        ran(&server, "expensive"),
        3.0,
        "no commit-graph: all expensive"
    );
    drop(server);
    git(
        &work,
        &["commit-graph", "write", "--reachable", "--changed-paths"],
    );
    let server = serve_urls();
    assert_eq!(
        ran(&server, "expensive"),
        0.0,
        "with changed-path filters: all cheap"
    );
    assert_eq!(ran(&server, "cheap"), 3.0);
}
