//! Smart HTTP (upload-pack) against the real git client: clones full, shallow (by depth, date
//! and excluded ref) and partial, mirrors, incremental and unshallowing fetches, over
//! protocols v0, v1 and v2, every result checked by `git fsck --strict`; and bad requests
//! answered with clear errors.

mod common;

use common::*;
use std::io::Write;
use std::net::TcpStream;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

/// The source repository, built once: dated history on `main` with a merge, a rename, a
/// binary file and a non-UTF-8 name, annotated and lightweight tags, a second branch; packed
/// into a bare clone.
static REPOS: LazyLock<PathBuf> = LazyLock::new(|| {
    let root = shared_dir("smart");
    let work = root.join("work");
    init_repo(&work);
    let days = ["2024-01-01", "2024-02-01", "2024-03-01", "2024-04-01"];
    write(&work, "README", "hello\n");
    write(&work, "src/main.rs", "fn main() {}\n");
    commit_all(&work, "first", &format!("{}T10:00:00+00:00", days[0]));
    git(&work, &["tag", "-a", "v1.0", "-m", "Version 1.0"]);
    write(&work, "data.bin", [0u8, 1, 2, 255, 0, 7].repeat(5000));
    std::fs::write(
        work.join(std::ffi::OsStr::from_bytes(b"caf\xe9.txt")),
        "latin-1\n",
    )
    .unwrap();
    commit_all(&work, "second", &format!("{}T10:00:00+00:00", days[1]));
    git(&work, &["checkout", "-q", "-b", "topic"]);
    write(&work, "topic.txt", "t\n");
    commit_all(&work, "topic", &format!("{}T10:00:00+00:00", days[2]));
    git(&work, &["checkout", "-q", "main"]);
    git(&work, &["mv", "src/main.rs", "src/app.rs"]);
    commit_all(&work, "third", &format!("{}T10:00:00+00:00", days[2]));
    git(&work, &["tag", "light"]);
    git_dated(
        &work,
        &["merge", "-q", "--no-ff", "-m", "merge topic", "topic"],
        1711965600,
        None,
    );
    write(&work, "README", "hello\nagain\n");
    commit_all(&work, "fourth", &format!("{}T10:00:00+00:00", days[3]));
    git(&root, &["clone", "-q", "--bare", "work", "source.git"]);
    let bare = root.join("source.git");
    git(&bare, &["repack", "-a", "-d", "-q"]);
    root
});

/// A served copy of the source repository, which a test may add commits to.
struct Site {
    dir: TempDir,
    server: Server,
}

impl Site {
    fn new(options: &str) -> Site {
        let dir = copy_of(&REPOS, "smart-site");
        let rc = dir.path().join("cgitrc");
        std::fs::write(
            &rc,
            format!(
                "{options}repo.url=source\nrepo.path={}/source.git\n",
                dir.path().display()
            ),
        )
        .unwrap();
        let server = Server::start(&rc);
        Site { dir, server }
    }

    fn source(&self) -> PathBuf {
        self.dir.path().join("source.git")
    }

    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    fn url(&self) -> String {
        format!("http://{}/source", self.server.addr)
    }

    /// Runs git with protocol `version` in `dir`; panics with git's message when it fails.
    fn git(&self, dir: &Path, version: u8, args: &[&str]) -> String {
        let version = format!("protocol.version={version}");
        let mut all = vec!["-c", &version];
        all.extend_from_slice(args);
        git(dir, &all)
    }

    /// Clones into a new directory below the site with `args` before the URL.
    fn clone(&self, version: u8, name: &str, args: &[&str]) -> PathBuf {
        let dest = self.dir.path().join(name);
        let url = self.url();
        let mut all = vec!["clone", "-q"];
        all.extend_from_slice(args);
        all.extend_from_slice(&[&url, dest.to_str().unwrap()]);
        self.git(self.dir.path(), version, &all);
        dest
    }

    /// Adds a commit and a tag on `main` of the served repository.
    fn add_commits(&self, n: usize) {
        let work = self.work();
        for i in 0..n {
            write(&work, "more.txt", format!("{i}\n"));
            commit_all(&work, &format!("more {i}"), "2024-05-01T10:00:00+00:00");
        }
        git(&work, &["tag", "-a", &format!("v-more-{n}"), "-m", "more"]);
        git(&work, &["push", "-q", "--tags", "../source.git", "main"]);
    }
}

