//! The commit index: built from objects it equals the one read from git's commit-graph
//! (parents, times, trees, generations), on a history with merges, an octopus merge, several
//! branches and commits of equal times; log pages walked over it are the pages walked over
//! the objects; it is extended by new commits only; and it is small.

mod common;

use cgitd::git::commit_index::CommitIndex;
use cgitd::git::log::{LogQuery, query};
use common::*;
use gix::ObjectId;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

/// A history with branches, merges and an octopus merge, many commits sharing a time (the
/// walk's order among equal times matters); built once.
static HISTORY: LazyLock<PathBuf> = LazyLock::new(|| {
    let dir = shared_dir("commit-index").join("repo");
    init_repo(&dir);
    let date = |i: usize| format!("2024-01-01T00:{:02}:00+00:00", i / 3);
    for i in 0..30 {
        write(&dir, "main.txt", format!("{i}\n"));
        commit_all(&dir, &format!("m{i}"), &date(i));
        if i % 10 == 5 {
            for b in ["a", "b", "c"] {
                git(&dir, &["checkout", "-q", "-b", &format!("{b}{i}")]);
                write(&dir, &format!("{b}.txt"), format!("{b}{i}\n"));
                commit_all(&dir, &format!("{b}{i}"), &date(i));
                git(&dir, &["checkout", "-q", "main"]);
            }
            let merged = [format!("a{i}"), format!("b{i}"), format!("c{i}")];
            let mut args = vec!["merge", "-q", "--no-ff", "--no-edit"];
            if i == 15 {
                args.extend(merged.iter().map(String::as_str)); // octopus
            } else {
                args.push(&merged[0]);
            }
            let out = git_command(&dir, &args)
                .env("GIT_COMMITTER_DATE", date(i))
                .output()
                .unwrap();
            assert!(out.status.success());
        }
    }
    git(&dir, &["tag", "v1", "HEAD~3"]);
    dir
});

fn open(dir: &Path) -> gix::Repository {
    gix::open_opts(dir, gix::open::Options::isolated()).unwrap()
}

fn tips(dir: &Path) -> Vec<ObjectId> {
    git(
        dir,
        &["for-each-ref", "--format=%(objectname)", "refs/heads"],
    )
    .lines()
    .map(|l| ObjectId::from_hex(l.as_bytes()).unwrap())
    .collect()
}

/// The ids of the commits `q` lists.
fn listed_ids(repo: &gix::Repository, q: &LogQuery) -> Vec<ObjectId> {
    ids_of(
        &query(&cgitd::git::Repo::new(repo, None), q)
            .unwrap()
            .commits,
    )
}

fn ids_of(commits: &[std::sync::Arc<cgitd::git::commit::CommitInfo>]) -> Vec<ObjectId> {
    commits.iter().map(|c| c.id).collect()
}

fn head(dir: &Path) -> ObjectId {
    ObjectId::from_hex(git(dir, &["rev-parse", "HEAD"]).trim().as_bytes()).unwrap()
}

#[test]
fn built_from_objects_equals_the_commit_graph() {
    let dir = copy_of(&HISTORY, "cindex-graph");
    let repo = open(dir.path());
    let built = CommitIndex::load(&repo, &tips(dir.path())).unwrap();
    let merges = git(dir.path(), &["rev-list", "--merges", "--count", "HEAD"]);
    assert_eq!(merges.trim(), "3");
    let count: usize = git(dir.path(), &["rev-list", "--all", "--count"])
        .trim()
        .parse()
        .unwrap();
    assert_eq!(built.len(), count);
    git(dir.path(), &["commit-graph", "write", "--reachable"]);
    let repo = open(dir.path());
    let graph = repo.commit_graph().unwrap();
    let read = CommitIndex::from_graph(&graph).unwrap();
    assert_eq!(read, built);
    // and both agree with git on what they hold
    let octopus = git(
        dir.path(),
        &["rev-list", "--min-parents=3", "--format=%T %ct %P", "HEAD"],
    );
    let mut lines = octopus.lines().skip(1);
    let fields: Vec<&str> = lines.next().unwrap().split(' ').collect();
    let id = git(dir.path(), &["rev-list", "--min-parents=3", "HEAD"]);
    let pos = read
        .position(&ObjectId::from_hex(id.trim().as_bytes()).unwrap())
        .unwrap();
    assert_eq!(read.tree(pos).to_string(), fields[0]);
    assert_eq!(read.time(pos).to_string(), fields[1]);
    let parents: Vec<String> = read.parents(pos).map(|p| read.id(p).to_string()).collect();
    assert_eq!(parents, fields[2..]);
    let root = read
        .position(
            &ObjectId::from_hex(
                git(dir.path(), &["rev-list", "--max-parents=0", "HEAD"])
                    .trim()
                    .as_bytes(),
            )
            .unwrap(),
        )
        .unwrap();
    assert_eq!(read.generation(root), 1);
    assert_eq!(
        read.generation(pos),
        1 + read.parents(pos).map(|p| read.generation(p)).max().unwrap()
    );
}

