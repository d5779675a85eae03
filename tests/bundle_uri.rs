//! git's `bundle-uri` (git ≥ 2.40 for the relative URI cgitd gives) with `clone-bundle-uri`:
//! the capability and the bundle list over protocol v2, the bundle at
//! `/<repo>/bundle/clone.bundle` (verified by `git bundle verify`, cloned from with
//! `--bundle-uri`, fetched by `transfer.bundleURI` clones, kept for the next one, made anew when
//! the refs move), and nothing of it where the option is off.

mod common;

use common::*;
use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

/// A bare repository with two branches and an annotated and a lightweight tag, built once.
static REPOS: LazyLock<PathBuf> = LazyLock::new(|| {
    let root = shared_dir("bundle-uri");
    let work = root.join("work");
    init_repo(&work);
    write(&work, "README", "hello\n");
    commit_all(&work, "first", "2024-01-01T10:00:00+00:00");
    git(&work, &["tag", "-a", "v1.0", "-m", "Version 1.0"]);
    git(&work, &["checkout", "-q", "-b", "topic"]);
    write(&work, "topic.txt", "t\n");
    commit_all(&work, "topic", "2024-02-01T10:00:00+00:00");
    git(&work, &["checkout", "-q", "main"]);
    write(&work, "data.bin", [0u8, 1, 2, 255].repeat(4000));
    commit_all(&work, "second", "2024-03-01T10:00:00+00:00");
    git(&work, &["tag", "light"]);
    git(&root, &["clone", "-q", "--bare", "work", "source.git"]);
    git(&root.join("source.git"), &["repack", "-a", "-d", "-q"]);
    root
});

/// The repository served twice: as `on` (with `repo.clone-bundle-uri=1`, or the globals'
/// `options`) and as `off`.
struct Site {
    dir: TempDir,
    server: Server,
}

impl Site {
    fn new(options: &str, on: &str) -> Site {
        let dir = copy_of(&REPOS, "bundle-site");
        let rc = dir.path().join("cgitrc");
        let git_dir = dir.path().join("source.git");
        std::fs::write(
            &rc,
            format!(
                "metrics-path=/metrics\n{options}\
                 repo.url=on\nrepo.path={git}\n{on}\n\
                 repo.url=off\nrepo.path={git}\nrepo.clone-bundle-uri=0\n",
                git = git_dir.display()
            ),
        )
        .unwrap();
        let server = Server::start(&rc);
        Site { dir, server }
    }

    fn url(&self, repo: &str) -> String {
        format!("http://{}/{repo}", self.server.addr)
    }

    fn source(&self) -> PathBuf {
        self.dir.path().join("source.git")
    }

    fn bundles(&self, source: &str) -> f64 {
        metric(
            &self.server,
            &format!("cgitd_upload_pack_bundles_total{{source=\"{source}\"}}"),
        )
    }

