//! repolist: the index of repositories — sections, sorting, search and paging.

use super::parts::frame::{self, Frame};
use super::parts::links::{escape_path, with_args};
use super::parts::shared::{self, Age};
use super::{PageError, PageRequest, Response, Site};
use crate::repos::Query;
use askama::Template;

struct Row {
    /// Set on the first row of a section (section headers are not shown when the user sorted).
    section_header: Option<String>,
    name: String,
    href: String,
    desc: String,
    owner: String,
    owner_href: String,
    /// The owner-filter's HTML for the owner, when one is configured (then there is no link).
    owner_filtered: Option<String>,
    idle: Option<Age>,
    log_href: String,
    tree_href: String,
    sublevel: bool,
}

#[derive(Template)]
#[template(path = "index.html")]
struct Index {
    columns: usize,
    sort_links: Vec<(&'static str, String)>,
    show_owner: bool,
    show_links: bool,
    rows: Vec<Row>,
    pages: Vec<(usize, String, bool)>,
}

pub fn render(site: &Site, req: &PageRequest) -> Result<Response, PageError> {
    let g = &site.config.globals;
    let now = super::parts::format::now();
    let sort = req.query.s.as_deref();
    let search = req.query.q.as_deref().map(str::to_lowercase);
    let per_page = match g.max_repo_count {
        0 => usize::MAX,
        n => n,
    };
    let selection = site.repos.catalog.select(&Query {
        sort,
        prefix: req.prefix.as_deref(),
        search: search.as_deref(),
        offset: req.query.ofs.max(0) as usize,
        count: per_page,
    });
    if selection.total == 0 {
        return Err(PageError::NotFound("No repositories found".into()));
    }
    let total = selection.total;
    let per_page = per_page.min(total);
    let ofs = selection.offset;
    let base = frame::Frame::site(site, req, Some("index")).search_action;
    let q_arg: Vec<(&str, &str)> = req
        .query
        .q
        .as_deref()
        .map(|q| ("q", q))
        .into_iter()
        .collect();
    let show_sections = sort.is_none();
    let vroot = &g.virtual_root;
    // A header wherever the section changes, an empty one back to no section (as cgit does
    // when unsectioned repositories follow a section, with section-sort=0).
    let mut previous_section = "";
    let rows = selection
        .rows
        .iter()
        .map(|(r, idle)| {
            let href = format!("{vroot}{}/", escape_path(r.url.as_bytes()));
            let section = r.opts.section.as_str();
            let new_section = show_sections && previous_section != section;
            previous_section = section;
            Row {
                section_header: new_section.then(|| section.to_string()),
                name: r.name.clone(),
                desc: truncate(&r.desc, g.max_repodesc_length),
                owner: r.owner.clone(),
                owner_href: with_args(&base, &[("q", &r.owner)]),
                owner_filtered: r.opts.owner_filter.as_deref().map(|filter| {
                    let defbranch = r.defbranch.as_deref().unwrap_or_default();
                    let env = || crate::filter::config_env(r, defbranch);
                    super::parts::filter::filtered_text(Some(filter), &[], env, &r.owner)
                }),
                idle: idle.map(|t| shared::age(gix::date::Time::new(t, 0), now)),
                log_href: format!("{href}log/"),
                tree_href: format!("{href}tree/"),
                href,
                sublevel: !r.opts.section.is_empty(),
            }
        })
        .collect();
    let mut sort_links = vec![("Name", "name"), ("Description", "desc")];
    if g.enable_index_owner {
        sort_links.push(("Owner", "owner"));
    }
    sort_links.push(("Idle", "idle"));
    let sort_links = sort_links
        .into_iter()
        .map(|(label, key)| {
            let mut args = vec![("s", key)];
            args.extend(q_arg.iter().copied());
            (label, with_args(&base, &args))
        })
        .collect();
    let pages = if per_page < total {
        (0..total.div_ceil(per_page))
            .map(|i| {
                let page_ofs = (i * per_page).to_string();
                let mut args = q_arg.clone();
                if let Some(s) = sort {
                    args.push(("s", s));
                }
                // The first page's link has no `ofs` (as in cgit).
                if i > 0 {
                    args.push(("ofs", &page_ofs));
                }
                (
                    i + 1,
                    with_args(&base, &args),
                    i * per_page == ofs - ofs % per_page,
                )
            })
            .collect()
    } else {
        Vec::new()
    };
    let body = Index {
        columns: 3 + usize::from(g.enable_index_owner) + usize::from(g.enable_index_links),
        sort_links,
        show_owner: g.enable_index_owner,
        show_links: g.enable_index_links,
        rows,
        pages,
    };
    let frame = Frame::site(site, req, Some("index"));
    Ok(Response::html(frame::wrap(site, &frame, &body)?))
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}...")
}
