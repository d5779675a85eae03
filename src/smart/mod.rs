//! git's smart HTTP protocol, read-only (upload-pack): the ref advertisement from the resident
//! ref snapshot, and fetch requests of protocol v2 and of v0/v1, parsed, checked against the
//! advertised refs and answered: acknowledgments alone, or the bytes to send before and around
//! a pack; and what `bundle-uri` offers. Nothing here knows about HTTP servers.

pub mod bundle;
pub mod pktline;
mod v0;
mod v2;

use crate::git::commit_index::CommitIndex;
use crate::git::fetch::{Deepen, Filter, Wanted};
use crate::git::{GitError, Repo};
use crate::repos::RefSnapshot;
use gix::ObjectId;
use std::collections::HashSet;

/// What the server calls itself in `agent=`.
pub const AGENT: &str = concat!("cgitd/", env!("CARGO_PKG_VERSION"));

/// The protocol a client speaks, from its `Git-Protocol` header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V0,
    V1,
    V2,
}

impl Version {
    /// The highest version `version=N` in the header names that this server speaks.
    pub fn from_header(header: Option<&str>) -> Version {
        let mut best = Version::V0;
        for part in header.unwrap_or("").split(':') {
            match part.trim() {
                "version=2" => best = Version::V2,
                "version=1" if best == Version::V0 => best = Version::V1,
                _ => {}
            }
        }
        best
    }
}

/// Which objects a client may ask for besides the advertised refs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WantPolicy {
    /// Only what the refs advertise (and their peeled tags).
    Advertised,
    /// Any object reachable from them (what partial clones' lazy fetches need).
    Reachable,
    /// Any object the repository has.
    Any,
}

/// A client's mistake in a request.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("{0}")]
    Framing(#[from] pktline::PacketError),
    #[error("{0}")]
    Bad(String),
    #[error("not our ref {0}")]
    NotOurRef(ObjectId),
}

fn bad(message: impl Into<String>) -> ProtocolError {
    ProtocolError::Bad(message.into())
}

/// How pack data is framed on the way out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Framing {
    /// Raw pack bytes (a v0 client without side-band).
    Raw,
    /// Side-band packets of at most this many bytes.
    SideBand(usize),
}

/// A fetch that sends a pack: what to select, and the bytes that go before and after it.
#[derive(Debug)]
pub struct PackReply {
    pub wanted: Wanted,
    pub framing: Framing,
    pub progress: bool,
    /// Acknowledgments and section headers before the shallow lines, and after them.
    pub before_shallow: Vec<u8>,
    pub shallow_section: ShallowSection,
    pub after_shallow: Vec<u8>,
    /// Whether a flush packet ends the response after the pack.
    pub flush_after: bool,
}

/// How the shallow boundary is told to the client before the pack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShallowSection {
    None,
    /// v0: the lines, then a flush; before the acknowledgments.
    V0,
    /// v2: a `shallow-info` section, then a delimiter; before the `packfile` header.
    V2,
}

/// The answer to a POST to `git-upload-pack`.
#[derive(Debug)]
pub enum Reply {
    /// Complete (ls-refs, acknowledgments of a negotiation round, an empty fetch).
    Done(Vec<u8>),
    Pack(Box<PackReply>),
}

/// What a fetch asked for, before its ids are checked.
#[derive(Debug, Default)]
struct FetchArgs {
    wants: Vec<ObjectId>,
    haves: Vec<ObjectId>,
    shallow: Vec<ObjectId>,
    depth: Option<u32>,
    since: Option<i64>,
    not: Vec<String>,
    filter: Option<Filter>,
    done: bool,
    include_tag: bool,
    thin: bool,
    no_progress: bool,
}

