//! cgit's pages: each a function from (site, repository state, parsed request) to a buffered
//! response. Nothing here knows about HTTP servers; `render` serves the server, the CLI and tests.

mod commit;
mod diff;
pub mod diff_body;
mod diffargs;
mod error;
mod format;
mod frame;
pub mod html;
mod index;
pub mod links;
mod patch;
mod rawdiff;
mod refs;
mod request;
mod shared;
mod summary;

pub use error::PageError;
pub use request::{PageRequest, Query};

use crate::config::Config;
use crate::repos::{RefSnapshot, RepoState, Repos};
use std::sync::Arc;

/// The configuration and repositories a request is served from.
pub struct Site {
    pub config: Arc<Config>,
    pub repos: Arc<Repos>,
    /// Increments on every configuration reload (for ETags).
    pub generation: u64,
}

/// A complete response, body rendered into one buffer.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub content_type: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn html(body: String) -> Response {
        Response {
            status: 200,
            content_type: "text/html; charset=UTF-8".into(),
            headers: Vec::new(),
            body: body.into_bytes(),
        }
    }

    pub fn redirect(status: u16, location: String) -> Response {
        Response {
            status,
            content_type: "text/html; charset=UTF-8".into(),
            headers: vec![("Location", location)],
            body: Vec::new(),
        }
    }
}

/// Everything a repository page needs: the repository, its refs, the resolved head.
pub struct RepoCtx<'a> {
    pub site: &'a Site,
    pub state: &'a RepoState,
    pub repo: &'a gix::Repository,
    pub refs: Arc<RefSnapshot>,
    pub req: &'a PageRequest,
    /// The branch or revision the page is about (`h`, else the default branch).
    pub head: String,
    pub now: i64,
}

impl RepoCtx<'_> {
    pub fn links(&self) -> links::RepoLinks<'_> {
        links::RepoLinks {
            vroot: &self.site.config.globals.virtual_root,
            repo_url: &self.state.config.url,
            defbranch: &self.refs.defbranch,
        }
    }
}

/// Renders the page a request asks for; errors become cgit-style error pages.
pub fn render(site: &Site, req: &PageRequest) -> Response {
    let result = match &req.repo {
        None => render_site_page(site, req),
        Some(url) => render_repo_page(site, req, url),
    };
    result.unwrap_or_else(|e| error::page(site, req, &e))
}

fn render_site_page(site: &Site, req: &PageRequest) -> Result<Response, PageError> {
    match req.page.as_deref() {
        None | Some("repolist") => index::render(site, req),
        Some(_) => Err(PageError::NotFound("Invalid request".into())),
    }
}

fn render_repo_page(site: &Site, req: &PageRequest, url: &str) -> Result<Response, PageError> {
    let state = site
        .repos
        .get(url)
        .ok_or_else(|| PageError::NotFound("No repositories found".into()))?;
    let page = req.page.as_deref().unwrap_or("summary");
    if !is_known_page(page) {
        return Err(PageError::NotFound("Invalid request".into()));
    }
    state
        .with_repo(|repo| {
            let refs = state.refs(repo).map_err(PageError::from)?;
            let head = resolve_head(repo, &refs, req)?;
            let ctx = RepoCtx {
                site,
                state,
                repo,
                refs,
                req,
                head,
                now: format::now(),
            };
            match page {
                "summary" => summary::render(&ctx),
                "refs" => refs::render(&ctx),
                "rawdiff" => rawdiff::render(&ctx),
                "commit" => commit::render(&ctx),
                "diff" => diff::render(&ctx),
                "patch" => patch::render(&ctx),
                _ => Err(PageError::NotFound(format!(
                    "The '{page}' page is not available in this version of cgitd"
                ))),
            }
        })
        .map_err(PageError::from)?
}

/// Pages cgit knows.
fn is_known_page(page: &str) -> bool {
    matches!(
        page,
        "HEAD"
            | "atom"
            | "about"
            | "blame"
            | "blob"
            | "commit"
            | "diff"
            | "info"
            | "log"
            | "ls_cache"
            | "objects"
            | "patch"
            | "plain"
            | "rawdiff"
            | "refs"
            | "repolist"
            | "snapshot"
            | "stats"
            | "summary"
            | "tag"
            | "tree"
    )
}

/// cgit's head: `h` when given (it must resolve), else the default branch when it exists, else
/// the first branch.
fn resolve_head(
    repo: &gix::Repository,
    refs: &RefSnapshot,
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
        None if refs.has_branch(&refs.defbranch) || refs.branches.is_empty() => {
            Ok(refs.defbranch.clone())
        }
        None => {
            let mut names: Vec<&str> = refs.branches.iter().map(|b| b.name.as_str()).collect();
            names.sort();
            Ok(names[0].to_string())
        }
    }
}

/// An error page outside any repository (bad URLs, failed tasks).
pub fn render_error(site: &Site, status: u16, message: &str) -> Response {
    let message = message.to_string();
    let err = match status {
        400 => PageError::BadRequest(message),
        403 => PageError::Forbidden(message),
        404 => PageError::NotFound(message),
        503 => PageError::Unavailable(message),
        _ => PageError::Internal(message),
    };
    error::page(site, &PageRequest::default(), &err)
}