fn fsck(dir: &Path) {
    git(dir, &["fsck", "--strict", "--no-dangling"]);
}

fn refs(dir: &Path) -> String {
    git(dir, &["for-each-ref", "--format=%(objectname) %(refname)"])
}

fn commit_count(dir: &Path) -> usize {
    git(dir, &["rev-list", "--count", "HEAD"])
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn mirrors_are_the_source_over_every_protocol() {
    let site = Site::new("");
    let source = site.source();
    let objects = |dir: &Path| {
        let mut lines: Vec<String> = git(dir, &["rev-list", "--objects", "--all"])
            .lines()
            .map(str::to_string)
            .collect();
        lines.sort();
        lines
    };
    for version in [0, 1, 2] {
        let copy = site.clone(version, &format!("mirror-v{version}.git"), &["--mirror"]);
        assert_eq!(refs(&copy), refs(&source), "protocol v{version}");
        assert_eq!(objects(&copy), objects(&source), "protocol v{version}");
        fsck(&copy);
    }
}

#[test]
fn a_clone_checks_out_every_file() {
    let site = Site::new("");
    let copy = site.clone(2, "checkout", &[]);
    assert_eq!(
        std::fs::read(copy.join("README")).unwrap(),
        b"hello\nagain\n"
    );
    assert_eq!(
        std::fs::read(copy.join("data.bin")).unwrap(),
        [0u8, 1, 2, 255, 0, 7].repeat(5000)
    );
    let latin1 = copy.join(std::ffi::OsStr::from_bytes(b"caf\xe9.txt"));
    assert_eq!(std::fs::read(latin1).unwrap(), b"latin-1\n");
    fsck(&copy);
}

#[test]
fn shallow_clones_stop_at_their_depth_date_or_excluded_ref() {
    let site = Site::new("");
    for version in [0, 2] {
        let one = site.clone(version, &format!("depth1-v{version}"), &["--depth", "1"]);
        assert_eq!(commit_count(&one), 1, "v{version}");
        let shallow = std::fs::read_to_string(one.join(".git/shallow")).unwrap();
        assert_eq!(shallow.trim(), git(&one, &["rev-parse", "HEAD"]).trim());
        fsck(&one);
        let since = site.clone(
            version,
            &format!("since-v{version}"),
            &["--shallow-since", "2024-02-15"],
        );
        // fourth, the merge, third and topic are from March and April.
        assert_eq!(commit_count(&since), 4, "v{version}");
        fsck(&since);
        let exclude = site.clone(
            version,
            &format!("exclude-v{version}"),
            &["--shallow-exclude", "v1.0"],
        );
        assert_eq!(commit_count(&exclude), 5, "v{version}");
        fsck(&exclude);
    }
}

#[test]
fn shallow_clones_deepen_and_unshallow() {
    let site = Site::new("");
    for version in [0, 2] {
        let copy = site.clone(version, &format!("deepen-v{version}"), &["--depth", "1"]);
        site.git(&copy, version, &["fetch", "-q", "--depth", "3"]);
        assert_eq!(
            git(&copy, &["rev-list", "--count", "--first-parent", "HEAD"]).trim(),
            "3"
        );
        fsck(&copy);
        site.git(&copy, version, &["fetch", "-q", "--unshallow"]);
        assert!(!copy.join(".git/shallow").exists());
        assert_eq!(commit_count(&copy), 6);
        fsck(&copy);
    }
}

#[test]
fn a_partial_clone_fetches_blobs_when_it_checks_out() {
    let site = Site::new("");
    for filter in ["blob:none", "blob:limit=100", "tree:0"] {
        let name = filter.replace([':', '='], "-");
        let copy = site.clone(2, &name, &["--no-checkout", "--filter", filter]);
        let missing = git(
            &copy,
            &["rev-list", "--objects", "--missing=print", "--all"],
        );
        assert!(
            missing.lines().any(|l| l.starts_with('?')),
            "{filter}: something left out"
        );
        site.git(&copy, 2, &["checkout", "-q", "main"]);
        assert_eq!(
            std::fs::read(copy.join("README")).unwrap(),
            b"hello\nagain\n"
        );
        assert_eq!(std::fs::read(copy.join("data.bin")).unwrap().len(), 30000);
        fsck(&copy);
    }
}

#[test]
fn fetches_bring_new_commits_and_tags() {
    let site = Site::new("");
    let copies: Vec<(u8, PathBuf)> = [0, 1, 2]
        .into_iter()
        .map(|v| (v, site.clone(v, &format!("fetch-v{v}.git"), &["--mirror"])))
        .collect();
    site.add_commits(10);
    for (version, copy) in &copies {
        site.git(copy, *version, &["fetch", "-q", "--prune", "origin"]);
        assert_eq!(refs(copy), refs(&site.source()), "v{version}");
        fsck(copy);
    }
}

#[test]
fn a_fetch_with_many_unknown_haves_negotiates_to_the_common_commits() {
    let site = Site::new("");
    for version in [0, 2] {
        let copy = site.clone(version, &format!("haves-v{version}"), &[]);
        // 200 local commits the server has never seen: sent as haves, never acknowledged.
        git(&copy, &["checkout", "-q", "-b", "local"]);
        for i in 0..200 {
            git(
                &copy,
                &["commit", "-q", "--allow-empty", "-m", &format!("local {i}")],
            );
        }
        site.add_commits(2 + version as usize);
        site.git(&copy, version, &["fetch", "-q", "origin"]);
        assert_eq!(
            git(&copy, &["rev-parse", "origin/main"]),
            git(&site.source(), &["rev-parse", "main"])
        );
        fsck(&copy);
    }
}

/// One POST with `body`; the response read to its end.
fn post(addr: &str, target: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut head = format!(
        "POST {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    // The server may answer before it has read a body it refuses.
    let _ = stream.write_all(body);
    read_response(&mut stream)
}

#[test]
fn the_advertisement_is_smart_and_from_the_refs() {
    let site = Site::new("");
    let v0 = site.server.get("/source/info/refs?service=git-upload-pack");
    assert_eq!(
        v0.header("content-type"),
        Some("application/x-git-upload-pack-advertisement")
    );
    let text = v0.text_with(200, "v0 advertisement");
    assert!(
        text.starts_with("001e# service=git-upload-pack\n0000"),
        "{text}"
    );
    let main = git(&site.source(), &["rev-parse", "main"]);
    assert!(text.contains(&format!("{} HEAD\0", main.trim())), "{text}");
    assert!(text.contains("symref=HEAD:refs/heads/main"));
    assert!(text.contains("refs/tags/v1.0^{}"));
    let v2 = site.server.request(
        "GET",
        "/source/info/refs?service=git-upload-pack",
        &[("Git-Protocol", "version=2")],
    );
    let text = v2.text_with(200, "v2 capabilities");
    assert!(text.starts_with("000eversion 2\n"), "{text}");
    assert!(text.contains("fetch=shallow filter"));
    // Without `service` the dumb listing stays.
    assert!(
        !site
            .server
            .get("/source/info/refs")
            .text()
            .contains("# service")
    );
}

#[test]
fn bad_requests_get_clear_errors() {
    let site = Site::new("");
    let addr = &site.server.addr;
    let target = "/source/git-upload-pack";
    let v2 = [("Git-Protocol", "version=2")];
    let broken = post(addr, target, &v2, b"00zzcommand=fetch");
    assert_eq!(broken.status, 400, "{}", broken.text());
    let unknown = post(
        addr,
        target,
        &v2,
        &pkt(&["command=frobnicate", "0001", "0000"]),
    );
    assert!(
        unknown.text().contains("ERR unknown command"),
        "{}",
        unknown.text()
    );
    let missing = "want 1234567890123456789012345678901234567890";
    let not_ours = post(
        addr,
        target,
        &v2,
        &pkt(&["command=fetch", "0001", missing, "done", "0000"]),
    );
    assert!(
        not_ours.text().contains("ERR not our ref"),
        "{}",
        not_ours.text()
    );
    let main = git(&site.source(), &["rev-parse", "main"]);
    let want = format!("want {}", main.trim());
    let deep = post(
        addr,
        target,
        &v2,
        &pkt(&[
            "command=fetch",
            "0001",
            &want,
            "deepen 99999999999",
            "done",
            "0000",
        ]),
    );
    assert!(deep.text().contains("ERR bad depth"), "{}", deep.text());
    // A small gzip body that would inflate past the bound.
    let mut bomb = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    bomb.write_all(&vec![b'0'; 17 << 20]).unwrap();
    let bomb = bomb.finish().unwrap();
    let gzip = [v2[0], ("Content-Encoding", "gzip")];
    assert_eq!(post(addr, target, &gzip, &bomb).status, 413);
    let push = site
        .server
        .get("/source/info/refs?service=git-receive-pack");
    assert_eq!(push.status, 403);
    assert_eq!(
        post(addr, "/source/git-receive-pack", &[], b"0000").status,
        403
    );
    assert_eq!(
        post(addr, "/nothere/git-upload-pack", &v2, b"0000").status,
        404
    );
    let nothing = post(addr, target, &v2, b"0000");
    assert_eq!(nothing.status, 200);
    assert!(nothing.body.is_empty());
    // The server is still fine.
    let copy = site.clone(2, "after-errors", &["--depth", "1"]);
    fsck(&copy);
}

#[test]
fn disabled_http_clone_answers_404() {
    let site = Site::new("enable-http-clone=0\n");
    let advert = site.server.get("/source/info/refs?service=git-upload-pack");
    assert_eq!(advert.status, 404);
    let out = git_command(site.dir.path(), &["clone", "-q", &site.url(), "nope"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn an_identical_clone_is_sent_the_kept_pack() {
    let site = Site::new("metrics-path=/metrics\n");
    let packs = |source: &str| {
        metric(
            &site.server,
            &format!("cgitd_upload_pack_packs_total{{source=\"{source}\"}}"),
        )
    };
    for (name, args) in [("full", &[][..]), ("depth", &["--depth", "1"][..])] {
        let written = packs("written");
        let kept = packs("kept");
        let first = site.clone(2, &format!("{name}-1"), args);
        let second = site.clone(0, &format!("{name}-2"), args);
        assert_eq!(packs("written"), written + 1.0, "{name}");
        assert_eq!(packs("kept"), kept + 1.0, "{name}");
        assert_eq!(refs(&first), refs(&second), "{name}");
        fsck(&second);
    }
    let depth = site.dir.path().join("depth-2");
    assert_eq!(commit_count(&depth), 1);
    // New commits make a new clone a different request: written, not kept.
    site.add_commits(1);
    let written = packs("written");
    let third = site.clone(2, "full-3", &[]);
    assert_eq!(packs("written"), written + 1.0);
    assert_eq!(commit_count(&third), 7);
    fsck(&third);
}

#[test]
fn a_zero_clone_cache_keeps_no_pack() {
    let site = Site::new("metrics-path=/metrics\nclone-cache-size=0\n");
    site.clone(2, "one", &[]);
    site.clone(2, "two", &[]);
    let written = "cgitd_upload_pack_packs_total{source=\"written\"}";
    assert_eq!(metric(&site.server, written), 2.0);
    assert!(metric(&site.server, "cgitd_upload_pack_bytes_total") > 0.0);
}

#[test]
fn concurrent_clones_wait_their_turn_instead_of_a_503() {
    // One expensive worker and a 1 ms queue deadline: a crawler's page waiting behind a clone
    // would be shed, but git does not retry a 503, so clones wait for their turn.
    let site = Site::new(
        "git-workers=2\ngit-expensive-workers=1\nqueue-deadline-expensive=1\nclone-cache-size=0\n",
    );
    let clones: Vec<PathBuf> = std::thread::scope(|scope| {
        let site = &site;
        let running: Vec<_> = (1..=6)
            .map(|depth| {
                scope.spawn(move || {
                    let depth = depth.to_string();
                    let name = format!("concurrent-{depth}");
                    site.clone(2, &name, &["--bare", "--depth", &depth])
                })
            })
            .collect();
        running.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let counts: Vec<usize> = clones.iter().map(|c| commit_count(c)).collect();
    assert_eq!(counts[0], 1);
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
    assert!(counts[5] > counts[0], "{counts:?}");
    clones.iter().for_each(|c| fsck(c));
}
