//! Atom feed: well-formed XML with everything from the repository escaped, as many entries as
//! `max-atom-items`, the same commits as `git log` (path-limited, or over every ref with
//! `all=1`), absolute links from the request's host.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

struct Site {
    _dir: TempDir,
    rc: PathBuf,
    work: PathBuf,
}

/// The repository, built once and only read by the tests.
static REPO: LazyLock<PathBuf> = LazyLock::new(|| {
    let root = shared_dir("atom");
    build_repo(&root);
    root.join("repo")
});

/// Fifteen commits on `main` (every third touches `docs/`), one on `side`, one whose message
/// holds markup, `]]>`, control characters and invalid UTF-8.
fn build_repo(root: &Path) {
    let work = root.join("repo");
    init_repo(&work);
    for i in 0..15 {
        let file = if i % 3 == 0 {
            "docs/guide.txt"
        } else {
            "src/code.txt"
        };
        write(&work, file, format!("version {i}\n"));
        commit_all(
            &work,
            &format!("Commit {i}"),
            &format!("2024-01-{:02}T10:00:00+02:00", i + 1),
        );
    }
    git(&work, &["checkout", "-q", "-b", "side"]);
    commit_all(&work, "Side work", "2024-03-01T10:00:00+00:00");
    git(&work, &["checkout", "-q", "main"]);
    // Written as a raw object: `git commit` would re-encode the invalid UTF-8.
    write(&work, "src/code.txt", "hostile\n");
    git(&work, &["add", "-A"]);
    let tree = git(&work, &["write-tree"]);
    let parent = git(&work, &["rev-parse", "main"]);
    let mut object = format!(
        "tree {}\nparent {}\nauthor A U Thor <author@example.com> 1706778000 +0000\n\
         committer C O Mitter <committer@example.com> 1706781600 +0000\n\n",
        tree.trim(),
        parent.trim()
    )
    .into_bytes();
    object.extend_from_slice(
        b"Fix <script>alert(1)</script> & more\x01\n\nBody with ]]> and <b>bold</b>\n\xff\xfe bytes\n",
    );
    let object_file = root.join("commit-object");
    std::fs::write(&object_file, object).unwrap();
    let id = git(
        &work,
        &[
            "hash-object",
            "-t",
            "commit",
            "-w",
            "--literally",
            object_file.to_str().unwrap(),
        ],
    );
    git(&work, &["update-ref", "refs/heads/main", id.trim()]);
}

/// The shared repository served with the global options `extra`, from a cgitrc of its own.
fn build_site(extra: &str) -> Site {
    let dir = TempDir::new("atom");
    let work = REPO.clone();
    let rc = dir.path().join("cgitrc");
    std::fs::write(
        &rc,
        format!(
            "{extra}repo.url=repo\nrepo.path={}/.git\nrepo.desc=Feeds & <things>\n",
            work.display()
        ),
    )
    .unwrap();
    Site {
        _dir: dir,
        rc,
        work,
    }
}

/// Checks that `xml` is well-formed as far as this feed goes: balanced tags, attribute values
/// and text without raw `<`, every `&` an entity. Returns the text of every `<tag>`.
fn parse(xml: &str) -> Vec<(String, String)> {
    let entities = ["&amp;", "&lt;", "&gt;", "&#x27;", "&quot;"];
    let check_text = |t: &str| {
        assert!(!t.contains('<'), "raw < in {t:?}");
        for (i, _) in t.match_indices('&') {
            assert!(
                entities.iter().any(|e| t[i..].starts_with(e)),
                "bare & in {t:?}"
            );
        }
    };
    let mut stack: Vec<String> = Vec::new();
    let mut texts = Vec::new();
    let mut rest = xml
        .strip_prefix("<?xml version='1.0' encoding='utf-8'?>\n")
        .expect("declaration");
    while let Some(open) = rest.find('<') {
        let text = &rest[..open];
        check_text(text);
        if let Some(top) = stack.last() {
            texts.push((top.clone(), text.to_string()));
        }
        let close = rest[open..].find('>').expect("tag end") + open;
        let tag = &rest[open + 1..close];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name), "unbalanced </{name}>");
        } else {
            let self_closing = tag.ends_with('/');
            let tag = tag.trim_end_matches('/');
            let (name, attrs) = tag.split_once(' ').unwrap_or((tag, ""));
            for value in attrs.split('\'').skip(1).step_by(2) {
                check_text(value);
            }
            if !self_closing {
                stack.push(name.to_string());
            }
        }
        rest = &rest[close + 1..];
    }
    assert!(stack.is_empty(), "unclosed {stack:?}");
    assert_eq!(rest.trim(), "");
    texts
}

fn texts_of<'a>(texts: &'a [(String, String)], tag: &str) -> Vec<&'a str> {
    texts
        .iter()
        .filter(|(t, _)| t == tag)
        .map(|(_, v)| v.as_str())
        .collect()
}

