//! The page frame shared by every HTML page: head, header table, tabs, path crumbs, footer.

use super::links::{self, escape_path};
use crate::config::Globals;
use crate::pages::{PageRequest, RepoCtx, Site};
use askama::Template;

/// One tab of `table.tabs`.
pub struct Tab {
    pub label: &'static str,
    pub href: String,
    pub active: bool,
}

/// What the header's main cell and form show for a repository page.
pub struct RepoHeader {
    pub index_href: String,
    pub name: String,
    pub summary_href: String,
    pub branches: Vec<String>,
    pub head: String,
    pub switch_action: String,
    /// HTML (escaped, or the owner-filter's output).
    pub owner: String,
}

/// Everything the frame template needs; pages fill in `title`, `crumbs` and tabs.
pub struct Frame<'a> {
    pub g: &'a Globals,
    pub title: String,
    pub logo: Option<String>,
    pub logo_link: String,
    pub extra_head: Option<String>,
    /// The repository's Atom feed for the current head and path. cgit writes it with the
    /// request's host; a root-relative link keeps pages the same whatever the Host header.
    pub atom_feed: Option<String>,
    pub vcs_links: Vec<String>,
    pub repo_name: String,
    pub repo: Option<RepoHeader>,
    pub sub: String,
    pub tabs: Vec<Tab>,
    pub search_action: String,
    pub search_hidden: Vec<(&'static str, String)>,
    pub search_in_repo: bool,
    pub q: String,
    pub qt: String,
    pub crumbs: Vec<(String, String)>,
    /// After the crumbs of a path log: cgit's `(follow)`/`(unfollow)` link (label, href).
    pub follow_toggle: Option<(&'static str, String)>,
    pub version: &'static str,
}

const VERSION: &str = env!("CARGO_PKG_VERSION");

impl<'a> Frame<'a> {
    /// The frame of site pages (index, site about, errors outside a repository).
    pub fn site(site: &'a Site, req: &PageRequest, active: Option<&'static str>) -> Frame<'a> {
        let g = &site.config.globals;
        let mut tabs = vec![Tab {
            label: "index",
            href: g.virtual_root.clone(),
            active: active == Some("index"),
        }];
        if g.root_readme.is_some() {
            tabs.push(Tab {
                label: "about",
                href: format!("{}?p=about", g.virtual_root),
                active: active == Some("about"),
            });
        }
        let search_action = match &req.prefix {
            Some(prefix) => format!("{}{}", g.virtual_root, escape_path(prefix.as_bytes())),
            None => g.virtual_root.clone(),
        };
        Frame {
            g,
            title: g.root_title.clone(),
            logo: g.defaults.logo.clone(),
            logo_link: g
                .defaults
                .logo_link
                .clone()
                .unwrap_or_else(|| g.virtual_root.clone()),
            extra_head: None,
            atom_feed: None,
            vcs_links: Vec::new(),
            repo_name: String::new(),
            repo: None,
            sub: g.root_desc.clone(),
            tabs,
            search_action,
            search_hidden: Vec::new(),
            search_in_repo: false,
            q: req.query.q.clone().unwrap_or_default(),
            qt: String::new(),
            crumbs: Vec::new(),
            follow_toggle: None,
            version: VERSION,
        }
    }

    /// The frame of repository pages, with `active` the highlighted tab.
    pub fn repo(ctx: &'a RepoCtx<'_>, active: &'static str) -> Frame<'a> {
        let g = &ctx.site.config.globals;
        let cfg = &ctx.state.config;
        let l = ctx.links();
        let head = Some(ctx.head.as_str());
        let id = ctx.req.query.id.as_deref();
        let path = ctx
            .req
            .path
            .as_ref()
            .filter(|_| ctx.req.page.limits_by_path())
            .map(|p| p.as_slice());
        let id_arg: Vec<(&str, &str)> = id.map(|i| ("id", i)).into_iter().collect();
        let mut tabs = Vec::new();
        let mut tab = |label: &'static str, href: String| {
            tabs.push(Tab {
                label,
                href,
                active: label == active,
            })
        };
        if super::readme::locate(ctx).is_some_and(|r| r.is_servable()) {
            tab("about", l.page("about", None, head, &[]));
        }
        tab("summary", with_head(&l.summary(), &l, head));
        tab("refs", l.page("refs", None, head, &id_arg));
        let mut log_args = Vec::new();
        if ctx.req.query.showmsg {
            log_args.push(("showmsg", "1"));
        }
        if ctx.req.query.follow {
            log_args.push(("follow", "1"));
        }
        tab("log", l.page("log", path, head, &log_args));
        if active == "blame" {
            tab("blame", l.page("blame", path, head, &id_arg));
        } else {
            let tree_path = path.and_then(|p| existing_path(ctx, p));
            tab("tree", l.page("tree", tree_path, head, &id_arg));
        }
        // The commit and diff tabs keep the diff being looked at: the diff options, and for
        // the diff tab the old side (`id2`), as cgit's do.
        let q = &ctx.req.query;
        let dt = q.dt.filter(|dt| *dt != 0).map(|dt| dt.to_string());
        let context = q
            .context
            .filter(|c| *c > 0 && *c != 3)
            .map(|c| c.to_string());
        let mut diff_opts: Vec<(&str, &str)> = Vec::new();
        diff_opts.extend(dt.as_deref().map(|v| ("dt", v)));
        diff_opts.extend(context.as_deref().map(|v| ("context", v)));
        if q.ignorews {
            diff_opts.push(("ignorews", "1"));
        }
        let commit_args = [id_arg.as_slice(), &diff_opts].concat();
        tab("commit", l.page("commit", path, head, &commit_args));
        let id2_arg: Vec<(&str, &str)> = q.id2.as_deref().map(|i| ("id2", i)).into_iter().collect();
        let diff_args = [id_arg.as_slice(), &id2_arg, &diff_opts].concat();
        tab("diff", l.page("diff", path, head, &diff_args));
        if cfg.opts.max_stats.is_some() {
            tab("stats", l.page("stats", path, head, &[]));
        }
        let mut search_hidden = Vec::new();
        if ctx.head != ctx.defbranch {
            search_hidden.push(("h", ctx.head.clone()));
        }
        if let Some(id) = id {
            search_hidden.push(("id", id.to_string()));
        }
        if let Some(id2) = &ctx.req.query.id2 {
            search_hidden.push(("id2", id2.clone()));
        }
        if ctx.req.query.showmsg {
            search_hidden.push(("showmsg", "1".to_string()));
        }
        let mut branches: Vec<String> = ctx.refs.branches.iter().map(|b| b.name.clone()).collect();
        branches.sort();
        Frame {
            g,
            title: page_title(ctx, active, None),
            logo: cfg.opts.logo.clone().or_else(|| g.defaults.logo.clone()),
            logo_link: cfg
                .opts
                .logo_link
                .clone()
                .or_else(|| g.defaults.logo_link.clone())
                .unwrap_or_else(|| g.virtual_root.clone()),
            extra_head: cfg.extra_head_content.clone(),
            atom_feed: Some(links::with_args(
                &l.page("atom", path, None, &[]),
                &[("h", &ctx.head)],
            )),
            vcs_links: clone_urls(ctx),
            repo_name: cfg.name.clone(),
            repo: Some(RepoHeader {
                index_href: g.virtual_root.clone(),
                name: cfg.name.clone(),
                summary_href: l.summary(),
                branches,
                head: ctx.head.clone(),
                switch_action: l.summary(),
                owner: super::filter::filtered_text(
                    cfg.opts.owner_filter.as_deref(),
                    &[],
                    || super::filter::repo_env(ctx),
                    &cfg.owner,
                ),
            }),
            sub: cfg.desc.clone(),
            tabs,
            search_action: l.page("log", path, None, &[]),
            search_hidden,
            search_in_repo: true,
            q: ctx.req.query.q.clone().unwrap_or_default(),
            qt: ctx.req.query.qt.clone().unwrap_or_default(),
            crumbs: Vec::new(),
            follow_toggle: None,
            version: VERSION,
        }
    }
}