#[test]
fn log_pages_over_the_index_are_the_pages_over_the_objects() {
    let repo = open(&HISTORY);
    let index = Arc::new(CommitIndex::load(&repo, &tips(&HISTORY)).unwrap());
    let total = index.len();
    for tip in tips(&HISTORY) {
        for skip in [0, 1, 7, 20, 33, total - 2, total + 5] {
            let page = |commits: Option<Arc<CommitIndex>>| {
                let q = LogQuery {
                    tips: vec![tip],
                    commits,
                    skip,
                    count: 10,
                    ..LogQuery::default()
                };
                let page = query(&cgitd::git::Repo::new(&repo, None), &q).unwrap();
                (ids_of(&page.commits), page.has_more)
            };
            assert_eq!(page(Some(Arc::clone(&index))), page(None), "{tip} {skip}");
        }
    }
    // the whole walk is git's list of the commits (its order may differ among equal times)
    let mut walked: Vec<String> = index
        .newest_first(&[head(&HISTORY)], None)
        .unwrap()
        .map(|p| index.id(p).to_string())
        .collect();
    let mut listed: Vec<String> = git(&HISTORY, &["rev-list", "HEAD"])
        .lines()
        .map(str::to_string)
        .collect();
    walked.sort();
    listed.sort();
    assert_eq!(walked, listed);
}

#[test]
fn since_limited_walks_over_the_index_are_the_same() {
    let repo = open(&HISTORY);
    let index = Arc::new(CommitIndex::load(&repo, &tips(&HISTORY)).unwrap());
    // the history's times run from 00:00 to 00:09 in steps of a minute
    let start = 1_704_067_200; // 2024-01-01T00:00:00Z
    for since in [
        start - 60,
        start,
        start + 60,
        start + 300,
        start + 539,
        start + 600,
    ] {
        let page = |commits: Option<Arc<CommitIndex>>| {
            let q = LogQuery {
                tips: tips(&HISTORY),
                commits,
                since: Some(since),
                count: 1000,
                ..LogQuery::default()
            };
            listed_ids(&repo, &q)
        };
        let listed = page(Some(Arc::clone(&index)));
        assert_eq!(listed, page(None), "since {since}");
        if since == start + 300 {
            assert!(!listed.is_empty() && listed.len() < index.len());
        }
    }
}

#[test]
fn path_limited_logs_over_the_index_are_the_same() {
    let repo = open(&HISTORY);
    let index = Arc::new(CommitIndex::load(&repo, &tips(&HISTORY)).unwrap());
    for path in ["main.txt", "a.txt", "c.txt"] {
        let page = |commits: Option<Arc<CommitIndex>>| {
            let q = LogQuery {
                tips: vec![head(&HISTORY)],
                path: Some(path.into()),
                commits,
                count: 100,
                ..LogQuery::default()
            };
            listed_ids(&repo, &q)
        };
        let listed = page(Some(Arc::clone(&index)));
        assert!(!listed.is_empty());
        assert_eq!(listed, page(None), "{path}");
    }
}

#[test]
fn extension_reads_only_new_commits() {
    let dir = copy_of(&HISTORY, "cindex-extend");
    let repo = open(dir.path());
    let before = CommitIndex::load(&repo, &tips(dir.path())).unwrap();
    assert!(before.extended(&repo, &tips(dir.path())).unwrap().is_none());
    write(dir.path(), "new.txt", "new\n");
    let new = commit_all(dir.path(), "new", "2024-02-01T00:00:00+00:00");
    let repo = open(dir.path());
    let after = before
        .extended(&repo, &tips(dir.path()))
        .unwrap()
        .expect("a new commit");
    assert_eq!(after.len(), before.len() + 1);
    assert_eq!(after, CommitIndex::load(&repo, &tips(dir.path())).unwrap());
    let pos = after
        .position(&ObjectId::from_hex(new.as_bytes()).unwrap())
        .unwrap();
    assert_eq!(after.parents(pos).count(), 1);
}

