//! commit and diff pages as HTML: content, modes and options, links compared with cgit's, bad input.

use super::*;

#[test]
fn commit_page_shows_info_message_and_diff() {
    let f = &*FIXTURE;
    let server = Server::start(&f.rc);
    let id = f.rev("main~7");
    let r = server.get(&format!("/r/commit/?id={id}"));
    assert_eq!(r.status, 200);
    let html = r.text();
    for needle in [
        "<div class='cgit-panel'><b>diff options</b>",
        "<table summary='commit info' class='commit-info'>",
        "<tr><th>author</th><td>A U Thor &lt;author@example.com&gt;</td><td class='right'>2024-01-02 10:00:00 +0000</td></tr>",
        "<div class='commit-subject'>Rename, edit, chmod</div>",
        "<div class='commit-msg'>A body paragraph\nwith two lines.\n\nAnd a second one.\n</div>",
        "<div class='diffstat-header'><a href='/r/diff/?id=",
        "<table summary='diffstat' class='diffstat'>",
        "<td class='mov'><a href='/r/diff/README.md?id=",
        "(renamed from README)",
        "<td class='mode'>-rwxr-xr-x<span class='modechange'>[-rw-r--r--]</span></td><td class='upd'>",
        "<div class='diffstat-summary'>6 files changed,",
        "<table summary='diff' class='diff'>",
        "<div class='add'>+\tputs(&quot;tail&quot;);</div>",
        "<div class='ctx'>\\ No newline at end of file</div>",
        "+++ b/<a href='/r/tree/dir/with%20space.txt?id=",
        "--- a/<a href='/r/tree/with%20space.txt?id=",
        "<th>download</th>",
    ] {
        assert!(html.contains(needle), "missing {needle:?} in\n{html}");
    }
    let git_diff = git(&f.work, &["diff", &f.rev("main~8"), &id, "--", "main.c"]);
    let headers: Vec<&str> = git_diff.lines().filter(|l| l.starts_with("@@")).collect();
    assert_eq!(headers.len(), 2);
    assert!(headers[0].ends_with(" @@ int main(int argc, char **argv)"));
    assert!(headers[1].ends_with(" @@ static void helper(void)"));
    for h in headers {
        assert!(
            html.contains(&format!("<div class='hunk'>{h}</div>")),
            "{h}"
        );
    }
    assert!(html.contains(&format!(
        "<th>parent</th><td colspan='2' class='oid'><a href='/r/commit/?id={}'",
        f.rev("main~8")
    )));
    // a type change, an (empty) rename and an addition
    let html = server
        .get(&format!("/r/commit/?id={}", f.rev("main~5")))
        .text();
    for class in ["typ", "mov", "add"] {
        assert!(html.contains(&format!("<td class='{class}'>")), "{class}");
    }
    assert!(html.contains(
        "<td class='mode'>l---------<span class='modechange'>[-rwxr-xr-x]</span></td><td class='typ'>"
    ));
    // submodules
    let html = server
        .get(&format!("/r/commit/?id={}", f.rev("main~3")))
        .text();
    assert!(html.contains("<td class='mode'>m---------</td>"));
    assert!(
        html.contains(
            "<div class='del'>-Subproject 1111111111111111111111111111111111111111</div>"
        )
    );
    // merges diff against the first parent, octopus merges show no diff
    let merge = server
        .get(&format!("/r/commit/?id={}", f.rev("main~1")))
        .text();
    assert!(merge.contains("side.txt") && merge.matches("<th>parent</th>").count() == 2);
    let octopus = server
        .get(&format!("/r/commit/?id={}", f.rev("main")))
        .text();
    assert_eq!(octopus.matches("<th>parent</th>").count(), 3);
    assert!(!octopus.contains("diffstat"));
    // notes, escaped
    assert!(html_has_note(&server, &f.rev("main~7")));
    // a diff over the limits is cut short, not refused
    let big = server.get(&format!("/r/commit/?id={}", f.rev("big")));
    assert_eq!(big.status, 200);
    assert!(big.text().contains("(diff too large to show)"));
    assert!(
        big.text().contains(
            "1 files changed, 12000 insertions, 0 deletions (diff too large: 1 file not shown)"
        ),
        "{}",
        between(&big.text(), "<div class='diffstat-summary'>", "</div>")
    );
    // a message in a declared legacy encoding is shown in UTF-8, on the commit and log pages
    let latin1 = git(&f.work, &["log", "--format=%H", "--grep=Non-UTF-8", "main"]);
    let page = server
        .get(&format!("/r/commit/?id={}", latin1.trim()))
        .text();
    assert!(page.contains("Non-UTF-8 message: café"), "{page}");
    assert!(page.contains("Body with é too."));
    let log = server.page("/r/log/");
    assert!(log.contains("Non-UTF-8 message: café"));
    // binary files
    let bin = server
        .get(&format!("/r/commit/?id={}", f.rev("binary~5")))
        .text();
    assert!(
        bin.contains("<td class='right'>bin</td><td class='graph'>10 -&gt; 19 bytes</td></tr>")
    );
    assert!(bin.contains("</div>Binary files differ"));
    // root commit: everything added
    let root = server
        .get(&format!("/r/commit/?id={}", f.rev("main~8")))
        .text();
    assert!(root.contains("<div class='diffstat-summary'>7 files changed, "));
    assert!(!root.contains("<th>parent</th>"));
}

