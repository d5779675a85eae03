//! repolist: the index of repositories — sections, sorting, search and paging.

use super::parts::frame::{self, Frame};
use super::parts::links::{escape_path, with_args};
use super::parts::shared::{self, Age};
use super::{PageError, PageRequest, Response, Site};
use crate::config::RepoConfig;
use askama::Template;
use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;

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
    let mut repos: Vec<(&Arc<RepoConfig>, Option<i64>)> = site
        .config
        .repos
        .iter()
        .filter(|r| !r.hide && !r.ignore)
        .filter(|r| {
            req.prefix
                .as_ref()
                .is_none_or(|p| r.url.starts_with(p.as_str()))
        })
        .filter(|r| req.query.q.as_ref().is_none_or(|q| matches_search(r, q)))
        .map(|r| {
            let git_dir = site.repos.get(&r.url).map(|s| s.git_dir());
            (r, git_dir.and_then(|dir| idle_time(r, dir, &g.agefile)))
        })
        .collect();
    if repos.is_empty() {
        return Err(PageError::NotFound("No repositories found".into()));
    }
    let sort = req.query.s.as_deref();
    sort_repos(&mut repos, sort, g);
    let total = repos.len();
    let per_page = if g.max_repo_count == 0 {
        total
    } else {
        g.max_repo_count
    };
    let ofs = (req.query.ofs.max(0) as usize).min(total.saturating_sub(1));
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
    let rows = repos
        .iter()
        .skip(ofs)
        .take(per_page)
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
                args.push(("ofs", &page_ofs));
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

/// cgit's search: case-insensitive substring of url, name, description or owner.
fn matches_search(r: &RepoConfig, q: &str) -> bool {
    let q = q.to_lowercase();
    [&r.url, &r.name, &r.desc, &r.owner]
        .iter()
        .any(|field| field.to_lowercase().contains(&q))
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}...")
}

fn sort_repos(
    repos: &mut [(&Arc<RepoConfig>, Option<i64>)],
    sort: Option<&str>,
    g: &crate::config::Globals,
) {
    let text = |a: &str, b: &str| {
        if g.case_sensitive_sort {
            a.cmp(b)
        } else {
            a.to_lowercase().cmp(&b.to_lowercase())
        }
    };
    // Absent values sort last, as in cgit.
    let nulls_last = |a: &str, b: &str| match (a.is_empty(), b.is_empty()) {
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => text(a, b),
    };
    let idle = |a: Option<i64>, b: Option<i64>| match (a, b) {
        (Some(a), Some(b)) => b.cmp(&a),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    };
    match sort {
        Some("name") => repos.sort_by(|a, b| text(&a.0.name, &b.0.name)),
        Some("desc") => repos.sort_by(|a, b| nulls_last(&a.0.desc, &b.0.desc)),
        Some("owner") => repos.sort_by(|a, b| nulls_last(&a.0.owner, &b.0.owner)),
        Some("idle") => repos.sort_by(|a, b| idle(a.1, b.1)),
        // No section is the empty section, which sorts first (as in cgit).
        Some("section") => repos.sort_by(|a, b| {
            text(&a.0.opts.section, &b.0.opts.section).then(text(&a.0.name, &b.0.name))
        }),
        _ if g.section_sort => repos.sort_by(|a, b| {
            text(&a.0.opts.section, &b.0.opts.section).then_with(|| {
                if g.repository_sort_age {
                    idle(a.1, b.1)
                } else {
                    text(&a.0.name, &b.0.name)
                }
            })
        }),
        _ => {}
    }
}

/// When the repository last changed: the agefile's date, else the mtime of the default
/// branch's loose ref, else of packed-refs.
fn idle_time(r: &RepoConfig, dir: &Path, agefile: &str) -> Option<i64> {
    if let Some(t) = std::fs::read_to_string(dir.join(agefile))
        .ok()
        .and_then(|text| parse_agefile(text.lines().next()?))
    {
        return Some(t);
    }
    let branch = r
        .defbranch
        .clone()
        .or_else(|| head_branch(dir))
        .unwrap_or_else(|| "master".into());
    mtime(&dir.join("refs/heads").join(branch)).or_else(|| mtime(&dir.join("packed-refs")))
}

fn head_branch(git_dir: &Path) -> Option<String> {
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    head.trim()
        .strip_prefix("ref: refs/heads/")
        .map(str::to_string)
}

fn mtime(path: &Path) -> Option<i64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| m.mtime())
}

/// Parses `YYYY-MM-DD HH:MM:SS [+ZZZZ]` or a unix timestamp.
fn parse_agefile(line: &str) -> Option<i64> {
    let line = line.trim();
    if let Ok(secs) = line.parse::<i64>() {
        return Some(secs);
    }
    gix::date::parse(line, None).ok().map(|t| t.seconds)
}
