//! The blame page on a small generated repository: attribution equal to `git blame`, markup
//! equal to cgit's, binaries, folders and disabled repositories refused.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

const DAY: i64 = 86_400;

struct Site {
    rc: PathBuf,
    work: PathBuf,
}

/// A file changed by several commits of several authors, a binary file, a directory; served
/// as `r` with blame enabled and as `off` without.
static SITE: LazyLock<Site> = LazyLock::new(|| {
    let dir = shared_dir("blame");
    let work = dir.join("work");
    init_repo(&work);
    let t = 1_700_000_000;
    write(&work, "src/lib.txt", "one\ntwo\nthree\nfour\nfive\nsix\n");
    write(&work, "data.bin", b"\x00\x01\x02binary\xff");
    commit_as(&work, "Ada", t, "first");
    write(
        &work,
        "src/lib.txt",
        "one\nTWO\nthree\nfour\n\t<script>x & y</script>\nsix\n",
    );
    commit_as(&work, "Bob", t + DAY, "second");
    write(
        &work,
        "src/lib.txt",
        "zero\none\nTWO\nthree\nFOUR\nFOUR and a half\n\t<script>x & y</script>\nsix\n",
    );
    commit_as(&work, "Cy", t + 2 * DAY, "third");
    write(&work, "src/other.txt", "unrelated\n");
    commit_as(&work, "Ada", t + 3 * DAY, "fourth <touches nothing blamed>");
    let rc = r_and_off_rc(&dir, &work.join(".git"), "repo.enable-blame=1");
    Site { rc, work }
});

/// The commit of each line, from `git blame --porcelain`.
fn git_blame(work: &Path, path: &str) -> Vec<String> {
    let out = git(work, &["blame", "--porcelain", path]);
    out.lines()
        .filter(|l| {
            let first = l.split(' ').next().unwrap_or("");
            first.len() == 40 && first.bytes().all(|b| b.is_ascii_hexdigit())
        })
        .map(|l| l[..40].to_string())
        .collect()
}

/// (commit, line count) per group of the blame table.
fn blame_groups(html: &str) -> Vec<(String, usize)> {
    let hashes = between(html, "<td class='hashes'>", "</td>");
    let numbers = between(html, "<td class='linenumbers'>", "</td>");
    let ids: Vec<String> = hashes
        .split("<span class='oid'>")
        .skip(1)
        .map(|g| between(g, "?id=", "'")[4..].to_string())
        .collect();
    let counts: Vec<usize> = numbers
        .split("<div class='alt'>")
        .skip(1)
        .map(|g| g.matches("<a id='n").count())
        .collect();
    assert_eq!(ids.len(), counts.len(), "{html}");
    ids.into_iter().zip(counts).collect()
}

#[test]
fn blame_attributes_lines_like_git_blame() {
    let site = &*SITE;
    let server = Server::start(&site.rc);
    let response = server.get("/r/blame/src/lib.txt");
    assert_eq!(response.status, 200);
    let html = response.text();
    let groups = blame_groups(&html);
    let per_line: Vec<String> = groups
        .iter()
        .flat_map(|(id, n)| std::iter::repeat_n(id.clone(), *n))
        .collect();
    assert_eq!(per_line, git_blame(&site.work, "src/lib.txt"));
    for pair in groups.windows(2) {
        assert_ne!(
            pair[0].0, pair[1].0,
            "groups hold consecutive lines of one commit"
        );
    }
    assert!(groups.iter().any(|(_, n)| *n > 1));
    // line anchors run 1..=n, content is escaped
    for n in 1..=per_line.len() {
        assert!(html.contains(&format!("<a id='n{n}' href='#n{n}'>{n}</a>")));
    }
    assert!(html.contains("&lt;script&gt;x &amp; y&lt;/script&gt;"));
    assert!(!html.contains("<script>x"));
    assert!(html.contains("<a class='active' href='/r/blame/src/lib.txt'>blame</a>"));
    // an older revision blames its own lines
    let first = git(&site.work, &["rev-list", "--max-parents=0", "HEAD"]);
    let old = server.page(&format!("/r/blame/src/lib.txt?id={}", first.trim()));
    let old_groups = blame_groups(&old);
    assert_eq!(old_groups, vec![(first.trim().to_string(), 6)]);
    // the same page again comes from the cache and is the same
    assert_eq!(server.get("/r/blame/src/lib.txt").text().len(), html.len());
}

