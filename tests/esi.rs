//! ESI behind a real varnishd: the page Varnish assembles equals the page cgitd renders itself,
//! a commit's diff fragment fetched through one fork is a cache hit through another, frames
//! link to their own repository, and branch-relative pages follow pushes.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

struct Forks {
    rc: PathBuf,
    work: PathBuf,
    a: PathBuf,
    commits: Vec<(String, Option<&'static str>)>,
}

/// The forks, built once and only read; the test that pushes works on a [`copy_of`] them.
static FORKS: LazyLock<Forks> = LazyLock::new(|| build(&shared_dir("esi")));

/// A history with small, large, binary and renamed changes, served as fork `a` and fork `b`
/// (a clone of `a` with one more commit), both with enable-esi.
fn build(root: &Path) -> Forks {
    let work = root.join("work");
    init_repo(&work);
    write(&work, "src/lib.rs", "fn one() {}\n".repeat(20));
    write(&work, "README", "hello\n");
    let root_commit = commit_all(&work, "root commit", "2024-01-01T00:00:00+00:00");
    write(&work, "src/lib.rs", "fn one() {}\nfn two() {}\n".repeat(12));
    let small = commit_all(&work, "small change", "2024-01-02T00:00:00+00:00");
    let big: String = (0..3000).map(|i| format!("line {i} <&>\n")).collect();
    write(&work, "big.txt", big);
    let large = commit_all(&work, "large change", "2024-01-03T00:00:00+00:00");
    write(&work, "logo.bin", [0u8, 159, 146, 150, 0, 1, 2]);
    let binary = commit_all(&work, "binary file", "2024-01-04T00:00:00+00:00");
    git(&work, &["mv", "README", "README.md"]);
    let rename = commit_all(&work, "rename", "2024-01-05T00:00:00+00:00");
    git(root, &["clone", "-q", "--bare", "work", "a.git"]);
    git(root, &["clone", "-q", "--bare", "a.git", "b.git"]);
    let b_work = root.join("bwork");
    git(root, &["clone", "-q", "b.git", "bwork"]);
    write(&b_work, "fork.txt", "only in b\n");
    commit_all(&b_work, "fork-only commit", "2024-01-06T00:00:00+00:00");
    git(&b_work, &["push", "-q", "origin", "main"]);
    forks_in(
        root,
        vec![
            (root_commit, None),
            (small.clone(), None),
            (small, Some("src/lib.rs")),
            (large, None),
            (binary, None),
            (rename, None),
        ],
    )
}

/// Writes the cgitrc serving `root`'s forks; `commits` as [`build`] made them.
fn forks_in(root: &Path, commits: Vec<(String, Option<&'static str>)>) -> Forks {
    let rc = root.join("cgitrc");
    std::fs::write(
        &rc,
        format!(
            "enable-esi=1\nmetrics-path=/metrics\nrepo.url=a\nrepo.path={d}/a.git\nrepo.url=b\nrepo.path={d}/b.git\n",
            d = root.display()
        ),
    )
    .unwrap();
    Forks {
        rc,
        work: root.join("work"),
        a: root.join("a.git"),
        commits,
    }
}

fn page_url(repo: &str, page: &str, id: &str, path: Option<&str>, dt: u8) -> String {
    let dt = if dt > 0 {
        format!("&dt={dt}")
    } else {
        String::new()
    };
    format!("/{repo}/{page}/{}?id={id}{dt}", path.unwrap_or(""))
}

#[test]
fn varnish_assembles_the_same_page_and_shares_fragments_across_forks() {
    let forks = &*FORKS;
    let server = Server::start(&forks.rc);
    let varnish = Varnish::start(&server.addr);
    for (id, path) in &forks.commits {
        for page in ["commit", "diff"] {
            for dt in [0, 1, 2] {
                let url = page_url("a", page, id, *path, dt);
                let direct = server.get(&url);
                assert_eq!(direct.status, 200, "{url}");
                assert!(!direct.text().contains("esi:include"));
                let frame = server.request("GET", &url, &[("Surrogate-Capability", "v=ESI/1.0")]);
                assert!(
                    frame.text().contains("<esi:include src='/a/esi-diff/"),
                    "{url}"
                );
                assert_eq!(
                    frame.header("surrogate-control"),
                    Some("content=\"ESI/1.0\"")
                );
                let assembled = varnish.get(&url);
                assert_eq!(assembled.status, 200);
                assert_eq!(
                    assembled.text(),
                    direct.text(),
                    "Varnish-assembled {url} differs"
                );
            }
        }
    }
    // The same commit through the other fork: the fragment is already in Varnish.
    let (small, _) = &forks.commits[1];
    let hits_before = varnish.stat("MAIN.cache_hit");
    let fragments_before = server.answers("esi_diff", 200);
    let b_page = varnish.get(&page_url("b", "commit", small, None, 0));
    assert_eq!(b_page.status, 200);
    assert_eq!(
        server.answers("esi_diff", 200),
        fragments_before,
        "Varnish asked cgitd for no fragment through fork b"
    );
    // varnishd adds a worker's counters to the shared ones as the worker finishes its job.
    let hit = (0..40).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        varnish.stat("MAIN.cache_hit") > hits_before
    });
    assert!(hit, "fragment hit through fork b");
    let b_html = b_page.text();
    assert!(b_html.contains("href='/b/log/'") && !b_html.contains("href='/a/"));
    let a_page = varnish.get(&page_url("a", "commit", small, None, 0));
    let a_html = a_page.text_with(200, "fork a's commit page through Varnish");
    assert!(a_html.contains("href='/a/log/'") && !a_html.contains("href='/b/"));
    let frame = server.request(
        "GET",
        &page_url("b", "commit", small, None, 0),
        &[("Surrogate-Capability", "v=ESI/1.0")],
    );
    let src = frame
        .text()
        .split("<esi:include src='")
        .nth(1)
        .unwrap()
        .split('\'')
        .next()
        .unwrap()
        .replace("&amp;", "&");
    let fragment = varnish.get(&src);
    assert_eq!(fragment.header("x-cache"), Some("hit"), "{src}");
    assert!(
        fragment
            .header("cache-control")
            .unwrap()
            .contains("immutable")
    );
}

