//! Snapshots: every format extracts (with the system's tar/unzip and compressors) to exactly the
//! tree at the revision, bytes are reproducible and the tar equals `git archive`'s, revisions are
//! guessed from file names as cgit does, and crafted names never put entries outside the root.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::LazyLock;

const FORMATS: &[(&str, &str)] = &[
    ("tar", "application/x-tar"),
    ("tar.gz", "application/x-gzip"),
    ("tar.bz2", "application/x-bzip2"),
    ("tar.lz", "application/x-lzip"),
    ("tar.xz", "application/x-xz"),
    ("tar.zst", "application/x-zstd"),
    ("zip", "application/x-zip"),
];

struct Site {
    rc: PathBuf,
    work: PathBuf,
}

/// The repository and its cgitrc, built once and only read by the tests.
static SITE: LazyLock<Site> = LazyLock::new(|| {
    let root = shared_dir("snapshot");
    build_repo(&root);
    site_in(&root)
});

/// A repository with an executable, a symlink, nested and non-ASCII names, a submodule, an
/// annotated tag `v1.0`, a branch with a `/` and a commit whose message holds `../../etc`.
fn build_repo(root: &Path) {
    let work = root.join("repo");
    init_repo(&work);
    write(&work, "README", "hello <world> & more\n");
    write(&work, "bin/run.sh", "#!/bin/sh\necho run\n");
    write(&work, "deep/a/b/c/d.txt", "deep\n");
    write(&work, "ünïcödé.txt", "utf-8 name\n");
    write(&work, &format!("long/{}", "n".repeat(120)), "long name\n");
    write(&work, "binary.dat", [0u8, 1, 2, 255, 254, 10, 13, 0]);
    std::os::unix::fs::symlink("README", work.join("link")).unwrap();
    std::os::unix::fs::symlink("../README", work.join("bin/uplink")).unwrap();
    write(
        &work,
        &format!("{}/{}", "p".repeat(90), "f".repeat(30)),
        "split name\n",
    );
    std::os::unix::fs::symlink("t".repeat(150), work.join("longlink")).unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["update-index", "--chmod=+x", "bin/run.sh"]);
    let sub = "1234567890123456789012345678901234567890";
    git(
        &work,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{sub},vendor/sub"),
        ],
    );
    // Not `commit_all`: `add -A` would drop the submodule, which has no work tree.
    git(&work, &["commit", "-q", "-m", "first"]);
    git(&work, &["tag", "-a", "v1.0", "-m", "Version 1.0"]);
    git(&work, &["branch", "feature/x"]);
    write(&work, "later.txt", "later\n");
    commit_all(&work, "see ../../etc", "2024-02-01T10:00:00+00:00");
}

/// Writes the cgitrc serving `root`'s repository as `repo` (all formats) and `only-gz`.
fn site_in(root: &Path) -> Site {
    let work = root.join("repo");
    let rc = root.join("cgitrc");
    std::fs::write(
        &rc,
        format!(
            "snapshots=all\nrepo.url=repo\nrepo.path={work}/.git\n\
             snapshots=tar.gz\nrepo.url=only-gz\nrepo.path={work}/.git\n",
            work = work.display()
        ),
    )
    .unwrap();
    Site { rc, work }
}

/// Unpacks `archive` (named by its format) into a fresh directory.
fn extract(archive: &Path, suffix: &str, into: &Path) {
    std::fs::create_dir_all(into).unwrap();
    let status = if suffix == "zip" {
        Command::new("unzip")
            .arg("-q")
            .arg(archive)
            .arg("-d")
            .arg(into)
            .status()
    } else {
        Command::new("tar")
            .arg("-xf")
            .arg(archive)
            .arg("-C")
            .arg(into)
            .status()
    };
    assert!(
        status.unwrap().success(),
        "extracting {}",
        archive.display()
    );
}

