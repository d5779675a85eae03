//! Exhausted resources (issue 45): a server started with 256 file descriptors under more
//! connections than that, and one whose temporary files cannot grow (RLIMIT_FSIZE, what a
//! full disk looks like to a writer). The server answers what it can, sheds the rest with
//! 503 and `Retry-After` (never a 500, never a dead process), logs the cause and serves
//! normally once the resource is back.

#[path = "common/mod.rs"]
mod common;

use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A repository of `files` noise files of `lines` lines in two commits, packed, with a
/// third commit left loose.
fn repo(dir: &Path, files: u64, lines: usize) {
    init_repo(dir);
    for n in 0..files {
        write(dir, &format!("f{n:02}.txt"), noise(n, lines));
    }
    commit_all(dir, "first", "2024-01-02T03:04:05+00:00");
    write(dir, "f00.txt", noise(99, lines));
    commit_all(dir, "second", "2024-01-03T03:04:05+00:00");
    git(dir, &["repack", "-adq"]);
    write(dir, "README", "loose\n");
    commit_all(dir, "third", "2024-01-04T03:04:05+00:00");
}

fn rc(dir: &Path, repos: &[&str]) -> PathBuf {
    let mut text = "virtual-root=/\nmetrics-path=/metrics\nsnapshots=tar tar.gz\n".to_string();
    for name in repos {
        let path = dir.join(name);
        text.push_str(&format!(
            "\nrepo.url={name}\nrepo.path={}\n",
            path.display()
        ));
    }
    let rc = dir.join("cgitrc");
    std::fs::write(&rc, text).unwrap();
    rc
}

fn start(dir: &Path, rc: &Path, limits: &[Limit]) -> (Server, PathBuf) {
    let log = dir.join("cgitd.log");
    let args = ["serve", "--listen", "127.0.0.1:0", "--config"];
    let mut args = args.to_vec();
    args.push(rc.to_str().unwrap());
    (Server::start_limited(dir, &args, &log, limits), log)
}

fn assert_alive(server: &mut Server, log: &Path, when: &str) {
    if let Some(status) = server.exited() {
        let log = std::fs::read_to_string(log).unwrap_or_default();
        panic!("cgitd ended ({status}) {when}; log:\n{log}");
    }
}

/// One GET on its own connection, bounded in time; `None` when the connection failed.
fn try_get(addr: &str, url: &str) -> Option<Response> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .ok()?;
    let head = format!("GET {url} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    Some(parse_response(&raw))
}

/// The pages a crawler mix asks for, each with what its 200 must contain.
fn pages(repos: &[&str]) -> Vec<(String, String)> {
    let mut pages = Vec::new();
    for r in repos {
        let first_line = noise(3, 1);
        let first_line = first_line.trim_end();
        pages.push((format!("/{r}/"), "third".to_string()));
        pages.push((format!("/{r}/log/"), "second".to_string()));
        pages.push((format!("/{r}/tree/f03.txt"), first_line.to_string()));
        pages.push((format!("/{r}/plain/f03.txt"), first_line.to_string()));
        pages.push((format!("/{r}/commit/?id=HEAD~1"), "f00.txt".to_string()));
        pages.push((format!("/{r}/snapshot/{r}-main.tar"), "f03.txt".to_string()));
    }
    pages
}

