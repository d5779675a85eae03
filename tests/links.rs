//! No dead link anywhere: a crawler starts at the index and a summary, follows every same-site
//! link (`href`, `src`, form `action`), and requires every one to answer 200 (or 304). It runs in
//! both URL forms — the path form under `virtual-root=/`, and cgit's `?url=` form without a
//! virtual root, where every link found is requested as `?url=` — with and without
//! `enable-esi`, over a small repository with tags, a merge, a rename, a subdirectory, a binary
//! file, a symbolic link, a submodule, a file name full of URL metacharacters and branches (one
//! with a `+` in its name).

mod common;

use common::*;
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// The repository and a one-commit one, built once.
static REPOS: LazyLock<(PathBuf, PathBuf)> = LazyLock::new(|| build(&shared_dir("links")));

fn build(root: &Path) -> (PathBuf, PathBuf) {
    let work = root.join("work");
    init_repo(&work);
    write(&work, "README", "hello\n");
    write(
        &work,
        "src/main.rs",
        "fn main() {\n    println!(\"hi\");\n}\n",
    );
    write(&work, "src/sub/deep.txt", "deep\n");
    commit_all(&work, "Root commit", "2024-01-01T10:00:00+00:00");
    git(&work, &["tag", "-a", "v1.0", "-m", "Version 1.0"]);
    write(&work, "logo.bin", [0u8, 1, 2, 3, 255, 0, 7]);
    write(
        &work,
        "src/main.rs",
        "fn main() {\n    println!(\"hello\");\n}\n",
    );
    commit_all(
        &work,
        "Add a binary, change main",
        "2024-01-02T10:00:00+00:00",
    );
    git(&work, &["checkout", "-q", "-b", "fix+1"]);
    write(&work, "topic.txt", "topic\n");
    write(&work, "src/sub/deep.txt", "deeper\n");
    // names every URL escaper must get right, a symbolic link
    write(&work, "odd dir/a+b #1 &x'y?.txt", "odd\n");
    std::os::unix::fs::symlink("src/main.rs", work.join("link")).unwrap();
    commit_all(&work, "Topic work", "2024-01-03T10:00:00+00:00");
    git(&work, &["checkout", "-q", "main"]);
    git(&work, &["mv", "README", "README.md"]);
    write(&work, "README.md", "# Hello\n\nSee [main](src/main.rs).\n");
    commit_all(&work, "Rename the readme", "2024-01-04T10:00:00+00:00");
    git_at(
        &work,
        &["merge", "-q", "--no-ff", "fix+1", "-m", "Merge fix+1"],
        "2024-01-05T10:00:00+00:00",
    );
    git(&work, &["tag", "c++/1+2"]);
    git(&work, &["rm", "-q", "topic.txt"]);
    // a submodule (a gitlink entry)
    let gitlink = format!("160000,{},vendor/mod", "1".repeat(40));
    git(&work, &["update-index", "--add", "--cacheinfo", &gitlink]);
    commit_staged(
        &work,
        b"Remove topic.txt, add a submodule",
        "2024-01-06T10:00:00+00:00",
    );
    git(root, &["clone", "-q", "--bare", "work", "r.git"]);
    let small = root.join("small");
    init_repo(&small);
    write(&small, "a.txt", "a\n");
    commit_all(&small, "Only commit", "2024-02-01T10:00:00+00:00");
    (root.join("r.git"), small.join(".git"))
}

/// The options under test, for every repository.
const OPTIONS: &str = "snapshots=tar.gz zip\nenable-blame=1\nenable-log-filecount=1\n\
    enable-log-linecount=1\nenable-commit-graph=1\nmax-stats=year\nenable-follow-links=1\n\
    enable-subject-links=1\nenable-index-links=1\nenable-index-owner=1\nreadme=:README.md\n";

/// A cgitrc for the repository as `r` (no section) and the small one as `team/s` (in a
/// section).
fn rc(dir: &Path, vroot: Option<&str>, esi: bool) -> PathBuf {
    let rc = dir.join("cgitrc");
    let (repo, small) = (REPOS.0.display(), REPOS.1.display());
    let text = format!(
        "{}{}{OPTIONS}repo.url=r\nrepo.path={repo}\nrepo.owner=Alice\n\n\
         section=Team\nrepo.url=team/s\nrepo.path={small}\nrepo.desc=in a section\n",
        match vroot {
            Some(root) => format!("virtual-root={root}\n"),
            None => String::new(),
        },
        if esi { "enable-esi=1\n" } else { "" },
    );
    std::fs::write(&rc, text).unwrap();
    rc
}