/// The names directly in `dir`.
fn top_level(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Every file, symlink and directory below `dir`, relative; directories end with `/`.
fn listing(dir: &Path) -> Vec<String> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = format!("{rel}{name}");
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                out.push(format!("{path}/"));
                walk(&entry.path(), &format!("{path}/"), out);
            } else {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, "", &mut out);
    out.sort();
    out
}

/// Checks that `root` holds exactly the tree of `rev`: names, modes, contents, link targets,
/// submodules as empty directories.
fn assert_tree_matches(work: &Path, rev: &str, root: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let ls = git(work, &["ls-tree", "-r", "-z", "--full-tree", rev]);
    let mut expected = Vec::new();
    for line in ls.split('\0').filter(|l| !l.is_empty()) {
        let (meta, path) = line.split_once('\t').unwrap();
        let fields: Vec<&str> = meta.split(' ').collect();
        let (mode, id) = (fields[0], fields[2]);
        let on_disk = root.join(path);
        let meta = std::fs::symlink_metadata(&on_disk)
            .unwrap_or_else(|_| panic!("{path} missing from the archive"));
        match mode {
            "160000" => {
                assert!(meta.is_dir(), "{path}: submodule as directory");
                assert_eq!(std::fs::read_dir(&on_disk).unwrap().count(), 0);
                expected.push(format!("{path}/"));
                continue;
            }
            "120000" => {
                let target = std::fs::read_link(&on_disk).unwrap();
                assert_eq!(
                    target.to_string_lossy(),
                    git(work, &["cat-file", "blob", id]),
                    "{path}"
                );
            }
            _ => {
                assert!(meta.is_file(), "{path}");
                let executable = meta.permissions().mode() & 0o111 != 0;
                assert_eq!(executable, mode == "100755", "{path}: mode");
                assert_eq!(
                    std::fs::read(&on_disk).unwrap(),
                    git_bytes(work, &["cat-file", "blob", id]),
                    "{path}: content"
                );
            }
        }
        expected.push(path.to_string());
    }
    let mut dirs: Vec<String> = expected
        .iter()
        .flat_map(|p| {
            let p = p.trim_end_matches('/');
            p.match_indices('/')
                .map(|(i, _)| format!("{}/", &p[..i]))
                .collect::<Vec<_>>()
        })
        .collect();
    expected.append(&mut dirs);
    expected.sort();
    expected.dedup();
    assert_eq!(listing(root), expected);
}

fn fetch(server: &Server, url: &str) -> Response {
    let r = server.get(url);
    assert_eq!(r.status, 200, "{url}: {}", r.text());
    r
}

#[test]
fn every_format_extracts_to_the_tree() {
    let site = &*SITE;
    let scratch = TempDir::new("snapshot-formats");
    let server = Server::start(&site.rc);
    let commit = git(&site.work, &["rev-parse", "v1.0^{commit}"]);
    for (suffix, mime) in FORMATS {
        let name = format!("repo-1.0.{suffix}");
        let r = fetch(&server, &format!("/repo/snapshot/{name}"));
        assert_eq!(r.header("content-type"), Some(*mime), "{suffix}");
        assert_eq!(
            r.header("content-disposition"),
            Some(format!("inline; filename=\"{name}\"").as_str())
        );
        assert_eq!(
            r.header("etag"),
            Some(format!("\"{}\"", commit.trim()).as_str())
        );
        assert!(
            r.header("content-encoding").is_none(),
            "{suffix} not re-compressed"
        );
        let file = scratch.path().join(&name);
        std::fs::write(&file, &r.body).unwrap();
        let out = scratch.path().join(format!("x-{suffix}"));
        extract(&file, suffix, &out);
        assert_eq!(
            top_level(&out),
            ["repo-1.0"],
            "{suffix}: one root directory"
        );
        assert_tree_matches(&site.work, "v1.0", &out.join("repo-1.0"));
        let again = fetch(&server, &format!("/repo/snapshot/{name}"));
        assert!(again.body == r.body, "{suffix}: same bytes twice");
    }
}

