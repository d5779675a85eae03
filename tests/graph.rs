//! The log's commit graph is `git log --graph`'s: compared line by line with git's own drawing
//! on a history of long-lived branches, criss-cross and octopus merges and extra roots, at
//! several offsets, and cell by cell with cgit's log page.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// A bare repository with a tangled history, and the work tree it was made in.
struct Fixture {
    _dir: PathBuf,
    work: PathBuf,
    bare: PathBuf,
}

static TANGLE: LazyLock<Fixture> = LazyLock::new(build_tangle);

fn build_tangle() -> Fixture {
    let dir = shared_dir("graph");
    let work = dir.join("work");
    init_repo(&work);
    let mut when = 1_700_000_000;
    let mut tick = || {
        when += 60;
        when
    };
    let commit = |branch: &str, n: usize, when: i64| {
        if git(&work, &["symbolic-ref", "--short", "HEAD"]).trim() != branch {
            git(&work, &["checkout", "-q", branch]);
        }
        // the long-lived branches also change their own line of a shared file, so that
        // merges of two of them differ from both parents there
        let lane = match branch {
            "main" => Some(0),
            b => b.strip_prefix('b').and_then(|n| n.parse::<usize>().ok()),
        };
        if let Some(lane) = lane.filter(|_| n.is_multiple_of(3)) {
            let shared = work.join("shared.txt");
            let text = std::fs::read_to_string(&shared).unwrap();
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            lines[lane * 10] = format!("{branch} {n}");
            std::fs::write(&shared, lines.join("\n") + "\n").unwrap();
        }
        let file = work.join(format!("{branch}.txt"));
        let mut text = std::fs::read_to_string(&file).unwrap_or_default();
        text.push_str(&format!("{n}\n"));
        std::fs::write(&file, text).unwrap();
        git(&work, &["add", "-A"]);
        let subject = format!("{branch} {n}");
        let mut args = vec!["commit", "-q", "-m", &subject];
        if n.is_multiple_of(4) {
            args.extend(["-m", "A body\nof two lines", "-m", "and a paragraph"]);
        }
        git_dated(&work, &args, when, None);
    };
    let merge = |into: &str, from: &[&str], when: i64| {
        git(&work, &["checkout", "-q", into]);
        let mut args = vec!["merge", "-q", "--no-ff", "--allow-unrelated-histories"];
        let msg = format!("merge {} into {into}", from.join(" "));
        args.extend(["-m", &msg]);
        args.extend(from);
        let out = git_command_at(&work, &args, &format!("@{when} +0000"))
            .output()
            .unwrap();
        if !out.status.success() {
            // an octopus cannot merge the shared file's changes: merge one branch only
            assert!(from.len() > 1, "{}", String::from_utf8_lossy(&out.stderr));
            git(&work, &["reset", "-q", "--hard"]);
            let msg = format!("merge {} into {into}", from[0]);
            let merge = ["merge", "-q", "--no-ff", "-m", &msg, from[0]];
            git_dated(&work, &merge, when, None);
        }
    };
    write(&work, "main.txt", "0\n");
    let shared: String = (0..50).map(|i| format!("s{i}\n")).collect();
    write(&work, "shared.txt", shared);
    git(&work, &["add", "-A"]);
    git_dated(&work, &["commit", "-q", "-m", "main 0"], tick(), None);
    let branches = ["main", "b1", "b2", "b3", "b4"];
    for b in &branches[1..] {
        git(&work, &["branch", b]);
    }
    let mut seed: u64 = 7;
    let mut rand = move |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    for n in 1..140 {
        let pick = |r: u64| branches[r as usize];
        match rand(12) {
            0 | 1 => {
                let (a, b) = (pick(rand(5)), pick(rand(5)));
                if a != b {
                    merge(a, &[b], tick());
                }
            }
            2 => {
                // criss-cross: each of two branches merges the other
                let (a, b) = (pick(rand(5)), pick(rand(5)));
                if a != b {
                    let (ta, tb) = (
                        git(&work, &["rev-parse", a]).trim().to_string(),
                        git(&work, &["rev-parse", b]).trim().to_string(),
                    );
                    merge(a, &[&tb], tick());
                    merge(b, &[&ta], tick());
                }
            }
            3 => {
                let into = pick(rand(5));
                let mut from: Vec<&str> = branches
                    .iter()
                    .copied()
                    .filter(|b| *b != into && rand(2) == 0)
                    .collect();
                from.truncate(3);
                if from.len() >= 2 {
                    merge(into, &from, tick());
                } else {
                    commit(into, n, tick());
                }
            }
            4 if n.is_multiple_of(3) => {
                // a new root, merged in later
                let root = format!("root{n}");
                git(&work, &["checkout", "-q", "--orphan", &root]);
                git(&work, &["rm", "-rqf", "."]);
                commit(&root, n, tick());
                commit(&root, n + 1, tick());
                merge(pick(rand(5)), &[&root], tick());
            }
            _ => commit(pick(rand(5)), n, tick()),
        }
    }
    // every branch ends up in main, which has an octopus on top
    merge("main", &["b1", "b2", "b3"], tick());
    merge("main", &["b4"], tick());
    let bare = dir.join("tangle.git");
    git(
        &dir,
        &["clone", "-q", "--bare", "work", bare.to_str().unwrap()],
    );
    Fixture {
        _dir: dir,
        work,
        bare,
    }
}

