//! Finding object ids in a pack index: gix's bisection against interpolation
//! (`cgitd::git::pack_index`), for 10,000 ids spread over the largest pack of the repository
//! `$CGITD_BENCH_REPO` (e.g. a git.git clone), else of the repository the bench runs in.
//!
//! `CGITD_BENCH_REPO=/path/to/git.git cargo bench --bench pack_index`

use cgitd::git::pack_index::{Fan, lookup};
use criterion::{Criterion, criterion_group, criterion_main};
use gix::odb::pack::index;
use std::hint::black_box;
use std::path::PathBuf;
use std::process::Command;

/// The largest pack index of the repository.
fn largest_index(repo: &str) -> index::File {
    let out = Command::new("git")
        .args([
            "-C",
            repo,
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
        ])
        .arg("objects/pack")
        .output()
        .expect("git runs");
    let dir = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    let path = std::fs::read_dir(&dir)
        .expect("a pack directory")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "idx"))
        .max_by_key(|p| p.metadata().map(|m| m.len()).unwrap_or(0))
        .expect("a pack");
    index::File::at(path, gix::hash::Kind::Sha1).unwrap()
}

fn bench(c: &mut Criterion) {
    let repo = std::env::var("CGITD_BENCH_REPO").unwrap_or_else(|_| ".".into());
    let index = largest_index(&repo);
    let fan = Fan::of(&index);
    let step = (index.num_objects() / 10_000).max(1);
    // Spread over the index, visited in an order unrelated to it.
    let mut ids: Vec<gix::ObjectId> = (0..index.num_objects())
        .step_by(step as usize)
        .map(|i| index.oid_at_index(i).to_owned())
        .collect();
    ids.sort_by_key(|id| id.as_bytes()[19]);
    eprintln!(
        "{} objects, {} ids looked up",
        index.num_objects(),
        ids.len()
    );
    c.bench_function("bisection (gix)", |b| {
        b.iter(|| {
            ids.iter()
                .filter_map(|id| index.lookup(black_box(id)))
                .count()
        })
    });
    c.bench_function("interpolation", |b| {
        b.iter(|| {
            ids.iter()
                .filter_map(|id| lookup(&index, &fan, black_box(id)))
                .count()
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
