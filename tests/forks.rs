//! `git clone --shared` forks share one object store: the repository and every fork without
//! objects of its own are served by one opened store (counted by
//! `cgitd_object_stores_opened_total`), a fork with its own objects has its own, and a push
//! into an untouched fork moves it to its own store without losing the pushed commits.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

const FORKS: usize = 12;

fn stores_opened(server: &Server) -> u64 {
    let m = server.page("/metrics");
    m.lines()
        .find_map(|l| l.strip_prefix("cgitd_object_stores_opened_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no store counter in\n{m}"))
}

/// A repository with `FORKS` shared forks under `repos/`; fork 3 has a commit of its own.
fn build(root: &Path) -> PathBuf {
    let work = root.join("work");
    init_repo(&work);
    write(&work, "f", "one\n");
    commit_all(&work, "first commit", "2024-01-01T00:00:00+00:00");
    write(&work, "f", "two\n");
    commit_all(&work, "second commit", "2024-01-02T00:00:00+00:00");
    let repos = root.join("repos");
    std::fs::create_dir_all(&repos).unwrap();
    git(&repos, &["clone", "-q", "--bare", "../work", "base.git"]);
    git(&repos.join("base.git"), &["repack", "-q", "-a", "-d"]);
    for i in 0..FORKS {
        let name = format!("fork{i}.git");
        git(
            &repos,
            &["clone", "-q", "--bare", "--shared", "base.git", &name],
        );
    }
    push_own_commit(root, "fork3", "fork three's own commit");
    let rc = root.join("cgitrc");
    std::fs::write(
        &rc,
        format!(
            "virtual-root=/\nmetrics-path=/metrics\nremove-suffix=1\nscan-path={}\n",
            repos.display()
        ),
    )
    .unwrap();
    rc
}

/// Clones `repos/<fork>.git`, commits `subject` and pushes it back.
fn push_own_commit(root: &Path, fork: &str, subject: &str) {
    let clone = root.join(format!("{fork}-work"));
    git(
        root,
        &[
            "clone",
            "-q",
            &format!("repos/{fork}.git"),
            clone.to_str().unwrap(),
        ],
    );
    write(&clone, "own.txt", subject);
    commit_all(&clone, subject, "2024-02-01T00:00:00+00:00");
    git(&clone, &["push", "-q", "origin", "main"]);
}

#[test]
fn untouched_forks_share_their_alternates_store() {
    let dir = TempDir::new("forks");
    let rc = build(dir.path());
    let server = Server::start(&rc);
    assert_eq!(stores_opened(&server), 0, "stores open lazily");
    assert!(server.page("/base/").contains("second commit"));
    for i in 0..FORKS {
        let page = server.page(&format!("/fork{i}/log/"));
        assert!(page.contains("second commit"), "fork{i}");
        assert_eq!(page.contains("fork three"), i == 3, "fork{i}");
        server.page(&format!("/fork{i}/commit/"));
        server.page(&format!("/fork{i}/tree/f"));
    }
    assert_eq!(
        stores_opened(&server),
        2,
        "one store for base and the untouched forks, one for the fork with objects of its own"
    );
    let m = server.page("/metrics");
    assert!(
        m.contains(&format!("cgitd_ref_snapshots_shared_total {}", FORKS - 1)),
        "every untouched fork took over base's ref snapshot:\n{m}"
    );

    // A push into an untouched fork: its pages show the pushed commit (read from its own
    // objects, so through a store of its own).
    push_own_commit(dir.path(), "fork5", "pushed into fork five");
    let seen = (0..40).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        let log = server.page("/fork5/log/");
        let summary = server.page("/fork5/");
        log.contains("pushed into fork five") && summary.contains("pushed into fork five")
    });
    assert!(seen, "the push into fork5 shows");
    assert!(
        server
            .page("/fork5/commit/")
            .contains("pushed into fork five")
    );
    assert_eq!(
        stores_opened(&server),
        3,
        "fork5 now has a store of its own"
    );
    assert!(!server.page("/fork6/log/").contains("pushed into fork five"));
}

#[test]
fn the_library_reports_each_repositorys_object_source() {
    let dir = TempDir::new("forks-lib");
    let rc = build(dir.path());
    // Replacement refs apply inside a store: fork7's is its own.
    let fork7 = dir.path().join("repos/fork7.git");
    let first = git(&fork7, &["rev-parse", "main~1"]);
    let second = git(&fork7, &["rev-parse", "main"]);
    git(&fork7, &["replace", first.trim(), second.trim()]);
    let config = cgitd::config::Config::load(&rc).unwrap();
    let repos = cgitd::repos::Repos::new(&config, None);
    let base_objects = std::fs::canonicalize(dir.path().join("repos/base.git/objects")).unwrap();
    for name in ["base", "fork0", "fork1", "fork3", "fork7", "fork11"] {
        let state = repos.get(name).unwrap();
        let tip = state
            .with_repo(|repo| state.refs(repo).unwrap().branches[0].subject.clone())
            .unwrap();
        assert!(tip.contains("commit"), "{name}: {tip}");
        let source = state.object_source().unwrap();
        if name == "fork3" || name == "fork7" {
            assert_ne!(source, base_objects, "{name}");
        } else {
            assert_eq!(source, base_objects, "{name}");
        }
    }
    assert_eq!(
        repos.object_stores.live(),
        2,
        "fork7's private store is not shared"
    );
    assert_eq!(repos.object_stores.opened.get(), 3);
    // Forks with the same refs as base hold base's ref snapshot, not a copy.
    let snapshot = |name: &str| {
        let state = repos.get(name).unwrap();
        state.with_repo(|repo| state.refs(repo).unwrap()).unwrap()
    };
    assert!(std::sync::Arc::ptr_eq(
        &snapshot("base"),
        &snapshot("fork1")
    ));
    assert!(!std::sync::Arc::ptr_eq(
        &snapshot("base"),
        &snapshot("fork3")
    ));
    assert_eq!(repos.snapshots.reused.get(), 3, "fork0, fork1 and fork11");
    assert_eq!(
        repos.snapshot_rebuilds.get(),
        3,
        "refs parsed for base, fork3 and fork7 only: the untouched forks' ref files are base's"
    );
}

#[test]
fn warm_handles_stay_within_max_warm_handles_over_all_repositories() {
    let dir = TempDir::new("forks-warm");
    let rc = build(dir.path());
    let text = std::fs::read_to_string(&rc).unwrap();
    std::fs::write(&rc, format!("max-warm-handles=2\n{text}")).unwrap();
    let server = Server::start(&rc);
    // Two stores (base's, shared by the untouched forks, and fork3's own), ten repositories.
    for round in 0..2 {
        for name in ["base", "fork3", "fork0", "fork1", "fork2", "fork4", "fork5"] {
            let page = server.page(&format!("/{name}/log/?ofs={round}"));
            assert!(page.contains("first commit"), "{name}");
        }
        for kind in ["repository", "object"] {
            let held = count(&server, &format!("cgitd_warm_{kind}_handles"));
            assert!((1..=2).contains(&held), "{kind} handles held: {held}");
        }
    }
    assert!(count(&server, "cgitd_warm_repository_handles_released_total") >= 5);
}