fn entry_ids(xml: &str) -> Vec<String> {
    texts_of(&parse(xml), "id")
        .into_iter()
        .filter_map(|id| id.strip_prefix("urn:sha1:"))
        .map(str::to_string)
        .collect()
}

fn git_log(site: &Site, args: &[&str]) -> Vec<String> {
    let mut full = vec!["log", "--format=%H"];
    full.extend_from_slice(args);
    git(&site.work, &full).lines().map(str::to_string).collect()
}

#[test]
fn feed_lists_the_newest_commits_of_the_branch() {
    let site = build_site("");
    let server = Server::start(&site.rc);
    let r = server.get("/repo/atom/?h=main");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/xml; charset=utf-8"));
    let xml = String::from_utf8(r.body.clone()).expect("UTF-8");
    let texts = parse(&xml);
    assert_eq!(entry_ids(&xml), git_log(&site, &["-n", "10", "main"]));
    assert_eq!(texts_of(&texts, "title")[0], "repo, branch main");
    assert_eq!(texts_of(&texts, "subtitle"), ["Feeds &amp; &lt;things&gt;"]);
    let base = format!("http://{}", server.addr);
    assert_eq!(
        texts_of(&texts, "id")[0],
        format!("{base}/repo/atom/?h=main")
    );
    assert!(xml.contains(&format!(
        "<link rel='self' href='{base}/repo/atom/?h=main'/>"
    )));
    assert!(xml.contains(&format!(
        "<link rel='alternate' type='text/html' href='{base}/repo/'/>"
    )));
    let head = git_log(&site, &["-n", "1", "main"]).remove(0);
    assert!(xml.contains(&format!("href='{base}/repo/commit/?id={head}'")));
    // Newest commit: committer 2024-02-01T10:00Z, author an hour earlier.
    assert_eq!(
        texts_of(&texts, "updated")[..2],
        ["2024-02-01T10:00:00Z"; 2]
    );
    assert_eq!(texts_of(&texts, "published")[0], "2024-02-01T09:00:00Z");
    assert_eq!(texts_of(&texts, "updated")[2], "2024-01-15T08:00:00Z");
    assert_eq!(texts_of(&texts, "name")[0], "A U Thor");
    assert_eq!(texts_of(&texts, "email")[0], "author@example.com");
}

#[test]
fn repository_text_is_escaped() {
    let site = build_site("");
    let server = Server::start(&site.rc);
    let xml = server.page("/repo/atom/");
    let texts = parse(&xml);
    assert!(!xml.contains("<script>") && !xml.contains("<b>") && !xml.contains("]]>"));
    assert_eq!(
        texts_of(&texts, "title")[1],
        "Fix &lt;script&gt;alert(1)&lt;/script&gt; &amp; more"
    );
    let content = texts_of(&texts, "content")[0];
    assert!(
        content.contains("Body with ]]&gt; and &lt;b&gt;bold&lt;/b&gt;"),
        "{content}"
    );
    assert!(
        content.contains("\u{FFFD}"),
        "invalid UTF-8 replaced: {content}"
    );
    assert!(!xml.contains('\u{1}'), "control characters dropped");
}

#[test]
fn item_count_path_limit_and_all_refs() {
    let site = build_site("max-atom-items=3\n");
    let server = Server::start(&site.rc);
    assert_eq!(
        entry_ids(&server.page("/repo/atom/")),
        git_log(&site, &["-n", "3", "main"])
    );
    let docs = server.page("/repo/atom/docs");
    assert_eq!(
        entry_ids(&docs),
        git_log(&site, &["-n", "3", "main", "--", "docs"])
    );
    assert_eq!(
        texts_of(&parse(&docs), "title")[0],
        "repo/docs, branch main"
    );
    let all = server.page("/repo/atom/?all=1");
    assert_eq!(entry_ids(&all), git_log(&site, &["-n", "3", "--all"]));
    let side = git_log(&site, &["-n", "1", "side"]).remove(0);
    assert!(entry_ids(&all).contains(&side));
    assert!(!entry_ids(&server.page("/repo/atom/")).contains(&side));
}

#[test]
fn noplainemail_hides_addresses() {
    let site = build_site("noplainemail=1\n");
    let server = Server::start(&site.rc);
    let xml = server.page("/repo/atom/");
    parse(&xml);
    assert!(!xml.contains("<email>") && !xml.contains("example.com"));
    assert!(xml.contains("<name>A U Thor</name>"));
}

#[test]
fn repository_pages_link_their_feed() {
    let site = build_site("");
    let server = Server::start(&site.rc);
    for (page, feed) in [
        ("/repo/", "/repo/atom/?h=main"),
        ("/repo/log/docs", "/repo/atom/docs?h=main"),
    ] {
        let html = server.page(page);
        let link = format!(
            "<link rel='alternate' title='Atom feed' href='{feed}' type='application/atom+xml'/>"
        );
        assert!(html.contains(&link), "{page}");
    }
}
