//! Protocol v2: the capability advertisement, `ls-refs`, `bundle-uri`, and `fetch` with its
//! `acknowledgments`, `shallow-info` and `packfile` sections.

use super::pktline::{self, Packet, Reader};
use super::{
    AGENT, FetchArgs, Framing, PackReply, ProtocolError, Reply, Session, ShallowSection, bad,
    head_id,
};

/// The body of `info/refs` for a v2 client: what the server can do, no refs.
pub fn capabilities(bundle_uri: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let lines = [
        "version 2".to_string(),
        format!("agent={AGENT}"),
        "ls-refs".into(),
        "fetch=shallow filter".into(),
        "object-format=sha1".into(),
    ];
    let bundle = bundle_uri.then(|| "bundle-uri".to_string());
    for line in lines.into_iter().chain(bundle) {
        pktline::text(&mut out, &format!("{line}\n"));
    }
    pktline::flush(&mut out);
    out
}

/// One command of a v2 request: its name and its argument lines.
struct Command<'a> {
    name: &'a str,
    args: Vec<&'a str>,
}

/// Splits a request into its command, checking the capability lines before the delimiter.
fn command(body: &[u8]) -> Result<Option<Command<'_>>, ProtocolError> {
    let mut name = None;
    let mut args = Vec::new();
    let mut in_args = false;
    let mut flushed = false;
    for packet in Reader::new(body) {
        let line = match packet? {
            Packet::Line(line) => std::str::from_utf8(line).map_err(|_| bad("bad request line"))?,
            Packet::Delim if !in_args => {
                in_args = true;
                continue;
            }
            Packet::Flush => {
                flushed = true;
                break;
            }
            _ => return Err(bad("unexpected delimiter")),
        };
        if in_args {
            args.push(line);
        } else if let Some(command) = line.strip_prefix("command=") {
            name = Some(command);
        } else if let Some(format) = line.strip_prefix("object-format=") {
            if format != "sha1" {
                return Err(bad(format!("unsupported object format: {format}")));
            }
        } else if !(line.starts_with("agent=") || line.starts_with("server-option=")) {
            return Err(bad(format!("unknown capability: {line}")));
        }
    }
    match name {
        None if args.is_empty() => Ok(None),
        None => Err(bad("no command")),
        Some(_) if !flushed => Err(bad("request not ended by a flush")),
        Some(name) => Ok(Some(Command { name, args })),
    }
}

/// Answers a v2 request.
pub fn answer(session: &Session, body: &[u8]) -> Result<Reply, ProtocolError> {
    let Some(command) = command(body)? else {
        return Ok(Reply::Done(Vec::new()));
    };
    match command.name {
        "ls-refs" => ls_refs(session, &command.args).map(Reply::Done),
        "fetch" => fetch(session, &command.args),
        // It takes no arguments yet; ones a later git may send are ignored.
        "bundle-uri" => match session.bundle_uri {
            Some(uri) => Ok(Reply::Done(super::bundle::list(session.refs, uri))),
            None => Err(bad("unknown command: bundle-uri")),
        },
        other => Err(bad(format!("unknown command: {other}"))),
    }
}

/// `ls-refs`: HEAD, then every ref, filtered by the `ref-prefix` arguments.
fn ls_refs(session: &Session, args: &[&str]) -> Result<Vec<u8>, ProtocolError> {
    let mut symrefs = false;
    let mut peel = false;
    let mut prefixes = Vec::new();
    for arg in args {
        match *arg {
            "symrefs" => symrefs = true,
            "peel" => peel = true,
            "unborn" => {}
            _ => match arg.strip_prefix("ref-prefix ") {
                Some(prefix) => prefixes.push(prefix),
                None => return Err(bad(format!("unexpected line: {arg}"))),
            },
        }
    }
    let wanted = |name: &str| prefixes.is_empty() || prefixes.iter().any(|p| name.starts_with(p));
    let refs = session.refs;
    let mut out = Vec::new();
    if let (Some(id), true) = (head_id(refs), wanted("HEAD")) {
        let mut line = format!("{id} HEAD");
        if symrefs && let Some(branch) = &refs.head_branch {
            line.push_str(&format!(" symref-target:refs/heads/{branch}"));
        }
        pktline::text(&mut out, &format!("{line}\n"));
    }
    for entry in refs.all.iter().filter(|r| wanted(&r.name)) {
        let mut line = format!("{} {}", entry.id, entry.name);
        if peel && let Some(peeled) = entry.peeled {
            line.push_str(&format!(" peeled:{peeled}"));
        }
        pktline::text(&mut out, &format!("{line}\n"));
    }
    pktline::flush(&mut out);
    Ok(out)
}

