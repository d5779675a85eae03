//! A diff over the page's render budget is cut, but its diffstat still tells the truth: every
//! file's counts and the totals are git's (`git diff --numstat`, `--shortstat`), and the note
//! says how many files the diff below leaves out.

mod common;

use common::*;
use std::path::PathBuf;
use std::sync::LazyLock;

struct Fixture {
    _dir: PathBuf,
    work: PathBuf,
    rc: PathBuf,
    old: String,
    new: String,
}

static BIG: LazyLock<Fixture> = LazyLock::new(|| {
    let dir = shared_dir("diffstat");
    let work = dir.join("work");
    init_repo(&work);
    let lines =
        |tag: &str, n: usize| -> String { (0..n).map(|i| format!("{tag} {i}\n")).collect() };
    for f in 0..30 {
        write(&work, &format!("f{f:02}.txt"), lines("line", 500 + f));
    }
    write(&work, "gone.txt", lines("gone", 40));
    write(&work, "pic.bin", b"\0\x01\x02binary\n");
    write(&work, "zz.txt", "small\n");
    let old = commit_all(&work, "Base", "2024-01-01T00:00:00+00:00");
    for f in 0..30 {
        // every other line changed: 2 × 250 changed lines a file, 15,000 over the budget's
        // 10,000 hunk lines
        let text: String = (0..500 + f)
            .map(|i| {
                if i % 2 == 0 {
                    format!("changed {i}\n")
                } else {
                    format!("line {i}\n")
                }
            })
            .collect();
        write(&work, &format!("f{f:02}.txt"), text);
    }
    std::fs::remove_file(work.join("gone.txt")).unwrap();
    write(&work, "new.txt", lines("new", 3000));
    write(&work, "pic.bin", b"\0\x01\x02other binary\n");
    write(&work, "zz.txt", "small\nand one more\n");
    let new = commit_all(&work, "Change a lot", "2024-01-02T00:00:00+00:00");
    let git_dir = work.join(".git");
    let rc = dir.join("cgitrc");
    std::fs::write(
        &rc,
        format!(
            "virtual-root=/\nrepo.url=r\nrepo.path={}\n",
            git_dir.display()
        ),
    )
    .unwrap();
    Fixture {
        _dir: dir,
        work,
        rc,
        old,
        new,
    }
});

/// The diffstat's per-file counts, in order (`bin` for binary files).
fn row_counts(html: &str) -> Vec<String> {
    between(
        html,
        "<table summary='diffstat'",
        "<div class='diffstat-summary'>",
    )
    .split("<td class='right'>")
    .skip(1)
    .map(|r| r[..r.find("</td>").unwrap()].to_string())
    .collect()
}

#[test]
fn a_cut_diff_counts_every_line() {
    let f = &*BIG;
    let server = Server::start(&f.rc);
    for url in [
        format!("/r/diff/?id={}&id2={}", f.new, f.old),
        format!("/r/commit/?id={}", f.new),
        format!("/r/diff/?id={}&id2={}&dt=2", f.new, f.old),
    ] {
        let html = server.page(&url);
        assert!(
            html.contains("(diff too large to show)") || url.contains("dt=2"),
            "the fixture is over the render budget: {url}"
        );
        let shortstat = git(&f.work, &["diff", "--shortstat", &f.old, &f.new]);
        // " 34 files changed, 10754 insertions(+), 7585 deletions(-)"
        let numbers: Vec<&str> = shortstat
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .collect();
        let summary = between(&html, "<div class='diffstat-summary'>", "</div>");
        assert!(
            summary.starts_with(&format!(
                "<div class='diffstat-summary'>{} files changed, {} insertions, {} deletions",
                numbers[0], numbers[1], numbers[2]
            )),
            "{url}: {summary} vs git's {shortstat}"
        );
        let not_shown = html.matches("(diff too large to show)").count();
        if not_shown > 0 {
            assert!(
                summary.ends_with(&format!("(diff too large: {not_shown} files not shown)")),
                "{summary}"
            );
        }
        let numstat: Vec<String> = git(&f.work, &["diff", "--numstat", &f.old, &f.new])
            .lines()
            .map(|l| {
                let mut parts = l.split('\t');
                match (parts.next().unwrap(), parts.next().unwrap()) {
                    ("-", "-") => "bin".to_string(),
                    (a, d) => {
                        (a.parse::<usize>().unwrap() + d.parse::<usize>().unwrap()).to_string()
                    }
                }
            })
            .collect();
        assert_eq!(row_counts(&html), numstat, "{url}: no file is left as `?`");
    }
}

#[test]
fn past_the_counting_budget_files_are_left_uncounted() {
    use cgitd::git::diff::{self, DiffOptions, Limits};
    let f = &*BIG;
    let repo = gix::open(f.work.join(".git")).unwrap();
    let id = |hex: &str| gix::ObjectId::from_hex(hex.as_bytes()).unwrap();
    // room to render one file and to count about three more
    let limits = Limits {
        max_lines: 600,
        max_bytes: 12_000,
        count_bytes: 30_000,
    };
    let tree = diff::diff_commits(
        &cgitd::git::Repo::new(&repo, None),
        Some(id(&f.old)),
        id(&f.new),
        &DiffOptions::default(),
        None,
        limits,
    )
    .unwrap();
    let numstat: Vec<(usize, usize)> = git(&f.work, &["diff", "--numstat", &f.old, &f.new])
        .lines()
        .map(|l| {
            let mut parts = l.split('\t').map(|n| n.parse().unwrap_or(0));
            (parts.next().unwrap(), parts.next().unwrap())
        })
        .collect();
    assert_eq!(tree.files.len(), numstat.len());
    let counted = tree.files.iter().filter(|f| f.counted).count();
    assert!(
        tree.not_shown() > 0 && tree.uncounted() > 0,
        "both budgets run out"
    );
    assert!(
        counted > tree.files.len() - tree.not_shown(),
        "some cut files are counted"
    );
    for (file, (ins, del)) in tree.files.iter().zip(numstat) {
        if file.counted {
            assert_eq!((file.insertions, file.deletions), (ins, del));
        } else {
            assert_eq!((file.insertions, file.deletions), (0, 0));
        }
    }
}
