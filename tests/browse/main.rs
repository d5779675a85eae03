//! History and file pages (log, tree, blob, plain, tag, about) on small generated repositories:
//! content, links (compared with the real cgit), statuses, and the
//! path-limited walk compared with `git log -- <path>`.

mod about;
#[path = "../common/mod.rs"]
mod common;
mod tree;

use common::*;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// A non-UTF-8 file name (latin-1 "café.txt").
const LATIN1_NAME: &[u8] = b"caf\xe9.txt";

/// A cgitrc of its own (in `dir`, the server's working directory) over the repositories in
/// `root`: the shared ones, or a test's own copy of them.
struct Site {
    dir: TempDir,
    root: PathBuf,
    rc: PathBuf,
    work: PathBuf,
    _copy: Option<TempDir>,
}

/// Replaces HEAD's message with raw bytes (git itself re-encodes latin-1 messages on commit).
fn set_raw_message(dir: &Path, message: &[u8]) {
    let raw = git_bytes(dir, &["cat-file", "commit", "HEAD"]);
    let header_end = raw.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
    let mut object = raw[..header_end].to_vec();
    object.extend_from_slice(message);
    std::fs::write(dir.join(".git/RAW"), &object).unwrap();
    let id = git(dir, &["hash-object", "-w", "-t", "commit", ".git/RAW"]);
    git(dir, &["update-ref", "HEAD", id.trim()]);
}

fn merge(dir: &Path, args: &[&str], date: &str) {
    git_at(dir, &[&["merge", "-q", "--no-ff"], args].concat(), date);
}

/// A history with a merge TREESAME to one parent (`-s ours`), a real merge, a rename, tags, a
/// symlink, binary and executable files, a single-child directory chain, a non-UTF-8 path and
/// message, and (last) a submodule gitlink: `work`, and bare clones of it with and without a
/// commit-graph, plus an empty repository. Built once, read by every test.
static REPOS: LazyLock<PathBuf> = LazyLock::new(|| {
    let root = shared_dir("browse");
    build_repos(&root);
    root
});

fn build_repos(root: &Path) {
    let work = root.join("work");
    init_repo(&work);
    write(
        &work,
        "README.md",
        "# Hello\n\nSee [docs](docs/guide.md).\n",
    );
    write(
        &work,
        "src/main.rs",
        "fn main() {\n    println!(\"<hi> & bye\");\n}\n",
    );
    write(&work, "f.txt", "one\n");
    write(&work, "a/b/c/deep.txt", "deep\n");
    commit_all(&work, "Initial commit", "2024-01-01T10:00:00+00:00");
    git(
        &work,
        &["tag", "-a", "v1.0", "-m", "Version 1.0\n\nFirst <release>."],
    );
    git(&work, &["checkout", "-q", "-b", "side"]);
    write(&work, "f.txt", "side change\n");
    commit_all(&work, "Side changes f", "2024-01-02T10:00:00+00:00");
    write(&work, "g.txt", "g from side\n");
    commit_all(&work, "Side adds g", "2024-01-03T10:00:00+00:00");
    git(&work, &["checkout", "-q", "main"]);
    write(
        &work,
        "src/main.rs",
        "fn main() {\n    println!(\"changed\");\n}\n",
    );
    commit_all(&work, "Change main", "2024-01-04T10:00:00+00:00");
    // keeps main's f.txt and drops side's g.txt: TREESAME to the first parent
    merge(
        &work,
        &["-s", "ours", "-m", "Merge side (ours)", "side"],
        "2024-01-05T10:00:00+00:00",
    );
    git(&work, &["checkout", "-q", "side"]);
    write(&work, "h.txt", "h from side\n");
    commit_all(&work, "Side adds h", "2024-01-06T10:00:00+00:00");
    git(&work, &["checkout", "-q", "main"]);
    write(&work, "f.txt", "main change\n");
    commit_all(&work, "Main changes f", "2024-01-07T10:00:00+00:00");
    merge(
        &work,
        &["-m", "Merge side", "side"],
        "2024-01-08T10:00:00+00:00",
    );
    git(&work, &["mv", "src/main.rs", "src/app.rs"]);
    commit_all(&work, "Rename main to app", "2024-01-09T10:00:00+00:00");
    git(&work, &["tag", "light"]);
    write(&work, "bin.dat", b"\x00\x01binary<&>\xff".as_slice());
    write(&work, "run.sh", "#!/bin/sh\necho run\n");
    std::os::unix::fs::symlink("src/app.rs", work.join("link")).unwrap();
    std::fs::write(
        work.join(std::ffi::OsStr::from_bytes(LATIN1_NAME)),
        "latin\n",
    )
    .unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["update-index", "--chmod=+x", "run.sh"]);
    commit_staged(&work, b"Add files", "2024-01-10T10:00:00+00:00");
    set_raw_message(&work, b"Add files: caf\xe9 <b>\n");
    let first = git(&work, &["rev-list", "--max-parents=0", "HEAD"])
        .trim()
        .to_string();
    git(
        &work,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{first},sub"),
        ],
    );
    commit_staged(&work, b"Add submodule", "2024-01-11T10:00:00+00:00");
    git(root, &["clone", "-q", "--bare", "work", "plain.git"]);
    git(root, &["clone", "-q", "--bare", "work", "graph.git"]);
    git(
        &root.join("graph.git"),
        &["commit-graph", "write", "--reachable", "--changed-paths"],
    );
    git(root, &["init", "-q", "--bare", "empty.git"]);
}

