//! History and file pages (log, tree, blob, plain, tag, about) on small generated repositories:
//! content, links (compared with the real cgit where installed), statuses, and the
//! path-limited walk compared with `git log -- <path>`.

mod common;

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
    let out = git_command(dir, &[&["merge", "-q", "--no-ff"], args].concat())
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
fn tree_pages_list_and_show_files() {
    let site = build_site(
        "module-link=https://example.com/%s/commit/?id=%s\n\
         repo.url=m\nrepo.path={root}/plain.git\nrepo.module-link.sub=https://x.org/c/%s\n",
    );
    let server = Server::start(&site.rc);
    let r = server.get("/r/tree/");
    assert_eq!(r.status, 200);
    let html = r.text();
    assert!(html.contains("<table summary='tree listing' class='list'>"));
    assert!(html.contains("<td class='ls-mode'>d---------</td><td><a class='ls-dir' href='/r/tree/a'>a</a> / <a class='ls-dir' href='/r/tree/a/b'>b</a> / <a class='ls-dir' href='/r/tree/a/b/c'>c</a></td>"));
    assert!(html.contains("<td class='ls-mode'>-rwxr-xr-x</td><td><a class='ls-blob sh' href='/r/tree/run.sh'>run.sh</a>"));
    assert!(html.contains("<td class='ls-mode'>l---------</td><td><a class='ls-blob' href='/r/tree/link'>link</a> -&gt; <a class='ls-blob' href='/r/tree/src/app.rs'>src/app.rs</a>"));
    assert!(html.contains("<td class='ls-mode'>m---------</td><td><a class='ls-mod' href='https://example.com/sub/commit/?id="));
    assert!(html.contains("<a class='ls-blob txt' href='/r/tree/caf%e9.txt'>caf\u{fffd}.txt</a>"));
    assert!(html.contains("<a class='button' href='/r/blame/run.sh'>blame</a>"));
    let size = git(&site.work, &["cat-file", "-s", "HEAD:run.sh"]);
    assert!(
        html.contains(&format!(
            "<td class='ls-size'>{}</td><td><a class='button' href='/r/log/run.sh'>log</a>",
            size.trim()
        )),
        "blob sizes"
    );
    let first = git(&site.work, &["rev-list", "--max-parents=0", "HEAD"]);
    assert!(server.page("/m/tree/").contains(&format!(
        "<a class='ls-mod' href='https://x.org/c/{}'>sub</a> @ {}",
        first.trim(),
        &first[..7]
    )));
    let file = server.page("/r/tree/src/app.rs?h=main");
    assert!(file.contains("<title>tree: app.rs « src - r - [no description]</title>"));
    assert!(file.contains("<div class='path'>path: <a href='/r/tree/'>root</a>/<a href='/r/tree/src'>src</a>/<a href='/r/tree/src/app.rs'>app.rs</a></div>"));
    assert!(file.contains(
        "(<a href='/r/plain/src/app.rs'>plain</a>) (<a href='/r/blame/src/app.rs'>blame</a>)"
    ));
    assert!(file.contains("<a id='n3' href='#n3'>3</a>"));
    // Highlighted in-process (no source-filter), one line per line.
    assert!(file.contains(concat!(
        "<td class='lines'><pre><code><span class=\"hl-storage hl-type hl-function\">fn</span> ",
        "<span class=\"hl-entity hl-name hl-function\">main</span>() {\n    ",
        "<span class=\"hl-support hl-macro\">println!</span>(",
        "<span class=\"hl-string hl-quoted hl-double\">&quot;changed&quot;</span>);\n}\n</code></pre>"
    )));
    let bin = server.page("/r/tree/bin.dat");
    assert!(bin.contains("<table summary='blob content' class='bin-blob'>"));
    assert!(bin.contains("<td class='hex'> 00 01 62 69 6e 61 72 79 3c 26 3e ff </td><td class='hex'>..binary&lt;&amp;&gt;.</td>"));
    let old = server.page("/r/tree/src?id=v1.0");
    assert!(old.contains("href='/r/tree/src/main.rs?id=v1.0'"));
    assert_eq!(server.get("/r/tree/nope").status, 404);
    assert!(server.get("/r/tree/nope").text().contains("Path not found"));
    assert_eq!(server.get("/r/tree/sub").status, 404);
    let bad = server.get("/r/tree/?id=nope");
    assert_eq!(bad.status, 404);
    assert!(bad.text().contains("Invalid revision name: nope"));
    let tree_id = git(&site.work, &["rev-parse", "HEAD^{tree}"]);
    assert_eq!(
        server
            .get(&format!("/r/tree/?id={}", tree_id.trim()))
            .status,
        404
    );
    assert!(matches!(
        server.get("/r/tree/?id=--output=x").status,
        400 | 404
    ));
    assert_links_match_cgit(
        &site,
        &server,
        &[
            "/r/tree/",
            "/r/tree/src",
            "/r/tree/a",
            "/r/tree/src/app.rs",
            "/r/tree/?h=side",
            "/r/tree/src?id=v1.0",
            "/r/tree/bin.dat",
        ],
    );
}

