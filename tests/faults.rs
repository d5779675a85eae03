//! Damaged repositories (issue 45): packs cut short, a corrupt loose object, a ref to a missing
//! object, a clone of a repository missing a blob, a repository removed or made unreadable
//! while served, a missing alternate and a 10,000-level tree. A damaged repository is the
//! server's data fault, not the client's: pages that need what is lost answer the site's HTML
//! error page with 500 (never a 404 that blames the URL, never a 200 that hides the loss), the
//! cause in the log and no server path in the page; pages that need none of it answer as
//! before; no git job panics, the process stays up and the other repositories are served.

#[path = "common/mod.rs"]
mod common;

use common::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A cgitd on 127.0.0.1 whose log (stderr) goes to a file the test reads; killed on drop.
struct Logged {
    server: Server,
    log: PathBuf,
    /// A path no page may show (the directory the repositories are in).
    secret: String,
}

impl Logged {
    fn start(rc: &Path) -> Logged {
        let dir = rc.parent().unwrap();
        let log = dir.join("cgitd.log");
        let args = [
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--config",
            rc.to_str().unwrap(),
        ];
        Logged {
            server: Server::start_logging_to(dir, &args, &log),
            log,
            secret: dir.display().to_string(),
        }
    }

    fn get(&mut self, url: &str) -> Response {
        let addr = self.server.addr.clone();
        let answered = std::panic::catch_unwind(|| request(&addr, "GET", url, &[]));
        // (a server that died mid-answer shows as a cut response: say that it died, and why)
        if answered.is_err() {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        self.assert_alive(url);
        let response = answered.unwrap_or_else(|e| std::panic::resume_unwind(e));
        let text = response.text();
        assert!(
            !text.contains(&self.secret),
            "GET {url} shows a server path:\n{text}"
        );
        response
    }

    /// The log so far.
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap()
    }

    fn assert_alive(&mut self, after: &str) {
        if let Some(status) = self.server.exited() {
            panic!(
                "cgitd ended ({status}) after GET {after}; log:\n{}",
                self.log()
            );
        }
    }

    /// The body of `url`, which must answer 200.
    fn ok(&mut self, url: &str) -> String {
        let r = self.get(url);
        assert_eq!(r.status, 200, "GET {url}: {}", r.text());
        r.text()
    }

    /// Asserts that `url` answers the HTML error page with 500 (which says only that the
    /// failure was logged), and that the log has an error for the request saying one of
    /// `causes`.
    fn fault(&mut self, url: &str, causes: &[&str]) {
        let r = self.get(url);
        assert_error_page(&r, 500, url);
        assert!(
            r.text().contains("the failure has been logged"),
            "GET {url}"
        );
        let log = self.log();
        let token = format!("url={url}");
        let line = log
            .lines()
            .find(|l| l.contains(" ERROR ") && l.split_whitespace().any(|w| w == token))
            .unwrap_or_else(|| panic!("GET {url}: no error logged for it in\n{log}"));
        assert!(
            causes.iter().any(|c| line.contains(c)),
            "GET {url}: the log does not say any of {causes:?}: {line}"
        );
    }

    /// Asserts that `url` answers either 200 with a body containing `expected`, or the error
    /// page with 500; true for 200.
    fn ok_or_fault(&mut self, url: &str, expected: &str) -> bool {
        let r = self.get(url);
        if r.status == 200 {
            assert!(r.text().contains(expected), "GET {url}: {}", r.text());
            return true;
        }
        assert_error_page(&r, 500, url);
        false
    }

    /// Asserts that no git job panicked (a caught panic still answers a page).
    fn assert_no_panic(&self) {
        let log = self.log();
        assert!(!log.contains("panicked"), "a panic in the log:\n{log}");
    }
}

/// Asserts that `r` is the site's HTML error page with `status`.
fn assert_error_page(r: &Response, status: u16, url: &str) {
    let text = r.text();
    assert_eq!(r.status, status, "GET {url}: {text}");
    let kind = r.header("content-type").unwrap_or_default();
    assert!(kind.starts_with("text/html"), "GET {url}: {kind}");
    assert!(
        text.contains("<div class='error'>") && text.contains("</html>"),
        "GET {url}: not an error page:\n{text}"
    );
}

