//! Test support: real repositories built with the git CLI in temporary directories, and a real
//! cgitd server on 127.0.0.1 spoken to over plain HTTP/1.1.
#![allow(dead_code)]

mod http;
mod limits;
pub mod sites;
mod varnish;

#[allow(unused_imports)] // each test binary uses a part of the client
pub use http::{Response, hrefs, parse_response, read_response, request, request_as};

#[allow(unused_imports)] // only some test binaries start servers under limits
pub use limits::{Limit, allow_open_files};

#[allow(unused_imports)] // not every test binary runs a varnishd
pub use varnish::Varnish;

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once};
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

/// Directories of shared fixtures, removed when the test process exits.
static SHARED_DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

extern "C" fn remove_shared_dirs() {
    if let Ok(dirs) = SHARED_DIRS.lock() {
        for dir in dirs.iter() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A fresh directory for a fixture that is built once per test binary (in a `LazyLock`) and
/// then only read by the tests sharing it; it lives until the process exits. Tests that change
/// a repository work on a [`copy_of`] it.
pub fn shared_dir(tag: &str) -> PathBuf {
    static AT_EXIT: Once = Once::new();
    AT_EXIT.call_once(|| {
        // SAFETY: registers a plain function without arguments, as atexit(3) requires.
        unsafe { libc::atexit(remove_shared_dirs) };
    });
    let dir = TempDir::new(&format!("shared-{tag}"));
    let path = dir.0.clone();
    std::mem::forget(dir);
    SHARED_DIRS.lock().unwrap().push(path.clone());
    path
}

/// A private copy (`cp -a`: modes, symlinks and dates kept) of a shared fixture directory, for
/// a test that changes repositories in it.
pub fn copy_of(shared: &Path, tag: &str) -> TempDir {
    let copy = TempDir::new(tag);
    let status = Command::new("cp")
        .arg("-a")
        .arg(shared.join("."))
        .arg(copy.path())
        .status()
        .expect("cp runs");
    assert!(status.success(), "copying {}", shared.display());
    copy
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

/// `git args` in `dir` as [`git`] runs it, not run yet; it never prompts for credentials.
pub fn git_command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
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

/// Writes an executable shell script: `#!/bin/sh` and then `body`.
pub fn write_script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
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
    let msg_file = msg_file.to_str().unwrap();
    git_at(
        dir,
        &["commit", "-q", "--allow-empty", "-F", msg_file],
        date,
    );
    git(dir, &["rev-parse", "HEAD"]).trim().to_string()
}

/// `git args` in `dir` with author and committer date `date` (as git reads dates), not run.
pub fn git_command_at(dir: &Path, args: &[&str], date: &str) -> Command {
    let mut command = git_command(dir, args);
    command
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date);
    command
}

/// Runs `git args` in `dir` at `date` (see [`git_command_at`]); asserts it succeeded.
pub fn git_at(dir: &Path, args: &[&str], date: &str) {
    succeeded(args, git_command_at(dir, args, date));
}

fn succeeded(args: &[&str], mut command: Command) {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `git args` in `dir` with author and committer date unix time `when`, as `author`
/// (mail `<author with dots>@example.com`) when one is given; asserts it succeeded.
pub fn git_dated(dir: &Path, args: &[&str], when: i64, author: Option<&str>) {
    let mut command = git_command_at(dir, args, &format!("@{when} +0000"));
    if let Some(author) = author {
        command.env("GIT_AUTHOR_NAME", author).env(
            "GIT_AUTHOR_EMAIL",
            format!("{}@example.com", author.replace(' ', ".")),
        );
    }
    succeeded(args, command);
}

/// Commits everything as `author` at unix time `when` (see [`git_dated`]); returns the id.
pub fn commit_as(dir: &Path, author: &str, when: i64, message: &str) -> String {
    git(dir, &["add", "-A"]);
    let args = ["commit", "-q", "--allow-empty", "-m", message];
    git_dated(dir, &args, when, Some(author));
    git(dir, &["rev-parse", "HEAD"]).trim().to_string()
}

/// Writes a cgitrc serving the repository `git_dir` as `r` with `options`, and as `off`
/// without them, into `dir`; returns its path.
pub fn r_and_off_rc(dir: &Path, git_dir: &Path, options: &str) -> PathBuf {
    let rc = dir.join("cgitrc");
    let text = format!(
        "virtual-root=/\n\
         repo.url=r\nrepo.path={git}\n{options}\n\n\
         repo.url=off\nrepo.path={git}\n",
        git = git_dir.display()
    );
    std::fs::write(&rc, text).unwrap();
    rc
}

/// The value of the metric `name` (with its labels, as exposed) on the server's `/metrics`; 0
/// when it is not exposed (a labelled series appears once it is first used).
pub fn metric(server: &Server, name: &str) -> f64 {
    metric_value(&server.page("/metrics"), name).unwrap_or(0.0)
}

/// The value of the counter or gauge `name`, which must be exposed on `/metrics`.
pub fn count(server: &Server, name: &str) -> u64 {
    let text = server.page("/metrics");
    metric_value(&text, name).unwrap_or_else(|| panic!("no {name} in\n{text}")) as u64
}

fn metric_value(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// Percent-encodes a query or form value (all but letters, digits and `-_.`).
pub fn url_encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Writes `dir/cgitrc` serving the repository `git_dir` as `r`, with `/metrics` and `options`
/// (whole lines) before it; returns its path.
pub fn metrics_rc(dir: &Path, git_dir: &Path, options: &str) -> PathBuf {
    let rc = dir.join("cgitrc");
    let text = format!(
        "virtual-root=/\nmetrics-path=/metrics\n{options}repo.url=r\nrepo.path={}\n",
        git_dir.display()
    );
    std::fs::write(&rc, text).unwrap();
    rc
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
        let mut all = vec!["serve", "--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        Self::start_with(cwd, &all)
    }

    /// Starts cgitd in `cwd` with exactly these arguments, which must make it listen.
    pub fn start_with(cwd: &Path, args: &[&str]) -> Server {
        Self::spawn(Self::command(cwd, args).stderr(Stdio::inherit()))
    }

    /// Like [`Server::start_with`], with the log (stderr, uncoloured) written to `log`.
    pub fn start_logging_to(cwd: &Path, args: &[&str], log: &Path) -> Server {
        let file = std::fs::File::create(log).unwrap();
        Self::spawn(Self::command(cwd, args).env("NO_COLOR", "1").stderr(file))
    }

    fn command(cwd: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_cgitd"));
        command
            .current_dir(cwd)
            .args(args)
            .env_remove("CGIT_CONFIG")
            .env("RUST_LOG", "cgitd=warn")
            .stdout(Stdio::piped());
        command
    }

    /// Starts `command` and reads the address it listens on from its first line.
    fn spawn(command: &mut Command) -> Server {
        let mut child = command.spawn().expect("cgitd starts");
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

    /// The body of a GET that must answer 200 (so that what a test finds missing in it is
    /// missing from a real page, not from an error page).
    pub fn page(&self, target: &str) -> String {
        let r = self.get(target);
        assert_eq!(r.status, 200, "GET {target}: {}", r.text());
        r.text()
    }

    /// How many answers of `status` the server counted for `page` (e.g. `esi_diff`), read from
    /// its metrics: the cgitrc must say `metrics-path=/metrics`.
    pub fn answers(&self, page: &str, status: u16) -> u64 {
        self.page("/metrics")
            .lines()
            .filter(|l| l.starts_with("cgitd_requests_total{"))
            .filter(|l| l.contains(&format!("page=\"{page}\"")))
            .filter(|l| l.contains(&format!("status=\"{status}\"")))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    }

    pub fn request(&self, method: &str, target: &str, headers: &[(&str, &str)]) -> Response {
        request(&self.addr, method, target, headers)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends the process a signal by name (`HUP`, `TERM`).
    pub fn signal(&self, name: &str) {
        let sent = Command::new("kill")
            .args([&format!("-{name}"), &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -{name}");
    }

    /// How the process ended, if it has.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().unwrap()
    }

    /// How the process ended, waiting up to `timeout` for it (None: still running).
    pub fn exit_within(
        &mut self,
        timeout: std::time::Duration,
    ) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + timeout;
        while std::time::Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free loopback port (bound and released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Debian's cgit run as a CGI for `url` (path and query, as a web server would pass them:
/// PATH_INFO decoded) with `rc`; the whole CGI output.
pub fn cgit(rc: &Path, url: &str) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bin = Path::new("/usr/lib/cgit/cgit.cgi");
    require_oracle(bin.exists(), "cgit (/usr/lib/cgit/cgit.cgi)", "cgit");
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let path_info = cgitd::request::url::percent_decode(path.as_bytes(), false);
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
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `body` decoded from the content coding `coding` (`gzip`, `br` or `zstd`).
pub fn decode(coding: &str, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match coding {
        "gzip" => {
            flate2::read::GzDecoder::new(body)
                .read_to_end(&mut out)
                .unwrap();
        }
        "br" => {
            brotli::Decompressor::new(body, 4096)
                .read_to_end(&mut out)
                .unwrap();
        }
        "zstd" => out = zstd::decode_all(body).unwrap(),
        other => panic!("unexpected coding {other}"),
    }
    out
}

/// The part of `html` from `start` (included) up to the next `end` after it (excluded).
pub fn between<'a>(html: &'a str, start: &str, end: &str) -> &'a str {
    let from = html
        .find(start)
        .unwrap_or_else(|| panic!("{start:?} not in\n{html}"));
    let to = html[from + start.len()..]
        .find(end)
        .unwrap_or_else(|| panic!("{end:?} not after {start:?} in\n{html}"));
    &html[from..from + start.len() + to]
}

/// cgit's CGI output split into its status (200 unless a `Status:` header says otherwise) and
/// its body.
fn split_cgi(output: &str) -> (u16, &str) {
    let (head, body) = output
        .split_once("\r\n\r\n")
        .or_else(|| output.split_once("\n\n"))
        .unwrap_or(("", output));
    let status = head
        .lines()
        .find_map(|l| l.strip_prefix("Status: "))
        .and_then(|s| s.split(' ').next()?.parse().ok())
        .unwrap_or(200);
    (status, body)
}

/// Asserts that cgitd (`server`) and the real cgit (run as a CGI on the same `rc`, so on the
/// same repositories) answer `url` with the same status and with pages whose projections by
/// `part` are equal; the failure shows a line diff.
pub fn assert_like_cgit_by(server: &Server, rc: &Path, url: &str, part: impl Fn(&str) -> String) {
    let theirs = cgit(rc, url);
    let (their_status, their_body) = split_cgi(&theirs);
    let ours = server.get(url);
    assert_eq!(
        ours.status, their_status,
        "status of {url} differs from cgit's"
    );
    let (ours, theirs) = (part(&ours.text()), part(their_body));
    if ours != theirs {
        panic!(
            "{url} differs from cgit (- cgit, + cgitd):\n{}",
            line_diff(&theirs, &ours)
        );
    }
}

/// The same as cgit for `url` between each pair of markers (see [`between`]).
pub fn assert_like_cgit(server: &Server, rc: &Path, url: &str, markers: &[(&str, &str)]) {
    assert_like_cgit_by(server, rc, url, |html| {
        markers
            .iter()
            .map(|(start, end)| between(html, start, end))
            .collect::<Vec<_>>()
            .join("\n[...]\n")
    });
}

/// A unified-style diff of two texts by lines (longest common subsequence), with two lines of
/// context around each change.
pub fn line_diff(old: &str, new: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    let near_change = |k: usize| {
        ops[k.saturating_sub(2)..(k + 3).min(ops.len())]
            .iter()
            .any(|(c, _)| *c != ' ')
    };
    let mut out = String::new();
    let mut skipped = false;
    for (k, (c, line)) in ops.iter().enumerate() {
        if near_change(k) {
            if skipped {
                out.push_str("  ...\n");
                skipped = false;
            }
            out.push_str(&format!("{c} {line}\n"));
        } else {
            skipped = true;
        }
    }
    out
}

/// Fails the test unless the reference it checks against (cgit, varnishd) is `installed`, saying
/// what to install: a comparison skipped where the reference is missing could never fail.
pub fn require_oracle(installed: bool, what: &str, package: &str) {
    assert!(
        installed,
        "{what} is not installed; this test checks against it: `apt-get install {package}` \
         (.ci/run installs what the tests need)"
    );
}

/// Deterministic text that does not compress away: `lines` lines of hex digits.
pub fn noise(seed: u64, lines: usize) -> String {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut text = String::new();
    for n in 0..lines {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let y = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
        text.push_str(&format!("{seed} {n} {x:016x}{y:016x}\n"));
    }
    text
}

/// pkt-lines of git's protocol: `0000` and `0001` as they are, every other line with its
/// length and a newline.
pub fn pkt(lines: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines {
        match *line {
            "0000" | "0001" => out.extend_from_slice(line.as_bytes()),
            _ => out.extend_from_slice(format!("{:04x}{line}\n", line.len() + 5).as_bytes()),
        }
    }
    out
}
