//! Whether what a client wants is reachable from the refs it was shown.

use super::select::Commits;
use crate::git::commit_index::CommitIndex;
use crate::git::{GitError, Repo};
use gix::ObjectId;
use gix::hashtable::HashSet;
use gix::object::Kind;

/// The first of `wants` not reachable from `tips`, or `None` when all are. A wanted commit
/// counts when the walk from the tips reaches it; any other object counts when the
/// repository has it (what a partial clone's lazy fetch asks for: proving a blob reachable
/// would mean reading every tree of the history).
pub fn unreachable(
    repo: &Repo,
    index: Option<&CommitIndex>,
    tips: &[ObjectId],
    wants: &[ObjectId],
) -> Result<Option<ObjectId>, GitError> {
    let mut commits_wanted = HashSet::default();
    for want in wants {
        match repo.read_object(want)? {
            None => return Ok(Some(*want)),
            Some((Kind::Commit, _)) => {
                commits_wanted.insert(*want);
            }
            Some(_) => {}
        }
    }
    let commits = Commits { repo, index };
    let mut seen = HashSet::default();
    let mut queue: Vec<ObjectId> = Vec::new();
    for tip in tips {
        if matches!(repo.read_object(tip)?, Some((Kind::Commit, _))) && seen.insert(*tip) {
            queue.push(*tip);
        }
    }
    while let Some(id) = queue.pop() {
        commits_wanted.remove(&id);
        if commits_wanted.is_empty() {
            return Ok(None);
        }
        for parent in commits.links(&id)?.parents {
            if seen.insert(parent) {
                queue.push(parent);
            }
        }
    }
    Ok(commits_wanted.into_iter().next())
}
