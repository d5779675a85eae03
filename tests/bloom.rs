//! The commit-graph Bloom filter reader agrees with git: no false negatives against
//! `git diff-tree` for every commit and path, for filter versions 1 and 2, single and split graphs.

mod common;

use cgitd::repos::bloom::BloomFilters;
use common::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// The history without a commit-graph, built once: (work tree, commits newest first). Every
/// test writes graphs, so each works on a [`copy_of`] it.
static HISTORY: LazyLock<(PathBuf, Vec<String>)> = LazyLock::new(|| {
    let dir = shared_dir("bloom").join("repo");
    let commits = history(&dir);
    (dir, commits)
});

/// A private copy of the history: (its directory, commits).
fn history_copy(tag: &str) -> (TempDir, Vec<String>) {
    (copy_of(&HISTORY.0, tag), HISTORY.1.clone())
}

fn history(dir: &Path) -> Vec<String> {
    init_repo(dir);
    let names = [
        "a.txt",
        "dir/b.txt",
        "dir/sub/c.txt",
        "caf\u{e9}/\u{fc}ber.txt",
        "z.bin",
    ];
    for i in 0..40 {
        let name = names[i % names.len()];
        write(dir, name, format!("{i}\n"));
        if i % 7 == 0 {
            write(dir, &format!("extra/file{i}.txt"), "x\n");
        }
        commit_all(
            dir,
            &format!("c{i}"),
            &format!("2024-01-01T00:{:02}:00+00:00", i),
        );
    }
    git(dir, &["rev-list", "HEAD"])
        .lines()
        .map(str::to_string)
        .collect()
}

fn check(dir: &Path, commits: &[String]) -> usize {
    let filters = BloomFilters::open(&dir.join(".git")).expect("filters present");
    let mut paths = BTreeSet::new();
    for c in commits {
        for p in git(
            dir,
            &[
                "-c",
                "core.quotePath=false",
                "ls-tree",
                "-r",
                "-t",
                "--name-only",
                c,
            ],
        )
        .lines()
        {
            paths.insert(p.to_string());
        }
    }
    paths.insert("never/existed".into());
    let mut negatives = 0;
    for c in commits {
        let changed: BTreeSet<String> = git(
            dir,
            &[
                "-c",
                "core.quotePath=false",
                "diff-tree",
                "-r",
                "-t",
                "--root",
                "--no-commit-id",
                "--name-only",
                c,
            ],
        )
        .lines()
        .map(str::to_string)
        .collect();
        let id = gix::ObjectId::from_hex(c.as_bytes()).unwrap();
        for p in &paths {
            let answer = filters.maybe_changed(id.as_bytes(), p.as_bytes());
            assert!(answer.is_some(), "{c} has a filter");
            if changed.contains(p) {
                assert_eq!(answer, Some(true), "false negative for {p} in {c}");
            } else if answer == Some(false) {
                negatives += 1;
            }
        }
    }
    negatives
}

#[test]
fn filters_agree_with_git_for_both_versions() {
    for version in ["1", "2"] {
        let (dir, commits) = history_copy("bloom");
        git(
            dir.path(),
            &[
                "-c",
                &format!("commitGraph.changedPathsVersion={version}"),
                "commit-graph",
                "write",
                "--reachable",
                "--changed-paths",
            ],
        );
        let negatives = check(dir.path(), &commits);
        assert!(
            negatives > 100,
            "version {version}: filters rule out unchanged paths ({negatives})"
        );
    }
}

#[test]
fn split_graph_chains_are_read() {
    let (dir, commits) = history_copy("bloom-split");
    git(
        dir.path(),
        &[
            "commit-graph",
            "write",
            "--reachable",
            "--changed-paths",
            "--split=no-merge",
        ],
    );
    write(dir.path(), "late.txt", "late\n");
    commit_all(dir.path(), "late", "2024-02-01T00:00:00+00:00");
    git(
        dir.path(),
        &[
            "commit-graph",
            "write",
            "--reachable",
            "--changed-paths",
            "--split=no-merge",
        ],
    );
    assert!(
        dir.path()
            .join(".git/objects/info/commit-graphs/commit-graph-chain")
            .exists()
    );
    let mut all = commits;
    all.insert(
        0,
        git(dir.path(), &["rev-parse", "HEAD"]).trim().to_string(),
    );
    assert!(check(dir.path(), &all) > 100);
}

#[test]
fn no_graph_means_no_filters() {
    let (dir, _) = history_copy("bloom-none");
    assert!(BloomFilters::open(&dir.path().join(".git")).is_none());
    git(dir.path(), &["commit-graph", "write", "--reachable"]);
    assert!(
        BloomFilters::open(&dir.path().join(".git")).is_none(),
        "graph without filters"
    );
}
