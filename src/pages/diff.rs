//! diff: diffstat and diff between `id2` (default: the first parent) and `id`.

use super::diffargs::{self, Panel};
use super::frame::{self, Frame};
use super::{PageError, RepoCtx, Response, diff_body};
use askama::Template;

#[derive(Template)]
#[template(path = "diff.html")]
struct Diff {
    panel: Panel,
    diff_body: String,
}

pub fn render(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    if let Some(redirect) = diffargs::slash_redirect(ctx) {
        return Ok(redirect);
    }
    let pair = diffargs::commit_pair(ctx)?;
    let opts = diffargs::view_options(ctx);
    let path = ctx.req.path.as_ref().map(|p| p.as_slice());
    let body = Diff {
        panel: diffargs::panel(ctx, &opts),
        diff_body: diff_body::render(ctx.repo, pair.old, pair.new, &opts, path)?,
    };
    let mut frame = Frame::repo(ctx, "diff");
    frame.crumbs = diffargs::crumbs(ctx, "diff");
    Ok(Response::html(frame::wrap(ctx.site, &frame, &body)))
}
