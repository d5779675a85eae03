//! patch: the non-merge commits of `id2..id` (`id2` defaults to the first parent, so a plain
//! commit is just itself) as `git format-patch -N --stdout` mails, oldest first. With a path,
//! only the commits changing it, their diffs limited to it (`-- PATH`), as cgit does.

use super::parts::diffargs::commit_pair;
use super::{PageError, RepoCtx, Response};
use crate::git::{self, GitError, diff::DiffOptions};
use gix::ObjectId;
use gix::bstr::ByteSlice;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

/// The most commits one patch page holds.
const MAX_COMMITS: usize = 1000;

pub fn render(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    let pair = commit_pair(ctx)?;
    let path = ctx.req.path.as_ref().map(|p| p.as_bstr());
    let commits = match path {
        None => range(ctx.repo, pair.old, pair.new)?,
        Some(path) => path_range(ctx, pair.old, pair.new, path)?,
    };
    let opts = DiffOptions {
        rename_limit: ctx.site.config.globals.renamelimit,
        ..DiffOptions::default()
    };
    let signature = &ctx.site.config.globals.patch_signature;
    let mails = git::format_patch::Mails::new(ctx.repo, opts, path.map(|p| p.as_ref()), signature);
    let mut body = Vec::with_capacity(8192);
    for (i, id) in commits.into_iter().enumerate() {
        if i > 0 {
            body.push(b'\n');
        }
        mails.write(id, &mut body)?;
    }
    let name = match pair.old {
        Some(old) => format!("{old}..{}.patch", pair.new),
        None => format!("{}.patch", pair.new),
    };
    Ok(Response {
        status: 200,
        content_type: "text/plain; charset=UTF-8".into(),
        headers: vec![(
            "Content-Disposition",
            format!("inline; filename=\"{name}\""),
        )],
        body: body.into(),
    })
}

/// Non-merge commits of the range changing `path` (git's history simplification), oldest first.
fn path_range(
    ctx: &RepoCtx<'_>,
    old: Option<ObjectId>,
    new: ObjectId,
    path: &gix::bstr::BStr,
) -> Result<Vec<ObjectId>, PageError> {
    let page = git::log::query(
        ctx.repo,
        &git::log::LogQuery {
            tips: vec![new],
            hidden: old.into_iter().collect(),
            path: Some(path),
            bloom: ctx.state.bloom(),
            count: MAX_COMMITS + 1,
            ..Default::default()
        },
    )?;
    let mut commits: Vec<ObjectId> = page
        .commits
        .iter()
        .filter(|c| c.parents.len() <= 1)
        .map(|c| c.id)
        .collect();
    if commits.len() > MAX_COMMITS {
        return Err(too_many());
    }
    commits.reverse();
    Ok(commits)
}

fn too_many() -> PageError {
    PageError::BadRequest(format!(
        "Too many commits in range (more than {MAX_COMMITS})"
    ))
}

/// Non-merge commits reachable from `new` but not from `old`, oldest first, in the order
/// git's walk meets them (newest commit time first, ties in the order they were queued).
fn range(
    repo: &crate::git::Repo,
    old: Option<ObjectId>,
    new: ObjectId,
) -> Result<Vec<ObjectId>, PageError> {
    use gix::revision::walk::Sorting;
    use gix::traverse::commit::simple::CommitTimeOrder;
    let walk = repo
        .rev_walk([new])
        .with_hidden(old)
        .sorting(Sorting::ByCommitTime(CommitTimeOrder::NewestFirst))
        .all()
        .map_err(GitError::internal)?;
    let mut members = HashMap::new();
    for info in walk {
        let info = info.map_err(GitError::internal)?;
        let time = info.commit_time.unwrap_or_default();
        members.insert(info.id, (time, info.parent_ids.to_vec()));
    }
    let mut queue = BinaryHeap::from([(members[&new].0, Reverse(0), new)]);
    let mut queued = HashSet::from([new]);
    let mut commits = Vec::new();
    while let Some((_, _, id)) = queue.pop() {
        let parents = &members[&id].1;
        for parent in parents {
            if let Some((time, _)) = members.get(parent)
                && queued.insert(*parent)
            {
                queue.push((*time, Reverse(queued.len()), *parent));
            }
        }
        if parents.len() > 1 {
            continue;
        }
        if commits.len() == MAX_COMMITS {
            return Err(too_many());
        }
        commits.push(id);
    }
    commits.reverse();
    Ok(commits)
}
