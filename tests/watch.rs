//! Ref change detection: with inotify watches a ref update is seen on a following request and
//! unchanged refs cost no stat; with `watch-refs=0` the stat check sees the update instead.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A bare repository with two commits, `main` on the first; the second commit's id.
fn build(root: &Path, options: &str) -> (PathBuf, PathBuf, String) {
    let work = root.join("work");
    init_repo(&work);
    write(&work, "f", "one\n");
    let first = commit_all(&work, "first commit", "2024-01-01T00:00:00+00:00");
    write(&work, "f", "two\n");
    let second = commit_all(&work, "second commit", "2024-01-02T00:00:00+00:00");
    git(root, &["clone", "-q", "--bare", "work", "r.git"]);
    let git_dir = root.join("r.git");
    git(&git_dir, &["update-ref", "refs/heads/main", &first]);
    let rc = metrics_rc(root, &git_dir, options);
    (rc, git_dir, second)
}

/// Asks for `target` until `wanted` holds for the page (a bounded number of times).
fn eventually(server: &Server, target: &str, wanted: impl Fn(&str) -> bool) -> bool {
    (0..100).any(|_| {
        let seen = wanted(&server.page(target));
        if !seen {
            std::thread::sleep(Duration::from_millis(20));
        }
        seen
    })
}

fn eventually_shows(server: &Server, target: &str, text: &str) -> bool {
    eventually(server, target, |page| page.contains(text))
}

#[test]
fn a_watched_repository_sees_a_ref_update_and_costs_no_stat_while_unchanged() {
    let dir = TempDir::new("watch-on");
    let (rc, git_dir, second) = build(dir.path(), "");
    let server = Server::start(&rc);
    assert!(
        (0..100).any(|_| {
            let watched = count(&server, "cgitd_ref_watches") == 1;
            if !watched {
                std::thread::sleep(Duration::from_millis(20));
            }
            watched
        }),
        "the repository's refs are watched"
    );
    assert!(server.page("/r/log/").contains("first commit"));
    server.page("/r/log/");
    let checks = count(&server, "cgitd_ref_stamp_checks_total");
    for round in 0..5 {
        if round == 2 {
            // Past the stat check's interval: without a watch the refs would be stat'ed now.
            std::thread::sleep(Duration::from_millis(300));
        }
        // Distinct targets, so the response cache does not answer.
        for page in ["/r/refs/", "/r/tree/", "/r/log/?h=main"] {
            server.page(page);
        }
    }
    assert_eq!(
        count(&server, "cgitd_ref_stamp_checks_total"),
        checks,
        "unchanged watched refs are not stat'ed"
    );
    git(&git_dir, &["update-ref", "refs/heads/main", &second]);
    assert!(eventually_shows(&server, "/r/log/", "second commit"));
    git(&git_dir, &["update-ref", "refs/heads/topic", &second]);
    git(&git_dir, &["pack-refs", "--all"]);
    assert!(eventually_shows(&server, "/r/refs/", "topic"));
    git(&git_dir, &["update-ref", "-d", "refs/heads/topic"]);
    assert!(eventually(&server, "/r/refs/", |p| !p.contains("topic")));
}

#[test]
fn without_watches_the_stat_check_sees_a_ref_update() {
    let dir = TempDir::new("watch-off");
    let (rc, git_dir, second) = build(dir.path(), "watch-refs=0\n");
    let server = Server::start(&rc);
    // Asked for twice, so that the response cache keeps the page until a check sees the update.
    server.page("/r/log/");
    assert!(server.page("/r/log/").contains("first commit"));
    git(&git_dir, &["update-ref", "refs/heads/main", &second]);
    assert!(eventually_shows(&server, "/r/log/", "second commit"));
    assert_eq!(count(&server, "cgitd_ref_watches"), 0);
    assert!(count(&server, "cgitd_ref_stamp_checks_total") > 0);
}

/// The position of `href` in the index page `target`.
fn position(server: &Server, target: &str, href: &str) -> usize {
    let page = server.page(target);
    page.find(&format!("href='{href}'"))
        .unwrap_or_else(|| panic!("{href} not in {target}"))
}

#[test]
fn the_index_idle_order_follows_a_ref_update() {
    let dir = TempDir::new("watch-idle");
    let (_, git_dir, second) = build(dir.path(), "");
    git(dir.path(), &["clone", "-q", "--bare", "r.git", "s.git"]);
    // s changed an hour ago, r (its loose ref) a day ago: s is first by idle time.
    let old = |path: &Path, ago: &str| {
        let status = std::process::Command::new("touch")
            .args(["-m", "-d", ago])
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    };
    old(&git_dir.join("refs/heads/main"), "1 day ago");
    old(&dir.path().join("s.git/packed-refs"), "1 hour ago");
    let _ = std::fs::remove_file(dir.path().join("s.git/refs/heads/main"));
    let rc = dir.path().join("cgitrc");
    let text = std::fs::read_to_string(&rc).unwrap();
    std::fs::write(
        &rc,
        format!(
            "{text}repo.url=s\nrepo.path={}\n",
            dir.path().join("s.git").display()
        ),
    )
    .unwrap();
    let server = Server::start(&rc);
    assert!(position(&server, "/?s=idle", "/s/") < position(&server, "/?s=idle", "/r/"));
    git(&git_dir, &["update-ref", "refs/heads/main", &second]);
    assert!(
        eventually(&server, "/?s=idle", |page| {
            page.find("href='/r/'") < page.find("href='/s/'")
        }),
        "r moves to the top once its ref changes"
    );
}
