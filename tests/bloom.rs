//! The commit-graph Bloom filter reader agrees with git: no false negatives against
//! `git diff-tree` for every commit and path, for filter versions 1 and 2, single and split graphs.

mod common;

use cgitd::git::commit_graph::BloomFilters;
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

/// Every commit of the history with the paths it changed (git's answer), and every path that
/// ever existed plus one that never did.
struct Truth {
    changed: Vec<(gix::ObjectId, BTreeSet<String>)>,
    paths: BTreeSet<String>,
}

impl Truth {
    fn of(dir: &std::path::Path, commits: &[String]) -> Truth {
        let mut paths = BTreeSet::new();
        let mut changed = Vec::new();
        for c in commits {
            let quiet = ["-c", "core.quotePath=false"];
            let tree = git(
                dir,
                &[&quiet[..], &["ls-tree", "-r", "-t", "--name-only", c]].concat(),
            );
            paths.extend(tree.lines().map(str::to_string));
            let diff = git(
                dir,
                &[
                    &quiet[..],
                    &[
                        "diff-tree",
                        "-r",
                        "-t",
                        "--root",
                        "--no-commit-id",
                        "--name-only",
                        c,
                    ],
                ]
                .concat(),
            );
            let id = gix::ObjectId::from_hex(c.as_bytes()).unwrap();
            changed.push((id, diff.lines().map(str::to_string).collect()));
        }
        paths.insert("never/existed".into());
        Truth { changed, paths }
    }

    /// Asks `filters` about every commit and path (which must not panic); with `exact`, a
    /// filter that answers must not deny a change git reports.
    fn probe(&self, filters: &BloomFilters, exact: bool, what: &str) {
        for (id, changed) in &self.changed {
            for p in &self.paths {
                let answer = filters.maybe_changed(id.as_bytes(), p.as_bytes());
                if exact && changed.contains(p) {
                    assert_ne!(
                        answer,
                        Some(false),
                        "{what}: false negative for {p} in {id}"
                    );
                }
            }
        }
        // ids of the wrong length and unknown ids are no filter, not a panic
        assert_eq!(filters.maybe_changed(b"short", b"a.txt"), None);
        assert_eq!(filters.maybe_changed(&[0xff; 20], b"a.txt"), None);
    }
}