/// Writes a cgitrc with `options` (whole lines) serving each `(url, path)`; returns its path.
fn rc_with(dir: &Path, options: &str, repos: &[(&str, &Path)]) -> PathBuf {
    let mut text = format!("virtual-root=/\n{options}");
    for (url, path) in repos {
        text.push_str(&format!("\nrepo.url={url}\nrepo.path={}\n", path.display()));
    }
    let rc = dir.join("cgitrc");
    std::fs::write(&rc, text).unwrap();
    rc
}

fn rc(dir: &Path, repos: &[(&str, &Path)]) -> PathBuf {
    rc_with(dir, "", repos)
}

/// One object of a pack, as `git verify-pack -v` lists it.
struct PackEntry {
    id: String,
    end: u64,
    offset: u64,
    base: Option<String>,
}

fn pack_entries(git_dir: &Path, idx: &Path) -> Vec<PackEntry> {
    let listing = git(git_dir, &["verify-pack", "-v", idx.to_str().unwrap()]);
    listing
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let offset: u64 = f.get(4)?.parse().ok()?;
            (f[0].len() == 40).then(|| PackEntry {
                id: f[0].to_string(),
                offset,
                end: offset + f[3].parse::<u64>().unwrap(),
                base: f.get(6).map(|s| s.to_string()),
            })
        })
        .collect()
}

/// What the pack reader takes for a pack's trailer (its checksum): the last 20 bytes of what
/// is left of a pack, whatever they hold.
const TRAILER: u64 = 20;

/// Whether object `id` cannot be read from a pack cut at `cut`: its entry or a base of its
/// delta chain goes past what is left before the (supposed) trailer.
fn lost(entries: &[PackEntry], id: &str, cut: u64) -> bool {
    let e = entries.iter().find(|e| e.id == id).expect("in the pack");
    e.end + TRAILER > cut || e.base.as_deref().is_some_and(|b| lost(entries, b, cut))
}

fn pack_files(git_dir: &Path) -> (PathBuf, PathBuf) {
    let packs = git_dir.join("objects/pack");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&packs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pack"))
        .collect();
    assert_eq!(found.len(), 1, "one pack in {}", packs.display());
    let pack = found.pop().unwrap();
    (pack.with_extension("idx"), pack)
}

/// Three commits of 24 incompressible files, packed into one pack with no loose objects left.
fn packed_history(dir: &Path) -> Vec<(String, String)> {
    init_repo(dir);
    let mut files = Vec::new();
    for part in 0..2u64 {
        for n in part * 12..part * 12 + 12 {
            let (name, text) = (format!("f{n:02}.txt"), noise(n, 60));
            write(dir, &name, &text);
            files.push((name, text));
        }
        commit_all(dir, &format!("part {part}"), "2024-01-02T03:04:05+00:00");
    }
    write(dir, "README", "packed\n");
    commit_all(dir, "readme", "2024-01-03T03:04:05+00:00");
    git(dir, &["repack", "-adq"]);
    let count = git(dir, &["count-objects", "-v"]);
    assert!(count.contains("count: 0\n"), "loose objects left: {count}");
    files
}

/// Where a pack's reading fails, as the log says it.
const PACK_CAUSES: &[&str] = &["pack", "Pack", "missing", "inflat"];

