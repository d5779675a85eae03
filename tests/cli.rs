//! The command line: check-config, render, configuration reload on SIGHUP and a graceful stop
//! on SIGTERM.

mod common;

use common::*;
use std::path::PathBuf;
use std::process::Command;
use std::sync::LazyLock;

fn cgitd(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cgitd"))
        .args(args)
        .env_remove("CGIT_CONFIG")
        .output()
        .unwrap()
}

/// A repository with one commit, built once; the tests change only their own cgitrc.
static REPO: LazyLock<PathBuf> = LazyLock::new(|| {
    let repo = shared_dir("cli").join("r");
    init_repo(&repo);
    write(&repo, "f", "x\n");
    commit_all(&repo, "only commit", "2024-01-01T00:00:00+00:00");
    repo
});

/// A cgitrc (with an include and an unknown key) serving the shared repository as `r`.
fn one_repo_site(tag: &str) -> (TempDir, PathBuf) {
    let dir = TempDir::new(tag);
    let repo = &*REPO;
    let rc = dir.path().join("cgitrc");
    std::fs::write(
        &rc,
        format!(
            "include=extra.rc\nrepo.url=r\nrepo.path={}\nbogus-key=1\n",
            repo.display()
        ),
    )
    .unwrap();
    std::fs::write(dir.path().join("extra.rc"), "root-title=Included title\n").unwrap();
    (dir, rc)
}