/// The shared repositories served with `extra_rc` (where `{root}` names their directory).
fn build_site(extra_rc: &str) -> Site {
    site_over(REPOS.clone(), None, extra_rc)
}

/// A private copy of the repositories, for a test that writes objects into them.
fn build_private_site(extra_rc: &str) -> Site {
    let copy = copy_of(&REPOS, "browse-copy");
    site_over(copy.path().to_path_buf(), Some(copy), extra_rc)
}

fn site_over(root: PathBuf, copy: Option<TempDir>, extra_rc: &str) -> Site {
    let dir = TempDir::new("browse");
    let work = root.join("work");
    let rc = dir.path().join("cgitrc");
    let text = format!(
        "virtual-root=/\nsnapshots=tar.gz\nenable-log-filecount=1\nenable-log-linecount=1\n\
         enable-blame=1\nmax-commit-count=4\n{extra_rc}\n\
         repo.url=r\nrepo.path={root}/plain.git\n\n\
         repo.url=g\nrepo.path={root}/graph.git\nrepo.enable-commit-graph=1\n\n\
         repo.url=empty\nrepo.path={root}/empty.git\n",
        root = root.display(),
        extra_rc = extra_rc.replace("{root}", &root.display().to_string()),
    );
    std::fs::write(&rc, text).unwrap();
    Site {
        dir,
        root,
        rc,
        work,
        _copy: copy,
    }
}

