//! Line diffs of real blob pairs in-process: the largest text file modified in the last 2,000
//! non-merge commits (in git.git a translation's `.po` of a megabyte: commits changing those are
//! the pages a crawler finds slowest) and the latest C file of 30–120 KB modified (most commits
//! change files like it). The repository is `$CGITD_BENCH_REPO` (e.g. a git.git clone), else the
//! repository the bench runs in.
//!
//! `CGITD_BENCH_REPO=/path/to/git.git cargo bench --bench lines`

use cgitd::git::diff::lines::diff_text;
use cgitd::git::tree::is_binary;
use criterion::{Criterion, criterion_group, criterion_main};
use std::process::Command;

fn git(repo: &str, args: &[&str]) -> Vec<u8> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?} failed");
    out.stdout
}

/// (old blob, new blob, path, new size) of a file modified in place.
type Modification = (String, String, String, usize);

/// Every in-place modification in the last 2,000 non-merge commits.
fn modifications(repo: &str) -> Vec<Modification> {
    let raw = git(
        repo,
        &[
            "log",
            "--no-merges",
            "--raw",
            "--no-abbrev",
            "--format=",
            "-n",
            "2000",
        ],
    );
    let mut pairs: Vec<(String, String, String)> = String::from_utf8_lossy(&raw)
        .lines()
        .filter_map(|line| {
            let (meta, path) = line.split_once('\t')?;
            let fields: Vec<&str> = meta.split(' ').collect();
            (fields.len() == 5 && fields[4] == "M").then(|| {
                (
                    fields[2].to_string(),
                    fields[3].to_string(),
                    path.to_string(),
                )
            })
        })
        .collect();
    pairs.sort();
    pairs.dedup();
    let input: String = pairs.iter().map(|(_, new, _)| format!("{new}\n")).collect();
    let sizes = Command::new("git")
        .args(["-C", repo, "cat-file", "--batch-check=%(objectsize)"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(input.as_bytes())?;
            child.wait_with_output()
        })
        .expect("git cat-file runs");
    String::from_utf8_lossy(&sizes.stdout)
        .lines()
        .zip(pairs)
        .filter_map(|(size, (old, new, path))| Some((old, new, path, size.parse().ok()?)))
        .collect()
}

/// Both sides of a modification, if both are text by git's rule (no NUL in the first 8,000
/// bytes).
fn text_pair(repo: &str, (old, new, _, _): &Modification) -> Option<(Vec<u8>, Vec<u8>)> {
    let old = git(repo, &["cat-file", "blob", old]);
    let new = git(repo, &["cat-file", "blob", new]);
    (!is_binary(&old) && !is_binary(&new)).then_some((old, new))
}

fn bench_lines(c: &mut Criterion) {
    let repo = std::env::var("CGITD_BENCH_REPO").unwrap_or_else(|_| ".".into());
    let mut changed = modifications(&repo);
    changed.sort_by_key(|&(_, _, _, size)| std::cmp::Reverse(size));
    let largest = changed
        .iter()
        .find_map(|m| Some((m, text_pair(&repo, m)?)))
        .expect("a modified text file in the history");
    let typical = changed
        .iter()
        .filter(|(_, _, path, size)| path.ends_with(".c") && (30_000..120_000).contains(size))
        .find_map(|m| Some((m, text_pair(&repo, m)?)))
        .unwrap_or_else(|| largest.clone());
    for (name, ((_, _, path, size), (old, new))) in [("largest", largest), ("source", typical)] {
        let label = format!("diff_text {name} ({path}, {size} bytes)");
        c.bench_function(&label, |b| {
            b.iter(|| diff_text(&old, &new, 3, false, 10_000).map(|d| d.hunks.len()))
        });
    }
}

criterion_group!(benches, bench_lines);
criterion_main!(benches);