#[test]
fn fragments_are_guarded() {
    let forks = &*FORKS;
    let mut rc = std::fs::read_to_string(&forks.rc).unwrap();
    rc.push_str(&format!(
        "repo.url=hidden\nrepo.path={}\nrepo.hide=1\n",
        forks.a.display()
    ));
    rc.push_str(&format!(
        "repo.url=plain\nrepo.path={}\nrepo.enable-esi=0\n",
        forks.a.display()
    ));
    let dir = TempDir::new("esi-guarded");
    let rc_path = dir.path().join("cgitrc");
    std::fs::write(&rc_path, rc).unwrap();
    let server = Server::start(&rc_path);
    let (small, _) = &forks.commits[1];
    let ok = server.get(&format!("/a/esi-diff/?id={small}"));
    assert_eq!(ok.status, 200);
    assert!(ok.header("cache-control").unwrap().starts_with("public"));
    let hidden = server.get(&format!("/hidden/esi-diff/?id={small}"));
    assert_eq!(hidden.status, 200);
    assert!(
        hidden
            .header("cache-control")
            .unwrap()
            .starts_with("private")
    );
    assert_eq!(
        server.get(&format!("/plain/esi-diff/?id={small}")).status,
        404
    );
    assert_eq!(
        server.get("/a/esi-diff/?id=main").status,
        400,
        "full ids only"
    );
    let b_only = git(
        &forks.work.parent().unwrap().join("bwork"),
        &["rev-parse", "HEAD"],
    );
    assert_eq!(
        server
            .get(&format!("/a/esi-diff/?id={}", b_only.trim()))
            .status,
        404,
        "objects of another fork are not served"
    );
    // Without a surrogate the page is assembled by cgitd.
    let page = server.get(&format!("/a/commit/?id={small}"));
    assert!(page.text().contains("class='diffstat'"));
}

#[test]
fn branch_pages_through_varnish_follow_pushes() {
    let copy = copy_of(FORKS.rc.parent().unwrap(), "esi-push");
    let forks = forks_in(copy.path(), FORKS.commits.clone());
    let server = Server::start(&forks.rc);
    let varnish = Varnish::start(&server.addr);
    let before = varnish.get("/a/commit/?h=main");
    assert_eq!(before.status, 200);
    assert!(before.text().contains("rename"));
    write(&forks.work, "new.txt", "new\n");
    commit_all(
        &forks.work,
        "pushed after caching",
        "2024-02-01T00:00:00+00:00",
    );
    git(
        &forks.work,
        &["push", "-q", forks.a.to_str().unwrap(), "main"],
    );
    let mut seen = false;
    for _ in 0..30 {
        std::thread::sleep(Duration::from_millis(200));
        if varnish
            .get("/a/commit/?h=main")
            .text()
            .contains("pushed after caching")
        {
            seen = true;
            break;
        }
    }
    assert!(seen, "the pushed commit shows through Varnish");
}

#[test]
fn relative_fragment_links_only_where_they_resolve() {
    let forks = &*FORKS;
    let server = Server::start(&forks.rc);
    let (small, path) = &forks.commits[2];
    let path = path.unwrap();
    let esi = [("Surrogate-Capability", "v=ESI/1.0")];
    // The path-form URL: the include (or the assembled body) links relatively.
    let canonical = format!("/a/commit/{path}?id={small}");
    let frame = server.request("GET", &canonical, &esi).text();
    assert!(frame.contains("<esi:include src='/a/esi-diff/"));
    assert!(server.page(&canonical).contains("href='../../diff/"));
    // URLs the relative links would not resolve from get cgit's absolute links, assembled here.
    for url in [
        format!("/?url=a/commit/{path}&id={small}"),
        format!("/?r=a&p=commit&path={path}&id={small}"),
        format!("/a/commit?id={small}"),
        format!("/a/commit/src%2flib.rs?id={small}"),
    ] {
        let r = server.request("GET", &url, &esi);
        let html = r.text_with(200, &url);
        assert!(!html.contains("esi:include"), "{url}");
        assert!(r.header("surrogate-control").is_none(), "{url}");
        let links = hrefs(&html);
        assert!(!links.iter().any(|h| h.starts_with("../")), "{url}");
        assert!(
            links.iter().any(|h| h.starts_with("/a/diff/")),
            "{url}: {links:?}"
        );
    }
}
