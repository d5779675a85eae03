//! tree, blob and plain pages: listings, sizes, raw bytes, cut-off huge files, links like cgit's.

use super::*;

#[test]
fn tree_pages_list_and_show_files() {
    let site = build_site(
        "module-link=https://example.com/%s/commit/?id=%s\n\
         repo.url=m\nrepo.path={root}/plain.git\nrepo.module-link.sub=https://x.org/c/%s\n",
    );
    let server = Server::start(&site.rc);
    let r = server.get("/r/tree/");
    assert_eq!(r.status, 200);
    let html = r.text();
    assert!(html.contains("<table summary='tree listing' class='list'>"));
    assert!(html.contains("<td class='ls-mode'>d---------</td><td><a class='ls-dir' href='/r/tree/a'>a</a> / <a class='ls-dir' href='/r/tree/a/b'>b</a> / <a class='ls-dir' href='/r/tree/a/b/c'>c</a></td>"));
    assert!(html.contains("<td class='ls-mode'>-rwxr-xr-x</td><td><a class='ls-blob sh' href='/r/tree/run.sh'>run.sh</a>"));
    assert!(html.contains("<td class='ls-mode'>l---------</td><td><a class='ls-blob' href='/r/tree/link'>link</a> -&gt; <a class='ls-blob' href='/r/tree/src/app.rs'>src/app.rs</a>"));
    assert!(html.contains("<td class='ls-mode'>m---------</td><td><a class='ls-mod' href='https://example.com/sub/commit/?id="));
    assert!(html.contains("<a class='ls-blob txt' href='/r/tree/caf%e9.txt'>caf\u{fffd}.txt</a>"));
    assert!(html.contains("<a class='button' href='/r/blame/run.sh'>blame</a>"));
    let size = git(&site.work, &["cat-file", "-s", "HEAD:run.sh"]);
    assert!(
        html.contains(&format!(
            "<td class='ls-size'>{}</td><td><a class='button' href='/r/log/run.sh'>log</a>",
            size.trim()
        )),
        "blob sizes"
    );
    let first = git(&site.work, &["rev-list", "--max-parents=0", "HEAD"]);
    assert!(server.page("/m/tree/").contains(&format!(
        "<a class='ls-mod' href='https://x.org/c/{}'>sub</a> @ {}",
        first.trim(),
        &first[..7]
    )));
    let file = server.page("/r/tree/src/app.rs?h=main");
    assert!(file.contains("<title>tree: app.rs « src - r - [no description]</title>"));
    assert!(file.contains("<div class='path'>path: <a href='/r/tree/'>root</a>/<a href='/r/tree/src'>src</a>/<a href='/r/tree/src/app.rs'>app.rs</a></div>"));
    assert!(file.contains(
        "(<a href='/r/plain/src/app.rs'>plain</a>) (<a href='/r/blame/src/app.rs'>blame</a>)"
    ));
    assert!(file.contains("<a id='n3' href='#n3'>3</a>"));
    // Highlighted in-process (no source-filter), one line per line.
    assert!(file.contains(concat!(
        "<td class='lines'><pre><code><span class=\"hl-storage hl-type hl-function\">fn</span> ",
        "<span class=\"hl-entity hl-name hl-function\">main</span>() {\n    ",
        "<span class=\"hl-support hl-macro\">println!</span>(",
        "<span class=\"hl-string hl-quoted hl-double\">&quot;changed&quot;</span>);\n}\n</code></pre>"
    )));
    let bin = server.page("/r/tree/bin.dat");
    assert!(bin.contains("<table summary='blob content' class='bin-blob'>"));
    assert!(bin.contains("<td class='hex'> 00 01 62 69 6e 61 72 79 3c 26 3e ff </td><td class='hex'>..binary&lt;&amp;&gt;.</td>"));
    let old = server.page("/r/tree/src?id=v1.0");
    assert!(old.contains("href='/r/tree/src/main.rs?id=v1.0'"));
    assert_eq!(server.get("/r/tree/nope").status, 404);
    assert!(server.get("/r/tree/nope").text().contains("Path not found"));
    assert_eq!(server.get("/r/tree/sub").status, 404);
    let bad = server.get("/r/tree/?id=nope");
    assert_eq!(bad.status, 404);
    assert!(bad.text().contains("Invalid revision name: nope"));
    let tree_id = git(&site.work, &["rev-parse", "HEAD^{tree}"]);
    assert_eq!(
        server
            .get(&format!("/r/tree/?id={}", tree_id.trim()))
            .status,
        404
    );
    assert!(matches!(
        server.get("/r/tree/?id=--output=x").status,
        400 | 404
    ));
    assert_links_match_cgit(
        &site,
        &server,
        &[
            "/r/tree/",
            "/r/tree/src",
            "/r/tree/a",
            "/r/tree/src/app.rs",
            "/r/tree/?h=side",
            "/r/tree/src?id=v1.0",
            "/r/tree/bin.dat",
        ],
    );
}

