//! Dumb-HTTP clone: `git clone` against cgitd for a packed and a loose repository, `info/refs`
//! as git lists refs, and files planted as symbolic links or reached with `..` never served.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// A cgitrc of its own over the repositories in `root` (the shared ones or a private copy).
struct Site {
    _dir: TempDir,
    root: PathBuf,
    rc: PathBuf,
}

/// The repositories, built once and only read by the tests.
static REPOS: LazyLock<PathBuf> = LazyLock::new(|| {
    let root = shared_dir("clone");
    build_repos(&root);
    root
});

/// A work repository (loose objects and refs) and a packed bare clone of it.
fn build_repos(root: &Path) {
    let work = root.join("work");
    init_repo(&work);
    write(&work, "README", "hello\n");
    write(&work, "src/main.rs", "fn main() {}\n");
    commit_all(&work, "first", "2024-01-01T10:00:00+00:00");
    git(&work, &["tag", "-a", "v1.0", "-m", "Version 1.0"]);
    write(&work, "src/lib.rs", "pub fn f() {}\n");
    commit_all(&work, "second", "2024-02-01T10:00:00+00:00");
    git(&work, &["tag", "light"]);
    git(&work, &["checkout", "-q", "-b", "topic"]);
    write(&work, "topic.txt", "t\n");
    commit_all(&work, "topic", "2024-03-01T10:00:00+00:00");
    git(&work, &["checkout", "-q", "main"]);
    git(&work, &["tag", "-a", "v2.0", "-m", "Version 2.0", "topic"]);
    git(root, &["clone", "-q", "--bare", "work", "packed.git"]);
    let packed = root.join("packed.git");
    git(&packed, &["repack", "-a", "-d", "-q"]);
    git(&packed, &["pack-refs", "--all"]);
}

/// The shared repositories served with the global options `extra`.
fn build_site(extra: &str) -> Site {
    let dir = TempDir::new("clone");
    site_over(dir, REPOS.clone(), extra)
}

/// A private copy of the repositories, for a test that plants files in them.
fn build_private_site(extra: &str) -> Site {
    let dir = copy_of(&REPOS, "clone-copy");
    let root = dir.path().to_path_buf();
    site_over(dir, root, extra)
}

fn site_over(dir: TempDir, root: PathBuf, extra: &str) -> Site {
    let rc = dir.path().join("cgitrc");
    std::fs::write(
        &rc,
        format!(
            "{extra}repo.url=packed\nrepo.path={root}/packed.git\n\
             repo.url=loose\nrepo.path={root}/work/.git\n",
            root = root.display()
        ),
    )
    .unwrap();
    Site {
        _dir: dir,
        root,
        rc,
    }
}

/// `git clone --mirror` over dumb HTTP (the client told not to try smart HTTP) into `dest`.
fn clone_mirror(server: &Server, repo: &str, dest: &Path) {
    let out = git_command(
        dest.parent().unwrap(),
        &[
            "clone",
            "-q",
            "--mirror",
            &format!("http://{}/{repo}", server.addr),
            dest.to_str().unwrap(),
        ],
    )
    .env("GIT_SMART_HTTP", "0")
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "clone of {repo} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn assert_same_repository(source: &Path, copy: &Path) {
    let refs = |dir: &Path| git(dir, &["for-each-ref", "--format=%(objectname) %(refname)"]);
    assert_eq!(refs(copy), refs(source));
    let objects = |dir: &Path| {
        let mut lines: Vec<String> = git(dir, &["rev-list", "--objects", "--all"])
            .lines()
            .map(str::to_string)
            .collect();
        lines.sort();
        lines
    };
    assert_eq!(objects(copy), objects(source));
    git(copy, &["fsck", "--full", "--strict", "--no-dangling"]);
}

#[test]
fn git_clones_packed_and_loose_repositories() {
    let site = build_site("");
    let root = &site.root;
    let copies = TempDir::new("clone-copies");
    let server = Server::start(&site.rc);
    let packed = root.join("packed.git");
    assert!(
        std::fs::read_dir(packed.join("objects/pack"))
            .unwrap()
            .count()
            >= 2,
        "the packed repository has a pack"
    );
    let packed_copy = copies.path().join("packed-copy.git");
    clone_mirror(&server, "packed", &packed_copy);
    assert_same_repository(&packed, &packed_copy);
    let loose_copy = copies.path().join("loose-copy.git");
    clone_mirror(&server, "loose", &loose_copy);
    assert_same_repository(&root.join("work"), &loose_copy);
}

#[test]
fn info_refs_lists_refs_like_git() {
    let site = build_site("");
    let root = &site.root;
    let server = Server::start(&site.rc);
    for (repo, dir) in [
        ("packed", root.join("packed.git")),
        ("loose", root.join("work")),
    ] {
        let r = server.get(&format!("/{repo}/info/refs"));
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-type"), Some("text/plain; charset=UTF-8"));
        let expected = git(&dir, &["show-ref", "-d"]).replace(' ', "\t");
        assert_eq!(r.text(), expected, "{repo}");
        assert!(r.text().contains("refs/tags/v1.0^{}"));
        assert!(!r.text().contains("refs/tags/light^{}"));
    }
    assert_eq!(server.get("/packed/info/other").status, 400);
    assert_eq!(server.get("/packed/info/").status, 400);
}

