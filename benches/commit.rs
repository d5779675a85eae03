//! Commit pages of a real repository in-process (no HTTP): one small commit with its diff
//! fragment cached (the warm case), its patch, and a crawler's sequence of distinct commits
//! with the fragment cache off (every diff computed). The repository is `$CGITD_BENCH_REPO` (e.g. a
//! git.git clone), else the repository the bench runs in.
//!
//! `CGITD_BENCH_REPO=/path/to/git.git cargo bench --bench commit`

use cgitd::config::Config;
use cgitd::pages::{self, Site};
use cgitd::request::url;
use criterion::{Criterion, criterion_group, criterion_main};
use std::process::Command;

/// Commits with a diff of 20–40 changed lines, newest first.
fn small_commits(repo: &str, count: usize) -> Vec<String> {
    let out = Command::new("git")
        .args([
            "-C",
            repo,
            "log",
            "--no-merges",
            "--format=@%H",
            "--shortstat",
            "-n",
            "5000",
        ])
        .output()
        .expect("git runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut commits = Vec::new();
    let mut current = None;
    for line in text.lines() {
        if let Some(id) = line.strip_prefix('@') {
            current = Some(id.to_string());
        } else if line.contains("changed") {
            let changed: usize = line
                .split(',')
                .skip(1)
                .filter_map(|part| part.split_whitespace().next()?.parse::<usize>().ok())
                .sum();
            if (20..=40).contains(&changed)
                && let Some(id) = current.take()
            {
                commits.push(id);
            }
        }
    }
    commits.truncate(count);
    commits
}

fn site(repo: &str, fragment_cache: usize) -> Site {
    let text = format!("fragment-cache-size={fragment_cache}\nrepo.url=r\nrepo.path={repo}\n");
    Site::new(Config::from_text(&text, "bench"))
}

fn bench_commit(c: &mut Criterion) {
    let repo = std::env::var("CGITD_BENCH_REPO").unwrap_or_else(|_| ".".into());
    let commits = small_commits(&repo, 2_000);
    assert!(
        !commits.is_empty(),
        "no commits with a ~30-line diff in {repo}"
    );
    let render = |site: &Site, id: &str| {
        let req = url::parse(&site.config, "/r/commit/", Some(&format!("id={id}"))).unwrap();
        let page = pages::render(site, &req);
        assert_eq!(page.status, 200);
        page
    };

    let warm = site(&repo, 64 << 20);
    render(&warm, &commits[0]);
    c.bench_function("commit (diff cached)", |b| {
        b.iter(|| render(&warm, &commits[0]))
    });

    let patch = |site: &Site, id: &str| {
        let req = url::parse(&site.config, "/r/patch/", Some(&format!("id={id}"))).unwrap();
        assert_eq!(pages::render(site, &req).status, 200);
    };
    c.bench_function("patch", |b| b.iter(|| patch(&warm, &commits[0])));

    let cold = site(&repo, 0);
    let mut next = commits.iter().cycle();
    c.bench_function("commit (diff computed)", |b| {
        b.iter(|| render(&cold, next.next().expect("cycle")))
    });
}

criterion_group!(benches, bench_commit);
criterion_main!(benches);