#[test]
fn tar_is_byte_for_byte_git_archive() {
    let site = &*SITE;
    let scratch = TempDir::new("snapshot-tar");
    let server = Server::start(&site.rc);
    let ours = fetch(&server, "/repo/snapshot/repo-1.0.tar").body;
    let theirs = git_bytes(&site.work, &["archive", "--prefix=repo-1.0/", "v1.0"]);
    assert!(ours == theirs, "tar differs from git archive");
    let id = git(&site.work, &["rev-parse", "v1.0^{commit}"]);
    let tar = scratch.path().join("t.tar");
    std::fs::write(&tar, &ours).unwrap();
    let out = Command::new("git")
        .args(["get-tar-commit-id"])
        .stdin(std::fs::File::open(&tar).unwrap())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), id);
}

#[test]
fn revisions_are_guessed_like_cgit() {
    let site = &*SITE;
    let scratch = TempDir::new("snapshot-guess");
    let server = Server::start(&site.rc);
    let head = git(&site.work, &["rev-parse", "main"]);
    let v1 = git(&site.work, &["rev-parse", "v1.0^{commit}"]);
    let etag = |url: &str| fetch(&server, url).header("etag").unwrap().to_string();
    let quoted = |id: &str| format!("\"{}\"", id.trim());
    assert_eq!(etag("/repo/snapshot/repo-1.0.tar.gz"), quoted(&v1));
    assert_eq!(etag("/repo/snapshot/v1.0.tar.gz"), quoted(&v1));
    assert_eq!(etag("/repo/snapshot/repo_v1.0.zip"), quoted(&v1));
    assert_eq!(etag("/repo/snapshot/repo-main.tar"), quoted(&head));
    assert_eq!(
        etag(&format!("/repo/snapshot/repo-{}.tar", head.trim())),
        quoted(&head)
    );
    // `id=` wins over the name; the root directory is then the snapshot prefix.
    let r = fetch(&server, "/repo/snapshot/anything.tar?id=v1.0");
    assert_eq!(r.header("etag"), Some(quoted(&v1).as_str()));
    assert!(
        tar_names(scratch.path(), &r.body)
            .iter()
            .all(|n| n.starts_with("repo/"))
    );
    assert_eq!(server.get("/repo/snapshot/repo-9.9.tar.gz").status, 404);
    let tree = git(&site.work, &["rev-parse", "main^{tree}"]);
    let r = server.get(&format!("/repo/snapshot/repo.tar.gz?id={}", tree.trim()));
    assert_eq!(r.status, 400);
    assert!(r.text().contains("Not a commit reference"));
    let conditional = server.request(
        "GET",
        "/repo/snapshot/repo-1.0.tar.gz",
        &[("If-None-Match", &quoted(&v1))],
    );
    assert_eq!(conditional.status, 304);
}

#[test]
fn disabled_and_unknown_formats_are_rejected() {
    let site = &*SITE;
    let server = Server::start(&site.rc);
    assert_eq!(
        fetch(&server, "/only-gz/snapshot/only-gz-1.0.tar.gz").status,
        200
    );
    for url in [
        "/only-gz/snapshot/only-gz-1.0.zip",
        "/only-gz/snapshot/only-gz-1.0.tar",
        "/repo/snapshot/repo-1.0.rar",
        "/repo/snapshot/repo-1.0",
    ] {
        let r = server.get(url);
        assert_eq!(r.status, 400, "{url}");
        assert!(r.text().contains("Unsupported snapshot format"), "{url}");
    }
}