/// The longest part of `path` (whole components) that exists at the page's revision (`id`,
/// else the head) as a folder or file, so that a tree link never names a path the commit does
/// not have (a log of a renamed file, a commit that deleted it) or a submodule, which has no
/// tree here; None for the root.
pub fn existing_path<'p>(ctx: &RepoCtx<'_>, path: &'p [u8]) -> Option<&'p [u8]> {
    use gix::bstr::ByteSlice;
    let commit = super::shared::page_commit(ctx).ok()?;
    let tree = crate::git::commit::read_commit(ctx.repo, commit).ok()?.tree;
    let mut path = path;
    loop {
        use crate::git::tree::Found;
        if let Ok(Some(Found::Tree(_) | Found::Blob { .. })) =
            crate::git::tree::find(ctx.repo, tree, path.as_bstr())
        {
            return Some(path);
        }
        path = &path[..path.iter().rposition(|&b| b == b'/')?];
    }
}

/// A repository page's `<title>`: which page (and what on it), then the repository as cgit
/// titles it (`name - description`): `log - r - desc`, `tree: app.rs « src - r - desc`. The
/// summary, the repository's home, keeps cgit's plain `name - description`.
pub fn page_title(ctx: &RepoCtx<'_>, page: &str, detail: Option<&str>) -> String {
    let cfg = &ctx.state.config;
    let repo = format!("{} - {}", cfg.name, cfg.desc);
    match detail {
        Some(detail) => format!("{page}: {detail} - {repo}"),
        None if page == "summary" => repo,
        None => format!("{page} - {repo}"),
    }
}