#[test]
fn check_config_lists_repositories_and_warnings() {
    let (_dir, rc) = one_repo_site("check");
    let out = cgitd(&["check-config", rc.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("repo r"));
    assert!(text.contains(&format!(
        "{}:4: warning: unknown option 'bogus-key'",
        rc.display()
    )));
    std::fs::write(&rc, "repo.url=nopath\n").unwrap();
    let out = cgitd(&["check-config", rc.to_str().unwrap()]);
    assert!(
        !out.status.success(),
        "a repository without path is an error"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("has no repo.path"));
    let out = cgitd(&["check-config", "/nonexistent/cgitrc"]);
    assert!(!out.status.success());
}

#[test]
fn render_prints_one_response() {
    let (_dir, rc) = one_repo_site("render");
    let out = cgitd(&["render", "/r/", "--config", rc.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.starts_with("Status: 200\nContent-Type: text/html; charset=UTF-8\n"));
    assert!(text.contains("only commit"));
    assert!(text.contains("<title>r - [no description]</title>"));
    let out = cgitd(&["render", "/missing/", "--config", rc.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("Status: 404"));
}

#[test]
fn sighup_reloads_the_configuration() {
    let (_dir, rc) = one_repo_site("reload");
    let server = Server::start(&rc);
    assert!(server.get("/").text().contains("Included title"));
    let text = std::fs::read_to_string(&rc).unwrap();
    std::fs::write(&rc, text.replace("repo.url=r\n", "repo.url=renamed\n")).unwrap();
    server.signal("HUP");
    let mut reloaded = false;
    for _ in 0..50 {
        if server.get("/renamed/").status == 200 {
            reloaded = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(reloaded, "the renamed repository appears after SIGHUP");
    assert_eq!(server.get("/r/").status, 404);
    // A configuration asking for authentication of a kind no one can run keeps the old one.
    let text = std::fs::read_to_string(&rc).unwrap();
    let with_auth = format!(
        "auth-filter=ldap:/usr/lib/cgit/filters/simple-authentication.lua\n{}",
        text.replace("repo.url=renamed\n", "repo.url=again\n")
    );
    std::fs::write(&rc, with_auth).unwrap();
    hang_up_and_wait(&server);
    assert_eq!(server.get("/renamed/").status, 200);
    assert_eq!(server.get("/again/").status, 404);
    std::fs::write(&rc, text).unwrap();
    // A broken file keeps the old configuration.
    std::fs::remove_file(&rc).unwrap();
    hang_up_and_wait(&server);
    assert_eq!(server.get("/renamed/").status, 200);
}

#[test]
fn sigterm_stops_the_server_gracefully() {
    let (_dir, rc) = one_repo_site("term");
    let mut server = Server::start(&rc);
    assert_eq!(server.get("/r/").status, 200);
    server.signal("TERM");
    let status = server.exit_within(std::time::Duration::from_secs(10));
    // Killed by the signal, the process would have no exit code.
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{status:?}");
}

/// Sends SIGHUP and gives the server time to (not) reload.
fn hang_up_and_wait(server: &Server) {
    server.signal("HUP");
    std::thread::sleep(std::time::Duration::from_millis(300));
}

#[test]
fn an_auth_filter_of_an_unknown_kind_is_refused_rather_than_ignored() {
    let (_dir, rc) = one_repo_site("auth");
    let text = std::fs::read_to_string(&rc).unwrap();
    std::fs::write(&rc, format!("auth-filter=ldap:/etc/cgit/auth\n{text}")).unwrap();
    let rc = rc.to_str().unwrap();
    for args in [
        vec!["serve", "--config", rc, "--listen", "127.0.0.1:0"],
        vec!["render", "--config", rc, "/r/"],
        vec!["check-config", rc],
    ] {
        let out = cgitd(&args);
        assert!(!out.status.success(), "{args:?} must fail");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            said.contains("auth-filter=ldap:/etc/cgit/auth: invalid filter type 'ldap'"),
            "{said}"
        );
    }
}

#[test]
fn a_missing_auth_filter_is_reported_and_authenticates_nobody() {
    let (_dir, rc) = one_repo_site("auth-missing");
    let text = std::fs::read_to_string(&rc).unwrap();
    std::fs::write(&rc, format!("auth-filter=lua:/etc/cgit/auth.lua\n{text}")).unwrap();
    let rc = rc.to_str().unwrap();
    let out = cgitd(&["check-config", rc]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("filter /etc/cgit/auth.lua cannot be read") && said.contains("auth-filter"),
        "{said}"
    );
    let out = cgitd(&["render", "--config", rc, "/r/"]);
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(
        page.contains("<title>Authentication Required</title>"),
        "{page}"
    );
    assert!(!page.contains("only commit"), "{page}");
}

#[test]
fn a_reload_keeps_open_repositories_open_and_finds_new_ones_under_scan_path() {
    let dir = TempDir::new("reload-scan");
    let scan = dir.path().join("scan");
    std::fs::create_dir_all(&scan).unwrap();
    for name in ["one.git", "two.git"] {
        git(
            &scan,
            &["clone", "-q", "--bare", REPO.to_str().unwrap(), name],
        );
    }
    let rc = dir.path().join("cgitrc");
    std::fs::write(
        &rc,
        format!(
            "virtual-root=/\nmetrics-path=/metrics\nremove-suffix=1\nscan-path={}\n",
            scan.display()
        ),
    )
    .unwrap();
    let server = Server::start(&rc);
    assert_eq!(count(&server, "cgitd_repositories_opened_total"), 0);
    assert!(server.page("/one/").contains("only commit"));
    assert!(server.page("/two/log/").contains("only commit"));
    assert_eq!(count(&server, "cgitd_repositories_opened_total"), 2);
    git(
        &scan,
        &["clone", "-q", "--bare", REPO.to_str().unwrap(), "three.git"],
    );
    assert!(!server.page("/").contains("/three/"), "not before a reload");
    assert!(eventually_metric(&server, "cgitd_ref_watches", 2));
    server.signal("HUP");
    assert!(
        eventually_metric(&server, "cgitd_config_reloads_total", 1),
        "the reload takes effect"
    );
    assert!(server.page("/").contains("href='/three/'"));
    assert!(server.page("/one/refs/").contains("only commit"));
    assert!(server.page("/two/refs/").contains("only commit"));
    assert!(eventually_metric(&server, "cgitd_ref_watches", 3));
    assert_eq!(
        count(&server, "cgitd_repositories_opened_total"),
        2,
        "the reload opened no repository again"
    );
    assert!(server.page("/one/log/").contains("only commit"));
    assert_eq!(count(&server, "cgitd_repositories_opened_total"), 2);
    assert!(server.page("/three/").contains("only commit"));
    assert_eq!(count(&server, "cgitd_repositories_opened_total"), 3);
    // A repository that went away is no longer watched after the next reload.
    std::fs::rename(scan.join("two.git"), dir.path().join("two.git")).unwrap();
    server.signal("HUP");
    assert!(eventually_metric(&server, "cgitd_config_reloads_total", 2));
    assert!(!server.page("/").contains("href='/two/'"));
    assert!(
        eventually_metric(&server, "cgitd_ref_watches", 2),
        "one and three watched, two no longer"
    );
}

/// Whether the metric `name` reaches `value` (asked a bounded number of times).
fn eventually_metric(server: &Server, name: &str, value: u64) -> bool {
    (0..100).any(|_| {
        let reached = count(server, name) == value;
        if !reached {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        reached
    })
}

#[test]
fn the_manual_page_is_made_from_the_command_line() {
    let out = cgitd(&["man"]);
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.contains(".SH NAME") && page.contains("check\\-config"));
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cgitd.1");
    assert_eq!(
        std::fs::read_to_string(committed).unwrap(),
        page,
        "docs/cgitd.1 is stale: cargo run -- man > docs/cgitd.1"
    );
}
