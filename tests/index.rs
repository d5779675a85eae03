//! The repository index: sections, scan-path, hidden and ignored repositories, search and url
//! prefixes, the embedded default configuration, and links compared with the real cgit.

mod common;

use common::sites::{Sections, content_links, sections};
use common::*;
use std::sync::LazyLock;

static SITE: LazyLock<Sections> = LazyLock::new(sections);

#[test]
fn index_lists_visible_repositories_with_sections() {
    let server = Server::start(&SITE.rc);
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
    let found = server.page("/?q=beta");
    assert!(found.contains("/beta/") && !found.contains("/bare/"));
    let sub = server.get("/al");
    assert_eq!(
        sub.status, 200,
        "a url prefix lists the repositories below it"
    );
    assert!(sub.text().contains("/alpha/") && !sub.text().contains("/bare/"));
    assert_eq!(server.get("/?q=nothing-matches").status, 404);
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
    let index = server.page("/");
    assert!(index.contains("href='/myproject/'"), "{index}");
    assert!(index.contains("href='/vendor/nested/'"));
    let summary = server.page("/myproject/");
    assert!(summary.contains("first"));
    assert!(summary.contains(&format!("http://{}/myproject", server.addr)));
}

#[test]
fn index_links_match_cgit() {
    let server = Server::start(&SITE.rc);
    for url in ["/", "/?s=name", "/al", "/be/"] {
        assert_like_cgit_by(&server, &SITE.rc, url, content_links);
    }
}

/// A scan tree with bare repositories and work trees, in and out of folders, with and without
/// `gitweb.category`, next to a repository without a section.
fn scan_site(root: &std::path::Path) -> std::path::PathBuf {
    let scan = root.join("scan");
    for work in ["work/site", "team/sub/wt", "solo"] {
        init_repo(&scan.join(work));
        commit_all(&scan.join(work), work, "2024-01-05T10:00:00+00:00");
    }
    git(
        &scan,
        &["clone", "-q", "--bare", "work/site", "team/foo.git"],
    );
    git(&scan, &["clone", "-q", "--bare", "work/site", "plain.git"]);
    git(
        &scan.join("team/foo.git"),
        &["config", "gitweb.category", "Cat"],
    );
    git(
        &scan.join("plain.git"),
        &["config", "gitweb.category", "Other"],
    );
    let top = root.join("top.git");
    git(root, &["clone", "-q", "--bare", "scan/solo", "top.git"]);
    top
}

/// Section headers and each repository's name and link, in index order.
fn index_rows(html: &str) -> String {
    let table = between(html, "<table summary='repository list'", "</table>");
    let mut out = Vec::new();
    for row in table.split("<tr").skip(2) {
        if let Some(section) = row.split("class='reposection'>").nth(1) {
            out.push(format!("section {}", section.split('<').next().unwrap()));
        } else if let Some(cell) = row.split("-repo'>").nth(1) {
            let href = hrefs(cell).into_iter().next().unwrap_or_default();
            let name = cell.split("'>").nth(1).unwrap().split('<').next().unwrap();
            out.push(format!("{name} {href}"));
        }
    }
    out.join("\n")
}

#[test]
fn index_order_sections_and_scanned_names_match_cgit() {
    let dir = TempDir::new("index-order");
    let top = scan_site(dir.path());
    let rc = dir.path().join("cgitrc");
    for options in [
        "",
        "remove-suffix=1\n",
        "section-from-path=1\n",
        "section-from-path=-1\n",
        "enable-git-config=1\n",
        "enable-git-config=1\nsection-from-path=1\n",
        "enable-git-config=1\nsection-from-path=-1\nremove-suffix=1\n",
        "section=First\nrepo.url=early\nrepo.path=TOP\nsection=\n",
    ] {
        let options = options.replace("TOP", &top.display().to_string());
        std::fs::write(
            &rc,
            format!(
                "virtual-root=/\n{options}repo.url=top\nrepo.path={}\nscan-path={}/scan\n",
                top.display(),
                dir.path().display()
            ),
        )
        .unwrap();
        let server = Server::start(&rc);
        if options.contains("-1\nremove-suffix") {
            // cgit names `solo/.git` `` here (the section is its whole url); cgitd keeps it
            let html = server.page("/");
            assert!(html.contains("href='/solo/'>solo</a>"), "{html}");
            continue;
        }
        assert_like_cgit_by(&server, &rc, "/", index_rows);
        assert_like_cgit_by(&server, &rc, "/?s=section", index_rows);
        // cgit's names for work trees are their git directories' paths
        if options.is_empty() {
            let html = server.page("/");
            assert!(html.contains("href='/work/site/.git/'>work/site/.git</a>"));
            assert_eq!(server.get("/work/site/.git/").status, 200);
        }
    }
}

