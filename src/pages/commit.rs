//! commit: commit info, message, notes and the diff against the first parent.

use super::parts::diffargs::{self, Panel};
use super::parts::frame::{self, Frame};
use super::parts::shared::{self, DecoLink};
use super::parts::{filter, format};
use super::{PageError, RepoCtx, Response, esi};
use crate::git::{self, CommitInfo};
use askama::Template;

pub struct ParentRow {
    pub href: String,
    pub label: String,
    pub diff_href: String,
}

#[derive(Template)]
#[template(path = "commit.html")]
struct Commit {
    panel: Panel,
    /// Author and committer are HTML (escaped, or an email-filter's output).
    author: String,
    author_date: String,
    committer: String,
    committer_date: String,
    hex: String,
    commit_href: String,
    patch_href: String,
    tree_hex: String,
    tree_href: String,
    path_link: Option<(String, String)>,
    parents: Vec<ParentRow>,
    downloads: Vec<shared::SnapshotLink>,
    /// Subject, body and notes are HTML (escaped, or a commit-filter's output).
    subject: String,
    decorations: Vec<DecoLink>,
    body: String,
    notes: Option<String>,
    diff_body: std::sync::Arc<str>,
}

pub fn render(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    if let Some(redirect) = diffargs::slash_redirect(ctx) {
        return Ok(redirect);
    }
    let id = diffargs::new_commit(ctx)?;
    let commit = git::commit::read_commit(ctx.repo, id)?;
    let opts = diffargs::view_options(ctx);
    let path = ctx.req.path.as_ref().map(|p| p.as_slice());
    let (diff_body, surrogate) = if commit.parents.len() < 3 {
        let old = commit.parents.first().copied();
        esi::diff_body(ctx, old, id, &opts, path)?
    } else {
        (String::new().into(), false)
    };
    let l = ctx.links();
    let head = Some(ctx.head.as_str());
    let hex = id.to_string();
    let commit_filter = ctx.state.config.opts.commit_filter.as_deref();
    let message =
        |text: &str| filter::filtered_text(commit_filter, &[], || filter::repo_env(ctx), text);
    let body = Commit {
        panel: diffargs::panel(ctx, &opts),
        author: filter::name_and_email_html(ctx, &commit.author, "commit"),
        author_date: format::iso_date(commit.author.time),
        committer: filter::name_and_email_html(ctx, &commit.committer, "commit"),
        committer_date: format::iso_date(commit.committer.time),
        commit_href: l.page("commit", path, head, &[("id", &hex)]),
        patch_href: l.page("patch", path, None, &[("id", &hex)]),
        tree_hex: commit.tree.to_string(),
        tree_href: l.page("tree", None, head, &[("id", &hex)]),
        path_link: path.and_then(|p| frame::existing_path(ctx, p)).map(|p| {
            (
                l.page("tree", Some(p), head, &[("id", &hex)]),
                String::from_utf8_lossy(p).into_owned(),
            )
        }),
        parents: parent_rows(ctx, &commit, path),
        // Named as the URL names the commit (`id`, else the branch), as cgit names them.
        downloads: if ctx.state.config.opts.snapshots != 0 {
            shared::snapshot_links(ctx, ctx.req.query.id.as_deref().unwrap_or(&ctx.head))
        } else {
            Vec::new()
        },
        subject: message(&commit.subject),
        decorations: shared::decorations(ctx, &id),
        body: message(commit.body()),
        notes: ctx
            .refs
            .notes_commit()
            .and_then(|notes| git::notes::note(ctx.repo, notes, id))
            .map(|note| message(&note)),
        diff_body,
        hex,
    };
    let mut frame = Frame::repo(ctx, "commit");
    frame.title = frame::page_title(ctx, "commit", Some(&commit.subject));
    frame.crumbs = diffargs::crumbs(ctx, "commit");
    let mut response = Response::html(frame::wrap(ctx.site, &frame, &body)?);
    esi::mark_frame(&mut response, surrogate);
    Ok(response)
}

fn parent_rows(ctx: &RepoCtx<'_>, commit: &CommitInfo, path: Option<&[u8]>) -> Vec<ParentRow> {
    let l = ctx.links();
    let head = Some(ctx.head.as_str());
    let hex = commit.id.to_string();
    commit
        .parents
        .iter()
        .map(|p| {
            let phex = p.to_string();
            let label = if ctx.state.config.opts.enable_subject_links {
                git::commit::read_commit(ctx.repo, *p)
                    .map(|c| c.subject.clone())
                    .unwrap_or_else(|_| phex.clone())
            } else {
                phex.clone()
            };
            ParentRow {
                href: l.page("commit", path, head, &[("id", &phex)]),
                label,
                diff_href: l.page("diff", path, head, &[("id", &hex), ("id2", &phex)]),
            }
        })
        .collect()
}
