//! auth-filter (cgit's protocol, exec and Lua) and Lua page filters, on a real server:
//! cgit's own `simple-authentication.lua`, a shell auth-filter, and `email-gravatar.lua` /
//! `owner-example.lua` against the real cgit.

mod common;

use common::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

const FILTERS: &str = "/usr/lib/cgit/filters";

/// A repository with one commit, built once.
static REPO: LazyLock<(PathBuf, String)> = LazyLock::new(|| {
    let repo = shared_dir("auth").join("r");
    init_repo(&repo);
    write(&repo, "README", "hello\n");
    let id = commit_all(&repo, "only commit", "2024-01-01T00:00:00+00:00");
    (repo, id)
});

/// A cgitrc with `options` first, serving the repository as `secret` and as `open`.
fn site(dir: &Path, options: &str) -> PathBuf {
    let rc = dir.join("cgitrc");
    let repo = REPO.0.join(".git");
    let repo = repo.display();
    std::fs::write(
        &rc,
        format!(
            "virtual-root=/\n{options}\nrepo.url=secret\nrepo.path={repo}\n\
             repo.url=open\nrepo.path={repo}\n"
        ),
    )
    .unwrap();
    rc
}

/// A POST with a form body (the test client in common sends none).
fn post(addr: &str, target: &str, body: &str) -> Response {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "POST {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    read_response(&mut stream)
}

/// The `name=value` of a `Set-Cookie` header.
fn cookie(r: &Response) -> String {
    let set = r.header("Set-Cookie").expect("a Set-Cookie header");
    set.split(';').next().unwrap().to_string()
}

/// `openssl passwd -6 -salt abcdefgh secret`
const ALICE_HASH: &str = "$6$abcdefgh$ltjgWl6579NluT/Vi1nwEvcil.G5Nbc4NiXZaNGStk8PSwGfQv72N2CKPPrVACtLtip/cZ/1GM/O6IND4WQhG.";

/// cgit's `simple-authentication.lua`, configured as the script asks (its settings at the
/// top): `secret` is protected, user `alice` with password `secret`, the cookie secret in
/// `dir`.
fn simple_authentication(dir: &Path) -> PathBuf {
    let script = std::fs::read_to_string(format!("{FILTERS}/simple-authentication.lua"));
    require_oracle(script.is_ok(), "cgit's filters", "cgit");
    let script = script.unwrap();
    let replace_table = |text: &str, start: &str, with: &str| {
        let from = text.find(start).expect(start);
        let to = from + text[from..].find("\n}\n").expect("end of table") + 3;
        format!("{}{start}\n{with}\n}}\n{}", &text[..from], &text[to..])
    };
    let script = replace_table(
        &script,
        "local protected_repos = {",
        "\tsecret = { alice = true },",
    );
    let script = replace_table(
        &script,
        "local users = {",
        &format!("\talice = \"{ALICE_HASH}\","),
    );
    let secret = dir.join("auth-secret");
    let script = script.replace("/var/cache/cgit/auth-secret", secret.to_str().unwrap());
    let path = dir.join("simple-authentication.lua");
    std::fs::write(&path, script).unwrap();
    path
}

