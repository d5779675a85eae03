//! refs: every branch and tag (`/refs/heads` and `/refs/tags` show one kind).

use super::parts::frame::{self, Frame};
use super::parts::shared::{self, BranchRow, TagRow};
use super::{PageError, RepoCtx, Response};
use askama::Template;

#[derive(Template)]
#[template(path = "refs.html")]
struct Refs {
    show_branches: bool,
    show_tags: bool,
    branches: Vec<BranchRow>,
    tags: Vec<TagRow>,
}

pub fn render(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    let path = ctx.req.path.as_ref().map(|p| p.as_slice()).unwrap_or(b"");
    let show_branches = !path.starts_with(b"tags");
    let show_tags = !path.starts_with(b"heads");
    let mut branches: Vec<&crate::repos::Branch> = ctx.refs.branches.iter().collect();
    if ctx.state.config.opts.enable_remote_branches {
        branches.extend(ctx.refs.remotes.iter());
    }
    if !ctx.state.config.opts.branch_sort_age {
        branches.sort_by(|a, b| a.name.cmp(&b.name));
    }
    let body = Refs {
        show_branches,
        show_tags: show_tags && !ctx.refs.tags.is_empty(),
        branches: branches
            .iter()
            .map(|b| shared::branch_row(ctx, b))
            .collect(),
        tags: ctx
            .refs
            .tags
            .iter()
            .map(|t| shared::tag_row(ctx, t))
            .collect(),
    };
    let frame = Frame::repo(ctx, "refs");
    Ok(Response::html(frame::wrap(ctx.site, &frame, &body)?))
}