/// Decodes the entities cgit writes in attributes.
fn unescape(value: &str) -> String {
    value
        .replace("&#x27;", "'")
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The values of `href`, `src` and `action` attributes, quoted either way.
fn links_of(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attr in ["href=", "src=", "action="] {
        for (at, _) in body.match_indices(attr) {
            let before = body[..at].chars().next_back();
            if !matches!(before, Some(' ' | '\n' | '\t')) {
                continue;
            }
            let rest = &body[at + attr.len()..];
            let Some(quote) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') else {
                continue;
            };
            if let Some(end) = rest[1..].find(quote) {
                out.push(unescape(&rest[1..1 + end]));
            }
        }
    }
    out
}

/// Removes `.` and `..` segments (RFC 3986 §5.2.4).
fn remove_dots(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').collect();
    for (i, seg) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        match *seg {
            "." => {
                if last {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > 1 {
                    out.pop();
                }
                if last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    out.join("/")
}

/// `link` resolved against the page `base` (a path and query on `host`): the same-site target
/// as path and query without fragment, or None for another site, scheme or a same-page anchor.
fn resolve(base: &str, link: &str, host: &str) -> Option<String> {
    let link = link.split('#').next().unwrap().replace(' ', "%20");
    if link.is_empty() {
        return None;
    }
    let scheme_end = link.find(':').filter(|&i| !link[..i].contains(['/', '?']));
    let link = if let Some(i) = scheme_end {
        let rest = link[i + 1..].strip_prefix("//")?;
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if !matches!(&link[..i], "http" | "https") || authority != host {
            return None;
        }
        format!("/{}", path.trim_start_matches('/'))
    } else if let Some(rest) = link.strip_prefix("//") {
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if authority != host {
            return None;
        }
        path.to_string()
    } else {
        link
    };
    let base_path = base.split('?').next().unwrap();
    let (path, query) = match link.split_once('?') {
        Some((p, q)) => (p.to_string(), Some(q)),
        None => (link.clone(), None),
    };
    let path = if path.is_empty() {
        base_path.to_string()
    } else if path.starts_with('/') {
        remove_dots(&path)
    } else {
        let dir = &base_path[..base_path.rfind('/').unwrap() + 1];
        remove_dots(&format!("{dir}{path}"))
    };
    Some(match query {
        Some(q) => format!("{path}?{q}"),
        None if link.is_empty() => base.to_string(),
        None => path,
    })
}

/// A path-form target as cgit's `?url=` form: `/r/log/x?h=a` → `/?url=r/log/x&h=a`.
fn as_query_form(target: &str) -> String {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let rel = path.trim_start_matches('/');
    if rel.is_empty() || ["cgit.css", "cgit.png", "favicon.ico", "robots.txt"].contains(&rel) {
        return target.to_string();
    }
    if rel.starts_with("?") {
        return target.to_string();
    }
    let url = rel.replace('+', "%2B").replace('&', "%26");
    match query {
        "" => format!("/?url={url}"),
        q => format!("/?url={url}&{q}"),
    }
}

/// What a crawl found: pages fetched and the dead links with the page that linked them.
struct Crawl {
    fetched: usize,
    dead: Vec<(String, u16, String)>,
}

const MAX_PAGES: usize = 6000;

/// Crawls from `starts`, every request with `headers`.
fn crawl(server: &Server, starts: &[&str], query_form: bool, headers: &[(&str, &str)]) -> Crawl {
    let mut queue: VecDeque<(String, String)> = starts
        .iter()
        .map(|s| (s.to_string(), "(start)".to_string()))
        .collect();
    let mut seen: HashSet<String> = queue.iter().map(|(u, _)| u.clone()).collect();
    let mut dead = Vec::new();
    let mut fetched = 0;
    while let Some((url, from)) = queue.pop_front() {
        if fetched >= MAX_PAGES {
            let mut all: Vec<_> = seen.into_iter().collect();
            all.sort();
            panic!(
                "more than {MAX_PAGES} pages, a link loop? {} seen, e.g.\n{}",
                all.len(),
                all.iter()
                    .step_by(all.len() / 60 + 1)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
        fetched += 1;
        let r = server.request("GET", &url, headers);
        let mut body_links = Vec::new();
        match r.status {
            200 | 304 => {
                let ct = r.header("content-type").unwrap_or_default();
                if ct.starts_with("text/html") || ct.contains("atom") {
                    body_links = links_of(&r.text());
                }
            }
            // A redirect must stay on the site (a `//…` location is another host) and go
            // somewhere else.
            301 | 302 | 307 | 308 => match r.header("location") {
                Some(to) if resolve(&url, to, &server.addr).is_some_and(|t| t != url) => {
                    body_links.push(to.to_string())
                }
                _ => dead.push((url.clone(), r.status, from.clone())),
            },
            status => dead.push((url.clone(), status, from.clone())),
        }
        for link in body_links {
            let Some(mut target) = resolve(&url, &link, &server.addr) else {
                continue;
            };
            // Links a page writes root-relative are cgit's `?url=` links in this form;
            // relative ones are followed as a browser resolves them.
            if query_form && (link.starts_with('/') || link.contains("://")) {
                target = as_query_form(&target);
            }
            if seen.insert(target.clone()) {
                queue.push_back((target, url.clone()));
            }
        }
    }
    Crawl { fetched, dead }
}

fn report(what: &str, c: &Crawl) -> String {
    let mut by_page: HashMap<&str, Vec<String>> = HashMap::new();
    for (url, status, from) in &c.dead {
        by_page
            .entry(from.as_str())
            .or_default()
            .push(format!("{status} {url}"));
    }
    let mut out = format!(
        "{what}: {} dead links in {} pages\n",
        c.dead.len(),
        c.fetched
    );
    let mut pages: Vec<_> = by_page.into_iter().collect();
    pages.sort();
    for (from, links) in pages {
        out.push_str(&format!("  on {from}:\n"));
        for l in links {
            out.push_str(&format!("    {l}\n"));
        }
    }
    out
}

/// How the pages are asked for: URL form, ESI, and whether a surrogate assembles them.
fn check(vroot: bool, esi: bool, surrogate: bool) {
    check_under(vroot.then_some("/"), esi, surrogate);
}

fn check_under(vroot: Option<&str>, esi: bool, surrogate: bool) {
    let dir = TempDir::new("links");
    let rc = rc(dir.path(), vroot, esi);
    // Behind a surrogate, frames include the `esi-diff` fragment (`src`), whose relative
    // links are followed from the fragment's own URL, which has the page's depth.
    let headers: &[(&str, &str)] = if surrogate {
        &[("Surrogate-Capability", "varnish=ESI/1.0")]
    } else {
        &[]
    };
    let server = Server::start(&rc);
    let starts: Vec<String> = match vroot {
        Some(root) => ["", "r/", "team/s/", "r/about"]
            .iter()
            .map(|s| format!("{root}{s}"))
            .collect(),
        None => [
            "/",
            "/?url=r/",
            "/?url=team/s/",
            "/?url=r/about",
            "/?url=r/diff/src/",
        ]
        .map(String::from)
        .to_vec(),
    };
    let starts: Vec<&str> = starts.iter().map(String::as_str).collect();
    let c = crawl(&server, &starts, vroot.is_none(), headers);
    let what = format!(
        "{} form{}{}",
        match vroot {
            Some(root) => format!("path (under {root})"),
            None => "?url=".into(),
        },
        if esi { " with enable-esi" } else { "" },
        if surrogate { " behind a surrogate" } else { "" }
    );
    eprintln!("{what}: {} pages, {} dead links", c.fetched, c.dead.len());
    assert!(c.fetched > 100, "{what}: only {} pages", c.fetched);
    assert!(c.dead.is_empty(), "{}", report(&what, &c));
}

#[test]
fn no_dead_links_in_path_form() {
    check(true, false, false);
}

#[test]
fn no_dead_links_in_path_form_with_esi() {
    check(true, true, false);
}

#[test]
fn no_dead_links_in_query_form() {
    check(false, false, false);
}

#[test]
fn no_dead_links_in_query_form_with_esi() {
    check(false, true, false);
}

#[test]
fn no_dead_links_in_path_form_with_esi_behind_a_surrogate() {
    check(true, true, true);
}

#[test]
fn no_dead_links_in_query_form_with_esi_behind_a_surrogate() {
    check(false, true, true);
}

#[test]
fn no_dead_links_under_a_virtual_root_folder() {
    check_under(Some("/git/"), true, false);
}

#[test]
fn relative_links_resolve_like_a_browser() {
    let host = "h:1";
    assert_eq!(
        resolve("/r/commit/a/b?id=1", "../../diff/a/b?id=2", host).as_deref(),
        Some("/r/diff/a/b?id=2")
    );
    assert_eq!(
        resolve("/?url=r/commit/&id=1", "../diff/?id=2", host).as_deref(),
        Some("/diff/?id=2")
    );
    assert_eq!(
        resolve("/r/tree/x", "?h=a", host).as_deref(),
        Some("/r/tree/x?h=a")
    );
    assert_eq!(
        resolve("/r/", "http://h:1/r/atom/?h=a+b", host).as_deref(),
        Some("/r/atom/?h=a+b")
    );
    assert_eq!(resolve("/r/", "https://example.com/", host), None);
    assert_eq!(resolve("/r/", "mailto:a@b", host), None);
    assert_eq!(resolve("/r/", "#n1", host), None);
    assert_eq!(
        as_query_form("/r/log/a+b?h=x"),
        "/?url=r/log/a%2Bb&h=x".to_string()
    );
}

/// The links of the `table.tabs` row: tabs, the search form's action and hidden fields.
fn tab_links(html: &str) -> String {
    let tabs = between(html, "<table class='tabs'>", "</table>");
    let mut out = links_of(tabs);
    out.extend(
        tabs.split("<input type='hidden' ")
            .skip(1)
            .map(|s| s.split("/>").next().unwrap().to_string()),
    );
    out.join("\n")
}

/// The same tab links as cgit's for `url`.
fn assert_tabs_like_cgit(server: &Server, rc: &Path, url: &str) {
    assert_like_cgit_by(server, rc, url, tab_links);
}

#[test]
fn pages_whose_path_is_no_path_limit_keep_it_out_of_their_links() {
    let dir = TempDir::new("links-context");
    let rc = rc(dir.path(), Some("/"), false);
    let server = Server::start(&rc);
    // `refs/tags` (the summary's "[...]" under its tags) is not a file: cgit links `/r/log/`.
    assert_tabs_like_cgit(&server, &rc, "/r/refs/tags");
    let html = server.page("/r/refs/tags");
    assert!(html.contains("href='/r/atom/?h=main'"), "feed link");
    assert!(!hrefs(&html).iter().any(|h| h.contains("/tags")), "{html}");
    assert_tabs_like_cgit(&server, &rc, "/r/refs/heads?h=fix%2b1");
    // A path limit is kept: log, tree, commit, diff.
    assert_tabs_like_cgit(&server, &rc, "/r/log/src?h=fix%2b1");
}

#[test]
fn commit_and_diff_tabs_keep_the_diff_being_looked_at() {
    let dir = TempDir::new("links-diff-tabs");
    let rc = rc(dir.path(), Some("/"), false);
    let server = Server::start(&rc);
    let work = REPOS.0.parent().unwrap().join("work");
    let id = git(&work, &["rev-parse", "main~1"]);
    let id2 = git(&work, &["rev-parse", "main~3"]);
    let (id, id2) = (id.trim(), id2.trim());
    for url in [
        format!("/r/diff/?id={id}&id2={id2}"),
        format!("/r/diff/src?id={id}&id2={id2}&dt=1&context=5&ignorews=1"),
        format!("/r/commit/src?id={id}&dt=2"),
    ] {
        assert_tabs_like_cgit(&server, &rc, &url);
    }
}

#[test]
fn commit_page_snapshots_are_named_as_cgit_names_them() {
    let dir = TempDir::new("links-snapshots");
    let rc = rc(dir.path(), Some("/"), false);
    let server = Server::start(&rc);
    let download = ("<th>download</th>", "</tr>");
    for url in [
        "/r/commit/",
        "/r/commit/?h=fix%2b1",
        "/r/commit/?id=v1.0",
        "/r/commit/?h=fix%2b1&id=main",
        "/r/commit/?id=main~2",
    ] {
        assert_like_cgit(&server, &rc, url, &[download]);
    }
    let html = server.page("/r/commit/");
    assert!(html.contains("<a href='/r/snapshot/r-main.tar.gz'>r-main.tar.gz</a>"));
    assert_eq!(server.get("/r/snapshot/r-main.tar.gz").status, 200);
}