#[test]
fn a_pack_cut_short_answers_error_pages_for_what_it_lost() {
    let tmp = TempDir::new("faults-pack");
    let base = tmp.path().join("base");
    let files = packed_history(&base);
    let (idx, pack) = pack_files(&base.join(".git"));
    let entries = pack_entries(&base, &idx);
    let len = std::fs::metadata(&pack).unwrap().len();
    let id = |rev: &str| git(&base, &["rev-parse", rev]).trim().to_string();
    let commits = [id("HEAD"), id("HEAD~1"), id("HEAD~2")];
    let (root, old_root) = (id("HEAD^{tree}"), id("HEAD~1^{tree}"));
    let blobs: Vec<String> = files
        .iter()
        .map(|(f, _)| id(&format!("HEAD:{f}")))
        .collect();
    let entry = |id: &str| entries.iter().find(|e| e.id == id).unwrap();
    let mut blob_mids: Vec<u64> = blobs
        .iter()
        .map(|b| (entry(b).offset + entry(b).end) / 2 + TRAILER)
        .collect();
    blob_mids.sort();
    // In the first object; in the middle of the blobs; just after the head's tree; only the
    // trailer.
    let just_after_root = entry(&root).end + TRAILER + 1;
    let cuts = [
        16,
        blob_mids[blob_mids.len() / 2],
        just_after_root,
        len - TRAILER,
    ];
    let mut served = vec![("ok".to_string(), base.clone())];
    for (n, cut) in cuts.iter().enumerate() {
        let copy = tmp.path().join(format!("cut{n}"));
        let status = Command::new("cp").arg("-a").arg(&base).arg(&copy).status();
        assert!(status.unwrap().success());
        let (_, cut_pack) = pack_files(&copy.join(".git"));
        // (a file git made read-only can still be removed and written anew)
        let mut bytes = std::fs::read(&cut_pack).unwrap();
        bytes.truncate(*cut as usize);
        std::fs::remove_file(&cut_pack).unwrap();
        std::fs::write(&cut_pack, bytes).unwrap();
        served.push((format!("cut{n}"), copy));
    }
    let listed: Vec<(&str, &Path)> = served
        .iter()
        .map(|(u, p)| (u.as_str(), p.as_path()))
        .collect();
    let mut server = Logged::start(&rc(tmp.path(), &listed));
    let mut read = Vec::new();
    for (n, &cut) in cuts.iter().enumerate() {
        let r = format!("/cut{n}");
        let any_lost = |ids: &[&String]| ids.iter().any(|id| lost(&entries, id, cut));
        let mut answered = 0;
        for ((name, text), blob) in files.iter().zip(&blobs) {
            let (plain, tree) = (format!("{r}/plain/{name}"), format!("{r}/tree/{name}"));
            if any_lost(&[&commits[0], &root, blob]) {
                server.fault(&plain, PACK_CAUSES);
                server.fault(&tree, PACK_CAUSES);
            } else {
                assert_eq!(&server.ok(&plain), text, "GET {plain}");
                let first_line = text.lines().next().unwrap();
                assert!(server.ok(&tree).contains(first_line), "GET {tree}");
                answered += 1;
            }
        }
        read.push(answered);
        let all_commits: Vec<&String> = commits.iter().collect();
        if any_lost(&all_commits) {
            server.fault(&format!("{r}/log/"), PACK_CAUSES);
        } else {
            let log = server.ok(&format!("{r}/log/"));
            assert!(log.contains("part 0") && log.contains("readme"), "{log}");
            assert!(server.ok(&format!("{r}/")).contains("readme"));
        }
        if any_lost(&[&commits[0]]) {
            server.fault(&format!("{r}/"), PACK_CAUSES);
        }
        // The head commit's diff needs both trees and the README it adds.
        let readme = id("HEAD:README");
        if any_lost(&[&commits[0], &commits[1], &root, &old_root, &readme]) {
            server.fault(&format!("{r}/commit/"), PACK_CAUSES);
        } else {
            assert!(server.ok(&format!("{r}/commit/")).contains("packed"));
        }
        server.ok_or_fault(&format!("{r}/refs/"), "");
    }
    // Where git puts things: the cut in the blobs loses files; the one after the head's tree
    // keeps every file of the head but loses the older trees (deltas against it).
    eprintln!("files read at cuts {cuts:?} of {len} bytes: {read:?}");
    assert_eq!(read[0], 0);
    assert!(read[1] < files.len(), "{read:?}");
    assert_eq!(read[2], files.len());
    assert!(
        lost(&entries, &old_root, cuts[2]),
        "older trees are before the head's"
    );
    let summary = server.ok("/ok/");
    assert!(summary.contains("readme"), "{summary}");
    assert_eq!(server.ok(&format!("/ok/plain/{}", files[5].0)), files[5].1);
    server.ok("/");
    server.assert_no_panic();
}

/// Where loose object `id` of `git_dir` is stored.
fn loose_path(git_dir: &Path, id: &str) -> PathBuf {
    git_dir.join("objects").join(&id[..2]).join(&id[2..])
}

/// Flips eight bytes in the middle of loose object `id`'s zlib stream.
fn corrupt_loose(git_dir: &Path, id: &str) {
    let path = loose_path(git_dir, id);
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 8] {
        *b ^= 0xff;
    }
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, bytes).unwrap();
}

