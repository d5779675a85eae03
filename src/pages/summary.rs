//! summary: the repository front page — branches, tags, recent log and clone URLs.

use super::parts::frame::{self, Frame};
use super::parts::links::escape_path;
use super::parts::shared::{self, BranchRow, LogRow, TagRow};
use super::{PageError, RepoCtx, Response};
use crate::git::changes::{ChangeCount, Counter};
use crate::git::{self, GitError};
use askama::Template;

/// A row of the summary's recent log: the log row and, where enabled, its change counts.
struct SummaryLogRow {
    row: LogRow,
    counts: Option<ChangeCount>,
}

#[derive(Template)]
#[template(path = "summary.html")]
struct Summary {
    empty: bool,
    branches: Vec<BranchRow>,
    more_branches: Option<String>,
    tags: Vec<TagRow>,
    more_tags: Option<String>,
    log: Vec<SummaryLogRow>,
    more_log: Option<String>,
    /// cgit's `enable-log-filecount` / `enable-log-linecount` columns, as on the log page.
    show_files: bool,
    show_lines: bool,
    /// Each clone URL escaped as cgit escapes a link's path, and as shown.
    clone_urls: Vec<(String, String)>,
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
        empty: no_branches(ctx),
        branches: branches
            .iter()
            .map(|b| shared::branch_row(ctx, b))
            .collect(),
        more_branches,
        tags: tags.map(|t| shared::tag_row(ctx, t)).collect(),
        more_tags,
        log,
        more_log,
        show_files: ctx.state.config.opts.enable_log_filecount,
        show_lines: ctx.state.config.opts.enable_log_linecount,
        clone_urls: frame::clone_urls(ctx)
            .into_iter()
            .map(|url| (escape_path(url.as_bytes()), url))
            .collect(),
        repo_name: ctx.state.config.name.clone(),
    };
    let frame = Frame::repo(ctx, "summary");
    Ok(Response::html(frame::wrap(ctx.site, &frame, &body)?))
}

/// Whether the repository has no branch: not one whose tip cannot be read (the snapshot leaves
/// those out), which is a broken repository, not an empty one.
fn no_branches(ctx: &RepoCtx<'_>) -> bool {
    let refs = &ctx.refs;
    refs.branches.is_empty() && !refs.all.iter().any(|r| r.name.starts_with("refs/heads/"))
}

fn recent_log(ctx: &RepoCtx<'_>) -> Result<(Vec<SummaryLogRow>, Option<String>), PageError> {
    let count = ctx.site.config.globals.summary_log;
    if count == 0 || no_branches(ctx) {
        return Ok((Vec::new(), None));
    }
    let tip = match ctx.head_commit() {
        Ok(tip) => tip,
        Err(GitError::NotFound(_)) => return Ok((Vec::new(), None)),
        Err(e) => return Err(e.into()),
    };
    let page = git::log::log(ctx.repo, tip, 0, count)?;
    let opts = &ctx.state.config.opts;
    let mut counter = Counter::default();
    let mut rows = Vec::with_capacity(page.commits.len());
    for c in &page.commits {
        let counts = if opts.enable_log_filecount || opts.enable_log_linecount {
            let parent = c.parents.first().copied();
            let lines = opts.enable_log_linecount;
            Some(counter.count(ctx.repo, c.tree, parent, None, lines)?)
        } else {
            None
        };
        rows.push(SummaryLogRow {
            row: shared::log_row(ctx, c),
            counts,
        });
    }
    let more = page
        .has_more
        .then(|| ctx.links().page("log", None, Some(&ctx.head), &[]));
    Ok((rows, more))
}
