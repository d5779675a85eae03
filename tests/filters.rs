//! cgit's exec filters, run as cgit runs them: commit-filter (subject, message, notes),
//! email-filter (commit, log, summary, refs, tag), owner-filter (index, page header),
//! source-filter (blob view, blame). Filters get escaped text (raw file content for source-filter) and their output is
//! included as HTML.

mod common;

use common::*;
use std::path::PathBuf;
use std::sync::LazyLock;

/// A repository with one commit (a message with markup and a bug number, a note, a C file)
/// and an annotated tag, built once: (work tree, commit id).
static REPO: LazyLock<(PathBuf, String)> = LazyLock::new(|| {
    let work = shared_dir("filters").join("work");
    init_repo(&work);
    write(&work, "src/main.c", "int main(void) { return 1 < 2; }\n");
    let id = commit_all(
        &work,
        "Fix <b>bold</b> & more\n\nBody mentions bug #42.",
        "2024-03-01T10:00:00+00:00",
    );
    git(&work, &["notes", "add", "-m", "Note #7", &id]);
    git(&work, &["tag", "-a", "v1", "-m", "Release"]);
    (work, id)
});

/// The cgitrc (in `dir`, with the filters' scripts) naming the shared repository after
/// `globals`; returns it and the commit id.
fn setup(dir: &TempDir, globals: &str) -> (PathBuf, String) {
    let (work, id) = &*REPO;
    let rc = dir.path().join("cgitrc");
    std::fs::write(
        &rc,
        format!(
            "{globals}enable-index-owner=1\nenable-blame=1\nrepo.url=r\nrepo.owner=Jane <jane@example.com>\nrepo.path={}\n",
            work.join(".git").display()
        ),
    )
    .unwrap();
    (rc, id.clone())
}

#[test]
fn commit_filter_and_email_filter_on_the_commit_page() {
    let dir = TempDir::new("filters");
    let commit_filter = dir.path().join("commit-filter.sh");
    write_script(
        &commit_filter,
        "printf '[%s]' \"$CGIT_REPO_URL\"\nsed 's|#\\([0-9]*\\)|<a href=\"/bugs/\\1\">#\\1</a>|g'\n",
    );
    let email_filter = dir.path().join("email-filter.sh");
    write_script(&email_filter, "printf '{%s %s}' \"$1\" \"$2\"\ncat\n");
    let globals = format!(
        "commit-filter=exec:{}\nemail-filter={}\n",
        commit_filter.display(),
        email_filter.display()
    );
    let (rc, id) = setup(&dir, &globals);
    let server = Server::start(&rc);
    let html = server.page(&format!("/r/commit/?id={id}"));
    // filters get the escaped text and their output is taken as HTML
    assert!(
        html.contains("<div class='commit-subject'>[r]Fix &lt;b&gt;bold&lt;/b&gt; &amp; more"),
        "{html}"
    );
    assert!(
        html.contains("<div class='commit-msg'>[r]Body mentions bug <a href=\"/bugs/42\">#42</a>")
    );
    assert!(html.contains("<div class='notes'>[r]Note <a href=\"/bugs/7\">#7</a>"));
    assert!(html.contains(
        "<th>author</th><td>{<author@example.com> commit}A U Thor &lt;author@example.com&gt;</td>"
    ));
    // the log, summary and refs pages run the email filter on author names
    let log = server.page("/r/log/");
    assert!(
        log.contains("<td>{<author@example.com> log}A U Thor</td>"),
        "{log}"
    );
    let summary = server.page("/r/");
    assert!(summary.contains("<td>{<author@example.com> log}A U Thor</td>"));
    assert!(summary.contains("<td>{<author@example.com> refs}A U Thor</td>"));
}