/// The hrefs inside `div.content`, one a line.
fn content_links(html: &str) -> String {
    let start = html.find("<div class='content'>").expect("content div");
    let end = html.rfind("<!-- class=content -->").unwrap_or(html.len());
    hrefs(&html[start..end])
        .into_iter()
        // cgit gives the submodule `sub` a blame button (a 404); cgitd does not
        .filter(|h| h.split('?').next() != Some("/r/blame/sub"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Each of `urls` is a page (200) whose links are cgit's.
fn assert_links_match_cgit(site: &Site, server: &Server, urls: &[&str]) {
    for url in urls {
        server.page(url);
        assert_like_cgit_by(server, &site.rc, url, content_links);
    }
}

/// The commits listed by a log page (subject links, not decorations).
fn commit_ids_in(html: &str) -> Vec<String> {
    html.split("<a href='")
        .skip(1)
        .filter(|s| s.split('\'').next().is_some_and(|h| h.contains("/commit/")))
        .filter_map(|s| s.split("id=").nth(1).map(|s| s[..40].to_string()))
        .collect()
}

#[test]
fn log_pages_show_history_with_paging_and_counts() {
    let site = build_site("");
    let server = Server::start(&site.rc);
    let r = server.get("/r/log/");
    assert_eq!(r.status, 200);
    let html = r.text();
    assert!(html.contains("<table class='list nowrap'>"));
    assert!(html.contains("<th class='left'>Files</th><th class='left'>Lines</th>"));
    assert!(html.contains(">Add submodule</a>"));
    assert!(html.contains("<a class='branch-deco' href='/r/log/'>main</a>"));
    assert!(
        html.contains("Add files: caf\u{fffd} &lt;b&gt;"),
        "non-UTF-8 message escaped"
    );
    assert!(html.contains("<ul class='pager'><li><a href='/r/log/?ofs=4'>[next]</a></li></ul>"));
    assert!(
        html.contains("<td>4</td><td><span class='deletions'>-0</span>/<span class='insertions'>+4</span></td>"),
        "Files/Lines of the commit adding four files (binary counts no lines)"
    );
    assert!(
        html.contains("<td>2</td><td><span class='deletions'>-3</span>/<span class='insertions'>+3</span></td>"),
        "a rename without rename detection: one file deleted, one added"
    );
    let page2 = server.page("/r/log/?ofs=4");
    assert!(page2.contains("<li><a href='/r/log/'>[prev]</a></li>"));
    assert!(html.contains("<a class='tag-deco' href='/r/tag/?h=light'>light</a>"));
    let last = server.page("/r/log/?ofs=8");
    assert!(last.contains(">Initial commit</a>"));
    assert!(last.contains("class='tag-annotated-deco' href='/r/tag/?h=v1.0'"));
    assert!(!last.contains("[next]"));
    let all: Vec<String> = [0, 4, 8]
        .iter()
        .flat_map(|ofs| commit_ids_in(&server.page(&format!("/r/log/?ofs={ofs}"))))
        .collect();
    let expected: Vec<String> = git(&site.work, &["log", "--format=%H"])
        .lines()
        .map(str::to_string)
        .collect();
    let mut dedup = all.clone();
    dedup.dedup();
    assert_eq!(
        dedup, expected,
        "pages walk the whole history in git's order"
    );

    let expanded = server.page("/r/log/?showmsg=1");
    assert!(expanded.contains("<tr class='logheader'>"));
    assert!(expanded.contains("<td class='logsubject'>"));
    assert!(expanded.contains("class='logmsg'"));
    assert!(expanded.contains(">Collapse</a>"));

    let path_log = server.page("/r/log/src");
    assert!(path_log.contains(
        "<div class='path'>path: <a href='/r/log/'>root</a>/<a href='/r/log/src'>src</a></div>"
    ));
    assert!(path_log.contains("href='/r/commit/src?id="));
    assert!(!path_log.contains(">Add submodule<"));

    assert_links_match_cgit(
        &site,
        &server,
        &[
            "/r/log/",
            "/r/log/?ofs=4",
            "/r/log/src",
            "/r/log/f.txt",
            "/r/log/?h=side",
            "/r/log/?qt=grep&q=side",
            "/r/log/src?showmsg=1&ofs=1",
            "/r/log/?id=v1.0",
            "/r/log/?qt=range&q=v1.0..side",
            "/r/log/f.txt?h=side&ofs=1",
            "/g/log/",
            "/g/log/?ofs=4&showmsg=1",
        ],
    );
}

#[test]
fn log_search_and_ranges() {
    let site = build_site("");
    let server = Server::start(&site.rc);
    let grep = server.page("/r/log/?qt=grep&q=SIDE");
    let ids = commit_ids_in(&grep);
    let expected: Vec<String> = git(&site.work, &["log", "-i", "--grep=side", "--format=%H"])
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(ids, expected[..ids.len()].to_vec());
    assert!(
        grep.contains("qt=grep&amp;q=SIDE&amp;ofs=4"),
        "pager keeps the search"
    );
    // patterns are git's basic regular expressions, as cgit hands them to git
    for (pattern, finds) in [
        ("^side adds [gh]$", true),
        ("merge.*(ours)", true),
        ("s[a-z]de\\|rename", true),
        ("change+", false),
    ] {
        let url = format!("/r/log/?qt=grep&q={}", url_encode(pattern));
        let expected: Vec<String> = git(
            &site.work,
            &["log", "-i", &format!("--grep={pattern}"), "--format=%H"],
        )
        .lines()
        .map(str::to_string)
        .collect();
        let ids = commit_ids_in(&server.page(&url));
        assert_eq!(!ids.is_empty(), finds, "{pattern}");
        assert_eq!(ids, expected[..ids.len()].to_vec(), "{pattern}");
    }
    let bad = server.get("/r/log/?qt=grep&q=%5Bunclosed");
    assert_eq!(bad.status, 400);
    assert!(bad.text().contains("Invalid search pattern: [unclosed"));
    let author = server.page("/r/log/?qt=author&q=thor");
    assert_eq!(commit_ids_in(&author).len(), 4);
    assert!(commit_ids_in(&server.page("/r/log/?qt=committer&q=nobody")).is_empty());
    let range = server.page("/r/log/?qt=range&q=v1.0..side");
    let expected: Vec<String> = git(&site.work, &["log", "--format=%H", "v1.0..side"])
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(commit_ids_in(&range), expected);
    assert_eq!(server.get("/r/log/?qt=range&q=--output=x").status, 400);
    assert_eq!(server.get("/r/log/?qt=range&q=main+-x").status, 400);
    assert_eq!(server.get("/r/log/?qt=range&q=nope..main").status, 404);
}

/// Opens a served repository with gix, as the server does.
fn open(path: &Path) -> gix::Repository {
    gix::open_opts(path, gix::open::Options::isolated()).unwrap()
}

#[test]
fn path_limited_log_equals_git_log() {
    let site = build_site("");
    for repo_dir in ["plain.git", "graph.git"] {
        let dir = site.root.join(repo_dir);
        let repo = open(&dir);
        let bloom = cgitd::git::commit_graph::BloomFilters::open(&dir).map(std::sync::Arc::new);
        assert_eq!(bloom.is_some(), repo_dir == "graph.git");
        let tip = repo.rev_parse_single("main").unwrap().detach();
        for path in [
            "f.txt",
            "src",
            "src/main.rs",
            "src/app.rs",
            "g.txt",
            "h.txt",
            "a/b",
            "sub",
            "nothing",
        ] {
            let page = cgitd::git::log::path_log(
                &cgitd::git::Repo::new(&repo, None),
                bloom.clone(),
                tip,
                path.into(),
                0,
                100,
            )
            .unwrap();
            let ours: Vec<String> = page.commits.iter().map(|c| c.id.to_string()).collect();
            let expected: Vec<String> = git(&dir, &["log", "--format=%H", "main", "--", path])
                .lines()
                .map(str::to_string)
                .collect();
            assert_eq!(ours, expected, "{repo_dir}: log -- {path}");
            assert!(!page.has_more);
        }
        let paged = cgitd::git::log::path_log(
            &cgitd::git::Repo::new(&repo, None),
            bloom.clone(),
            tip,
            "f.txt".into(),
            1,
            1,
        )
        .unwrap();
        let expected = git(
            &dir,
            &[
                "log",
                "--format=%H",
                "--skip=1",
                "-n1",
                "main",
                "--",
                "f.txt",
            ],
        );
        assert_eq!(paged.commits[0].id.to_string(), expected.trim());
        let total = git(&dir, &["log", "--format=%H", "main", "--", "f.txt"])
            .lines()
            .count();
        assert_eq!(paged.has_more, total > 2);
    }
}

#[test]
fn commit_graph_column_and_both_repository_kinds() {
    let site = build_site("");
    let server = Server::start(&site.rc);
    let html: String = ["/g/log/?showmsg=1", "/g/log/?ofs=4", "/g/log/?ofs=8"]
        .iter()
        .map(|u| server.page(u))
        .collect();
    assert!(html.contains("<td class='commitgraph'>"));
    assert!(html.contains("'>\\</span>"), "a merge forks a lane");
    assert!(html.contains("'>/</span>"), "and joins it");
    let graph = commit_ids_in(&server.page("/g/log/?ofs=0"));
    let expected: Vec<String> = git(&site.work, &["log", "--topo-order", "--format=%H", "-n4"])
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(graph, expected, "graph logs are in topological order");
    assert_eq!(
        commit_ids_in(&server.page("/g/log/f.txt")),
        commit_ids_in(&server.page("/r/log/f.txt")),
        "commit-graph and plain repositories walk alike"
    );
}

#[test]
fn tag_pages() {
    let site = build_site("");
    let server = Server::start(&site.rc);
    let html = server.page("/r/tag/?h=v1.0");
    let tag_id = git(&site.work, &["rev-parse", "v1.0"]);
    assert!(html.contains(&format!(
        "<tr><td>tag name</td><td>v1.0 ({})</td></tr>",
        tag_id.trim()
    )));
    assert!(html.contains("<tr><td>tag date</td><td>2024-01-02 03:04:05 +0100</td></tr>"));
    assert!(
        html.contains(
            "<tr><td>tagged by</td><td>C O Mitter &lt;committer@example.com&gt;</td></tr>"
        )
    );
    assert!(html.contains("<div class='commit-subject'>Version 1.0</div><div class='commit-msg'>\nFirst &lt;release&gt;.\n</div>"));
    assert!(html.contains("<a href='/r/snapshot/r-1.0.tar.gz'>r-1.0.tar.gz</a><br/>"));
    let light = server.page("/r/tag/?h=light");
    assert!(light.contains("<tr><td>tag name</td><td>light</td></tr>"));
    assert!(!light.contains("commit-subject"));
    let r = server.get("/r/tag/?h=main");
    assert_eq!(r.status, 404);
    assert!(r.text().contains("Bad tag reference: main"));
    assert_eq!(server.get("/r/tag/?id=nope").status, 404);
    assert_links_match_cgit(
        &site,
        &server,
        &["/r/tag/?h=v1.0", "/r/tag/?h=light", "/r/tag/?id=v1.0"],
    );
}

#[test]
fn empty_repository_and_bad_input_never_break() {
    let site = build_site("");
    let server = Server::start(&site.rc);
    for url in [
        "/empty/log/",
        "/empty/log/x",
        "/empty/tree/",
        "/empty/plain/",
        "/empty/blob/x",
        "/empty/tag/",
        "/empty/about/",
        "/r/log/?id=--output=x",
        "/r/log/?ofs=999999",
        "/r/log/nope/deeper?showmsg=1",
        "/r/log/?qt=unknown&q=x",
        "/r/tree/%ff%fe",
        "/r/plain/a/b/c/deep.txt/more",
        "/r/tag/?h=%3Cscript%3E",
    ] {
        let r = server.get(url);
        assert!(r.status < 500, "{url}: {}", r.status);
        assert!(!r.text().contains("<script>"), "{url} echoes markup");
    }
    // the one that names markup (as a branch) answers with it escaped
    let tag = server.get("/r/tag/?h=%3Cscript%3E");
    let text = tag.text_with(404, "a tag named <script>");
    assert!(text.contains("Invalid branch: &lt;script&gt;"), "{text}");
    assert_eq!(server.get("/empty/log/").status, 200);
    assert_eq!(server.get("/r/log/?id=nope").status, 404);
    assert!(matches!(
        server.get("/r/log/?id=--output=x").status,
        400 | 404
    ));
    assert!(!site.dir.path().join("x").exists());
    assert!(!site.root.join("x").exists());
}

#[test]
fn path_logs_follow_renames_like_git() {
    let site = build_site("enable-follow-links=1\nmax-commit-count=50\n");
    let server = Server::start(&site.rc);
    let plain = server.page("/r/log/src/app.rs");
    assert!(plain.contains(" (<a href='/r/log/src/app.rs?follow=1'>follow</a>)"));
    let followed = server.page("/r/log/src/app.rs?follow=1");
    assert!(followed.contains(" (<a href='/r/log/src/app.rs'>unfollow</a>)"));
    let ids = commit_ids_in(&followed);
    let expected: Vec<String> = git(
        &site.work,
        &["log", "--follow", "--format=%H", "--", "src/app.rs"],
    )
    .lines()
    .map(str::to_string)
    .collect();
    assert!(
        expected.len() > commit_ids_in(&plain).len(),
        "the rename is followed"
    );
    assert_eq!(ids, expected);
    assert!(followed.contains(&format!("<a href='/r/commit/?id={}'>", expected[1])));
    // the toggle sits in the path line as in cgit (whose own --follow list is not git's)
    for url in ["/r/log/src/app.rs", "/r/log/src/app.rs?follow=1"] {
        assert_like_cgit(&server, &site.rc, url, &[("<div class='path'>", "</div>")]);
    }
    // without enable-follow-links the parameter does nothing
    let site = build_site("max-commit-count=50\n");
    let server = Server::start(&site.rc);
    assert_eq!(
        commit_ids_in(&server.page("/r/log/src/app.rs?follow=1")),
        commit_ids_in(&server.page("/r/log/src/app.rs"))
    );
}

/// Every form control has a label (a `<label>` or `aria-label`), selects that submit on change
/// keep a real submit button, graph-only log rows have no self-closing cells, and each page's
/// `<title>` says which page it is.
#[test]
fn controls_are_labelled_and_titles_name_the_page() {
    let site = build_site("max-stats=year\n");
    let server = Server::start(&site.rc);
    let title = |url: &str| between(&server.page(url), "<title>", "</title>").to_string();
    assert_eq!(title("/r/"), "<title>r - [no description]");
    assert_eq!(title("/r/log/"), "<title>log - r - [no description]");
    assert_eq!(title("/r/refs/"), "<title>refs - r - [no description]");
    assert_eq!(title("/r/tree/"), "<title>tree - r - [no description]");
    assert_eq!(
        title("/r/tree/src"),
        "<title>tree: src - r - [no description]"
    );
    assert_eq!(
        title("/r/log/src/app.rs"),
        "<title>log: app.rs « src - r - [no description]"
    );
    assert_eq!(
        title("/r/blame/src/app.rs"),
        "<title>blame: app.rs « src - r - [no description]"
    );
    assert_eq!(title("/r/diff/"), "<title>diff - r - [no description]");
    assert_eq!(title("/r/stats/"), "<title>stats - r - [no description]");
    assert!(title("/r/commit/").starts_with("<title>commit: "));

    let index = server.page("/");
    assert!(
        index.contains("<input type='search' name='q' size='10' aria-label='search repositories'")
    );
    let log = server.page("/r/log/");
    assert!(log.contains("<select name='h' aria-label='branch' onchange='this.form.submit();'>"));
    assert!(log.contains("<input type='submit' value='switch'/>"));
    assert!(log.contains("<select name='qt' aria-label='search in'>"));
    assert!(log.contains("name='q' aria-label='search the log'"));
    let commit = server.page("/r/commit/");
    for (id, label) in [
        ("diff-context", "context:"),
        ("diff-ignorews", "space:"),
        ("diff-dt", "mode:"),
    ] {
        assert!(commit.contains(&format!("<label for='{id}'>{label}</label>")));
        assert!(commit.contains(&format!("<select id='{id}' name=")));
    }
    assert!(commit.contains("<td class='ctrl'><input type='submit' value='reload'/></td>"));
    let stats = server.page("/r/stats/");
    assert!(stats.contains("<label for='stats-ofs'>Authors:</label>"));
    assert!(stats.contains("<td class='ctrl'><input type='submit' value='Reload'/></td>"));
    for html in [
        &log,
        &commit,
        &stats,
        &server.page("/g/log/"),
        &server.page("/r/tree/"),
    ] {
        assert!(!html.contains("<td/>") && !html.contains("<th/>"), "{html}");
        assert!(!html.contains("'/></tr>"), "no self-closing cells: {html}");
        assert!(
            html.contains("<meta name='viewport' content='width=device-width, initial-scale=1'/>")
        );
        assert!(!html.contains("<noscript>"));
    }
}
