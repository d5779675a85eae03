//! In-process syntax highlighting of the blob view when no source-filter is configured: the
//! language from the file name, extension or shebang, escaped content, cgit's table of line
//! numbers unchanged, files over the budget plain, a configured source-filter first, and a
//! file shown through another branch or a fork highlighted once (counted in /metrics).

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// A repository with files in several languages on `main`, a branch `other` with the same
/// files plus one, and a `--shared` fork of it: (work tree, fork's git dir).
static REPO: LazyLock<(PathBuf, PathBuf)> = LazyLock::new(|| {
    let dir = shared_dir("highlight");
    let work = dir.join("work");
    init_repo(&work);
    write(
        &work,
        "src/main.c",
        "#include <stdio.h>\n/* </code><script>alert(1)</script> & co */\nint main(void) { return 1 < 2 && 3 > 2; }\n",
    );
    write(
        &work,
        "src/lib.rs",
        "pub fn greet() -> &'static str {\n    \"<b>hi</b> & bye\"\n}\n",
    );
    write(
        &work,
        "tool.py",
        "# a comment <tag> & more\ndef f():\n    return 1\n",
    );
    write(&work, "run", "#!/bin/sh\necho \"hello\"\n");
    write(&work, "notes.txt", "plain <text>\n");
    // Over the 512 KiB budget, under the view's 20,000 lines.
    write(
        &work,
        "big.c",
        format!("int x; /* {} */\n", "p".repeat(40)).repeat(12_000),
    );
    commit_all(&work, "files", "2024-03-01T10:00:00+00:00");
    git(&work, &["branch", "other"]);
    git(&work, &["checkout", "-q", "other"]);
    write(&work, "extra.txt", "more\n");
    commit_all(&work, "extra", "2024-03-02T10:00:00+00:00");
    git(&work, &["checkout", "-q", "main"]);
    let fork = dir.join("fork.git");
    git(
        &dir,
        &[
            "clone",
            "-q",
            "--bare",
            "--shared",
            work.to_str().unwrap(),
            fork.to_str().unwrap(),
        ],
    );
    (work, fork)
});

/// A cgitrc serving the repository as `r`, its fork as `fork` and the repository again as
/// `filtered` with `filtered`'s options.
fn rc(dir: &Path, filtered: &str) -> PathBuf {
    let (work, fork) = &*REPO;
    let rc = dir.join("cgitrc");
    let text = format!(
        "metrics-path=/metrics\nresponse-cache-size=0\nenable-filter-overrides=1\n\
         repo.url=r\nrepo.path={git}\n\n\
         repo.url=fork\nrepo.path={fork}\n\n\
         repo.url=filtered\nrepo.path={git}\n{filtered}\n",
        git = work.join(".git").display(),
        fork = fork.display(),
    );
    std::fs::write(&rc, text).unwrap();
    rc
}

/// The `<code>` of a blob view.
fn code(page: &str) -> &str {
    let start = "<td class='lines'><pre><code>";
    &between(page, start, "</code></pre></td>")[start.len()..]
}

#[test]
fn languages_are_highlighted_by_name_extension_and_shebang() {
    let dir = TempDir::new("highlight-languages");
    let server = Server::start(&rc(dir.path(), ""));
    let c = server.page("/r/tree/src/main.c");
    assert!(
        code(&c).contains("<span class=\"hl-keyword hl-control\">return</span>"),
        "{c}"
    );
    assert!(code(&c).contains("<span class=\"hl-storage hl-type\">int</span>"));
    let rust = server.page("/r/tree/src/lib.rs");
    assert!(code(&rust).contains(
        "<span class=\"hl-string hl-quoted hl-double\">&quot;&lt;b&gt;hi&lt;/b&gt; &amp; bye&quot;</span>"
    ));
    let python = server.page("/r/tree/tool.py");
    assert!(code(&python).starts_with(
        "<span class=\"hl-comment hl-line hl-number-sign\"># a comment &lt;tag&gt; &amp; more</span>\n"
    ));
    let shell = server.page("/r/tree/run");
    assert!(
        code(&shell).contains(
            "<span class=\"hl-string hl-quoted hl-double hl-shell\">&quot;hello&quot;</span>"
        ),
        "{shell}"
    );
    // Plain text has no syntax: escaped only.
    let text = server.page("/r/tree/notes.txt");
    assert_eq!(code(&text), "plain &lt;text&gt;\n");
}

