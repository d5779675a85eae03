//! The response cache on a real server: repeats are answered from it (metrics) with the same
//! bytes and headers, a push shows on the next request after the freshness window, compressed
//! variants decode to the same bytes (made cheaply at first, at the stored level once
//! repeated), HEAD gets headers only, 304s come from it too, and pages it must not keep
//! (errors) are rendered every time.

mod common;

use common::*;
use std::path::PathBuf;
use std::time::Duration;

/// A bare repository `served.git` (two commits, a tag) cloned from `work`, and a cgitrc serving
/// it as `r` with metrics.
fn site(tag: &str) -> (TempDir, PathBuf, PathBuf) {
    let dir = TempDir::new(tag);
    let work = dir.path().join("work");
    init_repo(&work);
    for i in 0..2 {
        write(
            &work,
            &format!("src/file{i}.txt"),
            format!("line {i}\n").repeat(300),
        );
        commit_all(
            &work,
            &format!("commit number {i}"),
            &format!("2024-01-0{}T00:00:00+00:00", i + 1),
        );
    }
    git(&work, &["tag", "-a", "v1.0", "-m", "version one"]);
    git(dir.path(), &["clone", "-q", "--bare", "work", "served.git"]);
    let rc = dir.path().join("cgitrc");
    std::fs::write(
        &rc,
        format!(
            "metrics-path=/metrics\nrepo.url=r\nrepo.path={}\n",
            dir.path().join("served.git").display()
        ),
    )
    .unwrap();
    (dir, rc, work)
}

fn hits(server: &Server) -> u64 {
    count(server, "cgitd_response_cache_hits_total")
}

fn misses(server: &Server) -> u64 {
    count(server, "cgitd_response_cache_misses_total")
}

/// The headers that must be equal between two answers to one request (all but `Date`).
fn stable_headers(r: &Response) -> Vec<(String, String)> {
    let mut h: Vec<(String, String)> = r
        .headers
        .iter()
        .filter(|(n, _)| !n.eq_ignore_ascii_case("date"))
        .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
        .collect();
    h.sort();
    h
}

const PAGES: &[&str] = &[
    "/",
    "/r/",
    "/r/refs/",
    "/r/log/",
    "/r/tree/",
    "/r/tree/src/file1.txt",
    "/r/plain/src/file1.txt",
    "/r/tag/?h=v1.0",
    "/r/atom/",
    "/r/patch/",
    "/r/commit/",
    "/r/commit/?id=v1.0",
    "/r/diff/",
    "/r/info/refs",
];

#[test]
fn repeated_pages_come_from_the_cache_with_the_same_bytes_and_headers() {
    let (_dir, rc, _work) = site("rc-repeat");
    let server = Server::start(&rc);
    for url in PAGES {
        let misses_before = misses(&server);
        let first = server.get(url);
        assert_eq!(first.status, 200, "{url}: {}", first.text());
        assert_eq!(misses(&server), misses_before + 1, "{url}: first is a miss");
        // A cheap page asked for once is not kept; asked for again, it is.
        let second = server.get(url);
        assert_eq!(misses(&server), misses_before + 2, "{url}: kept from now");
        assert_eq!(second.body, first.body, "{url}: same bytes");
        let hits_before = hits(&server);
        let again = server.get(url);
        assert_eq!(hits(&server), hits_before + 1, "{url}: repeat is a hit");
        assert_eq!(again.status, 200);
        assert_eq!(again.body, first.body, "{url}: same bytes");
        assert_eq!(
            stable_headers(&again),
            stable_headers(&first),
            "{url}: same headers"
        );
    }
}