#[test]
fn the_operators_root_readme_and_clone_urls_are_as_cgit_shows_them() {
    let dir = TempDir::new("root-readme");
    let readme = dir.path().join("readme.html");
    std::fs::write(
        &readme,
        "<h1>Welcome</h1><p>the <b>operator's</b> html</p>\n",
    )
    .unwrap();
    let base = std::fs::read_to_string(&SITE.rc).unwrap();
    for (name, option) in [
        ("html", format!("root-readme={}\n", readme.display())),
        ("empty", "root-readme=\n".to_string()),
    ] {
        let rc = dir.path().join(format!("cgitrc-{name}"));
        let clone = "clone-url=https://git.example.org/$CGIT_REPO_URL#tip\n";
        std::fs::write(&rc, format!("{option}{clone}{base}")).unwrap();
        let server = Server::start(&rc);
        assert_like_cgit(
            &server,
            &rc,
            "/",
            &[("<a class='active' href='/'>index</a>", "</td>")],
        );
        let about = server.page("/?p=about");
        assert_like_cgit(
            &server,
            &rc,
            "/?p=about",
            &[("<div class='content'>", "</div>")],
        );
        if name == "html" {
            assert!(about.contains("<b>operator's</b>"), "included, not escaped");
        }
        assert_like_cgit(&server, &rc, "/bare/", &[("<a rel='vcs-git'", "</a>")]);
        let summary = server.page("/bare/");
        assert!(
            summary.contains("href='https://git.example.org/bare%23tip'"),
            "{summary}"
        );
    }
}

#[test]
fn the_logo_is_the_global_one_as_the_file_ends_unless_a_repository_sets_its_own() {
    let dir = TempDir::new("logo-order");
    let work = dir.path().join("scan/w");
    init_repo(&work);
    write(&work, "f", "x\n");
    commit_all(&work, "one", "2024-01-02T03:04:05Z");
    let rc = dir.path().join("cgitrc");
    std::fs::write(
        &rc,
        format!(
            "virtual-root=/\nlogo=/a.png\nlogo-link=/la\nrepo.url=x\nrepo.path={w}\n\
             scan-path={scan}\nlogo=/b.png\nlogo-link=/lb\nrepo.url=y\nrepo.path={w}\n\
             repo.logo=/own.png\n",
            w = work.join(".git").display(),
            scan = dir.path().join("scan").display()
        ),
    )
    .unwrap();
    let server = Server::start(&rc);
    for url in ["/", "/x/", "/y/", "/w/.git/"] {
        assert_like_cgit(&server, &rc, url, &[("<td class='logo'", "</td>")]);
    }
    assert!(server.page("/x/").contains("<img src='/b.png'"));
}

#[test]
fn sorted_searched_and_paged_index_links_match_cgit() {
    let dir = TempDir::new("index-pages");
    let rc = dir.path().join("cgitrc");
    let text = std::fs::read_to_string(&SITE.rc).unwrap();
    std::fs::write(&rc, format!("max-repo-count=2\n{text}")).unwrap();
    let server = Server::start(&rc);
    for url in [
        "/",
        "/?ofs=2",
        "/?s=desc",
        "/?s=desc&ofs=2",
        "/?s=name&ofs=4",
        "/?q=a&ofs=1",
        "/?q=BETA",
    ] {
        assert_like_cgit_by(&server, &rc, url, content_links);
    }
}