impl FetchArgs {
    /// Takes one argument line that both protocols spell alike; `false` when it is not one.
    fn take(&mut self, line: &str) -> Result<bool, ProtocolError> {
        let (name, value) = line.split_once(' ').unwrap_or((line, ""));
        match name {
            "want" => self.wants.push(parse_id(value)?),
            "have" => self.haves.push(parse_id(value)?),
            "shallow" => self.shallow.push(parse_id(value)?),
            "deepen" => {
                let depth: u32 = value
                    .parse()
                    .ok()
                    .filter(|d| (1..=i32::MAX as u32).contains(d))
                    .ok_or_else(|| bad(format!("bad depth: {value}")))?;
                self.depth = Some(depth);
            }
            "deepen-since" => {
                let since = value
                    .parse()
                    .map_err(|_| bad(format!("bad deepen-since: {value}")))?;
                self.since = Some(since);
            }
            "deepen-not" => self.not.push(value.to_string()),
            "filter" => {
                let filter = Filter::parse(value)
                    .ok_or_else(|| bad(format!("unsupported filter: {value}")))?;
                self.filter = Some(filter);
            }
            "done" => self.done = true,
            "include-tag" => self.include_tag = true,
            "no-progress" => self.no_progress = true,
            "deepen-relative" => {
                return Err(bad("deepen-relative (fetch --deepen) is not supported"));
            }
            "thin-pack" => self.thin = true,
            "ofs-delta" => {}
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn deepen(&self, refs: &RefSnapshot) -> Result<Deepen, ProtocolError> {
        match (self.depth, self.since, self.not.is_empty()) {
            (None, None, true) => Ok(Deepen::Full),
            (Some(depth), None, true) => Ok(Deepen::Depth(depth)),
            (None, Some(since), true) => Ok(Deepen::Since(since)),
            (None, None, false) => {
                let mut not = Vec::new();
                for name in &self.not {
                    let entry = ref_named(refs, name)
                        .ok_or_else(|| bad(format!("deepen-not names no ref: {name}")))?;
                    not.push(entry.peeled.unwrap_or(entry.id));
                }
                Ok(Deepen::Not(not))
            }
            (Some(_), _, _) => Err(bad(
                "deepen cannot be combined with deepen-since or deepen-not",
            )),
            (None, Some(_), false) => Err(bad("deepen-since with deepen-not is not supported")),
        }
    }

    fn deepens(&self) -> bool {
        self.depth.is_some() || self.since.is_some() || !self.not.is_empty()
    }
}

/// The ref `name` as git resolves a short name on the command line.
fn ref_named<'a>(refs: &'a RefSnapshot, name: &str) -> Option<&'a crate::repos::RefEntry> {
    ["", "refs/", "refs/tags/", "refs/heads/"]
        .iter()
        .find_map(|prefix| {
            refs.all
                .iter()
                .find(|r| r.name == format!("{prefix}{name}"))
        })
}

fn parse_id(hex: &str) -> Result<ObjectId, ProtocolError> {
    ObjectId::from_hex(hex.as_bytes()).map_err(|_| bad(format!("bad object id: {hex}")))
}

/// The id HEAD points at, when it names a branch that exists.
fn head_id(refs: &RefSnapshot) -> Option<ObjectId> {
    let branch = format!("refs/heads/{}", refs.head_branch.as_deref()?);
    refs.all.iter().find(|r| r.name == branch).map(|r| r.id)
}

/// The body of `GET info/refs?service=git-upload-pack`; a v2 client is told of `bundle-uri`
/// when `bundle_uri` is the bundle's URI.
pub fn advertise(refs: &RefSnapshot, version: Version, bundle_uri: Option<&str>) -> Vec<u8> {
    match version {
        Version::V2 => v2::capabilities(bundle_uri.is_some()),
        Version::V0 | Version::V1 => v0::advertise(refs, version),
    }
}

/// Answers a POST to `git-upload-pack`: parses `body`, checks its wants under `policy`, and
/// negotiates; the pack, when one is sent, is the caller's to write. `bundle_uri`, when set,
/// answers v2's `command=bundle-uri`.
pub fn answer(
    repo: &Repo,
    index: Option<&CommitIndex>,
    refs: &RefSnapshot,
    version: Version,
    policy: WantPolicy,
    bundle_uri: Option<&str>,
    body: &[u8],
) -> Result<Reply, ProtocolError> {
    let session = Session {
        repo,
        index,
        refs,
        policy,
        bundle_uri,
    };
    match version {
        Version::V2 => v2::answer(&session, body),
        Version::V0 | Version::V1 => v0::answer(&session, body),
    }
}

/// What one request is answered from.
struct Session<'a> {
    repo: &'a Repo<'a>,
    index: Option<&'a CommitIndex>,
    refs: &'a RefSnapshot,
    policy: WantPolicy,
    /// The URI of the bundle offered to `command=bundle-uri`, if one is.
    bundle_uri: Option<&'a str>,
}