#[test]
fn more_connections_than_descriptors_get_503s_and_the_server_recovers() {
    allow_open_files(4096);
    let tmp = TempDir::new("exhaust-fds");
    let names = ["a", "b", "c"];
    for name in names {
        repo(&tmp.path().join(name), 12, 40);
    }
    let rc = rc(tmp.path(), &names);
    let (mut server, log) = start(tmp.path(), &rc, &[Limit::Files(256)]);
    let addr = server.addr.clone();
    let pages = pages(&names);
    for (url, expected) in &pages {
        assert!(String::from_utf8_lossy(&server.get(url).body).contains(expected.as_str()));
    }
    // Phase 1: idle connections take most of the admitted places; the crawl fills the rest.
    // Phase 2: twice the descriptors in idle connections, the crawl beyond the cap.
    let mut held = Vec::new();
    let (mut ok, mut shed) = (0, 0);
    for idle in [150, 500] {
        while held.len() < idle {
            held.push(TcpStream::connect(&addr).expect("connect"));
        }
        std::thread::sleep(Duration::from_millis(200));
        let answers: Vec<(String, Option<Response>)> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..12)
                .map(|t| {
                    let (addr, pages) = (&addr, &pages);
                    scope.spawn(move || {
                        (0..12)
                            .map(|n| {
                                let url = &pages[(t * 5 + n) % pages.len()].0;
                                (url.clone(), try_get(addr, url))
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().unwrap())
                .collect()
        });
        assert_alive(&mut server, &log, &format!("with {idle} idle connections"));
        for (url, answer) in answers {
            let r = answer.unwrap_or_else(|| panic!("GET {url}: no answer ({idle} idle)"));
            let expected = &pages.iter().find(|(u, _)| *u == url).unwrap().1;
            match r.status {
                200 => {
                    assert!(
                        String::from_utf8_lossy(&r.body).contains(expected.as_str()),
                        "GET {url}: {}",
                        r.text()
                    );
                    ok += 1;
                }
                503 => {
                    let wait = r.header("retry-after").unwrap_or_default();
                    assert!(wait.parse::<u64>().is_ok_and(|s| s >= 1), "GET {url}");
                    shed += 1;
                }
                other => panic!("GET {url}: {other} ({idle} idle): {}", r.text()),
            }
        }
    }
    eprintln!("under load: {ok} answered, {shed} shed");
    assert!(ok > 0, "nothing answered beside 150 idle connections");
    assert!(shed > 0, "nothing shed beside 500 idle connections");
    drop(held);
    std::thread::sleep(Duration::from_millis(1500));
    assert_alive(&mut server, &log, "after the load");
    for (url, expected) in &pages {
        let r = server.get(url);
        assert_eq!(r.status, 200, "GET {url} after the load: {}", r.text());
        assert!(String::from_utf8_lossy(&r.body).contains(expected.as_str()));
    }
    assert!(count(&server, "cgitd_connections_shed_total") > 0);
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(!log.contains("panicked"), "{log}");
}

/// `git archive` of `main` in `dir` as a tarball, as the snapshot of `name` must be.
fn archive(dir: &Path, name: &str) -> Vec<u8> {
    let prefix = format!("--prefix={name}-main/");
    git_bytes(dir, &["archive", "--format=tar", &prefix, "main"])
}

fn clone(addr: &str, name: &str, into: &Path) -> std::process::Output {
    let url = format!("http://{addr}/{name}");
    let target = into.join(format!("clone-{name}"));
    let _ = std::fs::remove_dir_all(&target);
    git_command(into, &["clone", "-q", &url, target.to_str().unwrap()])
        .output()
        .unwrap()
}

#[test]
fn temporary_files_that_cannot_grow_answer_503_and_the_server_recovers() {
    const LIMIT: u64 = 256 << 10;
    let tmp = TempDir::new("exhaust-disk");
    let (big, small) = (tmp.path().join("big"), tmp.path().join("small"));
    repo(&big, 40, 400);
    repo(&small, 2, 10);
    let big_tar = archive(&big, "big");
    assert!(big_tar.len() as u64 > 2 * LIMIT, "{}", big_tar.len());
    let rc = rc(tmp.path(), &["big", "small"]);
    let (mut server, log) = start(tmp.path(), &rc, &[Limit::FileSize(LIMIT)]);
    let url = "/big/snapshot/big-main.tar";
    for url in [url, "/big/snapshot/big-main.tar.gz"] {
        let r = server.get(url);
        assert_alive(&mut server, &log, &format!("after GET {url}"));
        assert_eq!(r.status, 503, "GET {url}: {}", r.text());
        assert!(
            r.header("retry-after")
                .is_some_and(|s| s.parse::<u64>().unwrap() >= 1)
        );
        assert!(
            r.text().contains("out of space for temporary files"),
            "{}",
            r.text()
        );
        assert!(!r.text().contains(&tmp.path().display().to_string()));
    }
    let logged = std::fs::read_to_string(&log).unwrap();
    let line = logged
        .lines()
        .find(|l| l.contains(" ERROR ") && l.contains(&format!("url={url}")))
        .unwrap_or_else(|| panic!("no error logged for {url}:\n{logged}"));
    assert!(line.contains("File too large"), "{line}");
    // A clone's pack is written to a temporary file too, and sent as it grows: git is told
    // why the transfer stops.
    let cloned = clone(&server.addr, "big", tmp.path());
    assert!(!cloned.status.success(), "the big clone went through");
    let said = String::from_utf8_lossy(&cloned.stderr);
    assert!(
        said.contains("remote: The server is out of space for temporary files"),
        "git said: {said}"
    );
    assert_alive(&mut server, &log, "after the clone");
    // What fits is served, and the pages need no temporary files.
    let r = server.get("/small/snapshot/small-main.tar");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.body == archive(&small, "small"),
        "the small tarball differs"
    );
    assert!(clone(&server.addr, "small", tmp.path()).status.success());
    assert!(server.page("/big/log/").contains("second"));
    assert!(
        server
            .page("/big/tree/f07.txt")
            .contains(noise(7, 1).trim_end())
    );
    // The limit lifted (space freed): the same requests succeed.
    server.set_limit(Limit::FileSize(u64::MAX));
    let r = server.get(url);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.body == big_tar, "the tarball differs from git archive's");
    let cloned = clone(&server.addr, "big", tmp.path());
    assert!(
        cloned.status.success(),
        "{}",
        String::from_utf8_lossy(&cloned.stderr)
    );
    let head = git(&tmp.path().join("clone-big"), &["rev-parse", "HEAD"]);
    assert_eq!(head, git(&big, &["rev-parse", "HEAD"]));
    assert_alive(&mut server, &log, "at the end");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("upload-pack: ") && !logged.contains("panicked"),
        "{logged}"
    );
}