#[test]
fn head_and_pack_list() {
    let site = build_site("");
    let root = &site.root;
    let server = Server::start(&site.rc);
    let head = server.get("/packed/HEAD");
    assert_eq!(head.status, 200);
    assert_eq!(head.text(), "ref: refs/heads/main\n");
    assert_eq!(
        head.header("content-type"),
        Some("application/octet-stream")
    );
    let packs = server.get("/packed/objects/info/packs").text();
    let names: Vec<String> = std::fs::read_dir(root.join("packed.git/objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".pack"))
        .collect();
    assert_eq!(names.len(), 1);
    assert_eq!(packs, format!("P {}\n\n", names[0]));
    let pack = server.get(&format!("/packed/objects/pack/{}", names[0]));
    assert_eq!(pack.status, 200);
    assert_eq!(
        pack.body,
        std::fs::read(root.join("packed.git/objects/pack").join(&names[0])).unwrap()
    );
    assert_eq!(server.get("/loose/objects/info/packs").text(), "\n");
    assert_eq!(server.get("/packed/objects/pack/pack-0.pack").status, 404);
    assert_eq!(server.get("/packed/objects/").status, 400);
}

#[test]
fn planted_symlinks_and_dot_dot_are_refused() {
    let site = build_private_site("");
    let root = &site.root;
    let secret = root.join("secret");
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::write(secret.join("key"), "TOP SECRET\n").unwrap();
    let objects = root.join("packed.git/objects");
    std::os::unix::fs::symlink(secret.join("key"), objects.join("info/evil")).unwrap();
    std::os::unix::fs::symlink(&secret, objects.join("ee")).unwrap();
    let server = Server::start(&site.rc);
    for url in ["/packed/objects/info/evil", "/packed/objects/ee/key"] {
        let r = server.get(url);
        assert_eq!(r.status, 403, "{url}");
        assert!(!r.text().contains("TOP SECRET"), "{url}");
    }
    for url in [
        "/packed/objects/../config",
        "/packed/objects/pack/..%2F..%2Fconfig",
        "/packed/objects/info/%2e%2e/%2e%2e/HEAD",
        "/packed/objects/a%20b",
    ] {
        let r = server.get(url);
        assert_eq!(r.status, 400, "{url}");
        assert!(!r.text().contains("[core]"), "{url}");
    }
}

#[test]
fn clone_urls_are_404_when_disabled() {
    let site = build_site("enable-http-clone=0\n");
    let server = Server::start(&site.rc);
    for url in [
        "/packed/info/refs",
        "/packed/HEAD",
        "/packed/objects/info/packs",
    ] {
        assert_eq!(server.get(url).status, 404, "{url}");
    }
    assert_eq!(server.get("/packed/").status, 200);
}

#[test]
fn a_fetch_resumes_a_partial_pack_download() {
    let site = build_site("metrics-path=/metrics\n");
    let server = Server::start(&site.rc);
    let packs = site.root.join("packed.git/objects/pack");
    let pack = std::fs::read_dir(&packs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "pack"))
        .expect("a pack");
    let bytes = std::fs::read(&pack).unwrap();
    let dir = TempDir::new("resume");
    let dest = dir.path().join("dest.git");
    git(dir.path(), &["init", "-q", "--bare", "dest.git"]);
    // What an interrupted download leaves behind: the first part of the pack.
    let temp = dest.join("objects/pack").join(format!(
        "{}.temp",
        pack.file_name().unwrap().to_str().unwrap()
    ));
    std::fs::write(&temp, &bytes[..bytes.len() / 2]).unwrap();
    let out = git_command(
        &dest,
        &[
            "fetch",
            "-q",
            &format!("http://{}/packed", server.addr),
            "+refs/heads/*:refs/heads/*",
            "+refs/tags/*:refs/tags/*",
        ],
    )
    .env("GIT_SMART_HTTP", "0")
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "resumed fetch failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    git(&dest, &["fsck", "--full", "--strict", "--no-dangling"]);
    let metrics = server.page("/metrics");
    assert!(
        metrics.contains("cgitd_requests_total{page=\"objects\",status=\"206\"} 1"),
        "git asked for the rest of the pack only: {metrics}"
    );
}

#[test]
fn byte_ranges_of_plain_files_and_snapshots() {
    let site = build_site("snapshots=tar\n");
    let server = Server::start(&site.rc);
    let whole = server.get("/packed/plain/src/main.rs");
    assert_eq!(whole.status, 200);
    assert_eq!(whole.header("Accept-Ranges"), Some("bytes"));
    let part = server.request(
        "GET",
        "/packed/plain/src/main.rs",
        &[("Range", "bytes=3-6")],
    );
    assert_eq!(part.status, 206);
    assert_eq!(part.header("Content-Range"), Some("bytes 3-6/13"));
    assert_eq!(part.body, b"main");
    let tail = server.request(
        "GET",
        "/packed/plain/src/main.rs",
        &[("Range", "bytes=-2"), ("Accept-Encoding", "gzip")],
    );
    assert_eq!((tail.status, tail.body.as_slice()), (206, &b"}\n"[..]));
    let past = server.request(
        "GET",
        "/packed/plain/src/main.rs",
        &[("Range", "bytes=99-")],
    );
    assert_eq!(past.status, 416);
    assert_eq!(past.header("Content-Range"), Some("bytes */13"));
    let tar = server.get("/packed/snapshot/packed-v1.0.tar");
    assert_eq!(tar.status, 200);
    let etag = tar.header("ETag").unwrap().to_string();
    let resumed = server.request(
        "GET",
        "/packed/snapshot/packed-v1.0.tar",
        &[("Range", "bytes=1000-"), ("If-Range", &etag)],
    );
    assert_eq!(resumed.status, 206);
    assert_eq!(resumed.body, tar.body[1000..]);
    let changed = server.request(
        "GET",
        "/packed/snapshot/packed-v1.0.tar",
        &[("Range", "bytes=1000-"), ("If-Range", "\"something else\"")],
    );
    assert_eq!(
        changed.status, 200,
        "If-Range that does not match sends it whole"
    );
    assert_eq!(changed.body, tar.body);
}