#[test]
fn simple_authentication_lua_protects_a_repository() {
    let dir = TempDir::new("auth-lua");
    let script = simple_authentication(dir.path());
    let rc = site(dir.path(), &format!("auth-filter=lua:{}", script.display()));
    let server = Server::start(&rc);

    let refused = server.get("/secret/");
    let form_page = refused.text_with(200, "the login page");
    assert!(
        form_page.contains("<title>Authentication Required</title>"),
        "{form_page}"
    );
    assert!(form_page.contains("<h2>Authentication Required</h2>"));
    assert!(form_page.contains("<form method='post' action='/?p=login'>"));
    assert!(!form_page.contains("only commit"));
    assert_like_cgit(
        &server,
        &rc,
        "/secret/",
        &[
            ("<title>", "</title>"),
            ("<div class='content'>", "<input type='hidden'"),
            ("<table><tr><td><label", "</div>"),
        ],
    );
    assert!(refused.header("Cache-Control").unwrap().contains("private"));
    // An unprotected repository is served, privately all the same.
    let open = server.get("/open/");
    assert!(open.text_with(200, "open").contains("only commit"));
    assert!(open.header("Cache-Control").unwrap().starts_with("private"));

    let redirect = between(&form_page, "name='redirect' value='", "'")
        ["name='redirect' value='".len()..]
        .to_string();
    let login = |password: &str| {
        post(
            &server.addr,
            "/?p=login",
            &format!(
                "username=alice&password={}&redirect={}",
                url_encode(password),
                url_encode(&redirect)
            ),
        )
    };
    let good = login("secret");
    assert_eq!(good.status, 302, "{}", good.text());
    assert_eq!(good.header("Location"), Some("/secret/"));
    assert!(good.header("Cache-Control").unwrap().contains("no-store"));
    let session = cookie(&good);
    assert!(session.starts_with("cgitauth=username|alice|"), "{session}");

    let served = server.request("GET", "/secret/", &[("Cookie", &session)]);
    let page = served.text_with(200, "with the cookie");
    assert!(page.contains("only commit"), "{page}");
    assert!(!page.contains("Authentication Required"));
    let cc = served.header("Cache-Control").unwrap();
    assert!(cc.starts_with("private") && !cc.contains("public"), "{cc}");
    let log = server.request("GET", "/secret/log/", &[("Cookie", &session)]);
    assert!(log.text_with(200, "log").contains("only commit"));

    // A wrong password sets an empty cookie, which authenticates nobody; so do forged ones.
    let bad = login("wrong");
    assert_eq!(bad.status, 302);
    assert_eq!(cookie(&bad), "cgitauth=");
    for forged in [
        "cgitauth=".to_string(),
        "cgitauth=username|alice|99999999999|00|00".to_string(),
        session.replace("alice", "mallory"),
    ] {
        let r = server.request("GET", "/secret/", &[("Cookie", &forged)]);
        assert!(
            r.text_with(200, &forged)
                .contains("Authentication Required"),
            "{forged}"
        );
    }
    // A redirect the script did not sign is refused.
    let r = post(
        &server.addr,
        "/?p=login",
        "username=alice&password=secret&redirect=%2Fsecret%2F",
    );
    assert_eq!(r.status, 404);
    // POST is only for the login endpoint.
    assert_eq!(post(&server.addr, "/secret/", "x=1").status, 405);
    assert_eq!(post(&server.addr, "/secret/?p=login", "x=1").status, 405);
}

#[test]
fn an_exec_auth_filter_gets_cgits_arguments_and_writes_the_response() {
    let dir = TempDir::new("auth-exec");
    let filter = dir.path().join("auth.sh");
    write_script(
        &filter,
        r#"# cgit's auth-filter protocol in shell: the cookie "session=ok" opens repository "secret".
case "$1" in
authenticate-cookie)
    [ "$9" = secret ] || exit 1
    case "$2" in *session=ok*) exit 1 ;; esac
    exit 0 ;;
authenticate-post)
    body=$(cat)
    printf 'Status: 302 Found\nLocation: /secret/\n'
    case "$body" in
    *password=right*) printf 'Set-Cookie: session=ok; HttpOnly\n' ;;
    *) printf 'Set-Cookie: session=bad; HttpOnly\n' ;;
    esac
    printf '\n'
    exit 0 ;;
body)
    printf "<h2>Authentication Required</h2><form method='post' action='%s'></form>" "${12}"
    printf "<p id='args'>%s|%s|%s|%s|%s|%s</p>" "$3" "$4" "$6" "${10}" "${11}" "$CGIT_REPO_NAME"
    exit 0 ;;