#[test]
fn conditional_repeats_are_answered_from_the_cache() {
    let (_dir, rc, _work) = site("rc-304");
    let server = Server::start(&rc);
    // A request that is conditional still counts as asked for, and fills the cache.
    server.get("/r/tree/");
    let first = server.request("GET", "/r/tree/", &[("If-None-Match", "W/\"nope\"")]);
    assert_eq!(first.status, 200);
    let etag = first.header("etag").expect("an ETag").to_string();
    let hits_before = hits(&server);
    let not_modified = server.request("GET", "/r/tree/", &[("If-None-Match", &etag)]);
    assert_eq!(not_modified.status, 304);
    assert!(not_modified.body.is_empty());
    assert_eq!(not_modified.header("etag"), Some(etag.as_str()));
    assert!(not_modified.header("cache-control").is_some());
    assert_eq!(hits(&server), hits_before + 1);
}

#[test]
fn a_push_shows_after_the_freshness_window() {
    let (dir, rc, work) = site("rc-push");
    let server = Server::start(&rc);
    for url in ["/r/", "/r/log/", "/r/atom/", "/r/info/refs"] {
        let first = server.page(url);
        assert!(!first.contains("pushed commit"));
        assert_eq!(server.page(url), first);
    }
    write(&work, "new.txt", "new\n");
    commit_all(&work, "pushed commit", "2024-02-01T00:00:00+00:00");
    let served = dir.path().join("served.git");
    git(&work, &["push", "-q", served.to_str().unwrap(), "main"]);
    let pushed = git(&work, &["rev-parse", "HEAD"]);
    assert!(
        eventually(&server, "/r/info/refs", |r| r
            .text()
            .contains(pushed.trim())),
        "info/refs: the pushed head"
    );
    for url in ["/r/", "/r/log/", "/r/atom/"] {
        assert!(
            eventually(&server, url, |r| r.text().contains("pushed commit")),
            "{url}: push visible"
        );
        // ... and the new page is what is cached now.
        assert!(server.page(url).contains("pushed commit"));
    }
}