/// Member names of a tar archive, as `tar -t` lists them (`scratch` holds the file).
fn tar_names(scratch: &Path, body: &[u8]) -> Vec<String> {
    let file = scratch.join("names.tar");
    std::fs::write(&file, body).unwrap();
    let out = Command::new("tar").arg("-tf").arg(&file).output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn crafted_names_stay_inside_one_root_directory() {
    let site = &*SITE;
    let scratch = TempDir::new("snapshot-crafted");
    let server = Server::start(&site.rc);
    // `:/../../etc` resolves (the commit whose message holds it); `repo-feature/x` to a branch.
    for (url, root) in [
        ("/repo/snapshot/:%2F..%2F..%2Fetc.tar", ":_.._.._etc/"),
        ("/repo/snapshot/repo-feature/x.tar", "repo-feature_x/"),
        ("/repo/snapshot/..%2F..%2Ftmp%2Fx.tar?id=main", "repo/"),
    ] {
        let r = fetch(&server, url);
        let names = tar_names(scratch.path(), &r.body);
        assert!(names.len() > 5, "{url}");
        for name in &names {
            assert!(name.starts_with(root), "{url}: {name} outside {root}");
            assert!(!name.split('/').any(|c| c == ".."), "{url}: {name}");
        }
        let zip_url = url.replacen(".tar", ".zip", 1);
        let zip = fetch(&server, &zip_url);
        let out = scratch.path().join("crafted");
        let _ = std::fs::remove_dir_all(&out);
        let file = scratch.path().join("crafted.zip");
        std::fs::write(&file, &zip.body).unwrap();
        extract(&file, "zip", &out);
        let extracted = listing(&out);
        assert_eq!(extracted[0], root, "{zip_url}");
        assert!(extracted.iter().all(|n| n.starts_with(root)), "{zip_url}");
    }
}

#[test]
fn signatures_from_notes_are_linked_and_served_like_cgit() {
    // adds notes and a tag: a private copy of the repository
    let copy = copy_of(SITE.rc.parent().unwrap(), "snapshot-sigs");
    let site = site_in(copy.path());
    let work = &site.work;
    let signature = "-----BEGIN PGP SIGNATURE-----\n\nc2lnbmF0dXJl\n-----END PGP SIGNATURE-----\n";
    git(
        work,
        &[
            "notes",
            "--ref=signatures/tar.gz",
            "add",
            "-m",
            signature,
            "v1.0",
        ],
    );
    git(work, &["tag", "-a", "v2.0", "-m", "Version 2.0"]);
    git(
        work,
        &[
            "notes",
            "--ref=signatures/tar",
            "add",
            "-m",
            "tar sig",
            "v2.0",
        ],
    );
    let server = Server::start(&site.rc);
    // the note is on the tag object, served as it is stored
    let r = server.get("/only-gz/snapshot/only-gz-1.0.tar.gz.asc");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/pgp-signature"));
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(
        r.header("content-security-policy"),
        Some("default-src 'none'")
    );
    assert_eq!(r.text(), format!("{signature}"));
    // a signature is served even for a format the repository does not offer (as cgit does)
    assert_eq!(
        server.get("/only-gz/snapshot/only-gz-2.0.tar.asc").text(),
        "tar sig\n"
    );
    let missing = server.get("/only-gz/snapshot/only-gz-2.0.zip.asc");
    assert_eq!(missing.status, 404);
    assert!(missing.text().contains("No signature for only-gz-2.0.zip"));
    // links: the format's own signature, else the .tar one for compressed tarballs
    for url in [
        "/only-gz/refs/",
        "/only-gz/tag/?h=v1.0",
        "/only-gz/tag/?h=v2.0",
        "/repo/refs/",
    ] {
        let sig_links = |html: &str| -> String {
            hrefs(html)
                .into_iter()
                .filter(|h| h.contains("/snapshot/"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert!(
            sig_links(&server.page(url))
                .lines()
                .any(|h| h.ends_with(".asc")),
            "{url}"
        );
        assert_like_cgit_by(&server, &site.rc, url, sig_links);
    }
    let refs = server.page("/only-gz/refs/");
    assert!(refs.contains(
        "<a href='/only-gz/snapshot/only-gz-1.0.tar.gz'>only-gz-1.0.tar.gz</a> (<a href='/only-gz/snapshot/only-gz-1.0.tar.gz.asc'>sig</a>)"
    ), "{refs}");
    assert!(refs.contains("(<a href='/only-gz/snapshot/only-gz-2.0.tar.asc'>sig</a>)"));
}
