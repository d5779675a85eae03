//! atom: `/<repo>/atom/[path]?h=&all=1` — the newest `max-atom-items` commits of a branch (or of
//! every branch and tag), optionally limited to a path, as an Atom feed.

use super::parts::format;
use super::{PageError, RepoCtx, Response};
use crate::git::CommitInfo;
use crate::git::GitError;
use crate::git::log::{self, LogQuery};
use askama::Template;
use gix::ObjectId;
use gix::bstr::{BStr, ByteSlice};

#[derive(Template)]
#[template(path = "atom.xml")]
struct Feed {
    title: String,
    subtitle: String,
    /// The feed's own URL; absent when the request named no host.
    self_url: Option<String>,
    repo_url: Option<String>,
    updated: Option<String>,
    entries: Vec<Entry>,
}

struct Entry {
    title: String,
    updated: String,
    author_name: String,
    author_email: Option<String>,
    published: String,
    href: Option<String>,
    id: String,
    content: String,
}

pub fn render(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    let path = ctx.req.path.as_ref().map(|p| p.as_bstr());
    let commits = feed_commits(ctx, path)?;
    let cfg = &ctx.state.config;
    let title = match path {
        Some(p) => format!("{}/{}, branch {}", cfg.name, p.to_str_lossy(), ctx.head),
        None => format!("{}, branch {}", cfg.name, ctx.head),
    };
    let host = ctx.req.host.as_deref();
    let absolute = |rel: String| host.map(|h| format!("http://{h}{rel}"));
    let noplainemail = ctx.site.config.globals.noplainemail;
    let entries = commits
        .iter()
        .map(|c| {
            let hex = c.id.to_string();
            Entry {
                title: xml_text(&c.subject),
                updated: format::iso_utc(c.committer.time),
                author_name: xml_text(&c.author.name),
                author_email: (!noplainemail).then(|| xml_text(&c.author.email)),
                published: format::iso_utc(c.author.time),
                href: absolute(ctx.links().page("commit", None, None, &[("id", &hex)])),
                id: hex,
                content: xml_text(c.body()),
            }
        })
        .collect();
    let feed = Feed {
        title: xml_text(&title),
        subtitle: xml_text(&cfg.desc),
        self_url: absolute(ctx.req.target.clone()),
        repo_url: absolute(ctx.links().summary()),
        updated: commits.first().map(|c| format::iso_utc(c.committer.time)),
        entries,
    };
    let body = feed.render()?;
    Ok(Response {
        status: 200,
        content_type: "text/xml; charset=utf-8".into(),
        headers: Vec::new(),
        body: body.into_bytes().into(),
    })
}

/// The feed's commits: newest first from the head (or from every branch and tag with `all=1`),
/// touching `path` when one is given.
fn feed_commits(
    ctx: &RepoCtx<'_>,
    path: Option<&BStr>,
) -> Result<Vec<std::sync::Arc<CommitInfo>>, PageError> {
    let tips = if ctx.req.query.all {
        all_tips(ctx)
    } else {
        match ctx.head_commit() {
            Ok(id) => vec![id],
            Err(GitError::NotFound(_)) => Vec::new(),
            Err(e) => return Err(e.into()),
        }
    };
    if tips.is_empty() {
        return Ok(Vec::new());
    }
    let query = LogQuery {
        tips,
        path,
        bloom: ctx.state.bloom(),
        commits: ctx.state.commit_index(&ctx.refs),
        count: ctx.site.config.globals.max_atom_items,
        ..LogQuery::default()
    };
    Ok(log::query(ctx.repo, &query)?.commits)
}

/// The commits at the tips of every branch, remote-tracking branch and tag.
fn all_tips(ctx: &RepoCtx<'_>) -> Vec<ObjectId> {
    let refs = &ctx.refs;
    let branches = refs.branches.iter().chain(&refs.remotes).map(|b| b.id);
    let tags = refs
        .tags
        .iter()
        .filter(|t| t.target_kind == gix::object::Kind::Commit)
        .map(|t| t.target);
    let mut tips: Vec<ObjectId> = branches.chain(tags).collect();
    tips.sort();
    tips.dedup();
    tips
}

/// Text as XML 1.0 allows it: characters it forbids (most control characters, U+FFFE/U+FFFF)
/// are dropped; the template escapes the rest.
fn xml_text(text: &str) -> String {
    text.chars()
        .filter(|&c| matches!(c, '\t' | '\n' | '\r' | ' '..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::xml_text;

    #[test]
    fn forbidden_characters_are_dropped() {
        assert_eq!(
            xml_text("a\u{0}b\u{1b}[0m\tc\u{FFFE}d\u{1F600}"),
            "ab[0m\tcd\u{1F600}"
        );
    }
}
