//! Foundation: cgitrc with several repositories served over real HTTP; index, summary and refs
//! compared with the real cgit where it is installed; error statuses.

mod common;

use common::*;

/// A site: a bare repository with branches and tags, a work tree, urls with `+` and spaces,
/// sections, a scan-path, an ignored and a hidden repository.
struct Site {
    dir: TempDir,
    rc: std::path::PathBuf,
}

fn build_site() -> Site {
    let dir = TempDir::new("foundation");
    let root = dir.path();
    let work = root.join("work");
    init_repo(&work);
    write(&work, "README.md", "# Hello\n");
    commit_all(&work, "Initial commit", "2024-01-01T10:00:00+00:00");
    git(&work, &["tag", "-a", "v1.0", "-m", "Version 1.0"]);
    write(&work, "src/lib.rs", "pub fn x() {}\n");
    commit_all(&work, "Add <lib> & things", "2024-02-01T10:00:00+00:00");
    git(&work, &["tag", "light"]);
    git(&work, &["checkout", "-q", "-b", "feature"]);
    write(&work, "feature.txt", "f\n");
    commit_all(&work, "Feature work", "2024-03-01T10:00:00+00:00");
    git(&work, &["checkout", "-q", "main"]);
    git(&work, &["tag", "-a", "v2.0", "-m", "Version 2.0"]);
    git(root, &["clone", "-q", "--bare", "work", "bare.git"]);
    git(&root.join("bare.git"), &["pack-refs", "--all"]);
    let scan = root.join("scan");
    init_repo(&scan.join("alpha"));
    commit_all(&scan.join("alpha"), "alpha", "2024-01-05T10:00:00+00:00");
    git(&scan, &["clone", "-q", "--bare", "alpha", "beta.git"]);
    std::fs::write(scan.join("beta.git/description"), "The beta repository\n").unwrap();
    let rc = root.join("cgitrc");
    let text = format!(
        "virtual-root=/\nsnapshots=tar.gz zip\nenable-index-links=1\n\
         section=Main\n\
         repo.url=bare\nrepo.path={root}/bare.git\nrepo.desc=A bare repository\nrepo.owner=Alice\n\n\
         repo.url=foo+bar\nrepo.path={root}/work/.git\nrepo.desc=plus sign\n\n\
         repo.url=with space\nrepo.path={root}/bare.git\n\n\
         section=Hidden things\n\
         repo.url=secret\nrepo.path={root}/bare.git\nrepo.hide=1\n\n\
         repo.url=gone\nrepo.path={root}/bare.git\nrepo.ignore=1\n\n\
         section=Scanned\nremove-suffix=1\nscan-path={root}/scan\n",
        root = root.display()
    );
    std::fs::write(&rc, text).unwrap();
    Site { dir, rc }
}

#[test]
fn index_lists_visible_repositories_with_sections() {
    let site = build_site();
    let server = Server::start(&site.rc);
    let index = server.get("/");
    assert_eq!(index.status, 200);
    let html = index.text();
    for url in ["/bare/", "/foo+bar/", "/with%20space/", "/alpha/", "/beta/"] {
        assert!(
            html.contains(&format!("href='{url}'")),
            "{url} missing from index"
        );
    }
    assert!(!html.contains("/secret/"), "hidden repository listed");
    assert!(!html.contains("/gone/"), "ignored repository listed");
    assert!(html.contains("<td colspan='5' class='reposection'>Main</td>"));
    assert!(html.contains("The beta repository"));
    assert!(html.contains("A bare repository"));
    // search filters, prefix lists a subtree
    assert!(!server.get("/?q=beta").text().contains("/bare/"));
    let sub = server.get("/al");
    assert_eq!(
        sub.status, 200,
        "a url prefix lists the repositories below it"
    );
    assert!(sub.text().contains("/alpha/") && !sub.text().contains("/bare/"));
    assert_eq!(server.get("/?q=nothing-matches").status, 404);
}

#[test]
fn summary_and_refs_show_branches_and_tags() {
    let site = build_site();
    let server = Server::start(&site.rc);
    let summary = server.get("/bare/");
    assert_eq!(summary.status, 200);
    let html = summary.text();
    assert!(html.contains("<a href='/bare/log/?h=feature'>feature</a>"));
    assert!(html.contains("<a href='/bare/log/'>main</a>"));
    assert!(html.contains("<a href='/bare/tag/?h=v2.0'>v2.0</a>"));
    assert!(html.contains("<a href='/bare/snapshot/bare-2.0.tar.gz'>bare-2.0.tar.gz</a>"));
    assert!(
        html.contains("Add &lt;lib&gt; &amp; things"),
        "subjects are escaped"
    );
    assert!(html.contains("class='tag-annotated-deco'"));
    let refs = server.get("/foo+bar/refs/").text();
    assert!(refs.contains("<a href='/foo+bar/tag/?h=light'>light</a>"));
    assert!(refs.contains("<a href='/foo+bar/log/?h=feature'>feature</a>"));
    let heads = server.get("/foo+bar/refs/heads").text();
    assert!(heads.contains("feature") && !heads.contains("/tag/?h=v1.0"));
    let tags = server.get("/with%20space/refs/tags").text();
    assert!(tags.contains("v1.0") && !tags.contains("?h=feature'>feature"));
    assert_eq!(
        server.get("/secret/").status,
        200,
        "hidden repos stay reachable"
    );
}

