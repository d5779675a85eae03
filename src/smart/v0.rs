//! Protocols v0 and v1 over stateless HTTP: the ref advertisement with its capabilities, and
//! one round of negotiation per request (`multi_ack_detailed`), the last one, ended by `done`,
//! followed by the pack.

use super::pktline::{self, Packet, Reader};
use super::{
    AGENT, FetchArgs, Framing, PackReply, ProtocolError, Reply, Session, ShallowSection, Version,
    bad, head_id,
};
use crate::repos::RefSnapshot;
use gix::ObjectId;

/// What this server offers a v0 client; `symref=` and `agent=` are added per repository.
const CAPABILITIES: &str = "multi_ack_detailed side-band-64k side-band thin-pack ofs-delta \
    shallow deepen-since deepen-not no-progress include-tag filter \
    allow-tip-sha1-in-want allow-reachable-sha1-in-want object-format=sha1";

/// The body of `info/refs?service=git-upload-pack`: HEAD and every ref, peeled tags after
/// their tag, the capabilities on the first line.
pub fn advertise(refs: &RefSnapshot, version: Version) -> Vec<u8> {
    let mut out = Vec::new();
    pktline::text(&mut out, "# service=git-upload-pack\n");
    pktline::flush(&mut out);
    if version == Version::V1 {
        pktline::text(&mut out, "version 1\n");
    }
    let mut capabilities = CAPABILITIES.to_string();
    if let Some(branch) = &refs.head_branch {
        capabilities.push_str(&format!(" symref=HEAD:refs/heads/{branch}"));
    }
    capabilities.push_str(&format!(" agent={AGENT}"));
    let mut lines: Vec<(ObjectId, String)> = Vec::new();
    if let Some(id) = head_id(refs) {
        lines.push((id, "HEAD".into()));
    }
    for entry in &refs.all {
        lines.push((entry.id, entry.name.clone()));
        if let Some(peeled) = entry.peeled {
            lines.push((peeled, format!("{}^{{}}", entry.name)));
        }
    }
    if lines.is_empty() {
        let null = ObjectId::null(gix::hash::Kind::Sha1);
        lines.push((null, "capabilities^{}".into()));
    }
    for (i, (id, name)) in lines.iter().enumerate() {
        let line = if i == 0 {
            format!("{id} {name}\0{capabilities}\n")
        } else {
            format!("{id} {name}\n")
        };
        pktline::text(&mut out, &line);
    }
    pktline::flush(&mut out);
    out
}

/// The capabilities a client asked for on its first `want` line.
#[derive(Default)]
struct Asked {
    multi_ack_detailed: bool,
    framing: Option<Framing>,
    /// Whether haves followed the wants (a flush ended them, or `done`): a deepening client
    /// first sends its wants alone, to learn the shallow boundary.
    negotiates: bool,
}

impl Asked {
    fn take(&mut self, capability: &str, args: &mut FetchArgs) {
        match capability {
            "multi_ack_detailed" => self.multi_ack_detailed = true,
            "side-band-64k" => self.framing = Some(Framing::SideBand(pktline::MAX_PACKET)),
            "side-band" if self.framing.is_none() => self.framing = Some(Framing::SideBand(1000)),
            "no-progress" => args.no_progress = true,
            "include-tag" => args.include_tag = true,
            "thin-pack" => args.thin = true,
            // Others change nothing here (ofs-delta, agent=…) or are unknown,
            // which git ignores too.
            _ => {}
        }
    }
}

/// Reads a request: wants (the first with capabilities), shallows and deepening, a flush,
/// then haves and perhaps `done`.
fn parse(body: &[u8]) -> Result<(FetchArgs, Asked), ProtocolError> {
    let mut args = FetchArgs::default();
    let mut asked = Asked::default();
    let mut flushes = 0;
    for packet in Reader::new(body) {
        let line = match packet? {
            Packet::Line(line) => std::str::from_utf8(line).map_err(|_| bad("bad request line"))?,
            Packet::Flush => {
                flushes += 1;
                continue;
            }
            _ => return Err(bad("unexpected delimiter")),
        };
        let line = match line.strip_prefix("want ") {
            Some(rest) if args.wants.is_empty() => {
                let mut words = rest.split(' ');
                let id = words.next().unwrap_or_default();
                for capability in words {
                    asked.take(capability, &mut args);
                }
                format!("want {id}")
            }
            _ => line.to_string(),
        };
        let is_want_part = !line.starts_with("have ") && line != "done";
        asked.negotiates |= line == "done";
        if (flushes == 0) != is_want_part || !args.take(&line)? {
            return Err(bad(format!("unexpected line: {line}")));
        }
    }
    asked.negotiates |= flushes >= 2;
    Ok((args, asked))
}

