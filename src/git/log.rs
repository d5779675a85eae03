//! Commit reading and history walks.

use super::GitError;
use crate::repos::{Person, subject_of};
use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::revision::walk::Sorting;
use gix::traverse::commit::simple::CommitTimeOrder;

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
    Ok(CommitInfo {
        id,
        tree: c.tree(),
        parents: c.parents().collect(),
        author: Person::from_signature(c.author().map_err(GitError::internal)?),
        committer: Person::from_signature(c.committer().map_err(GitError::internal)?),
        subject: subject_of(c.message),
        message: c.message.to_str_lossy().into_owned(),
    })
}

/// One page of history.
pub struct LogPage {
    pub commits: Vec<CommitInfo>,
    /// Whether another commit follows the page.
    pub has_more: bool,
}

/// `count` commits from `tip` after skipping `skip`, newest first (git log's default order).
pub fn log(
    repo: &gix::Repository,
    tip: ObjectId,
    skip: usize,
    count: usize,
) -> Result<LogPage, GitError> {
    let walk = repo
        .rev_walk([tip])
        .sorting(Sorting::ByCommitTime(CommitTimeOrder::NewestFirst))
        .all()
        .map_err(GitError::internal)?;
    let mut commits = Vec::with_capacity(count);
    let mut has_more = false;
    for info in walk.skip(skip) {
        let info = info.map_err(GitError::internal)?;
        if commits.len() == count {
            has_more = true;
            break;
        }
        commits.push(read_commit(repo, info.id)?);
    }
    Ok(LogPage { commits, has_more })
}