/// Replaces `path` with `bytes` the way git does (a new file renamed into place), so no map
/// of the old file ever sees it change.
fn replace(path: &std::path::Path, bytes: &[u8]) {
    let tmp = path.with_extension("tmp-corrupt");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Offsets in a commit-graph worth corrupting: the header, the chunk table, every chunk
/// start and end (±1), and a spread over the whole file.
fn interesting_offsets(graph: &[u8]) -> BTreeSet<usize> {
    let mut at: BTreeSet<usize> = (0..=64).collect();
    let chunks = usize::from(graph[6]);
    for i in 0..=chunks {
        let entry = 8 + i * 12;
        at.extend([entry, entry + 4, entry + 11]);
        let offset = u64::from_be_bytes(graph[entry + 4..entry + 12].try_into().unwrap());
        let offset = offset as usize;
        at.extend([offset.saturating_sub(1), offset, offset + 1, offset + 4]);
    }
    at.extend((1..40).map(|k| graph.len() * k / 40));
    at.extend([
        graph.len() - 21,
        graph.len() - 20,
        graph.len() - 1,
        graph.len(),
    ]);
    at.retain(|&o| o <= graph.len());
    at
}

/// A repository with the history above and a single commit-graph with changed paths; its
/// commits, and the graph's path.
fn graph_repo(dir: &std::path::Path) -> (Vec<String>, std::path::PathBuf) {
    let commits = history(dir);
    git(
        dir,
        &["commit-graph", "write", "--reachable", "--changed-paths"],
    );
    let graph = dir.join(".git/objects/info/commit-graph");
    assert!(graph.is_file());
    (commits, graph)
}

#[test]
fn truncated_graphs_give_no_filters_or_correct_ones() {
    let dir = TempDir::new("bloom-truncated");
    let (commits, graph) = graph_repo(dir.path());
    let truth = Truth::of(dir.path(), &commits);
    let original = std::fs::read(&graph).unwrap();
    let git_dir = dir.path().join(".git");
    let mut opened = 0;
    for len in interesting_offsets(&original) {
        replace(&graph, &original[..len]);
        if let Some(filters) = BloomFilters::open(&git_dir) {
            opened += 1;
            truth.probe(&filters, true, &format!("truncated to {len}"));
        }
    }
    // only cutting into the trailing checksum leaves every chunk whole
    assert!(opened >= 1, "the whole file opens");
    replace(&graph, &original[..original.len() / 2]);
    assert!(BloomFilters::open(&git_dir).is_none());
    replace(&graph, &original[..6]);
    assert!(BloomFilters::open(&git_dir).is_none());
    replace(&graph, b"");
    assert!(BloomFilters::open(&git_dir).is_none());
}

#[test]
fn garbage_in_graphs_does_not_panic() {
    let dir = TempDir::new("bloom-garbage");
    let (commits, graph) = graph_repo(dir.path());
    let truth = Truth::of(dir.path(), &commits);
    let original = std::fs::read(&graph).unwrap();
    let git_dir = dir.path().join(".git");
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut random = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for at in interesting_offsets(&original) {
        for pattern in 0..3 {
            let mut bytes = original.clone();
            for b in bytes.iter_mut().skip(at).take(8) {
                *b = match pattern {
                    0 => 0xff,
                    1 => 0x00,
                    _ => random() as u8,
                };
            }
            replace(&graph, &bytes);
            if let Some(filters) = BloomFilters::open(&git_dir) {
                truth.probe(&filters, false, &format!("garbage at {at}"));
            }
        }
    }
    // chunk offsets pointing past the end of the file, or backwards
    let chunks = usize::from(original[6]);
    for i in 0..=chunks {
        let entry = 8 + i * 12 + 4;
        for offset in [u64::MAX, original.len() as u64 + 1, 0, 7] {
            let mut bytes = original.clone();
            bytes[entry..entry + 8].copy_from_slice(&offset.to_be_bytes());
            replace(&graph, &bytes);
            if let Some(filters) = BloomFilters::open(&git_dir) {
                truth.probe(&filters, false, &format!("chunk {i} at {offset}"));
            }
        }
    }
    // a whole file of garbage, and one of the right magic with nothing behind it
    let noise: Vec<u8> = (0..original.len()).map(|_| random() as u8).collect();
    replace(&graph, &noise);
    assert!(BloomFilters::open(&git_dir).is_none());
    replace(&graph, b"CGPH\x01\x01\x04\x00");
    assert!(BloomFilters::open(&git_dir).is_none());
}

#[test]
fn corrupt_split_chains_do_not_panic() {
    let dir = TempDir::new("bloom-chain-corrupt");
    let mut commits = history(dir.path());
    let split = [
        "commit-graph",
        "write",
        "--reachable",
        "--changed-paths",
        "--split=no-merge",
    ];
    git(dir.path(), &split);
    write(dir.path(), "late.txt", "late\n");
    commits.insert(
        0,
        commit_all(dir.path(), "late", "2024-02-01T00:00:00+00:00"),
    );
    git(dir.path(), &split);
    let truth = Truth::of(dir.path(), &commits);
    let git_dir = dir.path().join(".git");
    let graphs = git_dir.join("objects/info/commit-graphs");
    let chain_path = graphs.join("commit-graph-chain");
    let chain = std::fs::read(&chain_path).unwrap();
    for len in 0..=chain.len() {
        replace(&chain_path, &chain[..len]);
        if let Some(filters) = BloomFilters::open(&git_dir) {
            truth.probe(&filters, true, &format!("chain cut to {len}"));
        }
    }
    for garbage in [
        &b"\xff\xfe not utf-8\n"[..],
        b"0000000000000000000000000000000000000000\n",
        b"../../../../etc/passwd\n",
        b"\n\n\n",
    ] {
        replace(&chain_path, garbage);
        if let Some(filters) = BloomFilters::open(&git_dir) {
            truth.probe(&filters, true, "garbage chain");
        }
    }
    replace(&chain_path, &chain);
    let layer = std::str::from_utf8(&chain).unwrap().lines().last().unwrap();
    let layer_path = graphs.join(format!("graph-{layer}.graph"));
    let original = std::fs::read(&layer_path).unwrap();
    for len in interesting_offsets(&original) {
        replace(&layer_path, &original[..len]);
        if let Some(filters) = BloomFilters::open(&git_dir) {
            truth.probe(&filters, true, &format!("layer cut to {len}"));
        }
    }
}

#[test]
fn path_logs_are_served_for_repositories_with_corrupt_graphs() {
    let dir = TempDir::new("bloom-serve");
    let work = dir.path().join("work");
    let (_, graph) = graph_repo(&work);
    let original = std::fs::read(&graph).unwrap();
    let mut variants: Vec<(String, Vec<u8>)> = [0, 4, 5, 6, 7, 8, 30, 64]
        .into_iter()
        .chain([original.len() / 3, original.len() / 2, original.len() - 21])
        .map(|len| (format!("cut {len}"), original[..len].to_vec()))
        .collect();
    let mut far = original.clone();
    let chunks = usize::from(original[6]);
    let last = 8 + chunks * 12 + 4;
    far[last..last + 8].copy_from_slice(&u64::MAX.to_be_bytes());
    variants.push(("chunk table past the end".into(), far));
    let mut rc = String::new();
    for (i, (_, bytes)) in variants.iter().enumerate() {
        let served = dir.path().join(format!("r{i}.git"));
        git(
            dir.path(),
            &["clone", "-q", "--bare", "work", served.to_str().unwrap()],
        );
        replace(&served.join("objects/info/commit-graph"), bytes);
        rc.push_str(&format!("repo.url=r{i}\nrepo.path={}\n", served.display()));
    }
    let rc_path = dir.path().join("cgitrc");
    std::fs::write(&rc_path, rc).unwrap();
    let server = Server::start(&rc_path);
    for path in ["a.txt", "dir/b.txt", "dir", "extra"] {
        let expected: Vec<String> = git(
            &work,
            &[
                "-c",
                "core.commitGraph=false",
                "log",
                "--format=%H",
                "main",
                "--",
                path,
            ],
        )
        .lines()
        .map(str::to_string)
        .collect();
        assert!(!expected.is_empty());
        for (i, (what, _)) in variants.iter().enumerate() {
            let r = server.get(&format!("/r{i}/log/{path}"));
            assert_eq!(r.status, 200, "{what}: log of {path}");
            assert_eq!(commit_ids_in(&r.text()), expected, "{what}: log of {path}");
        }
    }
}

/// The commit ids a log page links to, in order.
fn commit_ids_in(html: &str) -> Vec<String> {
    html.split("<a href='")
        .skip(1)
        .filter(|s| s.split('\'').next().is_some_and(|h| h.contains("/commit/")))
        .filter_map(|s| s.split("id=").nth(1).map(|s| s[..40].to_string()))
        .collect()
}