#[test]
fn a_corrupt_loose_blob_fails_its_own_pages_only() {
    let tmp = TempDir::new("faults-loose");
    let repo = tmp.path().join("r");
    init_repo(&repo);
    write(&repo, "a.txt", noise(1, 80));
    write(&repo, "b.txt", "b, first\n");
    let first = commit_all(&repo, "first", "2024-01-02T03:04:05+00:00");
    write(&repo, "b.txt", "b, second\n");
    commit_all(&repo, "second", "2024-01-03T03:04:05+00:00");
    let blob = git(&repo, &["rev-parse", "HEAD:a.txt"]).trim().to_string();
    corrupt_loose(&repo.join(".git"), &blob);
    let check = git_command(&repo, &["cat-file", "blob", &blob])
        .output()
        .unwrap();
    assert!(!check.status.success(), "git still reads the blob");
    let rc = rc_with(tmp.path(), "enable-blame=1\n", &[("r", &repo)]);
    let mut server = Logged::start(&rc);
    let zlib = &["deflate", "zlib", "inflat"];
    server.fault("/r/tree/a.txt", zlib);
    server.fault("/r/plain/a.txt", zlib);
    server.fault("/r/blame/a.txt", zlib);
    server.fault(&format!("/r/commit/?id={first}"), zlib);
    server.fault(&format!("/r/blob/a.txt?id={blob}"), zlib);
    assert!(server.ok("/r/").contains("second"));
    assert!(server.ok("/r/log/").contains("first"));
    assert!(server.ok("/r/tree/").contains("a.txt"));
    assert!(server.ok("/r/tree/b.txt").contains("b, second"));
    assert_eq!(server.ok("/r/plain/b.txt"), "b, second\n");
    assert!(server.ok("/r/blame/b.txt").contains("b, second"));
    assert!(server.ok("/r/commit/").contains("b, second"));
    server.assert_no_panic();
}

#[test]
fn a_ref_to_a_missing_object_fails_only_the_pages_of_that_ref() {
    let tmp = TempDir::new("faults-ref");
    let repo = tmp.path().join("r");
    init_repo(&repo);
    write(&repo, "f.txt", "here\n");
    commit_all(&repo, "only", "2024-01-02T03:04:05+00:00");
    let bogus = "0badc0de".repeat(5);
    write(&repo, ".git/refs/heads/x", format!("{bogus}\n"));
    let mut server = Logged::start(&rc(tmp.path(), &[("r", &repo)]));
    let summary = server.ok("/r/");
    assert!(summary.contains("only"), "{summary}");
    assert!(server.ok("/r/refs/").contains("main"));
    assert!(server.ok("/r/log/").contains("only"));
    assert!(server.ok("/r/tree/f.txt").contains("here"));
    for page in ["log/", "tree/", "commit/", "plain/f.txt"] {
        server.fault(&format!("/r/{page}?h=x"), &[&bogus]);
    }
    // A client's own unknown name is still its mistake.
    assert_error_page(&server.get("/r/log/?h=nosuch"), 404, "?h=nosuch");
    let unknown = format!("/r/commit/?id={}", "12".repeat(20));
    assert_error_page(&server.get(&unknown), 404, &unknown);
    assert!(
        server
            .log()
            .contains(&format!("branch x: its commit {bogus} cannot be read"))
    );
    server.ok("/");
    server.assert_no_panic();
}

#[test]
fn a_clone_missing_a_blob_fails_with_the_blob_named_in_the_log() {
    let tmp = TempDir::new("faults-clone");
    let repo = tmp.path().join("r");
    init_repo(&repo);
    write(&repo, "kept.txt", "kept\n");
    write(&repo, "lost.txt", "lost\n");
    commit_all(&repo, "only", "2024-01-02T03:04:05+00:00");
    let blob = git(&repo, &["rev-parse", "HEAD:lost.txt"])
        .trim()
        .to_string();
    std::fs::remove_file(loose_path(&repo.join(".git"), &blob)).unwrap();
    let mut server = Logged::start(&rc(tmp.path(), &[("r", &repo)]));
    let url = format!("http://{}/r", server.server.addr);
    let clone = git_command(tmp.path(), &["clone", "-q", "--bare", &url, "copy.git"])
        .output()
        .unwrap();
    assert!(
        !clone.status.success(),
        "a clone of a damaged repository passed"
    );
    let said = String::from_utf8_lossy(&clone.stderr);
    assert!(said.contains("could not be made"), "git said: {said}");
    assert!(
        !said.contains(&server.secret),
        "git was shown a path: {said}"
    );
    let log = server.log();
    assert!(
        log.lines()
            .any(|l| l.contains(" ERROR ") && l.contains(&format!("object {blob} is missing"))),
        "the missing blob is not named in the log:\n{log}"
    );
    assert!(server.ok("/r/tree/kept.txt").contains("kept"));
    server.assert_no_panic();
}