fn with_head(base: &str, l: &links::RepoLinks<'_>, head: Option<&str>) -> String {
    match head.filter(|h| *h != l.defbranch) {
        Some(h) => links::with_args(base, &[("h", h)]),
        None => base.to_string(),
    }
}

/// The repository's clone URLs: `clone-url` templates (with `$CGIT_REPO_*` expanded), else
/// `clone-prefix` + `/` + url.
pub fn clone_urls(ctx: &RepoCtx<'_>) -> Vec<String> {
    let cfg = &ctx.state.config;
    let g = &ctx.site.config.globals;
    if let Some(template) = &cfg.opts.clone_url {
        let lookup = |name: &str| -> Option<String> {
            Some(match name {
                "CGIT_REPO_URL" => cfg.url.clone(),
                "CGIT_REPO_NAME" => cfg.name.clone(),
                "CGIT_REPO_PATH" => cfg.path.display().to_string(),
                "CGIT_REPO_OWNER" => cfg.owner.clone(),
                "CGIT_REPO_DEFBRANCH" => ctx.defbranch.clone(),
                "CGIT_REPO_SECTION" => cfg.opts.section.clone(),
                "HTTP_HOST" => ctx.req.host.clone().unwrap_or_default(),
                _ => return std::env::var(name).ok(),
            })
        };
        let expanded = crate::config::expand_macros(template, lookup);
        return expanded.split_whitespace().map(str::to_string).collect();
    }
    if let Some(prefixes) = &g.clone_prefix {
        return prefixes
            .split_whitespace()
            .map(|p| format!("{p}/{}", cfg.url))
            .collect();
    }
    Vec::new()
}

#[derive(Template)]
#[template(path = "frame_head.html")]
struct FrameHead<'a> {
    f: &'a Frame<'a>,
    head_include: &'a str,
    header_file: &'a str,
}

#[derive(Template)]
#[template(path = "frame_foot.html")]
struct FrameFoot<'a> {
    f: &'a Frame<'a>,
    footer_file: Option<&'a str>,
}

/// Renders frame head, `body` and frame foot into one buffer.
pub fn wrap(
    site: &Site,
    frame: &Frame<'_>,
    body: &impl askama::Template,
) -> Result<String, askama::Error> {
    wrap_sized(site, frame, body, 0)
}

/// [`wrap`] into a buffer with room for `body_bytes` of body (an estimate), so that a large
/// page is not copied as its buffer grows.
///
/// Generic over the body, not a `dyn` template: rendered through a `dyn fmt::Write`, each of
/// a template's pieces (a tree listing's row has about thirty) was a call through a vtable
/// and a `memcpy` call; into a `String` they are inlined copies.
pub fn wrap_sized(
    site: &Site,
    frame: &Frame<'_>,
    body: &impl askama::Template,
    body_bytes: usize,
) -> Result<String, askama::Error> {
    let g = &site.config.globals;
    let mut out = String::with_capacity(16 * 1024 + body_bytes);
    let head = FrameHead {
        f: frame,
        head_include: g.head_include.as_deref().unwrap_or_default(),
        header_file: g.header.as_deref().unwrap_or_default(),
    };
    let foot = FrameFoot {
        f: frame,
        footer_file: g.footer.as_deref(),
    };
    head.render_into(&mut out)?;
    body.render_into(&mut out)?;
    foot.render_into(&mut out)?;
    Ok(out)
}