/// git's drawing: (graph, commit id on that line or "") per line, trailing spaces cut.
fn git_graph(work: &Path, args: &[&str]) -> Vec<(String, String)> {
    let mut all = vec!["log", "--graph", "--format=%H"];
    all.extend(args);
    git(work, &all)
        .lines()
        .map(|l| match l.find(|c: char| c.is_ascii_hexdigit()) {
            Some(i) if l.len() - i == 40 => (l[..i].trim_end().to_string(), l[i..].to_string()),
            _ => (l.trim_end().to_string(), String::new()),
        })
        .collect()
}

fn strip_tags(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for ch in html.chars() {
        match ch {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// The log page's drawing, in git's form: every graph line, with the commit id on a commit's
/// own line.
fn page_graph(html: &str) -> Vec<(String, String)> {
    let table = between(html, "<table class='list nowrap'>", "</table>");
    let mut lines = Vec::new();
    for row in table.split("<tr").skip(2) {
        let Some(cell) = row.split_once("<td class='commitgraph'>") else {
            continue;
        };
        let (cell, rest) = cell.1.split_once("</td>").unwrap();
        let text = strip_tags(cell);
        if row.starts_with('>') || row.starts_with(" class='logheader'") {
            let id = rest
                .split_once("id=")
                .map(|(_, r)| r[..40].to_string())
                .expect("a commit row links its commit");
            lines.push((text.trim_end().to_string(), id));
        } else {
            lines.extend(
                text.split('\n')
                    .map(|l| (l.trim_end().to_string(), String::new())),
            );
        }
    }
    lines
}

fn show(lines: &[(String, String)]) -> String {
    lines
        .iter()
        .map(|(g, id)| format!("{g} {}", id.get(..7).unwrap_or("")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The graph cells and the rows they stand in, nothing else of a log page.
fn graph_cells(html: &str) -> String {
    let table = between(html, "<table class='list nowrap'>", "</table>");
    table
        .split("<tr")
        .skip(2)
        .map(|row| {
            let tr = &row[..row.find('>').unwrap()];
            let cell = row
                .split_once("<td class='commitgraph'>")
                .and_then(|(_, c)| c.split_once("</td>"))
                .map_or("", |(c, _)| c);
            if tr == " class='nohover'" {
                // a filler row whole; cgit closes its empty cell as `<td … />`
                format!("<tr{}", row.replace("' />", "'></td>"))
            } else {
                format!("<tr{tr}>{cell}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn site(count: usize) -> (TempDir, PathBuf) {
    let dir = TempDir::new("graph-site");
    let rc = dir.path().join("cgitrc");
    std::fs::write(
        &rc,
        format!(
            "virtual-root=/\nmax-commit-count={count}\n\
             repo.url=t\nrepo.path={}\nrepo.enable-commit-graph=1\n",
            TANGLE.bare.display()
        ),
    )
    .unwrap();
    (dir, rc)
}

#[test]
fn the_whole_graph_is_gits() {
    let (_dir, rc) = site(10_000);
    let server = Server::start(&rc);
    let ours = page_graph(&server.page("/t/log/"));
    let theirs = git_graph(&TANGLE.work, &["main"]);
    assert!(
        theirs.iter().any(|(g, _)| g.contains("-.")),
        "the fixture has an octopus merge"
    );
    assert!(theirs.iter().any(|(g, _)| g.contains('_')));
    assert_eq!(
        show(&ours),
        show(&theirs),
        "- cgitd, + git:\n{}",
        line_diff(&show(&ours), &show(&theirs))
    );
}

#[test]
fn pages_continue_gits_graph() {
    let (_dir, rc) = site(25);
    let server = Server::start(&rc);
    let theirs = git_graph(&TANGLE.work, &["main"]);
    let commits = theirs.iter().filter(|(_, id)| !id.is_empty()).count();
    for ofs in [25, 50, 100, commits - 10] {
        let ours = page_graph(&server.page(&format!("/t/log/?ofs={ofs}")));
        assert_eq!(
            ours[0].0, "...",
            "a page after the first starts with a skip line"
        );
        // from the first commit's line on, the page draws what git draws
        let first = ours.iter().position(|(_, id)| !id.is_empty()).unwrap();
        let start = theirs
            .iter()
            .position(|(_, id)| *id == ours[first].1)
            .expect("the page's first commit is in git's log");
        let ours = &ours[first + 1..];
        let theirs = &theirs[start + 1..(start + 1 + ours.len()).min(theirs.len())];
        assert_eq!(
            show(ours),
            show(theirs),
            "ofs={ofs}, - cgitd, + git:\n{}",
            line_diff(&show(ours), &show(theirs))
        );
    }
}

#[test]
fn graph_cells_are_cgits() {
    let (_dir, rc) = site(25);
    let server = Server::start(&rc);
    for url in [
        "/t/log/",
        "/t/log/?ofs=25",
        "/t/log/?ofs=125",
        "/t/log/?showmsg=1",
        "/t/log/?ofs=50&showmsg=1",
        "/t/log/?h=b2",
        "/t/log/?qt=range&q=b1..main",
        "/t/log/?qt=range&q=b3..b2&ofs=25",
    ] {
        assert_like_cgit_by(&server, &rc, url, graph_cells);
    }
}

#[test]
fn path_limited_graphs_are_gits() {
    let (_dir, rc) = site(10_000);
    let server = Server::start(&rc);
    let mut merges = 0;
    for path in ["shared.txt", "b1.txt", "main.txt", "b2.txt", "b4.txt"] {
        let ours = page_graph(&server.page(&format!("/t/log/{path}")));
        let theirs = git_graph(&TANGLE.work, &["main", "--", path]);
        merges += theirs.iter().filter(|(g, _)| g.contains('\\')).count();
        assert!(theirs.len() > 3, "{path} has a history");
        assert_eq!(
            show(&ours),
            show(&theirs),
            "{path}: - cgitd, + git:\n{}",
            line_diff(&show(&ours), &show(&theirs))
        );
    }
    assert!(
        merges > 0,
        "some merges change the paths: their parents are rewritten"
    );
}

#[test]
fn path_limited_graph_cells_are_cgits() {
    let (_dir, rc) = site(25);
    let server = Server::start(&rc);
    for url in [
        "/t/log/shared.txt",
        "/t/log/shared.txt?ofs=25",
        "/t/log/b2.txt",
    ] {
        assert_like_cgit_by(&server, &rc, url, graph_cells);
    }
}

#[test]
fn range_and_search_graphs_are_cgits_on_short_pages() {
    // lines to parents past the page's end go on; no line goes to a hidden parent or to
    // one the search does not find
    let (_dir, rc) = site(5);
    let server = Server::start(&rc);
    for url in [
        "/t/log/?qt=range&q=b1..main",
        "/t/log/?qt=range&q=b1..main&ofs=5",
        "/t/log/?qt=range&q=b3..b2&ofs=10",
        "/t/log/?qt=range&q=main~20..main",
        "/t/log/?qt=grep&q=merge",
        "/t/log/?qt=grep&q=b2&ofs=5",
    ] {
        assert_like_cgit_by(&server, &rc, url, graph_cells);
    }
}

#[test]
fn date_ordered_graphs_are_gits() {
    let dir = TempDir::new("graph-date");
    let rc = dir.path().join("cgitrc");
    std::fs::write(
        &rc,
        format!(
            "virtual-root=/\nmax-commit-count=10000\ncommit-sort=date\n\
             repo.url=t\nrepo.path={}\nrepo.enable-commit-graph=1\n",
            TANGLE.bare.display()
        ),
    )
    .unwrap();
    let server = Server::start(&rc);
    let mut differs = false;
    for path in ["", "shared.txt", "b2.txt"] {
        let ours = page_graph(&server.page(&format!("/t/log/{path}")));
        let mut args = vec!["--date-order", "main"];
        if !path.is_empty() {
            args.extend(["--", path]);
        }
        let theirs = git_graph(&TANGLE.work, &args);
        differs |= theirs != git_graph(&TANGLE.work, &args[1..]);
        assert_eq!(
            show(&ours),
            show(&theirs),
            "{path}: - cgitd, + git:\n{}",
            line_diff(&show(&ours), &show(&theirs))
        );
    }
    assert!(differs, "the date order is not the topological one here");
}
