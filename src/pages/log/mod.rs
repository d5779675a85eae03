//! log: paged history from `id` or `h`, optionally limited to a path, searched (`qt`/`q`) or
//! ranged, with cgit's Expand/Collapse, decorations, Files/Lines counts and commit graph.

mod graph;

use graph::GraphRow;

use super::parts::frame::{self, Frame};
use super::parts::shared::{self, Age, DecoLink};
use super::{PageError, RepoCtx, Response};
use crate::git::changes::{ChangeCount, Counter};
use crate::git::log::{Field, Filter, LogQuery, Order};
use crate::git::{self, CommitInfo, GitError};
use askama::Template;
use gix::bstr::ByteSlice;

/// The query arguments log links carry, in cgit's order after `h`.
#[derive(Clone, Default)]
struct LogArgs {
    id: Option<String>,
    qt: Option<String>,
    q: Option<String>,
    ofs: i64,
    showmsg: bool,
    follow: bool,
}

impl LogArgs {
    fn from_request(ctx: &RepoCtx<'_>) -> LogArgs {
        let q = &ctx.req.query;
        LogArgs {
            id: q.id.clone(),
            qt: q.q.as_ref().and(q.qt.clone()),
            q: q.q.clone(),
            ofs: q.ofs,
            showmsg: q.showmsg,
            follow: q.follow,
        }
    }

    /// A log link to `path` with these arguments.
    fn href(&self, ctx: &RepoCtx<'_>, path: Option<&[u8]>) -> String {
        let ofs = self.ofs.to_string();
        let mut args: Vec<(&str, &str)> = Vec::new();
        if let Some(id) = self.id.as_deref() {
            args.push(("id", id));
        }
        if let (Some(qt), Some(q)) = (self.qt.as_deref(), self.q.as_deref()) {
            args.push(("qt", qt));
            args.push(("q", q));
        }
        if self.ofs > 0 {
            args.push(("ofs", &ofs));
        }
        if self.showmsg {
            args.push(("showmsg", "1"));
        }
        if self.follow {
            args.push(("follow", "1"));
        }
        ctx.links().page("log", path, Some(&ctx.head), &args)
    }
}

struct Row {
    age: Age,
    subject: String,
    commit_href: String,
    decorations: Vec<DecoLink>,
    /// HTML (escaped, or the email-filter's output).
    author: String,
    message: Option<String>,
    counts: Option<ChangeCount>,
    graph: Option<GraphRow>,
}

impl Row {
    /// Whether graph lines follow the commit's own (cgit's second row).
    fn graph_goes_on(&self) -> bool {
        self.graph.as_ref().is_some_and(|g| !g.after.is_empty())
    }
}

#[derive(Template)]
#[template(path = "log.html")]
struct Log {
    toggle_label: &'static str,
    toggle_href: String,
    showmsg: bool,
    show_graph: bool,
    show_files: bool,
    show_lines: bool,
    msg_colspan: usize,
    /// cgit's colspan of a graph filler row: the count of all columns, the graph's too.
    filler_colspan: usize,
    rows: Vec<Row>,
    prev: Option<String>,
    next: Option<String>,
    stopped_early: bool,
    /// Where a search that stopped early goes on from.
    resume_href: Option<String>,
}