#[test]
fn a_commit_costs_at_most_64_bytes() {
    let repo = open(&HISTORY);
    let index = CommitIndex::load(&repo, &tips(&HISTORY)).unwrap();
    // ids and trees 20 bytes each, time 8, generation and two parents 4 each: 60, plus the
    // octopus's overflow entries and a fixed part (the 1 KiB fanout)
    let fixed = std::mem::size_of::<CommitIndex>();
    let per_commit = (index.heap_bytes() - fixed) as f64 / index.len() as f64;
    assert!(per_commit <= 64.0, "{per_commit} bytes per commit");
    assert!(per_commit >= 60.0, "{per_commit} bytes per commit");
}

/// The value of one metric line.
/// Asks until `what` holds (the index is built on a thread of its own).
fn until(description: &str, mut what: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !what() {
        assert!(std::time::Instant::now() < deadline, "never: {description}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_ready_index_makes_deep_logs_cheap_and_follows_pushes() {
    let dir = copy_of(&HISTORY, "cindex-server");
    let rc = dir.path().join("cgitrc");
    let text = format!(
        "metrics-path=/metrics\nrepo.url=r\nrepo.path={}\n",
        dir.path().display()
    );
    std::fs::write(&rc, text).unwrap();
    let server = Server::start(&rc);
    let ran = |class: &str| {
        metric(
            &server,
            &format!("cgitd_git_job_queue_wait_seconds_count{{class=\"{class}\"}}"),
        )
    };
    server.page("/r/log/?ofs=600");
    assert_eq!(ran("expensive"), 1.0, "no commit-graph, no index yet");
    until("an index is built", || {
        metric(&server, "cgitd_commit_index_builds_total") >= 1.0
    });
    let bytes = metric(&server, "cgitd_commit_index_bytes");
    assert!(bytes > 60.0 * 40.0, "{bytes}");
    // (the refs' stamp is trusted once it is older than a second: until then the class
    // cannot know that the index holds the current tips)
    let mut ofs = 600;
    until("a deep log page is cheap", || {
        ofs += 1;
        let cheap = ran("cheap");
        server.page(&format!("/r/log/?ofs={ofs}"));
        ran("cheap") > cheap
    });
    // a push: the index is extended by the new commit, and deep pages stay right
    write(dir.path(), "pushed.txt", "pushed\n");
    let pushed = commit_all(dir.path(), "pushed", "2024-03-01T00:00:00+00:00");
    until("the push is seen", || {
        server.page("/r/log/").contains(&format!("id={pushed}"))
    });
    // (pages bring the index up to date with the refs they are rendered with)
    until("the index is extended", || {
        ofs += 1;
        server.page(&format!("/r/log/?ofs={ofs}"));
        metric(&server, "cgitd_commit_index_builds_total") >= 2.0
    });
    assert!(metric(&server, "cgitd_commit_index_bytes") > bytes);
    let second = git(dir.path(), &["rev-parse", "HEAD~1"]);
    let page = server.page("/r/log/?ofs=1");
    assert!(page.contains(&format!("id={}", second.trim())), "{page}");
}

#[test]
fn ancestry_from_the_index_is_gits() {
    let repo = open(&HISTORY);
    let index = CommitIndex::load(&repo, &tips(&HISTORY)).unwrap();
    let all: Vec<ObjectId> = git(&HISTORY, &["rev-list", "--all"])
        .lines()
        .map(|l| ObjectId::from_hex(l.as_bytes()).unwrap())
        .collect();
    let (mut yes, mut no) = (0, 0);
    for of in &all {
        let ancestors: std::collections::HashSet<ObjectId> =
            git(&HISTORY, &["rev-list", &of.to_string()])
                .lines()
                .map(|l| ObjectId::from_hex(l.as_bytes()).unwrap())
                .collect();
        for a in &all {
            let known = index.is_ancestor(a, of).unwrap();
            assert_eq!(known, ancestors.contains(a), "{a} of {of}");
            if known {
                yes += 1
            } else {
                no += 1
            }
            let via_log = cgitd::git::log::is_ancestor(
                &cgitd::git::Repo::new(&repo, None),
                Some(&index),
                *a,
                *of,
            )
            .unwrap();
            assert_eq!(via_log, known);
        }
    }
    assert!(yes > 100 && no > 100, "{yes} {no}");
}