    /// A `transfer.bundleURI` clone of `repo` over protocol v2, with git's packet trace.
    fn clone_with_bundle_uri(&self, repo: &str, name: &str) -> (PathBuf, String) {
        let dest = self.dir.path().join(name);
        let trace = self.dir.path().join(format!("{name}.trace"));
        let out = git_command(
            self.dir.path(),
            &[
                "-c",
                "protocol.version=2",
                "-c",
                "transfer.bundleURI=true",
                "clone",
                "-q",
                &self.url(repo),
                dest.to_str().unwrap(),
            ],
        )
        .env("GIT_TRACE_PACKET", &trace)
        .output()
        .unwrap();
        assert!(
            out.status.success(),
            "clone failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (dest, std::fs::read_to_string(&trace).unwrap_or_default())
    }
}

fn refs(dir: &Path, prefix: &str) -> String {
    git(
        dir,
        &["for-each-ref", "--format=%(objectname) %(refname)", prefix],
    )
}

fn fsck(dir: &Path) {
    git(dir, &["fsck", "--strict", "--no-dangling"]);
}

/// The branches and tags of a clone, named as in the source.
fn cloned_refs(clone: &Path) -> String {
    let mut lines: Vec<String> = refs(clone, "refs/remotes/origin/")
        .lines()
        .filter(|l| !l.ends_with("/HEAD"))
        .map(|l| l.replace("refs/remotes/origin/", "refs/heads/"))
        .chain(refs(clone, "refs/tags/").lines().map(String::from))
        .collect();
    lines.sort();
    lines.join("\n")
}

fn source_refs(source: &Path) -> String {
    let mut lines: Vec<String> = refs(source, "refs/").lines().map(String::from).collect();
    lines.sort();
    lines.join("\n")
}

fn post(addr: &str, target: &str, body: &[u8]) -> Response {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let head = format!(
        "POST {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Git-Protocol: version=2\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    let _ = stream.write_all(body);
    read_response(&mut stream)
}

fn capabilities(site: &Site, repo: &str) -> String {
    site.server
        .request(
            "GET",
            &format!("/{repo}/info/refs?service=git-upload-pack"),
            &[("Git-Protocol", "version=2")],
        )
        .text_with(200, "v2 capabilities")
}

fn bundle_list(site: &Site, repo: &str) -> Response {
    let request = pkt(&["command=bundle-uri", "object-format=sha1", "0001", "0000"]);
    post(
        &site.server.addr,
        &format!("/{repo}/git-upload-pack"),
        &request,
    )
}

#[test]
fn the_bundle_is_advertised_verified_cloned_from_and_kept() {
    let site = Site::new("", "repo.clone-bundle-uri=1");
    let caps = capabilities(&site, "on");
    assert!(caps.contains("000fbundle-uri\n"), "{caps}");
    let list = bundle_list(&site, "on").text_with(200, "bundle list");
    assert_eq!(
        list,
        "0015bundle.version=1\n0014bundle.mode=all\n0027bundle.all.uri=bundle/clone.bundle\n0000"
    );

    // The bundle itself: its header lists the refs, and git accepts it.
    let bundle = site.server.get("/on/bundle/clone.bundle");
    assert_eq!(bundle.status, 200, "{}", bundle.text());
    assert_eq!(
        bundle.header("content-length"),
        Some(bundle.body.len().to_string().as_str())
    );
    let text = String::from_utf8_lossy(&bundle.body);
    let main = git(&site.source(), &["rev-parse", "main"]);
    assert!(text.starts_with("# v2 git bundle\n"), "{text:.200}");
    assert!(text.contains(&format!("{} HEAD\n", main.trim())));
    assert!(text.contains(&format!("{} refs/heads/main\n", main.trim())));
    assert!(text.contains(" refs/tags/v1.0\n"));
    let file = site.dir.path().join("clone.bundle");
    std::fs::write(&file, &bundle.body).unwrap();
    // `git bundle verify` wants a repository (to look for prerequisites): an empty one.
    let empty = site.dir.path().join("empty");
    git(site.dir.path(), &["init", "-q", empty.to_str().unwrap()]);
    let file_arg = file.to_str().unwrap();
    git(&empty, &["bundle", "verify", "-q", file_arg]);
    assert_eq!(site.bundles("written"), 1.0);

    // HEAD: the same length, no body, and the kept pack.
    let head = site.server.request("HEAD", "/on/bundle/clone.bundle", &[]);
    assert_eq!(head.status, 200);
    assert_eq!(
        head.header("content-length"),
        Some(bundle.body.len().to_string().as_str())
    );
    assert!(head.body.is_empty());

    // `git clone --bundle-uri`.
    let dest = site.dir.path().join("explicit");
    let uri = format!("{}/bundle/clone.bundle", site.url("on"));
    git(
        site.dir.path(),
        &[
            "clone",
            "-q",
            &format!("--bundle-uri={uri}"),
            &site.url("on"),
            dest.to_str().unwrap(),
        ],
    );
    fsck(&dest);
    assert_eq!(cloned_refs(&dest), source_refs(&site.source()));
    assert_eq!(site.bundles("kept"), 1.0);

    // A plain clone told of the bundle downloads it, and has everything.
    let (told, trace) = site.clone_with_bundle_uri("on", "told");
    assert!(
        trace.contains("bundle.all.uri=bundle/clone.bundle"),
        "{trace}"
    );
    fsck(&told);
    assert_eq!(cloned_refs(&told), source_refs(&site.source()));
    assert!(!refs(&told, "refs/bundles/").is_empty());
    assert_eq!(site.bundles("kept"), 2.0);
    assert!(metric(&site.server, "cgitd_upload_pack_bundle_bytes_total") > 0.0);

    // New commits: the next bundle has them, from a new pack.
    let work = site.dir.path().join("work");
    write(&work, "more.txt", "more\n");
    commit_all(&work, "more", "2024-05-01T10:00:00+00:00");
    git(&work, &["push", "-q", "../source.git", "main"]);
    let main = git(&site.source(), &["rev-parse", "main"]);
    let fresh = (0..100)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(50));
            site.server.get("/on/bundle/clone.bundle")
        })
        .find(|b| {
            String::from_utf8_lossy(&b.body).contains(&format!("{} refs/heads/main\n", main.trim()))
        })
        .expect("a bundle with the new commit");
    std::fs::write(&file, &fresh.body).unwrap();
    git(&empty, &["bundle", "verify", "-q", file_arg]);
    assert_eq!(site.bundles("written"), 2.0);
    let (after, _) = site.clone_with_bundle_uri("on", "after");
    fsck(&after);
    assert_eq!(cloned_refs(&after), source_refs(&site.source()));
}

