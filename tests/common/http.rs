//! The HTTP client of the tests: one request a connection, the response read whole.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

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

    /// Asserts the status and returns the body as text.
    pub fn text_with(&self, status: u16, what: &str) -> String {
        assert_eq!(self.status, status, "{what}: {}", self.text());
        self.text()
    }
}

/// One HTTP/1.1 request with `Connection: close`; the body is read to the end (chunked
/// transfer decoded).
pub fn request(addr: &str, method: &str, target: &str, headers: &[(&str, &str)]) -> Response {
    request_as(addr, addr, method, target, headers)
}

/// Like [`request`], with `host` as the Host header (several servers answering for one name).
pub fn request_as(
    addr: &str,
    host: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
) -> Response {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut head = format!("{method} {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    read_response(&mut stream)
}

/// Reads a whole `Connection: close` response (status, headers, de-chunked body).
pub fn read_response(stream: &mut TcpStream) -> Response {
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    parse_response(&raw)
}

/// A whole response as read from the wire (status, headers, de-chunked body).
pub fn parse_response(raw: &[u8]) -> Response {
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
