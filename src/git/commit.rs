//! Commits as plain data: the decoded commit, its people and its subject line; decoded commits
//! kept for every repository.

use super::Repo;
use super::encoding::decode;
use super::error::GitError;
use crate::byte_lru::{ByteLru, Weigh};
use gix::ObjectId;
use gix::bstr::ByteSlice;
use std::sync::{Arc, Mutex};

/// A name, email and date from a commit or tag header.
#[derive(Clone, Debug)]
pub struct Person {
    pub name: String,
    pub email: String,
    pub time: gix::date::Time,
}

impl Person {
    /// From a header of an object whose text is in `encoding` (a commit's `encoding` header).
    pub fn from_signature(sig: gix::actor::SignatureRef<'_>, encoding: Option<&[u8]>) -> Person {
        Person {
            name: decode(sig.name.trim(), encoding),
            email: decode(sig.email.trim(), encoding),
            time: sig.time().unwrap_or_default(),
        }
    }
}

/// A decoded commit.
#[derive(Clone, Debug)]
pub struct CommitInfo {
    pub id: ObjectId,
    pub tree: ObjectId,
    pub parents: Vec<ObjectId>,
    pub author: Person,
    pub committer: Person,
    pub subject: String,
    /// The whole message, subject included.
    pub message: String,
}

impl CommitInfo {
    /// The bytes this commit holds, roughly.
    fn weight(&self) -> usize {
        let people = [&self.author, &self.committer]
            .iter()
            .map(|p| p.name.len() + p.email.len())
            .sum::<usize>();
        ENTRY_BYTES + self.parents.len() * 20 + people + self.subject.len() + self.message.len()
    }

    /// The message without its subject line and the blank lines after it.
    pub fn body(&self) -> &str {
        match self.message.split_once('\n') {
            Some((_, rest)) => rest.trim_start_matches(['\n', '\r']),
            None => "",
        }
    }
}

/// Bytes of decoded commits kept over all repositories.
const KEPT_BYTES: usize = 16 << 20;
/// Shards of the kept commits, so that workers reading log pages seldom wait for each other.
const SHARDS: usize = 8;
/// What a kept commit holds besides its text: the struct, the `Arc` and the map's entry.
const ENTRY_BYTES: usize = 256;

/// Decoded commits by object store (its pack set) and id, for every repository whose objects
/// are read through the shared pack reader: a log page shows fifty commits, and log pages,
/// searches, feeds and forks sharing a store show the same ones again and again.
pub struct Commits {
    shards: Vec<Mutex<Shard>>,
}

/// A pack set's serial and a commit id.
type Key = (u64, ObjectId);
type Shard = ByteLru<Key, Arc<CommitInfo>>;

impl Default for Commits {
    fn default() -> Self {
        let weigh: Weigh<Key, Arc<CommitInfo>> = |_, c| c.weight();
        Commits {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(ByteLru::new(KEPT_BYTES / SHARDS, weigh)))
                .collect(),
        }
    }
}

impl Commits {
    fn shard(&self, key: &Key) -> std::sync::MutexGuard<'_, Shard> {
        let shard = key.1.as_bytes()[0] as usize % SHARDS;
        self.shards[shard].lock().unwrap_or_else(|e| e.into_inner())
    }

    fn get(&self, key: &Key) -> Option<Arc<CommitInfo>> {
        self.shard(key).get(key).cloned()
    }

    fn put(&self, key: Key, commit: Arc<CommitInfo>) {
        self.shard(&key).put(key, commit);
    }

    /// Bytes of kept commits now, as weighed (their texts and [`ENTRY_BYTES`] each).
    pub fn bytes(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| shard.lock().unwrap_or_else(|e| e.into_inner()).bytes())
            .sum()
    }
}

/// Commit `id` (kept for the repository's object store when it reads through the shared
/// caches); a missing or non-commit id is a user's mistake (404).
pub fn read_commit(repo: &Repo, id: ObjectId) -> Result<Arc<CommitInfo>, GitError> {
    let Some((_, set, commits)) = repo.shared else {
        return decode_commit(repo, id).map(Arc::new);
    };
    // By store: a kept commit is only handed to a repository that read it from the same objects.
    let key = (set.serial, id);
    if let Some(kept) = commits.get(&key) {
        return Ok(kept);
    }
    let commit = Arc::new(decode_commit(repo, id)?);
    commits.put(key, Arc::clone(&commit));
    Ok(commit)
}

fn decode_commit(repo: &Repo, id: ObjectId) -> Result<CommitInfo, GitError> {
    let bad = || GitError::NotFound(format!("Bad commit: {id}"));
    let (kind, data) = repo.read_object(&id)?.ok_or_else(bad)?;
    if kind != gix::object::Kind::Commit {
        return Err(bad());
    }
    let c =
        gix::objs::CommitRef::from_bytes(&data, repo.object_hash()).map_err(GitError::internal)?;
    let encoding = c.encoding.map(|e| e.as_bytes());
    Ok(CommitInfo {
        id,
        tree: c.tree(),
        parents: c.parents().collect(),
        author: Person::from_signature(c.author().map_err(GitError::internal)?, encoding),
        committer: Person::from_signature(c.committer().map_err(GitError::internal)?, encoding),
        subject: subject_of(c.message, encoding),
        message: decode(c.message, encoding),
    })
}

/// The first line of a commit message, decoded from `encoding`.
pub fn subject_of(message: &gix::bstr::BStr, encoding: Option<&[u8]>) -> String {
    let line = message.lines().next().unwrap_or_default();
    decode(line, encoding).trim_end().to_string()
}