#[test]
fn blame_markup_equals_cgit() {
    let server = Server::start(&SITE.rc);
    for url in ["/r/blame/src/lib.txt", "/r/blame/src/lib.txt?id=HEAD~1"] {
        // cgit links the folders' crumbs to blame, which it refuses for folders (404);
        // cgitd links them to the tree.
        assert_like_cgit_by(&server, &SITE.rc, url, |html| {
            between(html, "<div class='path'>", "</div> <!-- class=content -->")
                .replace("href='/r/blame/'>", "href='/r/tree/'>")
                .replace("href='/r/blame/?", "href='/r/tree/?")
                .replace("href='/r/blame/src'>", "href='/r/tree/src'>")
                .replace("href='/r/blame/src?", "href='/r/tree/src?")
        });
    }
}

#[test]
fn blame_refuses_binaries_folders_and_disabled_repositories() {
    let server = Server::start(&SITE.rc);
    let bin = server.get("/r/blame/data.bin");
    assert_eq!(bin.status, 200);
    assert!(
        bin.text()
            .contains("<div class='error'>blob is binary.</div>")
    );
    assert!(!bin.text().contains("class='blame blob'"));
    for url in ["/r/blame/src", "/r/blame/", "/r/blame"] {
        let r = server.get(url);
        assert_eq!(r.status, 404, "{url}");
        assert!(
            r.text().contains("Blame is not available for folders."),
            "{url}"
        );
    }
    assert_eq!(server.get("/r/blame/nope.txt").status, 404);
    assert_eq!(
        server.get("/r/blame/src/lib.txt?id=nonexistent").status,
        404
    );
    assert_eq!(server.get("/r/blame/src/lib.txt?id=--output=x").status, 400);
    let off = server.get("/off/blame/src/lib.txt");
    assert_eq!(off.status, 403);
    assert!(off.text().contains("Blame is disabled"));
    // blame buttons and links only where it is enabled
    let tree = server.page("/r/tree/src");
    assert!(tree.contains("<a class='button' href='/r/blame/src/lib.txt'>blame</a>"));
    let blob = server.page("/r/tree/src/lib.txt");
    assert!(blob.contains("(<a href='/r/blame/src/lib.txt'>blame</a>)"));
    let off_tree = server.page("/off/tree/src");
    assert!(off_tree.contains("href='/off/tree/src/lib.txt'>lib.txt</a>"));
    assert!(!off_tree.contains(">blame<"));
}

/// Blamed commits are abbreviated to git's automatic length (7 hex digits here, more in large
/// repositories) as cgit does, which ignores the repository's `core.abbrev`.
#[test]
fn blame_ids_use_gits_automatic_length() {
    let copy = copy_of(SITE.rc.parent().unwrap(), "blame-abbrev");
    let work = copy.path().join("work");
    git(&work, &["config", "core.abbrev", "12"]);
    let rc = r_and_off_rc(copy.path(), &work.join(".git"), "repo.enable-blame=1");
    let server = Server::start(&rc);
    let html = server.page("/r/blame/src/lib.txt");
    let hashes = between(&html, "<td class='hashes'>", "</td>");
    let shown: Vec<&str> = hashes
        .split("</a></span>")
        .filter_map(|g| g.rsplit_once('>').map(|(_, id)| id))
        .filter(|id| !id.is_empty())
        .collect();
    assert!(
        !shown.is_empty()
            && shown
                .iter()
                .all(|id| id.len() == 7 && id.bytes().all(|b| b.is_ascii_hexdigit())),
        "{shown:?}"
    );
    assert!(!shown.is_empty());
    assert_like_cgit(
        &server,
        &rc,
        "/r/blame/src/lib.txt",
        &[("<td class='hashes'>", "</td>")],
    );
}
