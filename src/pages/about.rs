//! about: the repository's readme (or the site's `root-readme`), rendered and sanitized inside
//! `div#summary`; `about/<path>` serves files beside a readme kept in the repository.

use super::blob::safe_headers;
use super::parts::frame::{self, Frame};
use super::parts::readme::{self, Location};
use super::{PageError, PageRequest, RepoCtx, Response, Site};
use crate::git::tree::{self as gtree, Found};
use askama::Template;
use gix::bstr::ByteSlice;

#[derive(Template)]
#[template(path = "about.html")]
struct About {
    /// Sanitized HTML.
    html: String,
}

/// The site's about page: the root readme as it is, without the repository page's wrapper.
#[derive(Template)]
#[template(source = "{{ html|safe }}", ext = "html")]
struct SiteAbout {
    html: String,
}

/// A relative URL rewriter for rendered readmes.
type Rewrite<'a> = Box<dyn Fn(&str) -> Option<String> + Sync + 'a>;

pub fn render(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    // Redirects go to cgitd's own links, keeping the branch: whatever form the request had
    // (`?url=r/about` has no path to add a `/` to).
    let head = Some(ctx.head.as_str());
    if ctx.req.path.is_none() && !ctx.req.trailing_slash {
        let target = ctx.links().page("about", None, head, &[]);
        return Ok(Response::redirect(301, target));
    }
    let Some(loc) = readme::locate(ctx) else {
        let target = match &ctx.state.config.homepage {
            Some(homepage) => homepage.clone(),
            None => match head.filter(|h| *h != ctx.defbranch) {
                Some(h) => super::parts::links::with_args(&ctx.links().summary(), &[("h", h)]),
                None => ctx.links().summary(),
            },
        };
        return Ok(Response::redirect(302, target));
    };
    if let Location::Outside = loc {
        return Err(PageError::NotFound(
            "The readme lies outside the repository".into(),
        ));
    }
    let (name, data, rewrite) = match (&ctx.req.path, &loc) {
        (None, _) => {
            let data = readme::read(ctx, &loc)
                .ok_or_else(|| PageError::NotFound("Readme too large or unreadable".into()))?;
            (loc.name(), data, rewriter(ctx, &loc))
        }
        (Some(sub), Location::Tree { rev, path, .. }) => {
            let dir = parent(path);
            let (target, _) = readme::resolve_link(dir, &sub.to_str_lossy())
                .ok_or_else(|| PageError::NotFound("Not found".into()))?;
            let data = sibling(ctx, rev, &target)?;
            let name = target.to_str_lossy().into_owned();
            let declared = super::parts::mime::for_filename(&ctx.site.config.globals, &target);
            if let Some(mime) =
                declared.filter(|m| m.starts_with("image/") || m.starts_with("video/"))
            {
                return Ok(raw(mime, data));
            }
            (name, data, tree_rewriter(ctx, rev, parent(&target)))
        }
        (Some(_), _) => return Err(PageError::NotFound("Not found".into())),
    };
    let filter = ctx.state.config.opts.about_filter.as_deref();
    let body = About {
        html: render_readme(
            filter,
            &super::parts::filter::repo_env(ctx),
            &name,
            &data,
            &*rewrite,
        ),
    };
    let frame = Frame::repo(ctx, "about");
    Ok(Response::html(frame::wrap(ctx.site, &frame, &body)?))
}

/// The site's about page: `root-readme`, rendered the same way (relative links removed).
pub fn render_site(site: &Site, req: &PageRequest) -> Result<Response, PageError> {
    let g = &site.config.globals;
    let path = g
        .root_readme
        .as_ref()
        .ok_or_else(|| PageError::NotFound("Not found".into()))?;
    // An empty `root-readme=` shows an empty page, as in cgit.
    let data = match path.is_empty() {
        true => Vec::new(),
        false => readme::read_file(std::path::Path::new(path))
            .ok_or_else(|| PageError::NotFound("Not found".into()))?,
    };
    let filter = g.defaults.about_filter.as_deref();
    let html = if path.is_empty() {
        String::new()
    } else if filter.is_none() && is_html(path, &data) {
        // The operator's own HTML, included as cgit includes it.
        String::from_utf8_lossy(&data).into_owned()
    } else {
        render_readme(filter, &[], path, &data, &|_| None)
    };
    let body = SiteAbout { html };
    let mut frame = Frame::site(site, req, Some("about"));
    frame.title = format!("about - {}", frame.title);
    Ok(Response::html(frame::wrap(site, &frame, &body)?))
}

/// Whether an operator's file is HTML: by its name, or it starts with a tag.
fn is_html(name: &str, data: &[u8]) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".html")
        || lower.ends_with(".htm")
        || data.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'<')
}

/// A readme as sanitized HTML: through the about-filter when one is configured, else Markdown
/// or escaped text.
fn render_readme(
    filter: Option<&str>,
    env: &[(&str, String)],
    name: &str,
    data: &[u8],
    rewrite: &(dyn Fn(&str) -> Option<String> + Sync),
) -> String {
    if let Some(spec) = filter {
        match crate::filter::apply(spec, &[name], env, data) {
            Ok(out) => return readme::sanitize(&String::from_utf8_lossy(&out.out), rewrite),
            Err(e) => tracing::warn!("about-filter: {e}"),
        }
    }
    let text = String::from_utf8_lossy(data);
    if readme::is_markdown(name, &text) {
        readme::markdown_html(&text, rewrite)
    } else {
        format!("<pre>{}</pre>", super::parts::html::escape(&text))
    }
}

/// Relative links of a readme in the repository point at `plain` files at its revision;
/// readmes from disk get none.
fn rewriter<'a>(ctx: &'a RepoCtx<'_>, loc: &Location) -> Rewrite<'a> {
    match loc {
        Location::Tree { rev, path, .. } => tree_rewriter(ctx, rev, parent(path)),
        _ => Box::new(|_| None),
    }
}

/// Links relative to `dir` become `plain` links at `rev`.
fn tree_rewriter<'a>(ctx: &'a RepoCtx<'_>, rev: &str, dir: &[u8]) -> Rewrite<'a> {
    let dir = dir.to_vec();
    let rev = rev.to_string();
    let links = ctx.links();
    Box::new(move |url| {
        let (target, tail) = readme::resolve_link(&dir, url)?;
        let mut href = links.page("plain", Some(&target), Some(&rev), &[]);
        if tail.starts_with('#') {
            href.push_str(&tail);
        }
        Some(href)
    })
}

/// The directory part of a path.
fn parent(path: &[u8]) -> &[u8] {
    path.rfind_byte(b'/').map_or(&b""[..], |i| &path[..i])
}

/// A file at `rev` (bounded like readmes).
fn sibling(ctx: &RepoCtx<'_>, rev: &str, path: &[u8]) -> Result<Vec<u8>, PageError> {
    let not_found = || PageError::NotFound("Not found".into());
    let commit = crate::git::rev::resolve_commit(ctx.repo, rev)?;
    let tree = crate::git::commit::read_commit(ctx.repo, commit)?.tree;
    match gtree::find(ctx.repo, tree, path.as_bstr())? {
        Some(Found::Blob { id, .. }) => readme::read(
            ctx,
            &Location::Tree {
                rev: rev.to_string(),
                blob: id,
                path: path.into(),
            },
        )
        .ok_or_else(not_found),
        _ => Err(not_found()),
    }
}

fn raw(mime: String, data: Vec<u8>) -> Response {
    Response {
        status: 200,
        content_type: mime,
        headers: safe_headers(),
        body: data.into(),
    }
}