/// Polls `url` until `pred` holds, for up to three seconds.
fn eventually(server: &Server, url: &str, pred: impl Fn(&Response) -> bool) -> bool {
    for _ in 0..60 {
        if pred(&server.get(url)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn compressed_variants_decode_to_the_same_bytes() {
    let (_dir, rc, _work) = site("rc-coding");
    let server = Server::start(&rc);
    for url in ["/r/tree/", "/r/log/", "/r/plain/src/file0.txt"] {
        let plain = server.get(url);
        assert_eq!(plain.status, 200);
        assert_eq!(plain.header("content-encoding"), None);
        for coding in ["gzip", "br", "zstd"] {
            let accept = [("Accept-Encoding", coding)];
            let first = server.request("GET", url, &accept);
            let hits_before = hits(&server);
            let again = server.request("GET", url, &accept);
            assert_eq!(hits(&server), hits_before + 1, "{url} {coding}: a hit");
            for r in [&first, &again] {
                assert_eq!(r.status, 200);
                assert_eq!(r.header("content-encoding"), Some(coding), "{url}");
                assert!(
                    r.header("vary")
                        .is_some_and(|v| v.to_ascii_lowercase().contains("accept-encoding"))
                );
                assert_eq!(decode(coding, &r.body), plain.body, "{url} {coding}");
            }
            assert_eq!(again.body, first.body);
            assert_eq!(stable_headers(&again), stable_headers(&first));
        }
    }
    // Several codings accepted: the cheapest to make (zstd, then gzip, then brotli), as for
    // an uncached response.
    let r = server.request(
        "GET",
        "/r/tree/",
        &[("Accept-Encoding", "gzip, deflate, br")],
    );
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    let r = server.request("GET", "/r/tree/", &[("Accept-Encoding", "br, gzip, zstd")]);
    assert_eq!(r.header("content-encoding"), Some("zstd"));
}

#[test]
fn a_kept_page_is_compressed_cheaply_first_and_at_the_stored_level_once_repeated() {
    let (dir, rc, work) = site("rc-effort");
    // Varied lines, so that the two levels' outputs differ.
    let lines: String = (0..3000)
        .map(|i| format!("line {i}: {}\n", i * 7919 % 10007))
        .collect();
    write(&work, "varied.txt", lines);
    commit_all(&work, "varied file", "2024-02-01T00:00:00+00:00");
    let served = dir.path().join("served.git");
    git(&work, &["push", "-q", served.to_str().unwrap(), "main"]);
    let server = Server::start(&rc);
    let url = "/r/tree/varied.txt";
    let gzip = [("Accept-Encoding", "gzip")];
    // Asked for until kept (from its second render, or its first if that was slow).
    let hits_before = hits(&server);
    let mut kept = server.request("GET", url, &gzip);
    for _ in 0..3 {
        if hits(&server) > hits_before {
            break;
        }
        kept = server.request("GET", url, &gzip);
    }
    assert!(hits(&server) > hits_before, "the page is kept");
    let plain = server.get(url);
    assert_eq!(decode("gzip", &kept.body), plain.body);
    let stored = (0..60).find_map(|_| {
        let r = server.request("GET", url, &gzip);
        if r.body != kept.body {
            return Some(r);
        }
        std::thread::sleep(Duration::from_millis(50));
        None
    });
    let stored = stored.expect("a repeat gets the variant made at the stored level");
    assert_eq!(stored.header("content-encoding"), Some("gzip"));
    assert_eq!(decode("gzip", &stored.body), plain.body);
    assert!(
        stored.body.len() < kept.body.len(),
        "stored {} bytes, cheap {}",
        stored.body.len(),
        kept.body.len()
    );
    let without_length = |r: &Response| {
        let mut h = stable_headers(r);
        h.retain(|(n, _)| n != "content-length");
        h
    };
    assert_eq!(without_length(&stored), without_length(&kept));
}

#[test]
fn head_gets_the_headers_only() {
    let (_dir, rc, _work) = site("rc-head");
    let server = Server::start(&rc);
    let get = server.get("/r/tree/");
    let head = server.request("HEAD", "/r/tree/", &[]);
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    assert_eq!(stable_headers(&head), stable_headers(&get));
    // A HEAD (here the page's second request) fills the cache for the GET after it.
    server.get("/r/log/");
    let head = server.request("HEAD", "/r/log/", &[]);
    assert!(head.body.is_empty());
    let hits_before = hits(&server);
    let get = server.get("/r/log/");
    assert_eq!(hits(&server), hits_before + 1);
    assert!(get.text().contains("commit number 1"));
}

#[test]
fn errors_are_not_kept() {
    let (_dir, rc, _work) = site("rc-errors");
    let server = Server::start(&rc);
    let misses_before = misses(&server);
    for _ in 0..2 {
        assert_eq!(server.get("/r/tree/no-such-file").status, 404);
    }
    assert_eq!(misses(&server), misses_before + 2);
}

#[test]
fn uncached_pages_are_compressed_in_one_piece() {
    let (_dir, rc, _work) = site("rc-uncached");
    let server = Server::start(&rc);
    let plain = server.get("/r/rawdiff/");
    assert_eq!(plain.status, 200);
    for coding in ["gzip", "br", "zstd"] {
        let r = server.request("GET", "/r/rawdiff/", &[("Accept-Encoding", coding)]);
        assert_eq!(r.header("content-encoding"), Some(coding));
        assert!(
            r.header("content-length").is_some(),
            "one buffer, not chunks"
        );
        assert_eq!(decode(coding, &r.body), plain.body, "{coding}");
    }
    assert_eq!(hits(&server), 0, "rawdiff pages are not kept");
}

#[test]
fn a_zero_size_turns_the_cache_off() {
    let (dir, rc, _work) = site("rc-off");
    let text = std::fs::read_to_string(&rc).unwrap();
    let rc = dir.path().join("cgitrc-off");
    std::fs::write(&rc, format!("response-cache-size=0\n{text}")).unwrap();
    let server = Server::start(&rc);
    for _ in 0..3 {
        assert_eq!(server.get("/r/tree/").status, 200);
    }
    assert_eq!(hits(&server), 0);
    assert_eq!(misses(&server), 0);
}
