//! A keep-alive client for latency medians of large pages: asks for one URL on loopback over
//! one HTTP/1.1 connection, again and again for a number of seconds, and prints the median of
//! the round trips in milliseconds.
//!
//! wrk reads an answer 8 KB at a time and asks the kernel after each read how much is left,
//! so for a page of a few hundred KB its own system calls are most of a round trip on loopback
//! (87 µs of wrk's CPU against 47 µs of the server's for a 388 KB page, 2026-12-05). This
//! client reads up to 1 MiB a call, so that its median is mostly the server's and the
//! loopback's time. Bodies are framed by `Content-Length` or chunks (cgit under lighttpd).
//! When the server ends the connection (lighttpd does after 1,000 requests) it connects again,
//! as wrk does, and leaves that request out.
//!
//! usage: keepalive URL [SECONDS] [HEADER: VALUE ...]   (URL: http:// on 127.0.0.1 or [::1])

use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const READ_SIZE: usize = 1 << 20;

fn main() {
    if let Err(e) = run() {
        eprintln!("keepalive: {e}");
        std::process::exit(1);
    }
}

fn run() -> io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = args
        .first()
        .ok_or_else(|| bad("usage: keepalive URL [SECONDS] [HEADER...]"))?;
    let seconds: f64 = match args.get(1) {
        Some(s) => s
            .parse()
            .map_err(|_| bad(&format!("not a number of seconds: {s}")))?,
        None => 3.0,
    };
    let (host, path) = loopback_url(url)?;
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n");
    for header in args.iter().skip(2) {
        request.push_str(header);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");

    let mut conn = Conn::open(host)?;
    let mut times = Vec::new();
    let mut ended = false;
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    while Instant::now() < end {
        let start = Instant::now();
        match conn.ask(request.as_bytes()) {
            Ok(()) => {
                times.push(start.elapsed());
                ended = false;
            }
            // (twice in a row: the server ends every connection)
            Err(e) if e.kind() == ErrorKind::UnexpectedEof && !ended => {
                conn = Conn::open(host)?;
                ended = true;
            }
            Err(e) => return Err(e),
        }
    }
    times.sort();
    let median = times.get(times.len() / 2).ok_or_else(|| bad("no answer"))?;
    println!("{:.3}", median.as_secs_f64() * 1000.0);
    Ok(())
}

fn bad(what: &str) -> io::Error {
    io::Error::new(ErrorKind::InvalidData, what)
}

/// The `host:port` and path of an `http://` URL on 127.0.0.1 or [::1].
fn loopback_url(url: &str) -> io::Result<(&str, &str)> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| bad(&format!("not an http:// URL: {url}")))?;
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if !(host.starts_with("127.0.0.1:") || host.starts_with("[::1]:")) {
        return Err(bad(&format!("only 127.0.0.1 or [::1] with a port: {host}")));
    }
    Ok((host, if path.is_empty() { "/" } else { path }))
}

/// One connection's stream and the bytes read from it but not used yet.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    /// `buf[at..filled]` is read and not used yet.
    at: usize,
    filled: usize,
}

impl Conn {
    fn open(host: &str) -> io::Result<Conn> {
        let stream = TcpStream::connect(host)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Conn {
            stream,
            buf: vec![0; READ_SIZE],
            at: 0,
            filled: 0,
        })
    }

    /// Sends `request` and reads the answer: its head, then its body as `Content-Length` or
    /// chunks frame it.
    fn ask(&mut self, request: &[u8]) -> io::Result<()> {
        self.stream.write_all(request)?;
        let mut head = Vec::new();
        loop {
            let line = self.line()?;
            if line.is_empty() {
                break;
            }
            head.push(String::from_utf8_lossy(&line).into_owned());
        }
        let header = |name: &str| {
            head.iter().skip(1).find_map(|line| {
                let (n, value) = line.split_once(':')?;
                n.eq_ignore_ascii_case(name)
                    .then(|| value.trim().to_string())
            })
        };
        if let Some(length) = header("content-length") {
            return self.skip(length.parse().map_err(|_| bad("a bad Content-Length"))?);
        }
        if header("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
            return self.skip_chunks();
        }
        Err(bad(&format!(
            "no Content-Length, not chunked: {:?}",
            head.first()
        )))
    }

    fn skip_chunks(&mut self) -> io::Result<()> {
        loop {
            let line = self.line()?;
            let line = String::from_utf8_lossy(&line);
            let size = line.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size, 16).map_err(|_| bad("a bad chunk size"))?;
            if size == 0 {
                // (no trailers: the empty line that ends the body)
                return self.line().map(drop);
            }
            self.skip(size)?;
            self.line()?;
        }
    }

    /// The next line, without its CRLF.
    fn line(&mut self) -> io::Result<Vec<u8>> {
        loop {
            let unread = &self.buf[self.at..self.filled];
            if let Some(i) = unread.windows(2).position(|w| w == b"\r\n") {
                let line = unread[..i].to_vec();
                self.at += i + 2;
                return Ok(line);
            }
            self.fill()?;
        }
    }

    /// Passes over `n` bytes.
    fn skip(&mut self, mut n: usize) -> io::Result<()> {
        loop {
            let used = n.min(self.filled - self.at);
            self.at += used;
            n -= used;
            if n == 0 {
                return Ok(());
            }
            self.fill()?;
        }
    }

    /// Reads more after the bytes not used yet, which move to the buffer's start.
    fn fill(&mut self) -> io::Result<()> {
        self.buf.copy_within(self.at..self.filled, 0);
        self.filled -= self.at;
        self.at = 0;
        if self.filled == self.buf.len() {
            return Err(bad("a line longer than the read buffer"));
        }
        match self.stream.read(&mut self.buf[self.filled..])? {
            0 => Err(ErrorKind::UnexpectedEof.into()),
            n => {
                self.filled += n;
                Ok(())
            }
        }
    }
}