pub fn render(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    let opts = &ctx.state.config.opts;
    let g = &ctx.site.config.globals;
    let path = ctx.req.path.as_ref().map(|p| p.as_bstr());
    let args = LogArgs::from_request(ctx);
    if ctx.req.query.ofs < 0 {
        return Err(PageError::BadRequest("Invalid offset".into()));
    }
    let count = g.max_commit_count.max(1);
    // cgit draws no graph on a followed path
    let show_graph = opts.enable_commit_graph && !following(ctx);
    let query = build_query(ctx, show_graph, count)?;
    let page = match &query {
        Some(q) => query_kept(ctx, q)?,
        None => git::LogPage::default(),
    };
    if page.stopped_early {
        ctx.site.cutoffs.inc();
    }
    let commits = query.as_ref().and_then(|q| q.commits.as_deref());
    let mut counter = Counter::default();
    let mut lanes = graph::Graph::default();
    // a range hides commits: the graph draws no line to a hidden parent
    let hidden: &[gix::ObjectId] = match &query {
        Some(q) if show_graph => &q.hidden,
        _ => &[],
    };
    let walked: std::collections::HashSet<gix::ObjectId> = if hidden.is_empty() {
        Default::default()
    } else {
        page.commits.iter().map(|c| c.id).collect()
    };
    let mut hidden_memo: std::collections::HashMap<gix::ObjectId, bool> = Default::default();
    // a search lists only what it finds: the graph draws no line to a parent it does not
    let filter = query
        .as_ref()
        .and_then(|q| q.filter.as_ref())
        .filter(|_| show_graph);
    let mut found_memo: std::collections::HashMap<gix::ObjectId, bool> = Default::default();
    let mut drawn_parents = |c: &CommitInfo| -> Result<Vec<gix::ObjectId>, PageError> {
        let mut drawn = Vec::with_capacity(c.parents.len());
        for p in &c.parents {
            // a parent the walk listed is shown; past the page's end it may be shown later
            let mut shown = hidden.is_empty()
                || walked.contains(p)
                || (page.has_more && !is_hidden(ctx, commits, hidden, *p, &mut hidden_memo)?);
            if let (true, Some(filter)) = (shown, filter) {
                shown = match found_memo.get(p) {
                    Some(found) => *found,
                    None => {
                        let found = filter.matches(&*git::commit::read_commit(ctx.repo, *p)?);
                        found_memo.insert(*p, found);
                        found
                    }
                };
            }
            if shown {
                drawn.push(*p);
            }
        }
        Ok(drawn)
    };
    // graph pages walk from the top so that lanes continue across pages
    let primed = if show_graph { args.ofs as usize } else { 0 };
    let mut rows = Vec::with_capacity(page.commits.len());
    for (i, c) in page.commits.iter().enumerate() {
        if i < primed {
            lanes.update(c.id, &drawn_parents(c)?);
            continue;
        }
        let counts = if opts.enable_log_filecount || opts.enable_log_linecount {
            Some(counter.count(
                ctx.repo,
                c.tree,
                c.parents.first().copied(),
                path,
                opts.enable_log_linecount,
            )?)
        } else {
            None
        };
        let mut r = row(ctx, c, &args, counts);
        if show_graph {
            // with messages shown, the graph goes on beside every line of the message
            let msg_lines = r.message.as_deref().map_or(0, message_lines);
            r.graph = Some(lanes.row(c.id, &drawn_parents(c)?, msg_lines));
        }
        rows.push(r);
    }
    let body = Log {
        toggle_label: if args.showmsg { "Collapse" } else { "Expand" },
        toggle_href: LogArgs {
            showmsg: !args.showmsg,
            ..args.clone()
        }
        .href(ctx, path.map(|p| p.as_bytes())),
        showmsg: args.showmsg,
        show_graph,
        show_files: opts.enable_log_filecount,
        show_lines: opts.enable_log_linecount,
        msg_colspan: 3
            + usize::from(opts.enable_log_filecount)
            + usize::from(opts.enable_log_linecount),
        filler_colspan: 4
            + usize::from(opts.enable_log_filecount)
            + usize::from(opts.enable_log_linecount),
        rows,
        prev: (args.ofs > 0).then(|| {
            LogArgs {
                ofs: (args.ofs - count as i64).max(0),
                ..args.clone()
            }
            .href(ctx, path.map(|p| p.as_bytes()))
        }),
        next: page.has_more.then(|| {
            LogArgs {
                ofs: args.ofs + count as i64,
                ..args.clone()
            }
            .href(ctx, path.map(|p| p.as_bytes()))
        }),
        stopped_early: page.stopped_early,
        resume_href: page.resume_from.map(|id| {
            LogArgs {
                id: Some(id.to_string()),
                ofs: 0,
                ..args.clone()
            }
            .href(ctx, path.map(|p| p.as_bytes()))
        }),
    };
    let mut frame = Frame::repo(ctx, "log");
    if let Some(p) = path {
        frame.title = frame::page_title(ctx, "log", Some(&shared::path_title(p.as_bytes())));
    }
    frame.crumbs = crumbs(ctx, &args);
    if opts.enable_follow_links && path.is_some() {
        let toggled = LogArgs {
            follow: !args.follow,
            ..args.clone()
        };
        let label = if toggled.follow { "follow" } else { "unfollow" };
        frame.follow_toggle = Some((label, toggled.href(ctx, path.map(|p| p.as_bytes()))));
    }
    let mut response = Response::html(frame::wrap(ctx.site, &frame, &body)?);
    if body.stopped_early {
        // A later walk may get further; caches must not keep the partial page.
        response.headers.push(("Cache-Control", "no-cache".into()));
    }
    Ok(response)
}

