//! HTTP caching and freshness: ETag/304, immutable only for full ids, compression, and refs
//! changes (push, new tag, branch deletion, gc, repack, pack-refs) visible on the next request.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

/// A work repository with three commits and `served.git`, a bare clone of it served as `r`;
/// built once. Tests that push or gc work on a [`copy_of`] it.
static SHARED: LazyLock<PathBuf> = LazyLock::new(|| {
    let root = shared_dir("caching");
    build_repos(&root);
    root
});

fn build_repos(root: &Path) {
    let work = root.join("work");
    init_repo(&work);
    for i in 0..3 {
        write(&work, &format!("file{i}.txt"), format!("{i}\n").repeat(200));
        commit_all(
            &work,
            &format!("commit {i}"),
            &format!("2024-01-0{}T00:00:00+00:00", i + 1),
        );
    }
    git(root, &["clone", "-q", "--bare", "work", "served.git"]);
}

/// A cgitrc in `dir` (prefixed with the global options `globals`) serving `root`'s
/// `served.git` as `r`.
fn rc_for(dir: &Path, root: &Path, globals: &str) -> PathBuf {
    let rc = dir.join("cgitrc");
    let served = root.join("served.git");
    std::fs::write(
        &rc,
        format!("{globals}repo.url=r\nrepo.path={}\n", served.display()),
    )
    .unwrap();
    rc
}

/// The shared repositories with a cgitrc of their own; returns (rc dir, rc, work tree).
fn site(tag: &str) -> (TempDir, PathBuf, PathBuf) {
    let dir = TempDir::new(tag);
    let rc = rc_for(dir.path(), &SHARED, "");
    (dir, rc, SHARED.join("work"))
}

/// A private copy of the repositories (for pushes, gc); returns (copy, rc, work tree).
fn private_site(tag: &str) -> (TempDir, PathBuf, PathBuf) {
    let dir = copy_of(&SHARED, tag);
    let rc = rc_for(dir.path(), dir.path(), "");
    let work = dir.path().join("work");
    (dir, rc, work)
}