fn rss_anon(server: &Server) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).unwrap();
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap();
    kib << 10
}

fn with_memory_limit(rc: &Path, limit: u64) {
    let text = std::fs::read_to_string(rc).unwrap();
    let kept: String = text
        .lines()
        .filter(|l| !l.starts_with("memory-limit="))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(
        rc,
        format!("memory-limit={limit}\nresponse-cache-size=1073741824\n{kept}"),
    )
    .unwrap();
}

/// Waits (at most 10 s) until the metric has the value.
fn until_metric(server: &Server, name: &str, value: f64) {
    for _ in 0..200 {
        if metric(server, name) == value {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{name} never became {value}");
}

#[test]
fn near_its_memory_limit_the_server_sheds_expensive_work_and_recovers() {
    let tmp = TempDir::new("exhaust-memory");
    repo(&tmp.path().join("m"), 4, 50_000);
    let rc = rc(tmp.path(), &["m"]);
    with_memory_limit(&rc, 0);
    let (mut server, log) = start(tmp.path(), &rc, &[]);
    let snapshot = "/m/snapshot/m-main.tar";
    assert_eq!(server.get(snapshot).status, 200);
    let ids: Vec<String> = git(&tmp.path().join("m"), &["rev-list", "HEAD"])
        .lines()
        .map(str::to_string)
        .collect();

    // Organic: a limit 40 MiB above what the server holds now, then big pages kept in the
    // response cache (each asked for twice) until the server notices; it empties its caches
    // and comes back under the limit by itself.
    let limit = (rss_anon(&server) + (40 << 20)) * 5 / 4;
    with_memory_limit(&rc, limit);
    server.signal("HUP");
    until_metric(&server, "cgitd_memory_limit_bytes", limit as f64);
    let mut asked = 0;
    'fill: for len in 7..=40 {
        for id in &ids {
            for file in 0..4 {
                let url = format!("/m/plain/f{file:02}.txt?id={}", &id[..len]);
                for _ in 0..2 {
                    assert_eq!(server.get(&url).status, 200, "{url}");
                }
                asked += 1;
                if metric(&server, "cgitd_memory_pressure_episodes_total") >= 1.0 {
                    break 'fill;
                }
            }
        }
    }
    assert!(
        metric(&server, "cgitd_memory_pressure_episodes_total") >= 1.0,
        "no pressure after {asked} pages"
    );
    until_metric(&server, "cgitd_memory_pressure", 0.0);
    assert!(
        rss_anon(&server) < limit,
        "still over the limit after the caches were emptied"
    );
    assert_eq!(
        server.get(snapshot).status,
        200,
        "expensive work after the pressure"
    );

    // Held under pressure (a limit it cannot meet): expensive work gets 503 + Retry-After,
    // cheap pages are served; a reload without the limit ends it.
    with_memory_limit(&rc, 1 << 20);
    server.signal("HUP");
    until_metric(&server, "cgitd_memory_pressure", 1.0);
    let refused = server.get(snapshot);
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert!(
        refused.text().contains("short of memory"),
        "{}",
        refused.text()
    );
    assert!(refused.header("retry-after").is_some());
    assert_eq!(server.get("/m/log/").status, 200);
    with_memory_limit(&rc, 0);
    server.signal("HUP");
    until_metric(&server, "cgitd_memory_pressure", 0.0);
    let archive = server.get(snapshot);
    assert_eq!(archive.status, 200);
    assert!(
        archive.body == self::archive(&tmp.path().join("m"), "m"),
        "the snapshot after the pressure differs from git archive's"
    );
    assert_alive(&mut server, &log, "after the memory pressure");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("memory pressure"), "{logged}");
}