#[test]
fn max_blob_size_and_line_numbers_options() {
    let site = build_private_site("max-blob-size=1\nenable-tree-linenumbers=0\n");
    let server = Server::start(&site.rc);
    let html = server.page("/r/tree/README.md");
    assert!(!html.contains("class='linenumbers'"));
    assert!(html.contains("<td class='lines'>"));
    let big = "y\n".repeat(1500);
    let dir = site.root.join("plain.git");
    let blob = {
        let mut cmd = git_command(&dir, &["hash-object", "-w", "--stdin"]);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(big.as_bytes())
            .unwrap();
        String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
    };
    let tree = {
        let mut cmd = git_command(&dir, &["mktree"]);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        use std::io::Write;
        writeln!(
            child.stdin.take().unwrap(),
            "100644 blob {}\tbig.txt",
            blob.trim()
        )
        .unwrap();
        String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
    };
    let commit = git(&dir, &["commit-tree", tree.trim(), "-m", "big"]);
    let page = server
        .get(&format!("/r/tree/big.txt?id={}", commit.trim()))
        .text();
    assert!(
        page.contains("<div class='error'>blob size (2KB) exceeds display size limit (1KB).</div>"),
        "{page}"
    );
}

#[test]
fn plain_and_blob_serve_raw_bytes_safely() {
    let site = build_site("mimetype.rs=text/x-rust\nmimetype.dat=image/x-test\n");
    let server = Server::start(&site.rc);
    let r = server.get("/r/plain/src/app.rs");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("text/plain; charset=UTF-8"),
        "text/* is neutered"
    );
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(
        r.header("content-security-policy"),
        Some("default-src 'none'")
    );
    assert_eq!(
        r.header("content-disposition"),
        Some("inline; filename=\"app.rs\"")
    );
    let blob_id = git(&site.work, &["rev-parse", "HEAD:src/app.rs"]);
    assert_eq!(
        r.header("etag"),
        Some(format!("\"{}\"", blob_id.trim()).as_str())
    );
    assert_eq!(
        r.header("content-length"),
        Some(r.body.len().to_string().as_str())
    );
    assert_eq!(r.body, std::fs::read(site.work.join("src/app.rs")).unwrap());
    let bin = server.get("/r/plain/bin.dat");
    assert_eq!(bin.header("content-type"), Some("image/x-test"));
    assert_eq!(bin.body, b"\x00\x01binary<&>\xff");
    let readme = server.get("/r/plain/README.md");
    assert_eq!(
        readme.header("content-type"),
        Some("text/plain; charset=UTF-8")
    );
    let latin = server.get("/r/plain/caf%e9.txt");
    assert_eq!(latin.status, 200);
    assert_eq!(latin.body, b"latin\n");
    let dir = server.get("/r/plain/a/b?h=side");
    assert_eq!(dir.header("content-type"), Some("text/html; charset=UTF-8"));
    let tree_id = git(&site.work, &["rev-parse", "side:a/b"]);
    assert_eq!(
        dir.header("etag"),
        Some(format!("\"{}\"", tree_id.trim()).as_str())
    );
    let html = dir.text();
    assert!(html.contains("<title>/a/b/</title>"));
    assert!(
        html.starts_with("<!DOCTYPE html>\n"),
        "valid HTML5 (cgit has none)"
    );
    assert!(html.contains("<li><a href='/r/plain/a/?h=side'>../</a></li>"));
    assert!(html.contains("<li><a href='/r/plain/a/b/c/?h=side'>c</a></li>"));
    let root = server.page("/r/plain/");
    assert!(
        !root.contains("../") && !root.contains(">sub<"),
        "no parent, no gitlinks"
    );
    assert_eq!(server.get("/r/plain/nope").status, 404);
    assert_eq!(server.get("/r/plain/?id=nope").status, 404);

    let b = server.get(&format!("/r/blob/?id={}", blob_id.trim()));
    assert_eq!(b.status, 200);
    assert_eq!(b.header("content-type"), Some("text/plain; charset=UTF-8"));
    assert_eq!(b.header("x-content-type-options"), Some("nosniff"));
    let b = server.get("/r/blob/bin.dat?h=main");
    assert_eq!(b.header("content-type"), Some("application/octet-stream"));
    assert_eq!(
        b.header("content-disposition"),
        Some("inline; filename=\"bin.dat\"")
    );
    let bad = server.get("/r/blob/?id=abc");
    assert_eq!(bad.status, 400);
    assert!(bad.text().contains("Bad hex value: abc"));
    assert_eq!(server.get("/r/blob/?id=--output=x").status, 400);
    assert_eq!(
        server
            .get("/r/blob/?id=0000000000000000000000000000000000000001")
            .status,
        404
    );
    assert_eq!(server.get("/r/blob/nope").status, 404);
}

