//! Commits as plain data: the decoded commit, its people and its subject line.

use super::encoding::decode;
use super::error::GitError;
use gix::ObjectId;
use gix::bstr::ByteSlice;

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
    /// The message without its subject line and the blank lines after it.
    pub fn body(&self) -> &str {
        match self.message.split_once('\n') {
            Some((_, rest)) => rest.trim_start_matches(['\n', '\r']),
            None => "",
        }
    }
}

pub fn read_commit(repo: &gix::Repository, id: ObjectId) -> Result<CommitInfo, GitError> {
    let commit = repo
        .find_commit(id)
        .map_err(|_| GitError::NotFound(format!("Bad commit: {id}")))?;
    let c = commit.decode().map_err(GitError::internal)?;
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