/// Restores a directory's mode when dropped, so that the temporary directory can be removed
/// whatever the test found.
struct ModeGuard(PathBuf, u32);

impl Drop for ModeGuard {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(self.1));
    }
}

#[test]
fn a_repository_removed_or_locked_while_served_leaves_the_site_up() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = TempDir::new("faults-gone");
    let mut repos = Vec::new();
    for name in ["gone", "locked", "kept"] {
        let repo = tmp.path().join(name);
        init_repo(&repo);
        write(&repo, "f.txt", format!("{name} file\n"));
        commit_all(
            &repo,
            &format!("{name} commit"),
            "2024-01-02T03:04:05+00:00",
        );
        git(&repo, &["repack", "-adq"]);
        repos.push(repo);
    }
    let (gone, locked, kept) = (&repos[0], &repos[1], &repos[2]);
    let listed = [("gone", gone.as_path()), ("locked", locked), ("kept", kept)];
    let mut server = Logged::start(&rc(tmp.path(), &listed));
    for r in ["gone", "locked", "kept"] {
        assert!(
            server
                .ok(&format!("/{r}/"))
                .contains(&format!("{r} commit"))
        );
    }
    assert!(server.ok("/gone/tree/f.txt").contains("gone file"));

    // A configured repository that went away is the server's fault (cgit says "config error").
    std::fs::remove_dir_all(gone).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    for page in ["", "log/", "tree/f.txt", "plain/f.txt", "refs/"] {
        server.fault(&format!("/gone/{page}"), &["Failed to open repository"]);
    }
    assert!(server.ok("/").contains("kept"));
    assert!(server.ok("/kept/log/").contains("kept commit"));

    let objects = locked.join(".git/objects");
    let mode = std::fs::metadata(&objects).unwrap().permissions().mode();
    let _restore = ModeGuard(objects.clone(), mode);
    std::fs::set_permissions(&objects, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read_dir(&objects).is_ok() {
        // Root reads through mode 000: take the objects away instead.
        std::fs::set_permissions(&objects, std::fs::Permissions::from_mode(mode)).unwrap();
        for entry in std::fs::read_dir(objects.join("pack")).unwrap() {
            std::fs::remove_file(entry.unwrap().path()).unwrap();
        }
        eprintln!("running as root: removed the pack instead of chmod 000");
    }
    // Pages not rendered before (none is cached): a pack still open may answer them.
    server.ok_or_fault("/locked/tree/f.txt", "locked file");
    server.ok_or_fault("/locked/log/", "locked commit");
    // A server started now has nothing open: the objects are out of reach.
    drop(server);
    let mut server = Logged::start(&rc(tmp.path(), &listed[1..]));
    let causes = &[
        "missing",
        "opening the repository",
        "reading the repository",
    ];
    server.fault("/locked/", causes);
    server.fault("/locked/tree/f.txt", causes);
    server.fault("/locked/plain/f.txt", causes);
    assert!(server.ok("/kept/tree/f.txt").contains("kept file"));
    assert!(server.ok("/").contains("kept"));
    server.assert_no_panic();
}