impl Session<'_> {
    /// Checks the wants and turns the haves into the commits both sides have.
    fn wanted(&self, args: &FetchArgs) -> Result<Wanted, ProtocolError> {
        self.check_wants(&args.wants)?;
        let common = self.common(&args.haves);
        let tags = if args.include_tag {
            self.refs
                .all
                .iter()
                .filter_map(|r| Some((r.id, r.peeled?)))
                .collect()
        } else {
            Vec::new()
        };
        Ok(Wanted {
            wants: dedup(&args.wants),
            common,
            client_shallow: dedup(&args.shallow),
            deepen: args.deepen(self.refs)?,
            filter: args.filter.unwrap_or(Filter::None),
            tags,
            thin: args.thin,
        })
    }

    /// The haves this repository has as commits, in the order sent.
    fn common(&self, haves: &[ObjectId]) -> Vec<ObjectId> {
        let mut seen = HashSet::new();
        haves
            .iter()
            .filter(|id| seen.insert(**id))
            .filter(|id| {
                self.index.is_some_and(|i| i.position(id).is_some())
                    || matches!(
                        self.repo.read_object(id),
                        Ok(Some((gix::object::Kind::Commit, _)))
                    )
            })
            .copied()
            .collect()
    }

    fn check_wants(&self, wants: &[ObjectId]) -> Result<(), ProtocolError> {
        let advertised: HashSet<ObjectId> = self
            .refs
            .all
            .iter()
            .flat_map(|r| std::iter::once(r.id).chain(r.peeled))
            .collect();
        let others: Vec<ObjectId> = wants
            .iter()
            .filter(|w| !advertised.contains(*w))
            .copied()
            .collect();
        let Some(first) = others.first() else {
            return Ok(());
        };
        match self.policy {
            WantPolicy::Advertised => Err(ProtocolError::NotOurRef(*first)),
            WantPolicy::Any => match others
                .iter()
                .find(|id| !self.repo.has_object(id).unwrap_or(false))
            {
                Some(missing) => Err(ProtocolError::NotOurRef(*missing)),
                None => Ok(()),
            },
            WantPolicy::Reachable => {
                let tips: Vec<ObjectId> = advertised.into_iter().collect();
                match crate::git::fetch::unreachable(self.repo, self.index, &tips, &others) {
                    Ok(None) => Ok(()),
                    Ok(Some(id)) => Err(ProtocolError::NotOurRef(id)),
                    Err(GitError::NotFound(_) | GitError::BadRequest(_)) => {
                        Err(ProtocolError::NotOurRef(*first))
                    }
                    Err(e) => {
                        tracing::error!("checking that wants are reachable: {e}");
                        Err(ProtocolError::NotOurRef(*first))
                    }
                }
            }
        }
    }
}

impl PackReply {
    /// What goes before the pack: the acknowledgments and section headers around the shallow
    /// boundary (commits now `shallow`, and the client's shallow commits now `unshallow`).
    pub fn preamble(&self, shallow: &[ObjectId], unshallow: &[ObjectId]) -> Vec<u8> {
        let mut out = self.before_shallow.clone();
        if self.shallow_section == ShallowSection::V2 {
            pktline::text(&mut out, "shallow-info\n");
        }
        if self.shallow_section != ShallowSection::None && self.wanted.deepen != Deepen::Full {
            for id in shallow {
                pktline::text(&mut out, &format!("shallow {id}\n"));
            }
            for id in unshallow {
                pktline::text(&mut out, &format!("unshallow {id}\n"));
            }
        }
        match self.shallow_section {
            ShallowSection::None => {}
            ShallowSection::V0 => pktline::flush(&mut out),
            ShallowSection::V2 => pktline::delim(&mut out),
        }
        out.extend_from_slice(&self.after_shallow);
        out
    }
}

fn dedup(ids: &[ObjectId]) -> Vec<ObjectId> {
    let mut seen = HashSet::new();
    ids.iter().filter(|id| seen.insert(**id)).copied().collect()
}

/// The error packet a client shows as `remote error: …`.
pub fn error_packet(message: &str) -> Vec<u8> {
    let mut out = Vec::new();
    pktline::text(&mut out, &format!("ERR {message}\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_protocol_version_comes_from_the_header() {
        assert_eq!(Version::from_header(None), Version::V0);
        assert_eq!(Version::from_header(Some("version=2")), Version::V2);
        assert_eq!(Version::from_header(Some("version=1")), Version::V1);
        assert_eq!(Version::from_header(Some("foo=bar:version=2")), Version::V2);
        assert_eq!(Version::from_header(Some("version=3")), Version::V0);
    }

    #[test]
    fn fetch_arguments_are_checked() {
        let mut args = FetchArgs::default();
        assert!(args.take("deepen 0").is_err());
        assert!(args.take("deepen 99999999999").is_err());
        assert!(args.take("deepen -1").is_err());
        assert!(args.take("want 123").is_err());
        assert!(args.take("filter sparse:path=x").is_err());
        assert!(!args.take("frobnicate").unwrap());
        assert!(args.take("deepen 3").unwrap());
        assert_eq!(args.depth, Some(3));
    }
}
