//! cgit's pages: each a function from (site, repository state, parsed request) to a buffered
//! response. Nothing here knows about HTTP servers; `render` serves the server, the CLI and tests.

mod about;
mod atom;
pub mod auth;
mod blame;
mod blob;
mod clone;
mod commit;
mod cost;
mod diff;
mod error;
mod esi;
mod index;
mod log;
pub mod parts;
mod patch;
mod plain;
mod rawdiff;
mod refs;
mod snapshot;
mod stats;
mod summary;
mod tag;
mod tree;

pub use crate::request::{Page, PageRequest, Query};
pub use cost::cost_class;
pub use error::{Exhaustion, PageError, chain, exhaustion};

use crate::config::Config;
use crate::repos::{RefSnapshot, RepoState, Repos};
use std::sync::Arc;

/// The configuration and repositories a request is served from.
pub struct Site {
    pub config: Arc<Config>,
    pub repos: Arc<Repos>,
    /// Increments on every configuration reload. Local to this process, so never part of a
    /// validator (ETags come from content: see `parts::validators`).
    pub generation: u64,
    /// Rendered fragments shared by every repository (kept across reloads).
    pub fragments: Arc<crate::cache::FragmentCache>,
    /// Recent history walks, for deep log pages (kept across reloads).
    pub walks: Arc<crate::cache::WalkCache>,
    /// Object sizes for tree listings (kept across reloads).
    pub sizes: Arc<crate::cache::ObjectSizes>,
    /// Which trees hold a single directory, for tree listings (kept across reloads).
    pub single_child_trees: Arc<crate::cache::IdMemo<bool>>,
    /// Pages cut short by their work budget (a metric, kept across reloads).
    pub cutoffs: prometheus_client::metrics::counter::Counter,
    /// In-process highlighting counts (metrics, kept across reloads).
    pub highlights: parts::highlight::HighlightStats,
}

/// A complete response: status, headers and a body.
#[derive(Clone, Debug)]
pub struct Response {
    pub status: u16,
    pub content_type: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Body,
}

/// A response body: rendered into one buffer (every page), or `len` bytes of a file from `offset`
/// (snapshots written to a temporary file, git's own files for dumb-HTTP clones), which is sent
/// after the page's git work is done, so a slow client never holds a git worker. Both can be
/// shared by several responses.
#[derive(Clone)]
pub enum Body {
    Full(bytes::Bytes),
    File {
        file: Arc<std::fs::File>,
        offset: u64,
        len: u64,
    },
}

impl Body {
    /// The buffered bytes; empty for a file.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Body::Full(bytes) => bytes,
            Body::File { .. } => &[],
        }
    }
}

impl From<Vec<u8>> for Body {
    fn from(bytes: Vec<u8>) -> Body {
        Body::Full(bytes.into())
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Body::Full(bytes) => write!(f, "Full({} bytes)", bytes.len()),
            Body::File { len, .. } => write!(f, "File({len} bytes)"),
        }
    }
}

/// Copies `len` bytes of `file` from `offset` to `out`, reading at offsets so that several
/// responses can send one file at once.
pub fn copy_file(
    file: &std::fs::File,
    offset: u64,
    len: u64,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0; 64 << 10];
    let (mut offset, end) = (offset, offset + len);
    while offset < end {
        let want = buf.len().min((end - offset) as usize);
        let n = file.read_at(&mut buf[..want], offset)?;
        if n == 0 {
            return Err(std::io::Error::other("file shrank while it was sent"));
        }
        out.write_all(&buf[..n])?;
        offset += n as u64;
    }
    Ok(())
}

impl Site {
    /// A site for `config`, with fresh repositories and a fragment cache of the configured size.
    pub fn new(config: Config) -> Site {
        let repos = Repos::new(&config, None);
        let fragments = crate::cache::FragmentCache::new(config.globals.fragment_cache_size);
        Site {
            config: Arc::new(config),
            repos: Arc::new(repos),
            generation: 0,
            fragments: Arc::new(fragments),
            walks: Arc::default(),
            sizes: Arc::default(),
            single_child_trees: Arc::default(),
            cutoffs: Default::default(),
            highlights: Default::default(),
        }
    }

    /// The site a reload of `config` makes: repositories still configured keep their state,
    /// the caches and counters are shared, the generation is the next.
    pub fn reloaded(&self, config: Config) -> Site {
        let repos = Repos::new(&config, Some(&self.repos));
        Site {
            config: Arc::new(config),
            repos: Arc::new(repos),
            generation: self.generation + 1,
            fragments: Arc::clone(&self.fragments),
            walks: Arc::clone(&self.walks),
            sizes: Arc::clone(&self.sizes),
            single_child_trees: Arc::clone(&self.single_child_trees),
            cutoffs: self.cutoffs.clone(),
            highlights: self.highlights.clone(),
        }
    }
}

