//! about pages: readmes rendered and sanitized.

use super::*;

/// A repository whose readmes try every trick: raw HTML, scripts, event handlers,
/// `javascript:` links, a symlink out of the repository directory.
fn build_about_site() -> (TempDir, PathBuf) {
    let dir = TempDir::new("about");
    let root = dir.path();
    let work = root.join("work");
    init_repo(&work);
    write(
        &work,
        "docs/README.md",
        "# Docs <em>here</em>\n\n<script>alert(1)</script>\n\n\
         [guide](guide.md#intro) ![logo](../img/logo.png) [bad](javascript:alert(1))\n\n\
         <img src=x onerror=alert(1)> <a href=\"https://example.com/\" onclick=\"x()\">ext</a>\n",
    );
    write(&work, "docs/guide.md", "# Guide\n");
    write(&work, "img/logo.png", b"\x89PNG\r\n\x1a\nfake".as_slice());
    write(&work, "NOTES.txt", "plain <b>notes</b>\n");
    commit_all(&work, "Docs", "2024-01-01T10:00:00+00:00");
    git(&work, &["branch", "other"]);
    let secret = root.join("secret.md");
    std::fs::write(&secret, "# TOP SECRET\n").unwrap();
    git(root, &["clone", "-q", "--bare", "work", "a.git"]);
    std::os::unix::fs::symlink(&secret, root.join("a.git/escape.md")).unwrap();
    std::fs::write(root.join("a.git/ondisk.md"), "# On disk [rel](x.md)\n").unwrap();
    let filter = root.join("filter.sh");
    std::fs::write(
        &filter,
        "#!/bin/sh\necho \"<p class='arg'>$1 $CGIT_REPO_NAME</p>\"\ntr a-z A-Z\necho '<script>evil()</script>'\n",
    )
    .unwrap();
    let mut perms = std::fs::metadata(&filter).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&filter, perms).unwrap();
    std::fs::write(
        root.join("site.md"),
        "# Site readme\n\n<script>x</script>\n",
    )
    .unwrap();
    let rc = root.join("cgitrc");
    let a = root.join("a.git");
    let text = format!(
        "virtual-root=/\nroot-readme={root}/site.md\n\
         repo.url=md\nrepo.path={a}\nrepo.readme=:missing.md\nrepo.readme=:docs/README.md\n\n\
         repo.url=txt\nrepo.path={a}\nrepo.readme=main:NOTES.txt\n\n\
         repo.url=disk\nrepo.path={a}\nrepo.readme=ondisk.md\n\n\
         repo.url=escape\nrepo.path={a}\nrepo.readme=escape.md\n\n\
         repo.url=none\nrepo.path={a}\nrepo.homepage=https://example.org/home\n\n\
         repo.url=none2\nrepo.path={a}\n\n\
         about-filter=exec:{filter}\n\
         repo.url=filtered\nrepo.path={a}\nrepo.readme=:docs/README.md\n",
        root = root.display(),
        a = a.display(),
        filter = filter.display(),
    );
    std::fs::write(&rc, text).unwrap();
    (dir, rc)
}

#[test]
fn about_pages_render_sanitized_readmes() {
    let (_dir, rc) = build_about_site();
    let server = Server::start(&rc);
    let r = server.get("/md/about");
    assert_eq!(r.status, 301);
    assert_eq!(r.header("location"), Some("/md/about/"));
    // the `?url=` form has no path to add a slash to: the redirect goes to the about link
    let r = server.get("/?url=md/about&h=other");
    assert_eq!(r.status, 301);
    assert_eq!(r.header("location"), Some("/md/about/?h=other"));
    let r = server.get("/md/about/");
    assert_eq!(r.status, 200);
    let html = r.text();
    assert!(html.contains("<a class='active' href='/md/about/'>about</a>"));
    assert!(
        html.contains("<div id='summary'><h1>Docs <em>here</em></h1>"),
        "{html}"
    );
    assert!(
        html.contains("href=\"/md/plain/docs/guide.md#intro\""),
        "{html}"
    );
    assert!(html.contains("src=\"/md/plain/img/logo.png\""));
    for bad in ["<script", "alert(1)</", "javascript:", "onerror", "onclick"] {
        assert!(!html.contains(bad), "{bad} survived sanitizing");
    }
    assert!(
        server
            .get("/md/log/")
            .text()
            .contains("href='/md/about/'>about</a>")
    );
    assert!(!server.page("/none2/log/").contains(">about</a>"));
    let logo = server.get("/md/about/../img/logo.png");
    assert_eq!(logo.status, 200);
    assert_eq!(logo.header("content-type"), Some("image/png"));
    let guide = server.page("/md/about/guide.md");
    assert!(guide.contains("<h1>Guide</h1>"));
    assert_eq!(server.get("/md/about/../../../etc/passwd").status, 404);

    let txt = server.page("/txt/about/");
    assert!(txt.contains("<div id='summary'><pre>plain &lt;b&gt;notes&lt;/b&gt;\n</pre></div>"));
    let disk = server.page("/disk/about/");
    assert!(
        disk.contains("<h1>On disk <a rel=\"noopener noreferrer\">rel</a></h1>"),
        "relative links of readmes on disk are dropped: {disk}"
    );

    let escape = server.get("/escape/about/");
    assert_eq!(
        escape.status, 404,
        "a readme symlinked out of the repository"
    );
    assert!(!escape.text().contains("TOP SECRET"));
    assert!(!server.page("/escape/").contains(">about</a>"));

    let none = server.get("/none/about/");
    assert_eq!(none.status, 302);
    assert_eq!(none.header("location"), Some("https://example.org/home"));
    let none2 = server.get("/none2/about/");
    assert_eq!(none2.status, 302);
    assert_eq!(none2.header("location"), Some("/none2/"));
    let on_branch = server.get("/none2/about/?h=other");
    assert_eq!(on_branch.header("location"), Some("/none2/?h=other"));

    let filtered = server.page("/filtered/about/");
    assert!(
        filtered.contains("<p class=\"arg\">docs/README.md filtered</p>"),
        "{filtered}"
    );
    assert!(
        filtered.contains("# DOCS"),
        "the filter got the readme on stdin"
    );
    assert!(!filtered.contains("evil()</"), "filter output is sanitized");

    let site = server.get("/about/");
    assert_eq!(site.status, 200);
    let site = site.text();
    assert!(
        site.contains("# SITE README"),
        "the site readme goes through the global about-filter too"
    );
    assert!(!site.contains("<script>x"));
    assert!(
        site.contains("<a class='active' href='/?p=about'>about</a>"),
        "cgit's link"
    );
}