/// Answers one stateless round.
pub fn answer(session: &Session, body: &[u8]) -> Result<Reply, ProtocolError> {
    let (args, asked) = parse(body)?;
    if args.wants.is_empty() {
        return Ok(Reply::Done(Vec::new()));
    }
    let wanted = session.wanted(&args)?;
    let acks = if asked.negotiates {
        acknowledgments(&wanted.common, asked.multi_ack_detailed, args.done)
    } else {
        Vec::new()
    };
    let shallow_section = if args.deepens() {
        ShallowSection::V0
    } else {
        ShallowSection::None
    };
    let reply = PackReply {
        wanted,
        framing: asked.framing.unwrap_or(Framing::Raw),
        progress: !args.no_progress && asked.framing.is_some(),
        before_shallow: Vec::new(),
        shallow_section,
        after_shallow: acks,
        flush_after: asked.framing.is_some(),
    };
    if args.done {
        return Ok(Reply::Pack(Box::new(reply)));
    }
    // A round without `done` still tells a deepening client its shallow boundary.
    let selection = match shallow_section {
        ShallowSection::None => Default::default(),
        _ => crate::git::fetch::select(session.repo, session.index, &reply.wanted)
            .map_err(|e| bad(e.to_string()))?,
    };
    Ok(Reply::Done(
        reply.preamble(&selection.shallow, &selection.unshallow),
    ))
}

/// The ACK and NAK lines for the common commits of one round.
fn acknowledgments(common: &[ObjectId], multi_ack_detailed: bool, done: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let Some(last) = common.last() else {
        pktline::text(&mut out, "NAK\n");
        return out;
    };
    if !multi_ack_detailed {
        pktline::text(&mut out, &format!("ACK {}\n", common[0]));
        return out;
    }
    for id in common {
        pktline::text(&mut out, &format!("ACK {id} common\n"));
    }
    if done {
        pktline::text(&mut out, &format!("ACK {last}\n"));
    } else {
        pktline::text(&mut out, &format!("ACK {last} ready\n"));
        pktline::text(&mut out, "NAK\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(lines: &[&str], flush_at: usize) -> Vec<u8> {
        let mut body = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            if i == flush_at {
                pktline::flush(&mut body);
            }
            pktline::text(&mut body, &format!("{line}\n"));
        }
        body
    }

    const ID: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn capabilities_come_with_the_first_want() {
        let want = format!("want {ID} multi_ack_detailed side-band-64k no-progress agent=git/2");
        let body = request(&[&want, &format!("want {ID}"), "deepen 1", "done"], 3);
        let (args, asked) = parse(&body).unwrap();
        assert_eq!(args.wants.len(), 2);
        assert_eq!(args.depth, Some(1));
        assert!(args.done && args.no_progress && asked.multi_ack_detailed);
        assert_eq!(asked.framing, Some(Framing::SideBand(pktline::MAX_PACKET)));
    }

    #[test]
    fn lines_out_of_place_are_refused() {
        let have_first = request(&[&format!("have {ID}"), &format!("want {ID}")], 9);
        let want_after_flush = request(&[&format!("want {ID}"), &format!("want {ID}")], 1);
        let unknown = request(&[&format!("want {ID}"), "frobnicate"], 9);
        for body in [have_first, want_after_flush, unknown] {
            assert!(parse(&body).is_err());
        }
    }

    #[test]
    fn a_round_acknowledges_what_is_common() {
        let id = ObjectId::from_hex(ID.as_bytes()).unwrap();
        let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
        assert_eq!(text(acknowledgments(&[], true, false)), "0008NAK\n");
        let round = text(acknowledgments(&[id], true, false));
        assert!(round.contains(&format!("ACK {ID} common")));
        assert!(round.contains(&format!("ACK {ID} ready")));
        assert!(round.ends_with("0008NAK\n"));
        assert!(text(acknowledgments(&[id], true, true)).ends_with(&format!("ACK {ID}\n")));
    }
}
