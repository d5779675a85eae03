//! What a fetch or clone sends: the commits between the client's wants and what it has (or
//! its depth), the trees and blobs they add, cut by a filter; and the pack that carries them.

mod pack;
mod paint;
mod reach;
mod select;

pub use pack::write_pack;
pub use reach::unreachable;
pub use select::select;

use gix::ObjectId;

/// How far back history is sent (git's `deepen`, `deepen-since`, `deepen-not`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Deepen {
    /// All of it, down to what the client has.
    Full,
    /// This many commits from each want.
    Depth(u32),
    /// Commits made at or after this time (seconds since the epoch).
    Since(i64),
    /// Commits not reachable from these.
    Not(Vec<ObjectId>),
}

/// Which objects below the commits are left out (git's `filter`); an object the client names
/// in a want is always sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Filter {
    None,
    /// `blob:none`: no blobs.
    NoBlobs,
    /// `blob:limit=N`: blobs of at most N bytes.
    BlobLimit(u64),
    /// `tree:0`: commits and tags only.
    NoTrees,
}

impl Filter {
    /// Parses a filter spec as git's client sends it.
    pub fn parse(spec: &str) -> Option<Filter> {
        match spec {
            "blob:none" => return Some(Filter::NoBlobs),
            "tree:0" => return Some(Filter::NoTrees),
            _ => {}
        }
        let limit = spec.strip_prefix("blob:limit=")?;
        let (digits, unit) = match limit.find(|c: char| !c.is_ascii_digit()) {
            Some(at) => limit.split_at(at),
            None => (limit, ""),
        };
        let scale: u64 = match unit {
            "" => 1,
            "k" | "K" => 1 << 10,
            "m" | "M" => 1 << 20,
            "g" | "G" => 1 << 30,
            _ => return None,
        };
        digits
            .parse::<u64>()
            .ok()?
            .checked_mul(scale)
            .map(Filter::BlobLimit)
    }
}

/// What the client asked for, its ids checked against the ref advertisement by the caller.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Wanted {
    pub wants: Vec<ObjectId>,
    /// Commits the client has that this repository has too.
    pub common: Vec<ObjectId>,
    /// The client's shallow commits: their parents are not on the client.
    pub client_shallow: Vec<ObjectId>,
    pub deepen: Deepen,
    pub filter: Filter,
    /// Annotated tags (tag id, the commit it peels to) to send when their commit is sent
    /// (`include-tag`); empty when the client did not ask.
    pub tags: Vec<(ObjectId, ObjectId)>,
    /// Whether the pack may be thin: deltas on objects the client has (`thin-pack`).
    pub thin: bool,
}

impl Wanted {
    /// A full clone of `wants`: all their history, nothing left out, a complete pack.
    pub fn clone_of(wants: Vec<ObjectId>) -> Wanted {
        Wanted {
            wants,
            common: Vec::new(),
            client_shallow: Vec::new(),
            deepen: Deepen::Full,
            filter: Filter::None,
            tags: Vec::new(),
            thin: false,
        }
    }

    /// Whether this is a clone: the client has nothing yet, not even a shallow history.
    pub fn is_clone(&self) -> bool {
        self.common.is_empty() && self.client_shallow.is_empty()
    }

    /// Whether this is a full clone: all history, nothing filtered out.
    pub fn is_full_clone(&self) -> bool {
        self.is_clone() && self.deepen == Deepen::Full && self.filter == Filter::None
    }
}

/// The objects to send, in the order found (commits and tags first), and the shallow
/// boundary the client is to record.
#[derive(Debug, Default)]
pub struct Selection {
    pub objects: Vec<ObjectId>,
    pub commits: usize,
    /// Commits sent whose parents are not: new shallow commits.
    pub shallow: Vec<ObjectId>,
    /// The client's shallow commits whose parents are sent now.
    pub unshallow: Vec<ObjectId>,
    /// What the client has that a thin pack's deltas may name as their bases.
    pub client: ClientBases,
}

/// Objects the client has, for a thin pack's deltas to name as their bases.
#[derive(Debug, Default)]
pub struct ClientBases {
    /// The trees and blobs of the commits at the edge of what is sent.
    pub objects: gix::hashtable::HashSet<ObjectId>,
    /// For a sent tree or blob, the client's object at the same path (in the newest edge
    /// commit), when it has one.
    pub by_path: gix::hashtable::HashMap<ObjectId, ObjectId>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_parse_as_git_writes_them() {
        assert_eq!(Filter::parse("blob:none"), Some(Filter::NoBlobs));
        assert_eq!(Filter::parse("tree:0"), Some(Filter::NoTrees));
        assert_eq!(Filter::parse("blob:limit=10"), Some(Filter::BlobLimit(10)));
        assert_eq!(
            Filter::parse("blob:limit=2k"),
            Some(Filter::BlobLimit(2048))
        );
        assert_eq!(
            Filter::parse("blob:limit=1m"),
            Some(Filter::BlobLimit(1 << 20))
        );
        assert_eq!(Filter::parse("blob:limit="), None);
        assert_eq!(Filter::parse("blob:limit=99999999999999999999"), None);
        assert_eq!(Filter::parse("blob:limit=1x"), None);
        assert_eq!(Filter::parse("tree:1"), None);
        assert_eq!(Filter::parse("sparse:oid=abc"), None);
    }
}
