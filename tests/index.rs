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
