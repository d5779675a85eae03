//! summary: the repository front page — branches, tags, recent log and clone URLs.

use super::parts::frame::{self, Frame};
use super::parts::shared::{self, BranchRow, LogRow, TagRow};
use super::{PageError, RepoCtx, Response};
use crate::git::{self, GitError};
use askama::Template;

#[derive(Template)]
#[template(path = "summary.html")]
struct Summary {
    empty: bool,
    branches: Vec<BranchRow>,
    more_branches: Option<String>,
    tags: Vec<TagRow>,
    more_tags: Option<String>,
    log: Vec<LogRow>,
    more_log: Option<String>,
    clone_urls: Vec<String>,
    repo_name: String,
}

pub fn render(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    let g = &ctx.site.config.globals;
    let l = ctx.links();
    let refs = &ctx.refs;
    let mut branches: Vec<&crate::repos::Branch> = refs.branches.iter().collect();
    if ctx.state.config.opts.enable_remote_branches {
        branches.extend(refs.remotes.iter());
    }
    let more_branches = (branches.len() > g.summary_branches)
        .then(|| l.page("refs", Some(b"heads"), Some(&ctx.head), &[]));
    branches.truncate(g.summary_branches);
    if !ctx.state.config.opts.branch_sort_age {
        branches.sort_by(|a, b| a.name.cmp(&b.name));
    }
    let more_tags = (refs.tags.len() > g.summary_tags)
        .then(|| l.page("refs", Some(b"tags"), Some(&ctx.head), &[]));
    let tags = refs.tags.iter().take(g.summary_tags);
    let (log, more_log) = recent_log(ctx)?;
    let body = Summary {
        empty: refs.branches.is_empty(),
        branches: branches
            .iter()
            .map(|b| shared::branch_row(ctx, b))
            .collect(),
        more_branches,
        tags: tags.map(|t| shared::tag_row(ctx, t)).collect(),
        more_tags,
        log,
        more_log,
        clone_urls: frame::clone_urls(ctx),
        repo_name: ctx.state.config.name.clone(),
    };
    let frame = Frame::repo(ctx, "summary");
    Ok(Response::html(frame::wrap(ctx.site, &frame, &body)?))
}

fn recent_log(ctx: &RepoCtx<'_>) -> Result<(Vec<LogRow>, Option<String>), PageError> {
    let count = ctx.site.config.globals.summary_log;
    if count == 0 || ctx.refs.branches.is_empty() {
        return Ok((Vec::new(), None));
    }
    let tip = match ctx.head_commit() {
        Ok(tip) => tip,
        Err(GitError::NotFound(_)) => return Ok((Vec::new(), None)),
        Err(e) => return Err(e.into()),
    };
    let page = git::log::log(ctx.repo, tip, 0, count)?;
    let rows = page
        .commits
        .iter()
        .map(|c| shared::log_row(ctx, c))
        .collect();
    let more = page
        .has_more
        .then(|| ctx.links().page("log", None, Some(&ctx.head), &[]));
    Ok((rows, more))
}
