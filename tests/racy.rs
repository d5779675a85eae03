//! Racy stamps: a ref rewritten in the same timestamp tick as the stat that stamped the refs
//! (same directory mtime and size) is still seen by a later request.

mod common;

use common::*;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn rebuilds(server: &Server) -> u64 {
    let m = server.page("/metrics");
    m.lines()
        .find_map(|l| l.strip_prefix("cgitd_ref_snapshot_rebuilds_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no rebuild counter in\n{m}"))
}

/// Sets the mtime of `path` to `(seconds, nanoseconds)` with touch(1).
fn touch(path: &Path, (secs, nsecs): (i64, i64)) {
    let status = Command::new("touch")
        .arg("-m")
        .arg("-d")
        .arg(format!("@{secs}.{nsecs:09}"))
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

fn mtime(path: &Path) -> (i64, i64) {
    let m = std::fs::metadata(path).unwrap();
    (m.mtime(), m.mtime_nsec())
}

#[test]
fn a_ref_rewritten_in_the_stamps_tick_is_seen_later() {
    rewritten_in_the_stamps_tick("racy", "");
}

/// The same with the stat check alone (no ref watches), where the racy rule does the work.
#[test]
fn a_ref_rewritten_in_the_stamps_tick_is_seen_later_without_watches() {
    rewritten_in_the_stamps_tick("racy-stat", "watch-refs=0\n");
}

fn rewritten_in_the_stamps_tick(tag: &str, options: &str) {
    let dir = TempDir::new(tag);
    let work = dir.path().join("work");
    init_repo(&work);
    write(&work, "f", "one\n");
    commit_all(&work, "first commit", "2024-01-01T00:00:00+00:00");
    write(&work, "f", "two\n");
    let second = commit_all(&work, "second commit", "2024-01-02T00:00:00+00:00");
    write(&work, "f", "three\n");
    let third = commit_all(&work, "third commit", "2024-01-03T00:00:00+00:00");
    git(dir.path(), &["clone", "-q", "--bare", "work", "r.git"]);
    let git_dir = dir.path().join("r.git");
    let heads = git_dir.join("refs/heads");
    let rc = metrics_rc(dir.path(), &git_dir, options);
    let server = Server::start(&rc);

    // main moves to `second` just before the first request: its stamp sees a fresh mtime.
    git(&git_dir, &["update-ref", "refs/heads/main", &second]);
    let stamped = mtime(&heads);
    let page = server.page("/r/refs/");
    assert!(page.contains("second commit") && !page.contains("third commit"));

    // main moves again, and refs/heads gets back the mtime the stamp saw (same size, same
    // inode): as if both writes fell into one timestamp tick.
    git(&git_dir, &["update-ref", "refs/heads/main", &third]);
    touch(&heads, stamped);
    assert_eq!(mtime(&heads), stamped);
    std::thread::sleep(Duration::from_millis(400));
    let page = server.page("/r/refs/");
    assert!(
        page.contains("third commit"),
        "the rewrite in the stamp's tick is seen"
    );

    // Once the refs are older than the racy window, an unchanged stamp is trusted again.
    std::thread::sleep(Duration::from_millis(2200));
    server.page("/r/refs/");
    let settled = rebuilds(&server);
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(300));
        server.page("/r/refs/");
    }
    assert_eq!(
        rebuilds(&server),
        settled,
        "no rebuilds for an old, unchanged stamp"
    );
}