/// Polls `url` until `pred` holds, for up to two seconds.
fn eventually(server: &Server, url: &str, pred: impl Fn(&Response) -> bool) -> bool {
    for _ in 0..40 {
        if pred(&server.get(url)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn etag_and_conditional_requests() {
    let (_dir, rc, _work) = site("etag");
    let server = Server::start(&rc);
    let first = server.get("/r/");
    let etag = first
        .header("etag")
        .expect("summary has an ETag")
        .to_string();
    assert!(etag.starts_with("W/\""));
    let again = server.request("GET", "/r/", &[("If-None-Match", &etag)]);
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    let other = server.request("GET", "/r/refs/", &[("If-None-Match", &etag)]);
    assert_eq!(other.status, 200, "another page has another validator");
    let index = server.get("/");
    let index_etag = index.header("etag").unwrap().to_string();
    assert_eq!(
        server
            .request("GET", "/", &[("If-None-Match", &index_etag)])
            .status,
        304
    );
    let error = server.get("/nope/");
    assert_eq!(error.status, 404);
    assert!(error.header("etag").is_none(), "errors carry no ETag");
}

#[test]
fn immutable_only_when_every_revision_is_a_full_id() {
    let (_dir, rc, work) = site("immutable");
    let server = Server::start(&rc);
    let head = git(&work, &["rev-parse", "HEAD"]).trim().to_string();
    let cc = |url: &str| {
        server
            .get(url)
            .header("cache-control")
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(
        cc(&format!("/r/refs/?id={head}")),
        "public, max-age=31536000, immutable"
    );
    assert_eq!(cc("/r/refs/?id=main"), "public, max-age=300");
    assert_eq!(
        cc(&format!("/r/refs/?id={}", &head[..12])),
        "public, max-age=300"
    );
    assert_eq!(cc("/r/"), "public, max-age=300");
    assert_eq!(server.get("/nope/").status, 404);
    assert!(!cc("/nope/").contains("immutable"));
}

#[test]
fn compression_and_head_requests() {
    let (_dir, rc, _work) = site("gzip");
    let server = Server::start(&rc);
    let plain = server.get("/r/");
    let gz = server.request("GET", "/r/", &[("Accept-Encoding", "gzip")]);
    assert_eq!(gz.header("content-encoding"), Some("gzip"));
    assert!(
        gz.header("vary")
            .unwrap_or("")
            .to_ascii_lowercase()
            .contains("accept-encoding")
    );
    assert!(gz.body.len() < plain.body.len());
    let head = server.request("HEAD", "/r/", &[]);
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    assert!(head.header("etag").is_some());
}

#[test]
fn pushes_show_up_on_the_next_request() {
    let (dir, rc, work) = private_site("fresh");
    let server = Server::start(&rc);
    let before = server.get("/r/");
    assert_eq!(before.status, 200);
    let etag = before.header("etag").unwrap().to_string();
    assert!(!before.text().contains("pushed commit"));
    write(&work, "new.txt", "new\n");
    commit_all(&work, "pushed commit", "2024-02-01T00:00:00+00:00");
    git(
        &work,
        &[
            "push",
            "-q",
            dir.path().join("served.git").to_str().unwrap(),
            "main",
        ],
    );
    assert!(
        eventually(&server, "/r/", |r| r.text().contains("pushed commit")),
        "push visible"
    );
    let after = server.request("GET", "/r/", &[("If-None-Match", &etag)]);
    assert_eq!(after.status, 200, "the old validator no longer matches");
    assert!(after.text().contains("pushed commit"));
    // new tag, new branch, branch deletion
    let served = dir.path().join("served.git");
    git(&served, &["tag", "-a", "v9.9", "-m", "nine", "main"]);
    git(&served, &["branch", "topic", "main~1"]);
    assert!(eventually(&server, "/r/refs/", |r| r
        .text()
        .contains("v9.9")
        && r.text().contains("?h=topic")));
    git(&served, &["branch", "-D", "topic"]);
    assert!(eventually(&server, "/r/refs/", |r| r.status == 200
        && r.text().contains("v9.9")
        && !r.text().contains("?h=topic")));
    assert!(eventually(&server, "/r/", |r| r
        .text()
        .contains("tag-annotated-deco")));
}

#[test]
fn gc_repack_and_pack_refs_while_serving_cause_no_errors() {
    let (dir, rc, work) = private_site("gc");
    let served = dir.path().join("served.git");
    let server = Server::start(&rc);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let addr = server.addr.clone();
    let poller = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut statuses = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                for url in ["/r/", "/r/refs/", "/"] {
                    statuses.push((url, request(&addr, "GET", url, &[]).status));
                }
            }
            statuses
        })
    };
    for round in 0..3 {
        write(&work, "churn.txt", format!("{round}\n"));
        commit_all(
            &work,
            &format!("churn {round}"),
            "2024-03-01T00:00:00+00:00",
        );
        git(&work, &["push", "-q", served.to_str().unwrap(), "main"]);
        git(&served, &["tag", &format!("t{round}")]);
        git(&served, &["pack-refs", "--all"]);
        git(&served, &["repack", "-adq"]);
        git(&served, &["gc", "-q", "--prune=now"]);
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let statuses = poller.join().unwrap();
    assert!(statuses.len() > 10, "the poller made requests");
    let bad: Vec<_> = statuses.iter().filter(|(_, s)| *s != 200).collect();
    assert!(bad.is_empty(), "errors while gc ran: {bad:?}");
    assert!(server.get("/r/").text().contains("churn 2"));
}

#[test]
fn metrics_endpoint_counts_requests_and_rebuilds() {
    let dir = TempDir::new("metrics");
    let rc = rc_for(dir.path(), &SHARED, "metrics-path=/metrics\n");
    let server = Server::start(&rc);
    server.get("/r/");
    server.get("/r/refs/");
    server.get("/nope/");
    let metrics = server.get("/metrics");
    assert_eq!(metrics.status, 200);
    let m = metrics.text();
    assert!(
        m.contains("cgitd_requests_total{page=\"summary\",status=\"200\"} 1"),
        "{m}"
    );
    assert!(
        m.contains("cgitd_requests_total{page=\"repolist\",status=\"404\"} 1"),
        "{m}"
    );
    assert!(m.contains("cgitd_ref_snapshot_rebuilds_total 1"), "{m}");
    assert!(m.contains("cgitd_request_duration_seconds_bucket"));
    assert!(m.contains("cgitd_fragment_cache_hits_total"));
    assert!(
        m.contains("cgitd_git_jobs_queued{class=\"cheap\"} 0"),
        "{m}"
    );
    assert!(
        m.contains("cgitd_git_job_queue_wait_seconds_count{class=\"cheap\"} 3"),
        "{m}"
    );
    assert!(m.contains("cgitd_budget_cutoffs_total 0"), "{m}");
}

#[test]
fn metrics_report_the_bytes_each_cache_holds() {
    let dir = TempDir::new("cache-bytes");
    let rc = rc_for(dir.path(), &SHARED, "metrics-path=/metrics\n");
    let server = Server::start(&rc);
    for url in ["/r/log/", "/r/tree/"] {
        assert_eq!(server.get(url).status, 200, "{url}");
    }
    let m = server.page("/metrics");
    for cache in [
        "responses",
        "fragments",
        "walks",
        "object_sizes",
        "single_child_trees",
        "chain_bases",
        "chain_results",
        "commits",
    ] {
        assert!(
            m.contains(&format!("cgitd_cache_bytes{{cache=\"{cache}\"}} ")),
            "{cache} in {m}"
        );
    }
    let bytes = |cache| metric(&server, &format!("cgitd_cache_bytes{{cache=\"{cache}\"}}"));
    // a log page decodes its commits and keeps its walk, a tree listing reads its entries' sizes
    assert!(bytes("commits") > 0.0);
    assert!(bytes("walks") > 0.0);
    assert!(bytes("object_sizes") > 0.0);
}

#[test]
fn deep_log_pages_reuse_walks_and_stay_exact() {
    let dir = TempDir::new("walks");
    let work = dir.path().join("w");
    init_repo(&work);
    for i in 0..130 {
        write(
            &work,
            if i % 3 == 0 { "a.txt" } else { "b.txt" },
            format!("{i}\n"),
        );
        commit_all(&work, &format!("commit {i}"), "2024-01-01T00:00:00+00:00");
    }
    let rc = dir.path().join("cgitrc");
    std::fs::write(&rc, format!("repo.url=r\nrepo.path={}\n", work.display())).unwrap();
    let server = Server::start(&rc);
    let ids_on = |url: &str| -> Vec<String> {
        let mut ids: Vec<String> = hrefs(&server.get(url).text())
            .into_iter()
            .filter(|h| h.contains("/commit/"))
            .filter_map(|h| h.split("id=").nth(1).map(|id| id[..40].to_string()))
            .collect();
        ids.dedup();
        ids
    };
    for (path, gitpath) in [("", None), ("a.txt", Some("a.txt"))] {
        let mut args = vec!["rev-list", "HEAD"];
        if let Some(p) = gitpath {
            args.extend(["--", p]);
        }
        let all: Vec<String> = git(&work, &args).lines().map(str::to_string).collect();
        for ofs in [0, 50, 100, 10, 120] {
            let ours = ids_on(&format!("/r/log/{path}?ofs={ofs}"));
            let expected: Vec<String> = all.iter().skip(ofs).take(50).cloned().collect();
            assert_eq!(ours, expected, "log/{path} ofs={ofs}");
        }
    }
}
