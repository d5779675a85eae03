//! Test support: real repositories built with the git CLI in temporary directories, and a real
//! cgitd server on 127.0.0.1 spoken to over plain HTTP/1.1.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("cgitd-test-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs git with a fixed identity and dates, isolated from the host's configuration.
pub fn git(dir: &Path, args: &[&str]) -> String {
    String::from_utf8_lossy(&git_bytes(dir, args)).into_owned()
}

/// Like [`git`], returning raw stdout bytes.
pub fn git_bytes(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = git_command(dir, args).output().expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

pub fn git_command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("HOME", dir)
        .env("GIT_AUTHOR_NAME", "A U Thor")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_COMMITTER_NAME", "C O Mitter")
        .env("GIT_COMMITTER_EMAIL", "committer@example.com")
        .env("GIT_AUTHOR_DATE", "2024-01-02T03:04:05+01:00")
        .env("GIT_COMMITTER_DATE", "2024-01-02T03:04:05+01:00");
    cmd
}

/// A fresh non-bare repository with `main` as its initial branch.
pub fn init_repo(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
}

/// Writes `content` to `path` (relative to `dir`), creating directories.
pub fn write(dir: &Path, path: &str, content: impl AsRef<[u8]>) {
    let full = dir.join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, content).unwrap();
}

/// Stages everything and commits with `message` at `date` (ISO 8601); returns the commit id.
pub fn commit_all(dir: &Path, message: &str, date: &str) -> String {
    git(dir, &["add", "-A"]);
    commit_staged(dir, message.as_bytes(), date)
}

/// Commits what is staged (no `add`, so index-only entries such as gitlinks stay) with a raw,
/// possibly non-UTF-8 `message` at `date`; returns the commit id.
pub fn commit_staged(dir: &Path, message: &[u8], date: &str) -> String {
    let git_dir = git(dir, &["rev-parse", "--absolute-git-dir"]);
    let msg_file = Path::new(git_dir.trim()).join("CGITD_TEST_MSG");
    std::fs::write(&msg_file, message).unwrap();
    let out = git_command(dir, &["commit", "-q", "--allow-empty", "-F"])
        .arg(&msg_file)
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    git(dir, &["rev-parse", "HEAD"]).trim().to_string()
}

/// A running cgitd, killed on drop.
pub struct Server {
    child: Child,
    pub addr: String,
}

impl Server {
    /// Starts cgitd with the given cgitrc on a free loopback port.
    pub fn start(cgitrc: &Path) -> Server {
        Self::start_in(
            cgitrc.parent().unwrap(),
            &["--config", cgitrc.to_str().unwrap()],
        )
    }

    /// Starts cgitd in `cwd` with extra arguments (none: the embedded default).
    pub fn start_in(cwd: &Path, args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cgitd"))
            .current_dir(cwd)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .env_remove("CGIT_CONFIG")
            .env("RUST_LOG", "cgitd=warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("cgitd starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .split("http://")
            .nth(1)
            .map(|s| s.trim().trim_end_matches('/').to_string())
            .unwrap_or_else(|| panic!("no address in {line:?}"));
        Server { child, addr }
    }

    pub fn get(&self, target: &str) -> Response {
        self.request("GET", target, &[])
    }

    pub fn request(&self, method: &str, target: &str, headers: &[(&str, &str)]) -> Response {
        request(&self.addr, method, target, headers)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP response as received.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One HTTP/1.1 request with `Connection: close`; the body is read to the end (chunked
/// transfer decoded).
pub fn request(addr: &str, method: &str, target: &str, headers: &[(&str, &str)]) -> Response {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut head = format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("header end");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        body = dechunk(&body);
    }
    Response {
        status,
        headers,
        body,
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = data.windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&data[..eol]);
        let size =
            usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.extend_from_slice(&data[eol + 2..eol + 2 + size]);
        data = &data[eol + 2 + size + 2..];
    }
    out
}

/// Every `href='…'` value in a page, in order (HTML entities for `&` decoded).
pub fn hrefs(html: &str) -> Vec<String> {
    html.split("href='")
        .skip(1)
        .filter_map(|s| s.split('\'').next())
        .map(|s| s.replace("&amp;", "&"))
        .collect()
}

/// A free loopback port (bound and released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A real varnishd on 127.0.0.1 in front of `backend`, with contrib/varnish/cgitd-esi.vcl;
/// killed on drop.
pub struct Varnish {
    child: Child,
    pub addr: String,
    workdir: TempDir,
}

impl Varnish {
    /// `None` when varnishd is not installed (CI installs it; see .ci/run).
    pub fn start(backend: &str) -> Option<Varnish> {
        if Command::new("varnishd").arg("-V").output().is_err() {
            assert!(
                std::env::var_os("CI").is_none(),
                "varnishd must be installed in CI (.ci/run installs it)"
            );
            eprintln!("!!! varnishd is not installed: SKIPPING the Varnish test");
            return None;
        }
        let workdir = TempDir::new("varnish");
        let (host, port) = backend.rsplit_once(':').unwrap();
        let vcl = workdir.path().join("main.vcl");
        let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/varnish/cgitd-esi.vcl");
        std::fs::write(
            &vcl,
            format!(
                "vcl 4.1;\nbackend default {{ .host = \"{host}\"; .port = \"{port}\"; }}\ninclude \"{}\";\n",
                include.display()
            ),
        )
        .unwrap();
        let port = free_port();
        let child = Command::new("varnishd")
            .args(["-F", "-a", &format!("127.0.0.1:{port}"), "-f"])
            .arg(&vcl)
            .arg("-n")
            .arg(workdir.path().join("n"))
            .args(["-s", "malloc,64m"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("varnishd starts");
        let addr = format!("127.0.0.1:{port}");
        for _ in 0..100 {
            if TcpStream::connect(&addr).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(Varnish {
            child,
            addr,
            workdir,
        })
    }

    pub fn get(&self, target: &str) -> Response {
        request(&self.addr, "GET", target, &[])
    }

    /// A counter from varnishstat, e.g. `MAIN.cache_hit`.
    pub fn stat(&self, name: &str) -> u64 {
        let out = Command::new("varnishstat")
            .arg("-n")
            .arg(self.workdir.path().join("n"))
            .args(["-1", "-f", name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .nth(1)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Varnish {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Debian's cgit run as a CGI for `url` (path and query, as a web server would pass them:
/// PATH_INFO decoded) with `rc`; the whole CGI output. `None` where cgit is not installed,
/// which CI never allows.
pub fn cgit(rc: &Path, url: &str) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    let bin = Path::new("/usr/lib/cgit/cgit.cgi");
    if !bin.exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "cgit must be installed in CI (.ci/run installs it)"
        );
        eprintln!("!!! cgit is not installed: skipping the comparison with cgit");
        return None;
    }
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let path_info = cgitd::pages::links::percent_decode(path.as_bytes(), false);
    let out = Command::new(bin)
        .env_clear()
        .env("TZ", "UTC")
        .env("CGIT_CONFIG", rc)
        .env("PATH_INFO", std::ffi::OsStr::from_bytes(&path_info))
        .env("QUERY_STRING", query)
        .env("SCRIPT_NAME", "")
        .env("REQUEST_METHOD", "GET")
        .env("HTTP_HOST", "127.0.0.1")
        .output()
        .unwrap();
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}