fn html_has_note(server: &Server, id: &str) -> bool {
    server.page(&format!("/r/commit/?id={id}")).contains(
        "<div class='notes-header'>Notes</div><div class='notes'>A note &lt;with&gt; markup\n</div><div class='notes-footer'></div>",
    )
}

#[test]
fn diff_page_modes_options_and_path_limit() {
    let f = &*FIXTURE;
    let server = Server::start(&f.rc);
    let id = f.rev("main~7");
    let ss = server.page(&format!("/r/diff/?id={id}&dt=1"));
    for needle in [
        "<table summary='ssdiff' class='ssdiff'>",
        "<td class='space' colspan='4'><div></div></td>",
        "<td class='head' colspan='4'><div class='head'>diff --git",
        "<td colspan='4' class='hunk'>@@",
        "<td class='lineno'><a href='/r/tree/main.c?id=",
        "<td class='add_dark'></td>",
        "<td class='changed'>",
        "<span class='add'>",
        "<td class='foot' colspan='4'></td>",
        "<option value='1' selected='selected'>ssdiff</option>",
        "href='/r/diff/main.c?id=",
    ] {
        assert!(ss.contains(needle), "missing {needle:?}");
    }
    assert!(ss.contains("&amp;dt=1'"), "links keep the mode");
    let stat = server.page(&format!("/r/diff/?id={id}&dt=2"));
    assert!(
        stat.contains("class='diffstat'")
            && !stat.contains("class='diff'")
            && !stat.contains("ssdiff'>")
    );
    // context and whitespace options
    let wide = server.page(&format!("/r/diff/?id={id}&context=10"));
    let git_wide = git(
        &f.work,
        &["diff", "-U10", &f.rev("main~8"), &id, "--", "main.c"],
    );
    let first_hunk = git_wide.lines().find(|l| l.starts_with("@@")).unwrap();
    assert!(
        wide.contains(&format!("<div class='hunk'>{first_hunk}</div>")),
        "context 10"
    );
    assert!(wide.contains("&amp;context=10'"));
    let ws = f.rev("main~2");
    let normal = server.page(&format!("/r/diff/?id={ws}"));
    assert!(normal.contains("<td class='upd'>"));
    let ignored = server.page(&format!("/r/diff/?id={ws}&ignorews=1"));
    assert!(
        ignored.contains("0 insertions, 0 deletions"),
        "whitespace ignored"
    );
    assert!(ignored.contains("<option value='1' selected='selected'>ignore</option>"));
    // path limit: one file, crumbs
    let limited = server
        .get(&format!("/r/diff/dir/with%20space.txt?id={id}"))
        .text();
    assert!(limited.contains("<div class='diffstat-summary'>1 files changed"));
    assert!(limited.contains("(limited to 'dir/with space.txt')"));
    assert!(limited.contains("<a href='/r/diff/?id="));
    assert!(limited.contains("<div class='path'>path: <a href='/r/diff/?id="));
    let slash = server.get(&format!("/r/diff/dir/?id={id}"));
    assert_eq!(slash.status, 301);
    assert_eq!(
        slash.header("location"),
        Some(format!("/r/diff/dir?id={id}").as_str())
    );
    // other URL forms are served as they are (a redirect to themselves would loop)
    let query_form = server.get(&format!("/?url=r/diff/dir/&id={id}"));
    assert_eq!(query_form.status, 200);
    assert!(
        query_form
            .text()
            .contains("href='/r/diff/dir/with%20space.txt?id=")
    );
    // unrelated id2 still diffs
    let unrelated = server
        .get(&format!(
            "/r/diff/?id={}&id2={}",
            f.rev("main"),
            f.rev("orphan")
        ))
        .text();
    assert!(unrelated.contains("<td class='del'><a href='/r/diff/lonely.txt?id="));
    assert!(unrelated.contains(&format!("&amp;id2={}", f.rev("orphan"))));
}