esac
exit 0
"#,
    );
    let rc = site(
        dir.path(),
        &format!("auth-filter=exec:{}", filter.display()),
    );
    let server = Server::start(&rc);

    let page = server
        .get("/secret/log/?h=main")
        .text_with(200, "login page");
    assert!(
        page.contains("<form method='post' action='/?p=login'>"),
        "{page}"
    );
    assert!(
        page.contains("<p id='args'>GET|h=main|/secret/log/|log|/secret/log/?h=main|secret</p>"),
        "{page}"
    );
    assert!(server.page("/open/").contains("only commit"));

    let good = post(&server.addr, "/?p=login", "user=a&password=right");
    assert_eq!(good.status, 302);
    assert_eq!(good.header("Location"), Some("/secret/"));
    assert_eq!(cookie(&good), "session=ok");
    let served = server.request("GET", "/secret/log/", &[("Cookie", "session=ok")]);
    assert!(served.text_with(200, "with cookie").contains("only commit"));
    assert!(
        served
            .header("Cache-Control")
            .unwrap()
            .starts_with("private")
    );

    let bad = post(&server.addr, "/?p=login", "user=a&password=wrong");
    assert_eq!(cookie(&bad), "session=bad");
    let refused = server.request("GET", "/secret/", &[("Cookie", "session=bad")]);
    assert!(
        refused
            .text_with(200, "bad cookie")
            .contains("Authentication Required")
    );
}

#[test]
fn lua_email_and_owner_filters_write_what_cgit_writes() {
    let installed = Path::new(&format!("{FILTERS}/email-gravatar.lua")).exists();
    require_oracle(installed, "cgit's filters", "cgit");
    let dir = TempDir::new("auth-gravatar");
    let rc = site(
        dir.path(),
        &format!(
            "email-filter=lua:{FILTERS}/email-gravatar.lua\n\
             owner-filter=lua:{FILTERS}/owner-example.lua"
        ),
    );
    let server = Server::start(&rc);
    let id = &REPO.1;
    let commit = server.page(&format!("/open/commit/?id={id}"));
    assert!(
        commit.contains("<img src='//www.gravatar.com/avatar/5c1e6d6e64e12aca17657581a48005d1"),
        "{commit}"
    );
    assert_like_cgit(
        &server,
        &rc,
        &format!("/open/commit/?id={id}"),
        &[
            ("<th>author</th>", "</tr>"),
            ("<th>committer</th>", "</tr>"),
        ],
    );
    assert_like_cgit(
        &server,
        &rc,
        "/open/log/",
        &[("<img src='//www.gravatar.com/", "</td>")],
    );
    assert_like_cgit(
        &server,
        &rc,
        "/open/",
        &[("<td class='sub right'>", "</table>")],
    );
}

#[test]
fn pages_are_not_shared_between_requests_with_different_cookies() {
    let dir = TempDir::new("auth-concurrent");
    let filter = dir.path().join("slow-auth.sh");
    // A slow cookie check, so that the requests below overlap.
    write_script(
        &filter,
        "case \"$1\" in\nauthenticate-cookie)\n    sleep 0.3\n    \
         case \"$2\" in *session=ok*) exit 1 ;; esac\n    exit 0 ;;\n\
         body) printf '<h2>Authentication Required</h2>' ;;\nesac\nexit 0\n",
    );
    // A worker per request: the filter's time is the page's time, and queued pages are shed.
    let rc = site(
        dir.path(),
        &format!("git-workers=8\nauth-filter={}", filter.display()),
    );
    let server = Server::start(&rc);
    let addr = server.addr.clone();
    let answers: Vec<(bool, String)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|i| {
                let addr = addr.clone();
                s.spawn(move || {
                    let with_cookie = i % 2 == 0;
                    let headers: &[(&str, &str)] = if with_cookie {
                        &[("Cookie", "session=ok")]
                    } else {
                        &[]
                    };
                    let r = request(&addr, "GET", "/secret/", headers);
                    (with_cookie, r.text())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (with_cookie, page) in answers {
        assert_eq!(page.contains("only commit"), with_cookie, "{page}");
        assert_eq!(
            page.contains("Authentication Required"),
            !with_cookie,
            "{page}"
        );
    }
}