#[test]
fn bad_input_gets_error_pages() {
    let site = build_site();
    let server = Server::start(&site.rc);
    let r = server.get("/gone/");
    assert_eq!(r.status, 404, "ignored repositories do not exist");
    assert!(r.text().contains("No repositories found"));
    let r = server.get("/bare/frobnicate/");
    assert_eq!(r.status, 404);
    assert!(r.text().contains("Invalid request"));
    assert_eq!(server.get("/bare/log/?ofs=abc").status, 400);
    let r = server.get("/bare/?h=no-such-branch");
    assert_eq!(r.status, 404);
    assert!(r.text().contains("Invalid branch: no-such-branch"));
    let r = server.get("/bare/?h=%3Cscript%3E");
    assert!(!r.text().contains("<script>"), "input is escaped");
    assert_eq!(server.request("POST", "/", &[]).status, 405);
    assert_eq!(server.request("HEAD", "/bare/", &[]).status, 200);
}

#[test]
fn a_vanished_repository_only_breaks_itself() {
    let site = build_site();
    let copy = site.dir.path().join("copy.git");
    git(
        site.dir.path(),
        &["clone", "-q", "--bare", "work", "copy.git"],
    );
    let mut rc = std::fs::read_to_string(&site.rc).unwrap();
    rc.push_str(&format!("repo.url=copy\nrepo.path={}\n", copy.display()));
    rc.push_str("repo.url=notgit\nrepo.path=/nonexistent/dir\n");
    std::fs::write(&site.rc, rc).unwrap();
    let server = Server::start(&site.rc);
    assert_eq!(server.get("/copy/").status, 200);
    std::fs::remove_dir_all(&copy).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let r = server.get("/copy/");
    assert!(r.status > 400, "status {}", r.status);
    let server_path = site.dir.path().to_str().unwrap();
    assert!(!r.text().contains(server_path), "{}", r.text());
    let r = server.get("/notgit/");
    assert_eq!(r.status, 404);
    assert!(r.text().contains("Repository not found"));
    assert!(!r.text().contains("/nonexistent"), "{}", r.text());
    assert_eq!(server.get("/bare/").status, 200);
    assert_eq!(server.get("/").status, 200);
}

#[test]
fn static_files_are_served() {
    let site = build_site();
    let server = Server::start(&site.rc);
    let css = server.get("/cgit.css");
    assert_eq!(css.status, 200);
    assert!(css.text().contains("table.diffstat"));
    assert_eq!(
        server.get("/cgit.png").header("content-type"),
        Some("image/png")
    );
    assert_eq!(server.get("/favicon.ico").status, 200);
}

#[test]
fn embedded_default_serves_the_current_repository() {
    let dir = TempDir::new("embedded");
    let repo = dir.path().join("myproject");
    init_repo(&repo);
    write(&repo, "a.txt", "a\n");
    commit_all(&repo, "first", "2024-01-01T00:00:00+00:00");
    init_repo(&repo.join("vendor/nested"));
    commit_all(
        &repo.join("vendor/nested"),
        "nested",
        "2024-01-01T00:00:00+00:00",
    );
    let server = Server::start_in(&repo, &[]);
    let index = server.get("/").text();
    assert!(index.contains("href='/myproject/'"), "{index}");
    assert!(index.contains("href='/vendor/nested/'"));
    let summary = server.get("/myproject/").text();
    assert!(summary.contains("first"));
    assert!(summary.contains(&format!("http://{}/myproject", server.addr)));
}

/// The hrefs inside `div.content`, the part of a page that lists repositories and refs. cgit
/// leaves spaces unescaped in some repository links; browsers send them as `%20`, as we write them.
fn content_links(html: &str) -> Vec<String> {
    let start = html.find("<div class='content'>").expect("content div");
    let end = html.rfind("<!-- class=content -->").expect("content end");
    hrefs(&html[start..end])
        .into_iter()
        .map(|h| h.replace(' ', "%20"))
        .collect()
}

#[test]
fn links_match_cgit() {
    let site = build_site();
    let server = Server::start(&site.rc);
    for url in [
        "/",
        "/?s=name",
        "/al",
        "/be/",
        "/bare/",
        "/bare/refs/",
        "/foo+bar/",
        "/foo+bar/refs/",
        "/with%20space/refs/tags",
        "/bare/?h=feature",
    ] {
        let Some(expected) = cgit(&site.rc, url) else {
            return;
        };
        let ours = server.get(url).text();
        assert_eq!(
            content_links(&ours),
            content_links(&expected),
            "links on {url} differ from cgit"
        );
    }
}
