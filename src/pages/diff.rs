//! diff: diffstat and diff between `id2` (default: the first parent) and `id`.

use super::parts::diffargs::{self, Panel};
use super::parts::frame::{self, Frame};
use super::parts::shared;
use super::{PageError, RepoCtx, Response, esi};
use askama::Template;

#[derive(Template)]
#[template(path = "diff.html")]
struct Diff {
    panel: Panel,
    diff_body: std::sync::Arc<str>,
}

pub fn render(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    if let Some(redirect) = diffargs::slash_redirect(ctx) {
        return Ok(redirect);
    }
    let pair = diffargs::commit_pair(ctx)?;
    let opts = diffargs::view_options(ctx);
    let path = ctx.req.path.as_ref().map(|p| p.as_slice());
    let (diff_body, surrogate) = esi::diff_body(ctx, pair.old, pair.new, &opts, path)?;
    let body = Diff {
        panel: diffargs::panel(ctx, &opts),
        diff_body,
    };
    let mut frame = Frame::repo(ctx, "diff");
    if let Some(p) = path {
        frame.title = frame::page_title(ctx, "diff", Some(&shared::path_title(p)));
    }
    frame.crumbs = diffargs::crumbs(ctx, "diff");
    let mut response = Response::html(frame::wrap(ctx.site, &frame, &body)?);
    esi::mark_frame(&mut response, surrogate);
    Ok(response)
}