#[test]
fn max_blob_size_and_line_numbers_options() {
    let site = build_private_site("max-blob-size=1\nenable-tree-linenumbers=0\n");
    let server = Server::start(&site.rc);
    let html = server.page("/r/tree/README.md");
    assert!(!html.contains("class='linenumbers'"));
    assert!(html.contains("<td class='lines'>"));
    let big = "y\n".repeat(1500);
    let dir = site.root.join("plain.git");
    let blob = {
        let mut cmd = git_command(&dir, &["hash-object", "-w", "--stdin"]);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(big.as_bytes())
            .unwrap();
        String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
    };
    let tree = {
        let mut cmd = git_command(&dir, &["mktree"]);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        use std::io::Write;
        writeln!(
            child.stdin.take().unwrap(),
            "100644 blob {}\tbig.txt",
            blob.trim()
        )
        .unwrap();
        String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
    };
    let commit = git(&dir, &["commit-tree", tree.trim(), "-m", "big"]);
    let page = server
        .get(&format!("/r/tree/big.txt?id={}", commit.trim()))
        .text();
    assert!(
        page.contains("<div class='error'>blob size (2KB) exceeds display size limit (1KB).</div>"),
        "{page}"
    );
}

#[test]
fn plain_and_blob_serve_raw_bytes_safely() {
    let site = build_site("mimetype.rs=text/x-rust\nmimetype.dat=image/x-test\n");
    let server = Server::start(&site.rc);
    let r = server.get("/r/plain/src/app.rs");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("text/plain; charset=UTF-8"),
        "text/* is neutered"
    );
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(
        r.header("content-security-policy"),
        Some("default-src 'none'")
    );
    assert_eq!(
        r.header("content-disposition"),
        Some("inline; filename=\"app.rs\"")
    );
    let blob_id = git(&site.work, &["rev-parse", "HEAD:src/app.rs"]);
    assert_eq!(
        r.header("etag"),
        Some(format!("\"{}\"", blob_id.trim()).as_str())
    );
    assert_eq!(
        r.header("content-length"),
        Some(r.body.len().to_string().as_str())
    );
    assert_eq!(r.body, std::fs::read(site.work.join("src/app.rs")).unwrap());
    let bin = server.get("/r/plain/bin.dat");
    assert_eq!(bin.header("content-type"), Some("image/x-test"));
    assert_eq!(bin.body, b"\x00\x01binary<&>\xff");
    let readme = server.get("/r/plain/README.md");
    assert_eq!(
        readme.header("content-type"),
        Some("text/plain; charset=UTF-8")
    );
    let latin = server.get("/r/plain/caf%e9.txt");
    assert_eq!(latin.status, 200);
    assert_eq!(latin.body, b"latin\n");
    let dir = server.get("/r/plain/a/b?h=side");
    assert_eq!(dir.header("content-type"), Some("text/html; charset=UTF-8"));
    let tree_id = git(&site.work, &["rev-parse", "side:a/b"]);
    assert_eq!(
        dir.header("etag"),
        Some(format!("\"{}\"", tree_id.trim()).as_str())
    );
    let html = dir.text();
    assert!(html.contains("<title>/a/b/</title>"));
    assert!(
        html.starts_with("<!DOCTYPE html>\n"),
        "valid HTML5 (cgit has none)"
    );
    assert!(html.contains("<li><a href='/r/plain/a/?h=side'>../</a></li>"));
    assert!(html.contains("<li><a href='/r/plain/a/b/c/?h=side'>c</a></li>"));
    let root = server.page("/r/plain/");
    assert!(
        !root.contains("../") && !root.contains(">sub<"),
        "no parent, no gitlinks"
    );
    assert_eq!(server.get("/r/plain/nope").status, 404);
    assert_eq!(server.get("/r/plain/?id=nope").status, 404);

    let b = server.get(&format!("/r/blob/?id={}", blob_id.trim()));
    assert_eq!(b.status, 200);
    assert_eq!(b.header("content-type"), Some("text/plain; charset=UTF-8"));
    assert_eq!(b.header("x-content-type-options"), Some("nosniff"));
    let b = server.get("/r/blob/bin.dat?h=main");
    assert_eq!(b.header("content-type"), Some("application/octet-stream"));
    assert_eq!(
        b.header("content-disposition"),
        Some("inline; filename=\"bin.dat\"")
    );
    let bad = server.get("/r/blob/?id=abc");
    assert_eq!(bad.status, 400);
    assert!(bad.text().contains("Bad hex value: abc"));
    assert_eq!(server.get("/r/blob/?id=--output=x").status, 400);
    assert_eq!(
        server
            .get("/r/blob/?id=0000000000000000000000000000000000000001")
            .status,
        404
    );
    assert_eq!(server.get("/r/blob/nope").status, 404);
}