impl Response {
    pub fn html(body: String) -> Response {
        Response {
            status: 200,
            content_type: "text/html; charset=UTF-8".into(),
            headers: Vec::new(),
            body: body.into_bytes().into(),
        }
    }

    pub fn text(body: String) -> Response {
        Response {
            status: 200,
            content_type: "text/plain; charset=UTF-8".into(),
            headers: Vec::new(),
            body: body.into_bytes().into(),
        }
    }

    /// 304 Not Modified for a matching validator.
    pub fn not_modified(etag: String) -> Response {
        Response {
            status: 304,
            content_type: String::new(),
            headers: vec![("ETag", etag)],
            body: Vec::new().into(),
        }
    }

    pub fn redirect(status: u16, location: String) -> Response {
        Response {
            status,
            content_type: "text/html; charset=UTF-8".into(),
            headers: vec![("Location", location)],
            body: Vec::new().into(),
        }
    }
}

/// Everything a repository page needs: the repository, its refs, the resolved head.
pub struct RepoCtx<'a> {
    pub site: &'a Site,
    pub state: &'a RepoState,
    pub repo: &'a crate::git::Repo<'a>,
    pub refs: Arc<RefSnapshot>,
    pub req: &'a PageRequest,
    /// The branch or revision the page is about (`h`, else the default branch).
    pub head: String,
    /// The repository's default branch (links omit `h` when it equals this).
    pub defbranch: String,
    pub now: i64,
}

impl RepoCtx<'_> {
    /// The path after the page in the URL (empty for none).
    pub fn path(&self) -> &gix::bstr::BStr {
        self.req
            .path
            .as_ref()
            .map(|p| p.as_ref())
            .unwrap_or_default()
    }

    /// The sizes of objects, remembered across requests and repositories.
    pub fn object_sizes(&self, ids: &[gix::ObjectId]) -> Result<Vec<u64>, crate::git::GitError> {
        self.site
            .sizes
            .get_or_read_all(ids, |id| self.repo.object_size(&id))
    }

    /// The commit `head` names: a branch tip from the ref snapshot (so a page is consistent with
    /// its validator), else the revision resolved in the repository.
    pub fn head_commit(&self) -> Result<gix::ObjectId, crate::git::GitError> {
        match self.refs.branches.iter().find(|b| b.name == self.head) {
            Some(branch) => Ok(branch.id),
            None => crate::git::rev::resolve_commit(self.repo, &self.head),
        }
    }

    pub fn links(&self) -> parts::links::RepoLinks<'_> {
        parts::links::RepoLinks {
            vroot: &self.site.config.globals.virtual_root,
            repo_url: &self.state.config.url,
            defbranch: &self.defbranch,
        }
    }
}

/// Renders the page a request asks for; errors become cgit-style error pages.
pub fn render(site: &Site, req: &PageRequest) -> Response {
    let result = match &req.repo {
        None => render_site_page(site, req).map(|r| with_body_etag(req, r)),
        Some(url) => render_repo_page(site, req, url),
    };
    match result {
        Ok(mut response) => {
            let has_cache_control = response.headers.iter().any(|(n, _)| *n == "Cache-Control");
            if matches!(response.status, 200 | 304) && !has_cache_control {
                let cc = parts::validators::cache_control(&site.config.globals, req);
                response.headers.push(("Cache-Control", cc));
            }
            response
        }
        Err(e) => error::page(site, req, &e),
    }
}

/// Site pages are validated by their body; a match still saves the transfer.
fn with_body_etag(req: &PageRequest, response: Response) -> Response {
    if response.status != 200 {
        return response;
    }
    let etag = parts::validators::body_etag(response.body.bytes());
    if parts::validators::matches(req.if_none_match.as_deref(), &etag) {
        return Response::not_modified(etag);
    }
    let mut response = response;
    response.headers.push(("ETag", etag));
    response
}

fn render_site_page(site: &Site, req: &PageRequest) -> Result<Response, PageError> {
    match req.page {
        Page::Index => index::render(site, req),
        Page::SiteAbout => about::render_site(site, req),
        _ => Err(PageError::NotFound("Invalid request".into())),
    }
}

