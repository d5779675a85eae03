//! Summary and refs pages: branches, tags, snapshots and decorations, escaped subjects, refs
//! filtered by kind, hidden repositories still reachable; links compared with the real cgit.

mod common;

use common::sites::{Sections, content_links, sections};
use common::*;
use std::sync::LazyLock;

static SITE: LazyLock<Sections> = LazyLock::new(sections);

#[test]
fn summary_and_refs_show_branches_and_tags() {
    let server = Server::start(&SITE.rc);
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
    let refs = server.page("/foo+bar/refs/");
    assert!(refs.contains("<a href='/foo+bar/tag/?h=light'>light</a>"));
    assert!(refs.contains("<a href='/foo+bar/log/?h=feature'>feature</a>"));
    let heads = server.page("/foo+bar/refs/heads");
    assert!(heads.contains("feature") && !heads.contains("/tag/?h=v1.0"));
    let tags = server.page("/with%20space/refs/tags");
    assert!(tags.contains("v1.0") && !tags.contains("?h=feature'>feature"));
    assert_eq!(
        server.get("/secret/").status,
        200,
        "hidden repos stay reachable"
    );
}

#[test]
fn summary_and_refs_links_match_cgit() {
    let server = Server::start(&SITE.rc);
    for url in [
        "/bare/",
        "/bare/refs/",
        "/foo+bar/",
        "/foo+bar/refs/",
        "/with%20space/refs/tags",
        "/bare/?h=feature",
    ] {
        assert_like_cgit_by(&server, &SITE.rc, url, content_links);
    }
}
