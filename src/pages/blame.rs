//! blame: each line of a file at a revision with the commit that last changed it, grouped into
//! runs of lines from one commit. The blame itself is cached by (commit, path) in the site's
//! fragment cache; links are made per request.

use super::parts::frame::{self, Frame};
use super::parts::links::escape_path;
use super::parts::{format, shared};
use super::{PageError, RepoCtx, Response};
use crate::git::blame::{self as gblame, Group, Outcome};
use crate::git::tree::{self as gtree, Found};
use crate::git::{self, CommitInfo};
use askama::Template;
use gix::ObjectId;
use gix::bstr::ByteSlice;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::time::Duration;

/// How long one blame may run.
const BLAME_BUDGET: Duration = Duration::from_secs(5);
/// Files larger than this are not blamed.
const MAX_BLAME_BYTES: u64 = 4 << 20;

/// One group's cells in the three columns.
struct GroupView {
    title: String,
    commit_href: String,
    short: String,
    previous_href: Option<String>,
    /// One `\n` per line (the hash column keeps the group's height).
    newlines: String,
    first: usize,
    end: usize,
    /// The background stripe of the lines column: a `\n` per line, then spaces as wide as
    /// the widest line.
    background: String,
}

enum BlameBody {
    Lines {
        groups: Vec<GroupView>,
        /// The text escaped, or the source-filter's output.
        html: String,
    },
    Binary,
    TooLarge(String),
    /// The blame ran out of time: the page says so and links to the file.
    Unfinished,
}

#[derive(Template)]
#[template(path = "blame.html")]
struct BlameView {
    id: String,
    plain_href: String,
    tree_href: String,
    body: BlameBody,
}

pub fn render(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    if !ctx.state.config.opts.enable_blame {
        return Err(PageError::Forbidden("Blame is disabled".into()));
    }
    let commit = shared::page_commit(ctx)?;
    let root = git::commit::read_commit(ctx.repo, commit)?.tree;
    let path = ctx.path();
    let blob = match gtree::find(ctx.repo, root, path)? {
        Some(Found::Tree(_)) => {
            return Err(PageError::NotFound(
                "Blame is not available for folders.".into(),
            ));
        }
        Some(Found::Blob { id, .. }) => id,
        Some(Found::Submodule(_)) | None => return Err(PageError::NotFound("Not found".into())),
    };
    let view = BlameView {
        id: blob.to_string(),
        plain_href: shared::rev_link(ctx, "plain", Some(path)),
        tree_href: shared::rev_link(ctx, "tree", Some(path)),
        body: body(ctx, commit, blob, path)?,
    };
    let mut frame = Frame::repo(ctx, "blame");
    // Folders have no blame (cgit links them to its 404 anyway): their crumbs go to the tree.
    frame.crumbs = shared::path_crumbs(path, |prefix| {
        let page = if prefix == Some(path) {
            "blame"
        } else {
            "tree"
        };
        shared::rev_link(ctx, page, prefix)
    });
    frame.title = frame::page_title(ctx, "blame", Some(&shared::path_title(path)));
    let mut response = Response::html(frame::wrap(ctx.site, &frame, &view)?);
    if let BlameBody::Unfinished = view.body {
        ctx.site.cutoffs.inc();
        // A later request may finish; caches must not keep the partial page.
        response.headers.push(("Cache-Control", "no-cache".into()));
    }
    Ok(response)
}

fn body(
    ctx: &RepoCtx<'_>,
    commit: ObjectId,
    blob: ObjectId,
    path: &[u8],
) -> Result<BlameBody, PageError> {
    let size = ctx.repo.object_size(&blob)?;
    let limit_kb = ctx.site.config.globals.max_blob_size;
    if limit_kb > 0 && size / 1024 > limit_kb {
        return Ok(BlameBody::TooLarge(format!(
            "blob size ({}KB) exceeds display size limit ({limit_kb}KB).",
            size / 1024
        )));
    }
    if size > MAX_BLAME_BYTES {
        return Ok(BlameBody::TooLarge(format!(
            "blob size ({}KB) is too large to blame.",
            size / 1024
        )));
    }
    let data = gtree::read_blob(ctx.repo, blob)?.data;
    if gtree::is_binary(&data) {
        return Ok(BlameBody::Binary);
    }
    let Some(groups) = cached_blame(ctx, commit, path)? else {
        return Ok(BlameBody::Unfinished);
    };
    Ok(BlameBody::Lines {
        groups: group_views(ctx, &groups, &data, path)?,
        html: super::parts::filter::source_html(ctx, path, blob, &data),
    })
}