#[test]
fn a_missing_alternate_fails_the_objects_it_held() {
    let tmp = TempDir::new("faults-alternate");
    let base = tmp.path().join("base");
    init_repo(&base);
    write(&base, "old.txt", "from the base\n");
    commit_all(&base, "base commit", "2024-01-02T03:04:05+00:00");
    let fork = tmp.path().join("fork");
    git(tmp.path(), &["clone", "-q", "--shared", "base", "fork"]);
    write(&fork, "new.txt", "from the fork\n");
    commit_all(&fork, "fork commit", "2024-01-03T03:04:05+00:00");
    let alternates = fork.join(".git/objects/info/alternates");
    assert!(
        std::fs::read_to_string(&alternates)
            .unwrap()
            .contains("base")
    );
    let nowhere = tmp.path().join("nowhere/objects");
    std::fs::write(&alternates, format!("{}\n", nowhere.display())).unwrap();
    let check = git_command(&fork, &["cat-file", "-p", "HEAD:old.txt"]).output();
    assert!(!check.unwrap().status.success(), "git still reads the base");
    let mut server = Logged::start(&rc(tmp.path(), &[("fork", &fork), ("base", &base)]));
    // The fork's own objects are there; the base's blob and the parent commit are not.
    assert_eq!(server.ok("/fork/plain/new.txt"), "from the fork\n");
    server.fault("/fork/plain/old.txt", &["missing blob"]);
    server.fault("/fork/tree/old.txt", &["missing object"]);
    server.fault("/fork/", &["could not be found"]);
    server.fault("/fork/log/", &["could not be found"]);
    assert!(server.ok("/base/").contains("base commit"));
    assert_eq!(server.ok("/base/plain/old.txt"), "from the base\n");
    assert!(server.ok("/").contains("fork"));
    server.assert_no_panic();
}

#[test]
fn a_tree_ten_thousand_levels_deep_does_not_take_the_server_down() {
    const DEPTH: usize = 10_000;
    let tmp = TempDir::new("faults-deep");
    let repo = tmp.path().join("deep");
    init_repo(&repo);
    let deep = "a/".repeat(DEPTH);
    let stream = format!(
        "commit refs/heads/main\ncommitter C O Mitter <c@example.com> 1704160000 +0000\n\
         data 5\ndeep\nM 100644 inline {deep}f.txt\ndata 7\nbottom\n\
         M 100644 inline top.txt\ndata 4\ntop\n\n"
    );
    let mut import = git_command(&repo, &["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = import.stdin.take().unwrap();
    stdin.write_all(stream.as_bytes()).unwrap();
    drop(stdin);
    assert!(import.wait().unwrap().success());
    let bottom = git(&repo, &["cat-file", "-p", &format!("HEAD:{deep}f.txt")]);
    assert_eq!(bottom, "bottom\n");
    let kept = tmp.path().join("kept");
    init_repo(&kept);
    write(&kept, "k.txt", "kept\n");
    commit_all(&kept, "kept commit", "2024-01-02T03:04:05+00:00");
    let options = "snapshots=tar.gz zip\nenable-log-filecount=1\nenable-log-linecount=1\n";
    let rc = rc_with(tmp.path(), options, &[("deep", &repo), ("kept", &kept)]);
    let mut server = Logged::start(&rc);
    let root = server.ok("/deep/tree/");
    assert!(
        root.contains("top.txt") && root.contains("tree/a/"),
        "{root}"
    );
    assert!(server.ok(&format!("/deep/tree/{deep}")).contains("f.txt"));
    assert!(
        server
            .ok(&format!("/deep/tree/{deep}f.txt"))
            .contains("bottom")
    );
    assert_eq!(server.ok(&format!("/deep/plain/{deep}f.txt")), "bottom\n");
    assert!(
        server
            .ok(&format!("/deep/log/{deep}f.txt"))
            .contains("deep")
    );
    // The diff pages walk both trees to the bottom (once by recursion: a stack overflow,
    // which aborts the whole process).
    for page in ["commit/", "patch/", "diff/", "rawdiff/", "commit/?ss=1"] {
        let body = server.ok(&format!("/deep/{page}"));
        assert!(body.contains(&format!("{deep}f.txt")), "/deep/{page}");
    }
    for page in ["", "log/", "refs/"] {
        assert!(server.ok(&format!("/deep/{page}")).contains("deep"));
    }
    let tar = server.get("/deep/snapshot/deep-main.tar.gz");
    assert_eq!(tar.status, 200);
    let tar = decode("gzip", &tar.body);
    assert!(
        tar.windows(7).any(|w| w == b"bottom\n"),
        "the deep file in the tarball"
    );
    assert_eq!(server.get("/deep/snapshot/deep-main.zip").status, 200);
    assert!(server.ok("/kept/").contains("kept commit"));
    server.ok("/");
    server.assert_no_panic();
}