/// Whether a range's hidden commits reach `id` (remembered in `memo`).
fn is_hidden(
    ctx: &RepoCtx<'_>,
    commits: Option<&git::commit_index::CommitIndex>,
    hidden: &[gix::ObjectId],
    id: gix::ObjectId,
    memo: &mut std::collections::HashMap<gix::ObjectId, bool>,
) -> Result<bool, PageError> {
    if let Some(known) = memo.get(&id) {
        return Ok(*known);
    }
    let mut reached = false;
    for h in hidden {
        if git::log::is_ancestor(ctx.repo, commits, id, *h)? {
            reached = true;
            break;
        }
    }
    memo.insert(id, reached);
    Ok(reached)
}

fn search_for(field: Field, pattern: &str) -> Result<Filter, PageError> {
    Filter::new(field, pattern).map_err(PageError::BadRequest)
}

/// Whether the log follows its path across renames: `follow=1` on a path, where
/// `enable-follow-links` allows it.
fn following(ctx: &RepoCtx<'_>) -> bool {
    ctx.req.query.follow && ctx.req.path.is_some() && ctx.state.config.opts.enable_follow_links
}

/// Why a walk's result is not kept.
enum NotKept {
    /// The walk stopped at its budget; a later one may get further.
    Partial(git::LogPage),
    Failed(GitError),
}

/// The page of a filtered walk (path-limited, searched or followed: the expensive ones), kept
/// in the fragment cache under what it depends on — ids, path, search, order and paging, not
/// the repository — so a repeat, through any fork, reads only the commits it lists.
fn query_kept(ctx: &RepoCtx<'_>, q: &LogQuery<'_>) -> Result<git::LogPage, PageError> {
    if q.path.is_none() && q.filter.is_none() {
        return Ok(git::log::query(ctx.repo, q)?);
    }
    let key = format!(
        "log:{:?}:{:?}:{:?}:{}:{:?}:{:?}:{:?}:{}:{}:{}",
        q.tips,
        q.hidden,
        q.path,
        q.follow,
        q.filter,
        q.order,
        q.since,
        q.skip,
        q.count,
        q.rewrite_parents
    );
    let kept = ctx.site.fragments.get_or_render(&key, || {
        let page = git::log::query(ctx.repo, q).map_err(NotKept::Failed)?;
        if page.stopped_early {
            return Err(NotKept::Partial(page));
        }
        let mut text = String::from(if page.has_more { "more" } else { "end" });
        for c in &page.commits {
            text.push(' ');
            text.push_str(&c.id.to_string());
            if q.rewrite_parents {
                // the parents are the walk's, not the commit's
                text.push(':');
                let parents: Vec<String> = c.parents.iter().map(|p| p.to_string()).collect();
                text.push_str(&parents.join(","));
            }
        }
        Ok(text)
    });
    let text = match kept {
        Ok(text) => text,
        Err(NotKept::Partial(page)) => return Ok(page),
        Err(NotKept::Failed(e)) => return Err(e.into()),
    };
    let mut words = text.split(' ');
    let has_more = words.next() == Some("more");
    let commits = words
        .map(|word| {
            let decode = |hex: &str| {
                gix::ObjectId::from_hex(hex.as_bytes())
                    .map_err(|e| PageError::internal("decoding a kept log page", e))
            };
            let (hex, parents) = match word.split_once(':') {
                Some((hex, parents)) => (hex, Some(parents)),
                None => (word, None),
            };
            let mut commit = git::commit::read_commit(ctx.repo, decode(hex)?)?;
            if let Some(parents) = parents {
                std::sync::Arc::make_mut(&mut commit).parents = parents
                    .split(',')
                    .filter(|p| !p.is_empty())
                    .map(decode)
                    .collect::<Result<_, _>>()?;
            }
            Ok(commit)
        })
        .collect::<Result<_, PageError>>()?;
    Ok(git::LogPage {
        commits,
        has_more,
        ..git::LogPage::default()
    })
}