#[test]
fn where_the_option_is_off_no_bundle_is_offered() {
    let site = Site::new("clone-bundle-uri=1\n", "");
    // The global turns it on for `on`; `repo.clone-bundle-uri=0` turns it off for `off`.
    assert!(capabilities(&site, "on").contains("bundle-uri"));
    let caps = capabilities(&site, "off");
    assert!(!caps.contains("bundle-uri"), "{caps}");
    let refused = bundle_list(&site, "off").text_with(200, "bundle list");
    assert!(refused.contains("ERR unknown command"), "{refused}");
    assert_eq!(site.server.get("/off/bundle/clone.bundle").status, 404);
    assert_eq!(
        site.server
            .request("HEAD", "/off/bundle/clone.bundle", &[])
            .status,
        404
    );
    assert_eq!(site.server.get("/nothere/bundle/clone.bundle").status, 404);
    let (clone, trace) = site.clone_with_bundle_uri("off", "plain");
    assert!(!trace.contains("bundle-uri"), "{trace}");
    fsck(&clone);
    assert!(refs(&clone, "refs/bundles/").is_empty());
    assert_eq!(site.bundles("written") + site.bundles("kept"), 0.0);
}

#[test]
fn without_http_clone_the_bundle_is_404() {
    let site = Site::new("enable-http-clone=0\nclone-bundle-uri=1\n", "");
    assert_eq!(site.server.get("/on/bundle/clone.bundle").status, 404);
    // The URL is no page either.
    assert_eq!(site.server.get("/on/bundle/").status, 404);
    assert_eq!(site.server.get("/on/").status, 200);
}

#[test]
fn an_auth_filter_guards_the_bundle_and_clones_of_its_repository() {
    let dir = copy_of(&REPOS, "bundle-auth");
    let filter = dir.path().join("auth.sh");
    // The cookie "session=ok" opens repository "on"; every other repository is open.
    write_script(
        &filter,
        r#"case "$1" in
authenticate-cookie)
    [ "$9" = on ] || exit 1
    case "$2" in *session=ok*) exit 1 ;; esac
    exit 0 ;;
esac
exit 0
"#,
    );
    let rc = dir.path().join("cgitrc");
    std::fs::write(
        &rc,
        format!(
            "auth-filter=exec:{}\nclone-bundle-uri=1\nrepo.url=on\nrepo.path={git}\n\
             repo.url=open\nrepo.path={git}\n",
            filter.display(),
            git = dir.path().join("source.git").display()
        ),
    )
    .unwrap();
    let server = Server::start(&rc);
    let ok = [("Cookie", "session=ok")];
    assert_eq!(server.get("/on/bundle/clone.bundle").status, 403);
    assert_eq!(
        server.request("GET", "/on/bundle/clone.bundle", &ok).status,
        200
    );
    assert_eq!(server.get("/open/bundle/clone.bundle").status, 200);
    let advert = "/on/info/refs?service=git-upload-pack";
    assert_eq!(server.get(advert).status, 403);
    assert_eq!(server.request("GET", advert, &ok).status, 200);
    let listing = format!("http://{}/on", server.addr);
    let out = git_command(dir.path(), &["ls-remote", &listing])
        .output()
        .unwrap();
    assert!(!out.status.success(), "a protected repository was listed");
}