/// The blame groups of `path` at `commit`, from the fragment cache when they are there;
/// `None` when blaming ran out of time (nothing is cached then).
fn cached_blame(
    ctx: &RepoCtx<'_>,
    commit: ObjectId,
    path: &[u8],
) -> Result<Option<Vec<Group>>, PageError> {
    let key = format!("blame:{commit}:{}", escape_path(path));
    let text = ctx.site.fragments.get_or_render(&key, || {
        match gblame::blame(ctx.repo, commit, path.as_bstr(), BLAME_BUDGET)? {
            Outcome::Done(groups) => Ok(gblame::encode(&groups)),
            Outcome::TimedOut => Err(None),
        }
    });
    let text = match text {
        Ok(text) => text,
        Err(None) => return Ok(None),
        Err(Some(e)) => return Err(e.into()),
    };
    let groups = gblame::decode(&text)
        .ok_or_else(|| PageError::internal("decoding a cached blame", "malformed"))?;
    Ok(Some(groups))
}

fn group_views(
    ctx: &RepoCtx<'_>,
    groups: &[Group],
    data: &[u8],
    path: &[u8],
) -> Result<Vec<GroupView>, PageError> {
    let lines: Vec<&[u8]> = data.split_inclusive(|b| *b == b'\n').collect();
    let mut commits: HashMap<ObjectId, std::sync::Arc<CommitInfo>> = HashMap::new();
    let mut views = Vec::with_capacity(groups.len());
    // cgit abbreviates as git does by default: unique prefixes of git's automatic length (7 hex
    // digits in a small repository, 10 in one of about a million objects); it does not read the
    // repository's `core.abbrev`.
    let abbrev = git::diff::Abbrev::automatic(ctx.repo);
    let mut first = 1;
    for g in groups {
        let info = match commits.entry(g.commit) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(git::commit::read_commit(ctx.repo, g.commit)?),
        };
        let hex = g.commit.to_string();
        let end = first + g.lines;
        let shown = lines
            .get(first - 1..(end - 1).min(lines.len()))
            .unwrap_or_default();
        views.push(GroupView {
            title: commit_title(info),
            commit_href: ctx
                .links()
                .page("commit", Some(path), Some(&ctx.head), &[("id", &hex)]),
            short: abbrev.hex(&g.commit),
            previous_href: g.previous.as_ref().map(|(parent, prev_path)| {
                let parent = parent.to_string();
                ctx.links().page(
                    "blame",
                    Some(prev_path),
                    Some(&ctx.head),
                    &[("id", &parent)],
                )
            }),
            newlines: "\n".repeat(g.lines),
            first,
            end,
            background: background(shown, g.lines),
        });
        first = end;
    }
    Ok(views)
}

/// The link title of a blamed commit: author and committer with dates, then the subject.
fn commit_title(c: &CommitInfo) -> String {
    format!(
        "author  {} <{}>  {}\ncommitter  {} <{}>  {}\n\n{}",
        c.author.name,
        c.author.email,
        format::iso_date(c.author.time),
        c.committer.name,
        c.committer.email,
        format::iso_date(c.committer.time),
        c.subject
    )
}

/// A `\n` per line, then one space less than the widest line's columns (tabs to multiples of
/// 8, the line end counted, at least 2).
fn background(lines: &[&[u8]], count: usize) -> String {
    let widest = lines
        .iter()
        .map(|line| {
            line.iter().fold(
                0,
                |col, b| {
                    if *b == b'\t' { (col + 8) & !7 } else { col + 1 }
                },
            )
        })
        .fold(2, usize::max);
    let mut out = "\n".repeat(count);
    out.push_str(&" ".repeat(widest - 1));
    out
}

#[cfg(test)]
mod tests {
    use super::background;

    #[test]
    fn backgrounds_are_as_wide_as_the_widest_line() {
        assert_eq!(background(&[b"a\n"], 1), "\n ");
        assert_eq!(background(&[b"ab\n", b"<e&>\n"], 2), "\n\n    ");
        assert_eq!(background(&[b"\tx\n"], 1), format!("\n{}", " ".repeat(9)));
    }
}