#[test]
fn content_is_escaped_and_the_line_table_is_cgits() {
    let dir = TempDir::new("highlight-escape");
    let server = Server::start(&rc(dir.path(), ""));
    let page = server.page("/r/tree/src/main.c");
    let code = code(&page);
    assert!(
        code.contains(
            "<span class=\"hl-comment hl-block\">/* &lt;/code&gt;&lt;script&gt;alert(1)&lt;/script&gt; &amp; co */</span>"
        ),
        "{code}"
    );
    assert!(!page.contains("<script>"));
    assert!(code.contains("&lt; <span class=\"hl-constant hl-numeric\">2</span> &amp;&amp; "));
    // Three lines, each with its spans closed, and three line numbers.
    assert_eq!(code.matches('\n').count(), 3);
    for line in code.lines() {
        assert_eq!(
            line.matches("<span").count(),
            line.matches("</span>").count()
        );
    }
    assert!(page.contains("<td class='linenumbers'><pre><a id='n1' href='#n1'>1</a>\n"));
    assert!(page.contains("<a id='n3' href='#n3'>3</a>\n</pre></td>"));
    assert!(!page.contains("id='n4'"));
}

#[test]
fn a_file_over_the_budget_is_shown_plain() {
    let dir = TempDir::new("highlight-budget");
    let server = Server::start(&rc(dir.path(), ""));
    let page = server.page("/r/tree/big.c");
    let code = code(&page);
    assert!(!code.contains("<span"));
    assert!(code.starts_with("int x; /* pppp"));
    assert_eq!(code.matches('\n').count(), 12_000);
    assert!(page.contains("<a id='n12000' href='#n12000'>12000</a>"));
    assert_eq!(count(&server, "cgitd_highlights_over_budget_total"), 1);
}

#[test]
fn a_configured_source_filter_wins() {
    let dir = TempDir::new("highlight-filter");
    let filter = dir.path().join("filter.sh");
    write_script(&filter, "printf '<i>%s</i>' \"$1\"\nsed 's/</\\&lt;/g'\n");
    let options = format!("repo.source-filter=exec:{}", filter.display());
    let server = Server::start(&rc(dir.path(), &options));
    let filtered = server.page("/filtered/tree/src/main.c");
    assert!(
        code(&filtered).starts_with("<i>main.c</i>#include &lt;stdio.h>\n"),
        "{filtered}"
    );
    assert!(!filtered.contains("hl-"));
    // The same file in the repository without the filter is highlighted.
    assert!(server.page("/r/tree/src/main.c").contains("hl-keyword"));
}

#[test]
fn enable_highlight_0_shows_files_plain() {
    let dir = TempDir::new("highlight-off");
    let server = Server::start(&rc(dir.path(), "repo.enable-highlight=0"));
    let plain = server.page("/filtered/tree/src/lib.rs");
    assert_eq!(
        code(&plain),
        "pub fn greet() -&gt; &amp;&#x27;static str {\n    &quot;&lt;b&gt;hi&lt;/b&gt; &amp; bye&quot;\n}\n"
    );
    assert!(server.page("/r/tree/src/lib.rs").contains("hl-string"));
    let config = std::process::Command::new(env!("CARGO_BIN_EXE_cgitd"))
        .args(["check-config", dir.path().join("cgitrc").to_str().unwrap()])
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&config.stdout);
    let filtered = listing.split("repo filtered").nth(1).unwrap();
    let r = between(&listing, "repo r", "repo fork");
    assert!(r.contains("enable-highlight"), "{listing}");
    assert!(!filtered.contains("enable-highlight"), "{listing}");
}

#[test]
fn a_file_shown_through_another_branch_or_a_fork_is_highlighted_once() {
    let dir = TempDir::new("highlight-once");
    let server = Server::start(&rc(dir.path(), ""));
    let first = server.page("/r/tree/src/lib.rs?h=main");
    assert_eq!(count(&server, "cgitd_highlights_total"), 1);
    let on_branch = server.page("/r/tree/src/lib.rs?h=other");
    let in_fork = server.page("/fork/tree/src/lib.rs");
    assert_eq!(count(&server, "cgitd_highlights_total"), 1);
    assert_eq!(code(&on_branch), code(&first));
    assert_eq!(code(&in_fork), code(&first));
    assert!(code(&first).contains("hl-string"), "{first}");
    // Another file is highlighted on its own.
    server.page("/fork/tree/tool.py");
    assert_eq!(count(&server, "cgitd_highlights_total"), 2);
}