fn render_repo_page(site: &Site, req: &PageRequest, url: &str) -> Result<Response, PageError> {
    let state = site
        .repos
        .get(url)
        .ok_or_else(|| PageError::NotFound("No repositories found".into()))?;
    state
        .with_repo(|repo| {
            let refs = state.refs(repo).map_err(PageError::from)?;
            // brings the commit index up to date with these refs (in the background)
            state.commit_index(&refs);
            let etag = parts::validators::repo_etag(state, req, refs.version);
            if parts::validators::matches(req.if_none_match.as_deref(), &etag) {
                return Ok(Response::not_modified(etag));
            }
            let defbranch = state.defbranch(&refs);
            let head = resolve_head(repo, &refs, &defbranch, req)?;
            let ctx = RepoCtx {
                site,
                state,
                repo,
                refs,
                req,
                head,
                defbranch,
                now: parts::format::now(),
            };
            let mut response = render_repo_page_with(&ctx)?;
            if response.status == 200 && !response.headers.iter().any(|(n, _)| *n == "ETag") {
                response.headers.push(("ETag", etag));
            }
            if response.status == 200
                && let Some(time) = named_commit_time(repo, req)
            {
                response
                    .headers
                    .push(("Last-Modified", parts::format::http_date(time)));
            }
            Ok(response)
        })
        .map_err(|e| {
            tracing::warn!(url = %req.target, "repository {url}: {e}");
            PageError::NotFound("Repository not found".into())
        })?
}

/// The page module that renders a repository page.
fn render_repo_page_with(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    match ctx.req.page {
        Page::Summary => summary::render(ctx),
        Page::Refs => refs::render(ctx),
        Page::Log => log::render(ctx),
        Page::Tree => tree::render(ctx),
        Page::Blob => blob::render(ctx),
        Page::Plain => plain::render(ctx),
        Page::Commit => commit::render(ctx),
        Page::Diff => diff::render(ctx),
        Page::RawDiff => rawdiff::render(ctx),
        Page::Patch => patch::render(ctx),
        Page::Tag => tag::render(ctx),
        Page::Atom => atom::render(ctx),
        Page::About => about::render(ctx),
        Page::Snapshot => snapshot::render(ctx),
        Page::Blame => blame::render(ctx),
        Page::Stats => stats::render(ctx),
        Page::EsiDiff => esi::render_fragment(ctx),
        Page::CloneInfo => clone::info(ctx),
        Page::CloneHead => clone::head(ctx),
        Page::CloneObjects => clone::objects(ctx),
        Page::Index | Page::SiteAbout => Err(PageError::NotFound("Invalid request".into())),
    }
}

/// The committer date of the commit a URL names by full id (`id=`), for `Last-Modified`.
fn named_commit_time(repo: &crate::git::Repo, req: &PageRequest) -> Option<i64> {
    if !parts::validators::names_only_full_ids(req) {
        return None;
    }
    let id = gix::ObjectId::from_hex(req.query.id.as_ref()?.as_bytes()).ok()?;
    let commit = crate::git::rev::peel_to_commit(repo, id).ok()??;
    Some(
        crate::git::commit::read_commit(repo, commit)
            .ok()?
            .committer
            .time
            .seconds,
    )
}

/// cgit's head: `h` when given (it must resolve), else the default branch when it exists, else
/// the first branch.
fn resolve_head(
    repo: &gix::Repository,
    refs: &RefSnapshot,
    defbranch: &str,
    req: &PageRequest,
) -> Result<String, PageError> {
    match &req.query.h {
        Some(h) => {
            if refs.has_branch(h) || crate::git::rev::resolve(repo, h).is_ok() {
                Ok(h.clone())
            } else {
                Err(PageError::NotFound(format!("Invalid branch: {h}")))
            }
        }
        None if refs.has_branch(defbranch) || refs.branches.is_empty() => Ok(defbranch.to_string()),
        None => {
            let mut names: Vec<&str> = refs.branches.iter().map(|b| b.name.as_str()).collect();
            names.sort();
            Ok(names[0].to_string())
        }
    }
}

/// An error page outside any repository (bad URLs, refused or failed requests).
pub fn render_error(site: &Site, status: u16, message: &str) -> Response {
    let message = message.to_string();
    let err = match status {
        400 => PageError::BadRequest(message),
        403 => PageError::Forbidden(message),
        404 => PageError::NotFound(message),
        413 => PageError::TooLarge(message),
        503 => PageError::Unavailable(message),
        _ => PageError::internal("serving a request", message),
    };
    error::page(site, &PageRequest::default(), &err)
}