#[test]
fn diff_bodies_without_esi_have_cgits_absolute_links() {
    let f = &*FIXTURE;
    let server = Server::start(&f.rc);
    let id = f.rev("main~7");
    let body = |url: &str| {
        let html = server.page(url);
        between(
            &html,
            "<div class='diffstat-header'>",
            "</div> <!-- class=content -->",
        )
        .to_string()
    };
    let side = body(&format!("/r/commit/?id={id}&h=side"));
    let fork = body(&format!("/fork/copy/commit/?id={id}"));
    let diff = body(&format!("/r/diff/?id={id}"));
    assert!(!hrefs(&side).iter().any(|h| h.starts_with("../")));
    assert!(side.contains(&format!("href='/r/diff/?h=side&amp;id={id}'")));
    assert!(side.contains("href='/r/tree/main.c?h=side&amp;id="));
    assert!(fork.contains(&format!("href='/fork/copy/diff/?id={id}'")));
    assert_eq!(
        diff,
        fork.replace("/fork/copy/", "/r/"),
        "same body, own links"
    );
    // the `?url=` form (and cgit's own links to it) get the same links
    let by_query = body(&format!("/?url=r/diff/&id={id}"));
    assert_eq!(by_query, diff);
    let path = body(&format!("/?url=r/diff/dir/with%20space.txt&id={id}"));
    assert!(
        path.contains("href='/r/tree/dir/with%20space.txt?id="),
        "{path}"
    );
}

#[test]
fn bad_input_is_refused_cleanly() {
    let f = &*FIXTURE;
    let server = Server::start(&f.rc);
    for page in ["commit", "diff", "rawdiff", "patch"] {
        let r = server.get(&format!(
            "/r/{page}/?id=0123456789012345678901234567890123456789"
        ));
        assert_eq!(r.status, 404, "{page} unknown id");
        let r = server.get(&format!("/r/{page}/?id=-x"));
        assert!(
            r.status == 400 || r.status == 404,
            "{page} option-like id: {}",
            r.status
        );
        let blob = f.rev("main:main.c");
        assert_eq!(
            server.get(&format!("/r/{page}/?id={blob}")).status,
            404,
            "{page} blob id"
        );
    }
    let main = f.rev("main");
    assert_eq!(
        server.get(&format!("/r/diff/?id={main}&id2=nope")).status,
        404
    );
    let huge = server.get(&format!(
        "/r/diff/?id={}&context=99999999999",
        f.rev("main~7")
    ));
    assert_eq!(huge.status, 200);
    assert_eq!(
        server.get(&format!("/r/diff/?id={main}&context=-5")).status,
        200
    );
    assert_eq!(
        server.get(&format!("/r/commit/?id={main}&dt=7")).status,
        200
    );
    assert_eq!(server.get("/r/commit/?id=%3Cscript%3E").status, 404);
}

/// Resolves a relative href against the directory of `page` (a URL path).
fn absolute(page: &str, href: &str) -> String {
    if href.starts_with('/') {
        return href.to_string();
    }
    let mut base: Vec<&str> = page.split('/').collect();
    base.pop();
    let mut rest = href;
    while let Some(r) = rest.strip_prefix("../") {
        base.pop();
        rest = r;
    }
    format!("{}/{rest}", base.join("/"))
}

fn links_in(html: &str, page: &str, start: &str, end: &str) -> Vec<String> {
    hrefs(between(html, start, end))
        .iter()
        .map(|h| absolute(page, &h.replace(' ', "%20")))
        .collect()
}

#[test]
fn links_match_cgit() {
    let f = &*FIXTURE;
    let server = Server::start(&f.rc);
    let pages: Vec<String> = [
        "main~8", "main~7", "main~6", "main~5", "main~3", "main~1", "binary",
    ]
    .iter()
    .map(|r| format!("/r/commit/?id={}", f.rev(r)))
    .chain([
        format!("/r/diff/?id={}&id2={}", f.rev("main~5"), f.rev("main~7")),
        format!("/r/diff/dir/with%20space.txt?id={}", f.rev("main~7")),
        format!("/r/commit/main.c?id={}", f.rev("main~7")),
    ])
    .collect();
    for url in pages {
        let page = url.split('?').next().unwrap();
        let stat = (
            "<div class='diffstat-header'>",
            "<div class='diffstat-summary'>",
        );
        assert!(!links_in(&server.page(&url), page, stat.0, stat.1).is_empty());
        assert_like_cgit_by(&server, &f.rc, &url, |html| {
            let mut parts = Vec::new();
            if url.contains("/commit/") {
                let info = ("<table summary='commit info'", "</table>");
                parts.push("commit info links:".to_string());
                parts.extend(links_in(html, page, info.0, info.1));
            }
            parts.push("diffstat links:".to_string());
            parts.extend(links_in(html, page, stat.0, stat.1));
            let diff = ("<table summary='diff' class='diff'>", "</table>");
            parts.push("diff links:".to_string());
            parts.extend(links_in(html, page, diff.0, diff.1));
            parts.join("\n")
        });
    }
}
