//! What the commit, diff, rawdiff and patch pages read from a request: the commits to compare
//! and the diff options.

use super::diff_body::{DiffMode, ViewOptions};
use crate::git::{self, diff::DiffOptions};
use crate::pages::{PageError, RepoCtx, Response};
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
            old: git::commit::read_commit(ctx.repo, new)?
                .parents
                .first()
                .copied(),
            new,
        }),
    }
}

/// Diff options from `context`, `ignorews`, `dt` (default: `side-by-side-diffs`) and the
/// configured rename limit.
pub fn view_options(ctx: &RepoCtx<'_>) -> ViewOptions {
    let q = &ctx.req.query;
    let default_dt = u8::from(ctx.site.config.globals.side_by_side_diffs);
    ViewOptions {
        diff: DiffOptions {
            ignore_whitespace: q.ignorews,
            rename_limit: ctx.site.config.globals.renamelimit,
            ..DiffOptions::with_context(q.context)
        },
        mode: DiffMode::from_dt(q.dt.unwrap_or(default_dt)),
    }
}

/// The `div.cgit-panel` form of diff options.
pub struct Panel {
    pub hidden: Vec<(&'static str, String)>,
    pub contexts: [u32; 16],
    pub context: u32,
    pub ignorews: bool,
    pub dt: u8,
}

pub fn panel(ctx: &RepoCtx<'_>, opts: &ViewOptions) -> Panel {
    let q = &ctx.req.query;
    let mut hidden = Vec::new();
    if ctx.head != ctx.defbranch {
        hidden.push(("h", ctx.head.clone()));
    }
    for (name, value) in [("id", &q.id), ("id2", &q.id2)] {
        if let Some(v) = value {
            hidden.push((name, v.clone()));
        }
    }
    if q.showmsg {
        hidden.push(("showmsg", "1".into()));
    }
    Panel {
        hidden,
        contexts: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 35, 40],
        context: opts.diff.context,
        ignorews: opts.diff.ignore_whitespace,
        dt: opts.mode.dt(),
    }
}

/// `div.path` crumbs for a path-limited page: root, then each directory of the path.
pub fn crumbs(ctx: &RepoCtx<'_>, page: &str) -> Vec<(String, String)> {
    let Some(path) = ctx.req.path.as_ref() else {
        return Vec::new();
    };
    let q = &ctx.req.query;
    let args: Vec<(&str, &str)> = [("id", &q.id), ("id2", &q.id2)]
        .into_iter()
        .filter_map(|(n, v)| v.as_deref().map(|v| (n, v)))
        .collect();
    let l = ctx.links();
    let head = Some(ctx.head.as_str());
    let mut crumbs = vec![("root".to_string(), l.page(page, None, head, &args))];
    let mut end = 0;
    for segment in path.split(|&b| b == b'/') {
        end += segment.len();
        crumbs.push((
            String::from_utf8_lossy(segment).into_owned(),
            l.page(page, Some(&path[..end]), head, &args),
        ));
        end += 1;
    }
    crumbs
}

/// The diff body's links are relative to `<page>/<path>` without a trailing slash, so a
/// path-limited URL ending in `/` is redirected to its form without it.
pub fn slash_redirect(ctx: &RepoCtx<'_>) -> Option<Response> {
    let path = ctx.req.path.as_ref()?;
    // Only a path-form URL has a `/` to drop; other forms (`?url=…/`) are served as they are,
    // as cgit serves them (redirecting them to themselves would loop).
    let mut slashed = path.to_vec();
    slashed.push(b'/');
    if !ctx.req.trailing_slash || !requested_as(ctx, &slashed) {
        return None;
    }
    let target = &ctx.req.target;
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut location = path.trim_end_matches('/').to_string();
    if !query.is_empty() {
        location.push('?');
        location.push_str(query);
    }
    Some(Response::redirect(301, location))
}

/// Whether the request's URL is the path-form URL `<vroot><repo>/<page>/<path>` (`path` as
/// given, may be empty): no `?url=` or legacy form, no encoded `/` that would change the
/// segments a browser resolves relative links against.
pub fn requested_as(ctx: &RepoCtx<'_>, path: &[u8]) -> bool {
    let target = ctx.req.target.split('?').next().unwrap_or_default();
    if target.contains("%2f") || target.contains("%2F") {
        return false;
    }
    let decoded = crate::request::url::percent_decode(target.as_bytes(), false);
    let mut expected = format!(
        "{}{}/{}/",
        ctx.site.config.globals.virtual_root,
        ctx.state.config.url,
        ctx.req.page.name()
    )
    .into_bytes();
    expected.extend_from_slice(path);
    decoded == expected
}