#[test]
fn html_serving_keeps_declared_types() {
    let site = build_site("enable-html-serving=1\nmimetype.md=text/html\n");
    let server = Server::start(&site.rc);
    let r = server.get("/r/plain/README.md");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=UTF-8"));
    assert!(r.header("content-security-policy").is_none());
    let r = server.get("/r/plain/src/app.rs");
    assert_eq!(
        r.header("content-type"),
        Some("text/plain; charset=UTF-8"),
        "sniffed"
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

/// A repository whose readmes try every trick: raw HTML, scripts, event handlers,
/// `javascript:` links, a symlink out of the repository directory.
fn build_about_site() -> (TempDir, PathBuf) {
    let dir = TempDir::new("about");
    let root = dir.path();
    let work = root.join("work");
    init_repo(&work);
    write(
        &work,
        "docs/README.md",
        "# Docs <em>here</em>\n\n<script>alert(1)</script>\n\n\
         [guide](guide.md#intro) ![logo](../img/logo.png) [bad](javascript:alert(1))\n\n\
         <img src=x onerror=alert(1)> <a href=\"https://example.com/\" onclick=\"x()\">ext</a>\n",
    );
    write(&work, "docs/guide.md", "# Guide\n");
    write(&work, "img/logo.png", b"\x89PNG\r\n\x1a\nfake".as_slice());
    write(&work, "NOTES.txt", "plain <b>notes</b>\n");
    commit_all(&work, "Docs", "2024-01-01T10:00:00+00:00");
    git(&work, &["branch", "other"]);
    let secret = root.join("secret.md");
    std::fs::write(&secret, "# TOP SECRET\n").unwrap();
    git(root, &["clone", "-q", "--bare", "work", "a.git"]);
    std::os::unix::fs::symlink(&secret, root.join("a.git/escape.md")).unwrap();
    std::fs::write(root.join("a.git/ondisk.md"), "# On disk [rel](x.md)\n").unwrap();
    let filter = root.join("filter.sh");
    std::fs::write(
        &filter,
        "#!/bin/sh\necho \"<p class='arg'>$1 $CGIT_REPO_NAME</p>\"\ntr a-z A-Z\necho '<script>evil()</script>'\n",
    )
    .unwrap();
    let mut perms = std::fs::metadata(&filter).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&filter, perms).unwrap();
    std::fs::write(
        root.join("site.md"),
        "# Site readme\n\n<script>x</script>\n",
    )
    .unwrap();
    let rc = root.join("cgitrc");
    let a = root.join("a.git");
    let text = format!(
        "virtual-root=/\nroot-readme={root}/site.md\n\
         repo.url=md\nrepo.path={a}\nrepo.readme=:missing.md\nrepo.readme=:docs/README.md\n\n\
         repo.url=txt\nrepo.path={a}\nrepo.readme=main:NOTES.txt\n\n\
         repo.url=disk\nrepo.path={a}\nrepo.readme=ondisk.md\n\n\
         repo.url=escape\nrepo.path={a}\nrepo.readme=escape.md\n\n\
         repo.url=none\nrepo.path={a}\nrepo.homepage=https://example.org/home\n\n\
         repo.url=none2\nrepo.path={a}\n\n\
         about-filter=exec:{filter}\n\
         repo.url=filtered\nrepo.path={a}\nrepo.readme=:docs/README.md\n",
        root = root.display(),
        a = a.display(),
        filter = filter.display(),
    );
    std::fs::write(&rc, text).unwrap();
    (dir, rc)
}

#[test]
fn about_pages_render_sanitized_readmes() {
    let (_dir, rc) = build_about_site();
    let server = Server::start(&rc);
    let r = server.get("/md/about");
    assert_eq!(r.status, 301);
    assert_eq!(r.header("location"), Some("/md/about/"));
    // the `?url=` form has no path to add a slash to: the redirect goes to the about link
    let r = server.get("/?url=md/about&h=other");
    assert_eq!(r.status, 301);
    assert_eq!(r.header("location"), Some("/md/about/?h=other"));
    let r = server.get("/md/about/");
    assert_eq!(r.status, 200);
    let html = r.text();
    assert!(html.contains("<a class='active' href='/md/about/'>about</a>"));
    assert!(
        html.contains("<div id='summary'><h1>Docs <em>here</em></h1>"),
        "{html}"
    );
    assert!(
        html.contains("href=\"/md/plain/docs/guide.md#intro\""),
        "{html}"
    );
    assert!(html.contains("src=\"/md/plain/img/logo.png\""));
    for bad in ["<script", "alert(1)</", "javascript:", "onerror", "onclick"] {
        assert!(!html.contains(bad), "{bad} survived sanitizing");
    }
    assert!(
        server
            .get("/md/log/")
            .text()
            .contains("href='/md/about/'>about</a>")
    );
    assert!(!server.page("/none2/log/").contains(">about</a>"));
    let logo = server.get("/md/about/../img/logo.png");
    assert_eq!(logo.status, 200);
    assert_eq!(logo.header("content-type"), Some("image/png"));
    let guide = server.page("/md/about/guide.md");
    assert!(guide.contains("<h1>Guide</h1>"));
    assert_eq!(server.get("/md/about/../../../etc/passwd").status, 404);

    let txt = server.page("/txt/about/");
    assert!(txt.contains("<div id='summary'><pre>plain &lt;b&gt;notes&lt;/b&gt;\n</pre></div>"));
    let disk = server.page("/disk/about/");
    assert!(
        disk.contains("<h1>On disk <a rel=\"noopener noreferrer\">rel</a></h1>"),
        "relative links of readmes on disk are dropped: {disk}"
    );

    let escape = server.get("/escape/about/");
    assert_eq!(
        escape.status, 404,
        "a readme symlinked out of the repository"
    );
    assert!(!escape.text().contains("TOP SECRET"));
    assert!(!server.page("/escape/").contains(">about</a>"));

    let none = server.get("/none/about/");
    assert_eq!(none.status, 302);
    assert_eq!(none.header("location"), Some("https://example.org/home"));
    let none2 = server.get("/none2/about/");
    assert_eq!(none2.status, 302);
    assert_eq!(none2.header("location"), Some("/none2/"));
    let on_branch = server.get("/none2/about/?h=other");
    assert_eq!(on_branch.header("location"), Some("/none2/?h=other"));

    let filtered = server.page("/filtered/about/");
    assert!(
        filtered.contains("<p class=\"arg\">docs/README.md filtered</p>"),
        "{filtered}"
    );
    assert!(
        filtered.contains("# DOCS"),
        "the filter got the readme on stdin"
    );
    assert!(!filtered.contains("evil()</"), "filter output is sanitized");

    let site = server.get("/about/");
    assert_eq!(site.status, 200);
    let site = site.text();
    assert!(
        site.contains("# SITE README"),
        "the site readme goes through the global about-filter too"
    );
    assert!(!site.contains("<script>x"));
    assert!(
        site.contains("<a class='active' href='/?p=about'>about</a>"),
        "cgit's link"
    );
}

/// Runs git with `input` on stdin; returns trimmed stdout.
fn git_stdin(dir: &Path, args: &[&str], input: &[u8]) -> String {
    use std::io::Write;
    let mut child = git_command(dir, args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn huge_trees_and_blobs_are_cut_with_a_note() {
    let site = build_private_site("");
    let dir = site.root.join("plain.git");
    let small = git_stdin(&dir, &["hash-object", "-w", "--stdin"], b"x\n");
    let listing: String = (0..3100)
        .map(|i| format!("100644 blob {small}\tf{i:05}\n"))
        .collect();
    let big_text = "0123456789abcdef\n".repeat(200_000);
    let big = git_stdin(&dir, &["hash-object", "-w", "--stdin"], big_text.as_bytes());
    let listing = format!("{listing}100644 blob {big}\tzz-big.txt\n");
    let tree = git_stdin(&dir, &["mktree"], listing.as_bytes());
    let commit = git(&dir, &["commit-tree", &tree, "-m", "huge"]);
    let server = Server::start(&site.rc);
    let html = server.page(&format!("/r/tree/?id={}", commit.trim()));
    assert!(html.contains("f02999"));
    assert!(
        !html.contains("f03000"),
        "rows beyond the cap are not rendered"
    );
    assert!(html.contains("101 more entries than are shown here"));
    let file = server.get(&format!("/r/tree/zz-big.txt?id={}", commit.trim()));
    assert_eq!(file.status, 200);
    let text = file.text();
    assert!(
        text.contains("Showing the first 340000 of 3400000 bytes."),
        "{}",
        &text[..2000]
    );
    assert!(text.len() < 2_000_000);
    assert!(text.contains("<a id='n20000' href='#n20000'>20000</a>"));
    assert!(!text.contains("id='n20001'"));
    let plain = server.get(&format!("/r/plain/zz-big.txt?id={}", commit.trim()));
    assert_eq!(plain.body.len(), 3_400_000, "plain serves the whole file");
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

/// With stats on, tree rows carry cgit's stats buttons (their links keep `h`, not `id`).
#[test]
fn tree_stats_buttons_link_like_cgit() {
    let site = build_site("max-stats=year\n");
    let server = Server::start(&site.rc);
    assert!(server.page("/r/tree/?h=side").contains(">stats</a>"));
    assert_links_match_cgit(
        &site,
        &server,
        &["/r/tree/", "/r/tree/src?h=side", "/r/tree/?id=v1.0"],
    );
}

/// Every blob's size in a listing is its own, also for the entries after a submodule (which
/// has no size here): each row shows what `git ls-tree -l` says.
#[test]
fn tree_sizes_follow_a_submodule() {
    let dir = TempDir::new("browse-sizes");
    let work = dir.path().join("work");
    init_repo(&work);
    write(&work, "b.txt", "bee\n");
    write(&work, "c.txt", "a longer line for c\n");
    write(&work, "d/e.txt", "e\n");
    commit_all(&work, "files", "2024-02-01T10:00:00+00:00");
    let head = git(&work, &["rev-parse", "HEAD"]);
    let gitlink = format!("160000,{},a-mod", head.trim());
    git(&work, &["update-index", "--add", "--cacheinfo", &gitlink]);
    commit_staged(&work, b"submodule first", "2024-02-02T10:00:00+00:00");
    let rc = r_and_off_rc(dir.path(), &work.join(".git"), "");
    let server = Server::start(&rc);
    let html = server.page("/r/tree/");
    assert!(html.contains("<span class='ls-mod'>a-mod</span>"), "{html}");
    let listing = git(&work, &["ls-tree", "-l", "HEAD"]);
    let mut blobs = 0;
    for line in listing.lines() {
        let (meta, name) = line.split_once('\t').unwrap();
        let fields: Vec<&str> = meta.split_whitespace().collect();
        if fields[1] != "blob" {
            continue;
        }
        blobs += 1;
        let row = format!(
            "href='/r/tree/{name}'>{name}</a></td><td class='ls-size'>{}</td>",
            fields[3]
        );
        assert!(html.contains(&row), "{row} in {html}");
    }
    assert_eq!(blobs, 2);
}

/// A chain of single directories collapses through a long directory name too, and a
/// directory too large to start one (the listing reads no tree above a size that a one-entry
/// tree, whose entry has a name short enough to check out, cannot reach) is a plain link; both
/// as cgit lists them.
#[test]
fn single_child_chains_collapse_through_long_names_and_large_directories_link_plainly() {
    let dir = TempDir::new("browse-chains");
    let work = dir.path().join("work");
    init_repo(&work);
    let long = "n".repeat(250);
    write(&work, &format!("top/{long}/leaf.txt"), "leaf\n");
    for i in 0..200 {
        write(
            &work,
            &format!("big/a-file-with-a-long-name-{i:04}.txt"),
            "x\n",
        );
    }
    commit_all(&work, "layout", "2024-02-01T10:00:00+00:00");
    let rc = r_and_off_rc(dir.path(), &work.join(".git"), "");
    let server = Server::start(&rc);
    let html = server.page("/r/tree/");
    let chain = format!(
        "<a class='ls-dir' href='/r/tree/top'>top</a> / \
         <a class='ls-dir' href='/r/tree/top/{long}'>{long}</a></td>"
    );
    assert!(html.contains(&chain), "{html}");
    assert!(
        html.contains("<a class='ls-dir' href='/r/tree/big'>big</a></td>"),
        "{html}"
    );
    assert_like_cgit(
        &server,
        &rc,
        "/r/tree/",
        &[
            ("<a class='ls-dir' href='/r/tree/big'", "</td>"),
            ("<a class='ls-dir' href='/r/tree/top'", "</td>"),
        ],
    );
}