/// `fetch`: acknowledgments until the client is done or this server is ready, then the pack.
fn fetch(session: &Session, args: &[&str]) -> Result<Reply, ProtocolError> {
    let mut fetch = FetchArgs::default();
    for arg in args {
        if !fetch.take(arg)? {
            return Err(bad(format!("unexpected line: {arg}")));
        }
    }
    if fetch.wants.is_empty() {
        return Ok(Reply::Done(Vec::new()));
    }
    let wanted = session.wanted(&fetch)?;
    let mut before_shallow = Vec::new();
    if !fetch.done {
        pktline::text(&mut before_shallow, "acknowledgments\n");
        if wanted.common.is_empty() {
            pktline::text(&mut before_shallow, "NAK\n");
        }
        for id in &wanted.common {
            pktline::text(&mut before_shallow, &format!("ACK {id}\n"));
        }
        if wanted.common.is_empty() {
            pktline::flush(&mut before_shallow);
            return Ok(Reply::Done(before_shallow));
        }
        pktline::text(&mut before_shallow, "ready\n");
        pktline::delim(&mut before_shallow);
    }
    let shallow_section = if fetch.deepens() || !fetch.shallow.is_empty() {
        ShallowSection::V2
    } else {
        ShallowSection::None
    };
    Ok(Reply::Pack(Box::new(PackReply {
        wanted,
        framing: Framing::SideBand(pktline::MAX_PACKET),
        progress: !fetch.no_progress,
        before_shallow,
        shallow_section,
        after_shallow: b"000dpackfile\n".to_vec(),
        flush_after: true,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_its_command_and_arguments() {
        let mut body = Vec::new();
        pktline::text(&mut body, "command=fetch\n");
        pktline::text(&mut body, "agent=git/2.47\n");
        pktline::text(&mut body, "object-format=sha1\n");
        pktline::delim(&mut body);
        pktline::text(&mut body, "done\n");
        pktline::flush(&mut body);
        let command = command(&body).unwrap().unwrap();
        assert_eq!(command.name, "fetch");
        assert_eq!(command.args, ["done"]);
    }

    #[test]
    fn bundle_uri_is_advertised_only_when_offered() {
        let with = String::from_utf8(capabilities(true)).unwrap();
        let without = String::from_utf8(capabilities(false)).unwrap();
        assert!(with.contains("000fbundle-uri\n"), "{with}");
        assert!(!without.contains("bundle-uri"), "{without}");
        assert!(with.ends_with("0000") && without.ends_with("0000"));
    }

    #[test]
    fn broken_requests_are_refused() {
        let mut sha256 = Vec::new();
        pktline::text(&mut sha256, "command=fetch\n");
        pktline::text(&mut sha256, "object-format=sha256\n");
        pktline::flush(&mut sha256);
        let mut unended = Vec::new();
        pktline::text(&mut unended, "command=ls-refs\n");
        let mut unknown = Vec::new();
        pktline::text(&mut unknown, "frobnicate\n");
        pktline::flush(&mut unknown);
        for body in [sha256, unended, unknown, b"0001000100000".to_vec()] {
            assert!(command(&body).is_err(), "{body:?}");
        }
        assert!(command(b"0000").unwrap().is_none());
    }
}
