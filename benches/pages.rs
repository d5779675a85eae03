//! Warm page rendering in-process (no HTTP): the summary and refs pages of a repository with
//! 1,000 annotated tags, built with `git fast-import` in a temporary directory. The ref listing,
//! peeled ids and tag dates come from the resident snapshot, so a warm summary reads no tags.

use cgitd::config::Config;
use cgitd::pages::{self, Site};
use cgitd::request::url;
use criterion::{Criterion, criterion_group, criterion_main};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

const COMMITS: usize = 2_000;
const TAGS: usize = 1_000;

/// A bare repository with a linear history and an annotated tag on every other commit.
fn build_repository(dir: &Path) {
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .current_dir(dir)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .unwrap();
        assert!(status.success());
    };
    git(&["init", "-q", "--bare", "-b", "main"]);
    let mut stream = String::new();
    for i in 0..COMMITS {
        let t = 1_600_000_000 + i * 3600;
        let content = format!("line {i}\n");
        stream.push_str(&format!(
            "commit refs/heads/main\nmark :{}\ncommitter A U Thor <a@example.com> {t} +0000\n\
             data {}\ncommit {i}\nM 100644 inline file{}.txt\ndata {}\n{content}\n",
            i + 1,
            format!("commit {i}").len(),
            i % 50,
            content.len()
        ));
    }
    for n in 0..TAGS {
        let t = 1_600_000_000 + n * 2 * 3600;
        let msg = format!("release {n}");
        stream.push_str(&format!(
            "tag v{n}.0\nfrom :{}\ntagger T Agger <t@example.com> {t} +0000\ndata {}\n{msg}\n",
            n * 2 + 1,
            msg.len()
        ));
    }
    let mut child = Command::new("git")
        .current_dir(dir)
        .args(["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stream.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    git(&["pack-refs", "--all"]);
    git(&["repack", "-adq"]);
}

fn bench_pages(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("cgitd-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    build_repository(&dir);
    let config = Config::from_text(
        &format!(
            "snapshots=tar.gz\nrepo.url=r\nrepo.path={}\n",
            dir.display()
        ),
        "bench",
    );
    let site = Site::new(config);
    for (name, target) in [("summary", "/r/"), ("refs", "/r/refs/"), ("index", "/")] {
        let req = url::parse(&site.config, target, None).unwrap();
        assert_eq!(pages::render(&site, &req).status, 200);
        c.bench_function(name, |b| b.iter(|| pages::render(&site, &req)));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench_pages);
criterion_main!(benches);
