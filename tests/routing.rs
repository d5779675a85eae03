//! Requests outside the repository pages: static files, unknown repositories and pages, bad
//! parameters and methods, escaped input, and repositories that vanish or were never git.

mod common;

use common::sites::{Sections, sections};
use common::*;
use std::sync::LazyLock;

static SITE: LazyLock<Sections> = LazyLock::new(sections);

#[test]
fn bad_input_gets_error_pages() {
    let server = Server::start(&SITE.rc);
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
    let text = r.text_with(404, "an unknown branch");
    assert!(text.contains("Invalid branch: &lt;script&gt;"), "{text}");
    assert!(!text.contains("<script>"), "input is escaped");
    assert_eq!(server.request("POST", "/", &[]).status, 405);
    assert_eq!(server.request("HEAD", "/bare/", &[]).status, 200);
}

#[test]
fn a_vanished_repository_only_breaks_itself() {
    let dir = TempDir::new("vanished");
    let copy = dir.path().join("copy.git");
    git(
        dir.path(),
        &[
            "clone",
            "-q",
            "--bare",
            SITE.root.join("work").to_str().unwrap(),
            "copy.git",
        ],
    );
    let mut rc = std::fs::read_to_string(&SITE.rc).unwrap();
    rc.push_str(&format!("repo.url=copy\nrepo.path={}\n", copy.display()));
    rc.push_str("repo.url=notgit\nrepo.path=/nonexistent/dir\n");
    let rc_path = dir.path().join("cgitrc");
    std::fs::write(&rc_path, rc).unwrap();
    let server = Server::start(&rc_path);
    assert_eq!(server.get("/copy/").status, 200);
    std::fs::remove_dir_all(&copy).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let r = server.get("/copy/");
    assert!(r.status > 400, "status {}", r.status);
    let server_path = dir.path().to_str().unwrap();
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
    let server = Server::start(&SITE.rc);
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
fn embedded_static_files_are_sent_compressed_the_same_every_time() {
    let server = Server::start(&SITE.rc);
    let plain = server.get("/cgit.css");
    assert_eq!(plain.header("content-encoding"), None);
    assert_eq!(plain.header("vary"), Some("accept-encoding"));
    let gzip = [("Accept-Encoding", "gzip")];
    let first = server.request("GET", "/cgit.css", &gzip);
    let again = server.request("GET", "/cgit.css", &gzip);
    assert_eq!(first.status, 200);
    assert_eq!(first.header("content-encoding"), Some("gzip"));
    assert_eq!(first.header("content-type"), Some("text/css"));
    assert_eq!(first.header("vary"), Some("accept-encoding"));
    assert_eq!(again.body, first.body, "made once, sent as made");
    assert_eq!(decode("gzip", &first.body), plain.body);
    assert!(first.body.len() < plain.body.len() / 2);
    let zstd = server.request("GET", "/cgit.css", &[("Accept-Encoding", "zstd")]);
    assert_eq!(decode("zstd", &zstd.body), plain.body);
    // A picture is sent as it is.
    let png = server.request("GET", "/cgit.png", &gzip);
    assert_eq!(png.header("content-encoding"), None);
    assert_eq!(png.body, server.get("/cgit.png").body);
}

#[test]
fn an_operators_static_directory_is_served_safely() {
    let dir = TempDir::new("static-dir");
    let theme = dir.path().join("theme");
    write(&theme, "cgit.css", "body { color: red }\n");
    write(&theme, "img/logo.png", b"\x89PNG\r\n\x1a\n");
    write(dir.path(), "secret.txt", "not for the web\n");
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), theme.join("link.txt")).unwrap();
    let rc = dir.path().join("cgitrc");
    std::fs::write(
        &rc,
        format!(
            "static-url=/cgit-css/\nstatic-dir={}\nrepo.url=bare\nrepo.path={}\n",
            theme.display(),
            SITE.root.join("bare.git").display()
        ),
    )
    .unwrap();
    let server = Server::start(&rc);
    let css = server.get("/cgit-css/cgit.css");
    assert_eq!(css.status, 200);
    assert_eq!(css.header("Content-Type"), Some("text/css"));
    assert_eq!(css.header("Cache-Control"), Some("public, max-age=86400"));
    assert_eq!(css.text(), "body { color: red }\n");
    let png = server.get("/cgit-css/img/logo.png");
    assert_eq!(
        (png.status, png.header("Content-Type")),
        (200, Some("image/png"))
    );
    assert_eq!(
        server.get("/cgit-css/link.txt").status,
        403,
        "no symbolic link is followed"
    );
    for refused in [
        "/cgit-css/../secret.txt",
        "/cgit-css/img",
        "/cgit-css/",
        "/cgit-css/nope.css",
    ] {
        let r = server.get(refused);
        assert_eq!(r.status, 404, "{refused}");
        assert!(!r.text().contains("not for the web"));
    }
    assert_eq!(
        server.get("/bare/").status,
        200,
        "repositories are still served"
    );
}