#[test]
fn without_filters_the_same_text_is_escaped() {
    let dir = TempDir::new("no-filters");
    let (rc, id) = setup(&dir, "");
    let server = Server::start(&rc);
    let html = server.page(&format!("/r/commit/?id={id}"));
    assert!(html.contains("<div class='commit-subject'>Fix &lt;b&gt;bold&lt;/b&gt; &amp; more"));
    assert!(html.contains("<div class='commit-msg'>Body mentions bug #42.\n</div>"));
    let blob = server.page("/r/tree/src/main.c");
    // Without a source-filter the file is highlighted in-process, escaped.
    assert!(blob.contains(
        "<code><span class=\"hl-storage hl-type\">int</span> <span class=\"hl-entity hl-name hl-function\">main</span>"
    ));
    assert!(blob.contains("&lt; <span class=\"hl-constant hl-numeric\">2</span>; }\n</code>"));
    let index = server.page("/");
    assert!(
        index.contains(
            "<td><a href='/?q=Jane+%3cjane@example.com%3e'>Jane &lt;jane@example.com&gt;</a></td>"
        ),
        "{index}"
    );
}

#[test]
fn source_filter_highlights_blobs_and_owner_filter_the_index() {
    let dir = TempDir::new("source-filter");
    let source_filter = dir.path().join("highlight.sh");
    // a "highlighter" that names the file and escapes the raw text it is given
    write_script(
        &source_filter,
        "printf '<span class=\"hl\">%s:%s</span>' \"$1\" \"$CGIT_REPO_NAME\"\nsed 's/&/\\&amp;/g; s/</\\&lt;/g'\n",
    );
    let owner_filter = dir.path().join("owner.sh");
    write_script(
        &owner_filter,
        "printf '<a href=\"/people\">'\ncat\nprintf '</a>'\n",
    );
    let globals = format!(
        "source-filter=exec:{}\nowner-filter={}\n",
        source_filter.display(),
        owner_filter.display()
    );
    let (rc, _) = setup(&dir, &globals);
    let server = Server::start(&rc);
    let blob = server.page("/r/tree/src/main.c");
    assert!(
        blob.contains(
            "<td class='lines'><pre><code><span class=\"hl\">main.c:r</span>int main(void) { return 1 &lt; 2; }\n</code>"
        ),
        "{blob}"
    );
    let index = server.page("/");
    assert!(
        index.contains("<td><a href=\"/people\">Jane &lt;jane@example.com&gt;</a></td>"),
        "{index}"
    );
}

#[test]
fn filtered_output_is_placed_as_cgit_places_it() {
    let dir = TempDir::new("filters-cgit");
    let filter = dir.path().join("mark.sh");
    write_script(&filter, "printf '<i>%s|%s</i>' \"$1\" \"$2\"\ncat\n");
    let f = filter.display();
    let globals =
        format!("commit-filter={f}\nemail-filter={f}\nsource-filter={f}\nowner-filter={f}\n");
    let (rc, id) = setup(&dir, &globals);
    let server = Server::start(&rc);
    let pieces = [
        (
            format!("/r/commit/?id={id}"),
            "<div class='commit-subject'>",
            "<span",
        ),
        (
            format!("/r/commit/?id={id}"),
            "<div class='commit-msg'>",
            "</div>",
        ),
        (
            format!("/r/commit/?id={id}"),
            "<div class='notes'>",
            "</div>",
        ),
        (format!("/r/commit/?id={id}"), "<th>author</th>", "</tr>"),
        (
            "/r/tree/src/main.c".to_string(),
            "<td class='lines'>",
            "</table>",
        ),
        ("/r/log/".to_string(), "<a class='deco'", "</tr>"),
        ("/".to_string(), "[no description]</a></td>", "</td><td"),
        ("/r/".to_string(), "<td class='sub right'>", "</table>"),
        ("/r/tag/?h=v1".to_string(), "<td>tagged by</td>", "</tr>"),
        ("/r/blame/src/main.c".to_string(), "<pre><code>", "</table>"),
    ];
    for (url, start, end) in pieces {
        assert_like_cgit(&server, &rc, &url, &[(start, end)]);
    }
}