/// The walk the request asks for; `None` for an empty repository.
fn build_query<'a>(
    ctx: &'a RepoCtx<'_>,
    show_graph: bool,
    count: usize,
) -> Result<Option<LogQuery<'a>>, PageError> {
    let q = &ctx.req.query;
    let search = q.q.as_deref().filter(|s| !s.is_empty());
    let (tips, hidden) = match (q.qt.as_deref(), search) {
        (Some("range"), Some(range)) => git::rev::resolve_range(ctx.repo, range)?,
        _ => {
            let tip = q.id.as_deref().unwrap_or(&ctx.head);
            match git::rev::resolve_commit(ctx.repo, tip) {
                Ok(id) => (vec![id], Vec::new()),
                Err(GitError::NotFound(_)) if q.id.is_none() && ctx.refs.branches.is_empty() => {
                    return Ok(None);
                }
                Err(e) => return Err(e.into()),
            }
        }
    };
    let filter = match (q.qt.as_deref(), search) {
        (Some("grep") | None, Some(s)) => Some(search_for(Field::Message, s)?),
        (Some("author"), Some(s)) => Some(search_for(Field::Author, s)?),
        (Some("committer"), Some(s)) => Some(search_for(Field::Committer, s)?),
        (Some("range"), _) | (_, None) => None,
        (Some(other), Some(_)) => {
            return Err(PageError::BadRequest(format!(
                "Unknown search type: {other}"
            )));
        }
    };
    let skip = usize::try_from(q.ofs).unwrap_or(0);
    let order = match ctx.state.config.opts.commit_sort.as_deref() {
        Some("date") => Order::Date,
        Some("topo") => Order::Topo,
        _ if show_graph => Order::Topo,
        _ => Order::Default,
    };
    Ok(Some(LogQuery {
        tips,
        hidden,
        path: ctx.req.path.as_ref().map(|p| p.as_bstr()),
        follow: following(ctx),
        bloom: ctx.state.bloom(),
        commits: ctx.state.commit_index(&ctx.refs),
        walks: Some(&*ctx.site.walks),
        filter,
        order,
        since: None,
        skip: if show_graph { 0 } else { skip },
        count: if show_graph { skip + count } else { count },
        visits: ctx.site.config.globals.walk_budget,
        rewrite_parents: show_graph,
    }))
}

fn row(ctx: &RepoCtx<'_>, c: &CommitInfo, args: &LogArgs, counts: Option<ChangeCount>) -> Row {
    let hex = c.id.to_string();
    // A followed file had other names in older commits: link them whole.
    let path = ctx
        .req
        .path
        .as_ref()
        .map(|p| p.as_slice())
        .filter(|_| !following(ctx));
    let mut decorations = shared::decorations(ctx, &c.id);
    if args.showmsg {
        for d in decorations
            .iter_mut()
            .filter(|d| d.class == "branch-deco" || d.class == "remote-deco")
        {
            d.href.push(if d.href.contains('?') { '&' } else { '?' });
            d.href.push_str("showmsg=1");
        }
    }
    let max = ctx.site.config.globals.max_message_length;
    let (subject, message) = match args.showmsg.then(|| wrap_subject(&c.subject, max)) {
        Some(Some((head, rest))) => (head, Some(format!("{rest}\n\n{}", c.body()))),
        Some(None) => (
            shared::truncate_subject(&c.subject, max),
            Some(c.body().to_string()),
        ),
        None => (shared::truncate_subject(&c.subject, max), None),
    };
    Row {
        age: shared::log_age(c.committer.time, ctx.now),
        subject,
        commit_href: ctx
            .links()
            .page("commit", path, Some(&ctx.head), &[("id", &hex)]),
        decorations,
        author: super::parts::filter::person_html(ctx, &c.author, &c.author.name, "log"),
        message,
        counts,
        graph: None,
    }
}

/// How many graph lines cgit draws beside a shown message: one per line of the message with
/// the two line breaks it adds, its leading blank lines left out.
fn message_lines(message: &str) -> usize {
    if message.is_empty() {
        return 1;
    }
    let shown = format!("{message}\n\n");
    1 + shown.trim_start().matches('\n').count()
}

/// `path: root/a/b` links, each a log of that directory with the current arguments.
fn crumbs(ctx: &RepoCtx<'_>, args: &LogArgs) -> Vec<(String, String)> {
    let Some(path) = ctx.req.path.as_ref() else {
        return Vec::new();
    };
    shared::path_crumbs(path, |prefix| args.href(ctx, prefix))
}

/// With messages shown, cgit wraps a long subject at a space before `max` characters: the
/// row shows the start and a `↵`, the message starts with the rest.
fn wrap_subject(subject: &str, max: usize) -> Option<(String, String)> {
    let chars: Vec<char> = subject.chars().collect();
    if max == 0 || chars.len() <= max {
        return None;
    }
    let cut = (1..=max.saturating_sub(4))
        .rev()
        .find(|i| chars[*i].is_whitespace())?;
    let head: String = chars[..cut].iter().collect();
    let rest: String = chars[cut + 1..].iter().collect();
    Some((format!("{head} \u{21b5}"), rest))
}

#[cfg(test)]
mod tests {
    use super::wrap_subject;

    #[test]
    fn long_subjects_wrap_like_cgit() {
        let (head, rest) =
            wrap_subject("This is a very long subject line that goes on", 20).unwrap();
        assert_eq!(head, "This is a very \u{21b5}");
        assert_eq!(rest, "long subject line that goes on");
        assert!(wrap_subject("short", 20).is_none());
        assert!(wrap_subject(&"x".repeat(30), 20).is_none());
    }
}
