//! What the commit, diff, rawdiff and patch pages read from a request: the commits to compare
//! and the diff options.

use super::{PageError, RepoCtx};
use crate::git;
use gix::ObjectId;

/// The commits a diff-like page compares.
pub struct CommitPair {
    /// `id2` when given, else the first parent of `new` (None for a root commit).
    pub old: Option<ObjectId>,
    /// `id`, else the page's head.
    pub new: ObjectId,
}

/// The new commit: `id`, else the head.
pub fn new_commit(ctx: &RepoCtx<'_>) -> Result<ObjectId, PageError> {
    let spec = ctx.req.query.id.as_deref().unwrap_or(&ctx.head);
    Ok(git::rev::resolve_commit(ctx.repo, spec)?)
}

pub fn commit_pair(ctx: &RepoCtx<'_>) -> Result<CommitPair, PageError> {
    let new = new_commit(ctx)?;
    match ctx.req.query.id2.as_deref() {
        Some(spec) => Ok(CommitPair {
            old: Some(git::rev::resolve_commit(ctx.repo, spec)?),
            new,
        }),
        None => Ok(CommitPair {
            old: git::log::read_commit(ctx.repo, new)?
                .parents
                .first()
                .copied(),
            new,
        }),
    }
}
