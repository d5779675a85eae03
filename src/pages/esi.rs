//! ESI (`enable-esi`): the commit and diff pages emit their diff body as an `<esi:include>` of
//! the repository-neutral `esi-diff` fragment when a surrogate will assemble it, and assemble
//! it themselves (from the fragment cache) otherwise. The fragment page lives here too.
//!
//! The fragment's links are relative to the page it is shown on. They stay relative only where
//! ESI is on and the request's own URL is the page's path-form URL, from which they resolve;
//! everywhere else (ESI off, `?url=` and legacy requests, the CLI) the body gets cgit's absolute
//! links, branch included, and is assembled here.

use super::parts::diff_body::{self, DiffMode, ViewOptions};
use super::parts::html::escape;
use super::parts::links::{escape_arg, escape_path};
use super::parts::validators;
use super::{PageError, RepoCtx, Response};
use gix::ObjectId;
use std::sync::Arc;

/// The diff body for a commit or diff page: an include when a surrogate processes ESI for this
/// repository, else the rendered body (cached by ids and options, shared by all repositories).
/// The bool says whether the response must carry `Surrogate-Control`.
pub fn diff_body(
    ctx: &RepoCtx<'_>,
    old: Option<ObjectId>,
    new: ObjectId,
    opts: &ViewOptions,
    path: Option<&[u8]>,
) -> Result<(Arc<str>, bool), PageError> {
    let relative = ctx.state.config.opts.enable_esi && relative_links_resolve(ctx, path);
    if relative && ctx.req.surrogate_esi {
        let src = fragment_url(ctx, old, new, opts, path);
        return Ok((format!("<esi:include src='{src}'/>").into(), true));
    }
    let body = cached_body(ctx, old, new, opts, path)?;
    if relative {
        return Ok((body, false));
    }
    let l = ctx.links();
    let head = Some(ctx.head.as_str()).filter(|h| *h != ctx.defbranch);
    Ok((
        absolute_links(&body, path, &l.summary(), head).into(),
        false,
    ))
}

/// Whether the body's relative links resolve from the URL the request was made with: its path
/// is the page's path-form URL `<vroot><repo>/<page>/<path>` (no `?url=` form, no missing or
/// extra `/`, no encoded `/` that would change the segments).
fn relative_links_resolve(ctx: &RepoCtx<'_>, path: Option<&[u8]>) -> bool {
    super::parts::diffargs::requested_as(ctx, path.unwrap_or_default())
}

/// The body with its relative links made cgit's absolute ones: `repo_base` (the repository's
/// summary URL) instead of the `../` steps, and `h=<head>` first in the query when the page is
/// about a branch other than the default.
fn absolute_links(body: &str, path: Option<&[u8]>, repo_base: &str, head: Option<&str>) -> String {
    let needle = format!("href='{}", diff_body::relative_prefix(path));
    let base = escape(repo_base);
    let head_arg = head.map(|h| format!("h={}&amp;", escape(&escape_arg(h.as_bytes()))));
    let mut out = String::with_capacity(body.len() + body.len() / 8);
    let mut rest = body;
    while let Some(at) = rest.find(&needle) {
        out.push_str(&rest[..at]);
        out.push_str("href='");
        out.push_str(&base);
        rest = &rest[at + needle.len()..];
        let end = rest.find('\'').unwrap_or(rest.len());
        if let (Some(arg), Some(q)) = (&head_arg, rest[..end].find('?')) {
            out.push_str(&rest[..=q]);
            out.push_str(arg);
            rest = &rest[q + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// Marks a frame that contains `<esi:include>` for the surrogate.
pub fn mark_frame(response: &mut Response, surrogate: bool) {
    if surrogate {
        response
            .headers
            .push(("Surrogate-Control", "content=\"ESI/1.0\"".into()));
    }
}

/// The rendered diff body from the fragment cache.
fn cached_body(
    ctx: &RepoCtx<'_>,
    old: Option<ObjectId>,
    new: ObjectId,
    opts: &ViewOptions,
    path: Option<&[u8]>,
) -> Result<Arc<str>, PageError> {
    let key = format!("diff {old:?} {new} {opts:?} {path:?}");
    ctx.site
        .fragments
        .get_or_render(&key, || diff_body::render(ctx.repo, old, new, opts, path))
}

/// `<vroot><repo>/esi-diff/<path>?id=<new>[&id2=<old>][&dt=..][&context=..][&ignorews=1]`: full
/// ids only, this parameter order, defaults left out. Without `id2` the fragment compares with
/// the empty tree.
fn fragment_url(
    ctx: &RepoCtx<'_>,
    old: Option<ObjectId>,
    new: ObjectId,
    opts: &ViewOptions,
    path: Option<&[u8]>,
) -> String {
    let mut url = format!(
        "{}{}/esi-diff/{}?id={new}",
        ctx.site.config.globals.virtual_root,
        escape_path(ctx.state.config.url.as_bytes()),
        path.map(escape_path).unwrap_or_default()
    );
    if let Some(old) = old {
        url.push_str(&format!("&amp;id2={old}"));
    }
    if opts.mode != DiffMode::Unified {
        url.push_str(&format!("&amp;dt={}", opts.mode.dt()));
    }
    let default = crate::git::diff::DiffOptions::default();
    if opts.diff.context != default.context {
        url.push_str(&format!("&amp;context={}", opts.diff.context));
    }
    if opts.diff.ignore_whitespace {
        url.push_str("&amp;ignorews=1");
    }
    url
}

/// The `esi-diff` page: only for repositories with ESI on, only full ids, only objects this
/// repository has. Hidden repositories' fragments are private.
pub fn render_fragment(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    let cfg = &ctx.state.config;
    if !cfg.opts.enable_esi {
        return Err(PageError::NotFound("Invalid request".into()));
    }
    let q = &ctx.req.query;
    let full = |rev: &Option<String>| -> Result<Option<ObjectId>, PageError> {
        let Some(rev) = rev else { return Ok(None) };
        let id = ObjectId::from_hex(rev.as_bytes())
            .map_err(|_| PageError::BadRequest(format!("Bad object id: {rev}")))?;
        crate::git::rev::peel_to_commit(ctx.repo, id)?
            .filter(|c| *c == id)
            .map(Some)
            .ok_or_else(|| PageError::NotFound(format!("Not a commit in this repository: {rev}")))
    };
    let new = full(&q.id)?.ok_or_else(|| PageError::BadRequest("Missing id".into()))?;
    let old = full(&q.id2)?;
    let opts = super::parts::diffargs::view_options(ctx);
    let path = ctx.req.path.as_ref().map(|p| p.as_slice());
    let body = cached_body(ctx, old, new, &opts, path)?;
    let mut response = Response::html(body.to_string());
    let visibility = if cfg.hide { "private" } else { "public" };
    response.headers.push((
        "Cache-Control",
        format!("{visibility}, max-age=31536000, immutable"),
    ));
    response.headers.push((
        "ETag",
        validators::fragment_etag(&format!("{old:?} {new} {opts:?} {path:?}")),
    ));
    Ok(response)
}