#[test]
fn html_serving_keeps_declared_types() {
    let site = build_site("enable-html-serving=1\nmimetype.md=text/html\n");
    let server = Server::start(&site.rc);
    let r = server.get("/r/plain/README.md");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=UTF-8"));
    assert!(r.header("content-security-policy").is_none());
    let r = server.get("/r/plain/src/app.rs");
    assert_eq!(
        r.header("content-type"),
        Some("text/plain; charset=UTF-8"),
        "sniffed"
    );
}

/// Runs git with `input` on stdin; returns trimmed stdout.
fn git_stdin(dir: &Path, args: &[&str], input: &[u8]) -> String {
    use std::io::Write;
    let mut child = git_command(dir, args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn huge_trees_and_blobs_are_cut_with_a_note() {
    let site = build_private_site("");
    let dir = site.root.join("plain.git");
    let small = git_stdin(&dir, &["hash-object", "-w", "--stdin"], b"x\n");
    let listing: String = (0..3100)
        .map(|i| format!("100644 blob {small}\tf{i:05}\n"))
        .collect();
    let big_text = "0123456789abcdef\n".repeat(200_000);
    let big = git_stdin(&dir, &["hash-object", "-w", "--stdin"], big_text.as_bytes());
    let listing = format!("{listing}100644 blob {big}\tzz-big.txt\n");
    let tree = git_stdin(&dir, &["mktree"], listing.as_bytes());
    let commit = git(&dir, &["commit-tree", &tree, "-m", "huge"]);
    let server = Server::start(&site.rc);
    let html = server.page(&format!("/r/tree/?id={}", commit.trim()));
    assert!(html.contains("f02999"));
    assert!(
        !html.contains("f03000"),
        "rows beyond the cap are not rendered"
    );
    assert!(html.contains("101 more entries than are shown here"));
    let file = server.get(&format!("/r/tree/zz-big.txt?id={}", commit.trim()));
    assert_eq!(file.status, 200);
    let text = file.text();
    assert!(
        text.contains("Showing the first 340000 of 3400000 bytes."),
        "{}",
        &text[..2000]
    );
    assert!(text.len() < 2_000_000);
    assert!(text.contains("<a id='n20000' href='#n20000'>20000</a>"));
    assert!(!text.contains("id='n20001'"));
    let plain = server.get(&format!("/r/plain/zz-big.txt?id={}", commit.trim()));
    assert_eq!(plain.body.len(), 3_400_000, "plain serves the whole file");
}

/// With stats on, tree rows carry cgit's stats buttons (their links keep `h`, not `id`).
#[test]
fn tree_stats_buttons_link_like_cgit() {
    let site = build_site("max-stats=year\n");
    let server = Server::start(&site.rc);
    assert!(server.page("/r/tree/?h=side").contains(">stats</a>"));
    assert_links_match_cgit(
        &site,
        &server,
        &["/r/tree/", "/r/tree/src?h=side", "/r/tree/?id=v1.0"],
    );
}

/// Every blob's size in a listing is its own, also for the entries after a submodule (which
/// has no size here): each row shows what `git ls-tree -l` says.
#[test]
fn tree_sizes_follow_a_submodule() {
    let dir = TempDir::new("browse-sizes");
    let work = dir.path().join("work");
    init_repo(&work);
    write(&work, "b.txt", "bee\n");
    write(&work, "c.txt", "a longer line for c\n");
    write(&work, "d/e.txt", "e\n");
    commit_all(&work, "files", "2024-02-01T10:00:00+00:00");
    let head = git(&work, &["rev-parse", "HEAD"]);
    let gitlink = format!("160000,{},a-mod", head.trim());
    git(&work, &["update-index", "--add", "--cacheinfo", &gitlink]);
    commit_staged(&work, b"submodule first", "2024-02-02T10:00:00+00:00");
    let rc = r_and_off_rc(dir.path(), &work.join(".git"), "");
    let server = Server::start(&rc);
    let html = server.page("/r/tree/");
    assert!(html.contains("<span class='ls-mod'>a-mod</span>"), "{html}");
    let listing = git(&work, &["ls-tree", "-l", "HEAD"]);
    let mut blobs = 0;
    for line in listing.lines() {
        let (meta, name) = line.split_once('\t').unwrap();
        let fields: Vec<&str> = meta.split_whitespace().collect();
        if fields[1] != "blob" {
            continue;
        }
        blobs += 1;
        let row = format!(
            "href='/r/tree/{name}'>{name}</a></td><td class='ls-size'>{}</td>",
            fields[3]
        );
        assert!(html.contains(&row), "{row} in {html}");
    }
    assert_eq!(blobs, 2);
}

/// A chain of single directories collapses through a long directory name too, and a
/// directory too large to start one (the listing reads no tree above a size that a one-entry
/// tree, whose entry has a name short enough to check out, cannot reach) is a plain link; both
/// as cgit lists them.
#[test]
fn single_child_chains_collapse_through_long_names_and_large_directories_link_plainly() {
    let dir = TempDir::new("browse-chains");
    let work = dir.path().join("work");
    init_repo(&work);
    let long = "n".repeat(250);
    write(&work, &format!("top/{long}/leaf.txt"), "leaf\n");
    for i in 0..200 {
        write(
            &work,
            &format!("big/a-file-with-a-long-name-{i:04}.txt"),
            "x\n",
        );
    }
    commit_all(&work, "layout", "2024-02-01T10:00:00+00:00");
    let rc = r_and_off_rc(dir.path(), &work.join(".git"), "");
    let server = Server::start(&rc);
    let html = server.page("/r/tree/");
    let chain = format!(
        "<a class='ls-dir' href='/r/tree/top'>top</a> / \
         <a class='ls-dir' href='/r/tree/top/{long}'>{long}</a></td>"
    );
    assert!(html.contains(&chain), "{html}");
    assert!(
        html.contains("<a class='ls-dir' href='/r/tree/big'>big</a></td>"),
        "{html}"
    );
    assert_like_cgit(
        &server,
        &rc,
        "/r/tree/",
        &[
            ("<a class='ls-dir' href='/r/tree/big'", "</td>"),
            ("<a class='ls-dir' href='/r/tree/top'", "</td>"),
        ],
    );
}
