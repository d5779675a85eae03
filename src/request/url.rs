//! cgit URL parsing: path form with longest repo-url prefix match, `?url=` and legacy `?r=&p=`.

use super::{Page, PageRequest};
use crate::config::Config;
use gix::bstr::{BString, ByteSlice};

/// Why a URL cannot be served: always the client's fault.
#[derive(Debug, PartialEq)]
pub enum UrlError {
    /// A parameter can never be valid (400).
    BadRequest(String),
    /// The URL names a page cgitd does not have (404).
    UnknownPage,
}

impl UrlError {
    pub fn status(&self) -> u16 {
        match self {
            UrlError::BadRequest(_) => 400,
            UrlError::UnknownPage => 404,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            UrlError::BadRequest(m) => m,
            UrlError::UnknownPage => "Invalid request",
        }
    }
}

/// Parses `path` (as received, percent-encoded) and `query` into a [`PageRequest`].
/// `path` must already start with the virtual root, which is removed.
pub fn parse(config: &Config, path: &str, query: Option<&str>) -> Result<PageRequest, UrlError> {
    let vroot = config.globals.virtual_root.as_str();
    let rel = path
        .strip_prefix(vroot)
        .or_else(|| path.strip_prefix(vroot.trim_end_matches('/')))
        .unwrap_or(path.trim_start_matches('/'));
    let mut req = PageRequest {
        target: match query {
            Some(q) => format!("{path}?{q}"),
            None => path.to_string(),
        },
        ..PageRequest::default()
    };
    let mut url: Option<BString> = (!rel.is_empty()).then(|| percent_decode(rel.as_bytes(), false));
    let mut legacy_repo = None;
    let mut legacy_page = None;
    let mut legacy_path = None;
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = percent_decode(name.as_bytes(), true);
        let raw_value = percent_decode(value.as_bytes(), true);
        let value = || raw_value.to_str_lossy().into_owned();
        let q = &mut req.query;
        match name.as_slice() {
            b"url" => url = Some(raw_value.clone()),
            b"r" => legacy_repo = Some(value()),
            b"p" => legacy_page = Some(value()),
            b"path" => legacy_path = Some(raw_value.clone()),
            b"h" => q.h = non_empty(value()),
            b"id" => q.id = non_empty(value()),
            b"id2" => q.id2 = non_empty(value()),
            b"ofs" => q.ofs = number(&value(), "ofs")?,
            b"q" => q.q = non_empty(value()),
            b"qt" => q.qt = non_empty(value()),
            b"s" => q.s = non_empty(value()),
            b"showmsg" => q.showmsg = number(&value(), "showmsg")? != 0,
            b"period" => q.period = non_empty(value()),
            b"dt" => q.dt = Some(number(&value(), "dt")?.clamp(0, 2) as u8),
            b"ss" => q.dt = Some(u8::from(number(&value(), "ss")? != 0)),
            b"context" => q.context = Some(number(&value(), "context")?),
            b"ignorews" => q.ignorews = number(&value(), "ignorews")? != 0,
            b"follow" => q.follow = number(&value(), "follow")? != 0,
            b"all" => q.all = number(&value(), "all")? != 0,
            _ => {}
        }
    }
    let mut page_name = None;
    if let Some(repo) = legacy_repo {
        if config.repo(&repo).is_some() {
            req.repo = Some(repo);
        } else {
            req.prefix = Some(repo);
        }
    } else if let Some(url) = url {
        req.trailing_slash = url.ends_with(b"/");
        page_name = split_url(config, url.as_bstr(), &mut req);
    }
    let page_name = page_name.or(legacy_page.filter(|p| !p.is_empty()));
    if req.path.is_none() {
        req.path = legacy_path.map(trim_path).filter(|p| !p.is_empty());
    }
    let in_repo = req.repo.is_some();
    req.page_named = page_name.is_some();
    req.page = match page_name {
        Some(name) => Page::from_name(&name, in_repo).ok_or(UrlError::UnknownPage)?,
        None => Page::default_for(in_repo),
    };
    Ok(req)
}

/// Splits `repo/page/path` by the longest configured repository url that prefixes it; returns
/// the page name, if the url has one.
fn split_url(config: &Config, url: &gix::bstr::BStr, req: &mut PageRequest) -> Option<String> {
    let url = url.strip_prefix(b"/").unwrap_or(url);
    let mut best: Option<usize> = None;
    for repo in config.repos.iter().filter(|r| !r.ignore) {
        let u = repo.url.as_bytes();
        let matches = url.starts_with(u) && (url.len() == u.len() || url[u.len()] == b'/');
        if matches && best.is_none_or(|b| u.len() > b) {
            best = Some(u.len());
        }
    }
    let Some(len) = best else {
        if url.trim_end_with(|c| c == '/') == b"about" {
            return Some("about".into());
        }
        if !url.is_empty() {
            req.prefix = Some(url.to_str_lossy().into_owned());
        }
        return None;
    };
    req.repo = Some(url[..len].to_str_lossy().into_owned());
    let rest = url[len..].trim_start_with(|c| c == '/');
    let (page, path) = match rest.find_byte(b'/') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &b""[..]),
    };
    let path = trim_path(path.into());
    if !path.is_empty() {
        req.path = Some(path);
    }
    (!page.is_empty()).then(|| page.to_str_lossy().into_owned())
}

fn trim_path(mut path: BString) -> BString {
    while path.last() == Some(&b'/') {
        path.pop();
    }
    path
}

fn non_empty(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

/// A numeric parameter: empty is 0, anything not a number is a bad request.
fn number(value: &str, name: &str) -> Result<i64, UrlError> {
    if value.is_empty() {
        return Ok(0);
    }
    value
        .trim()
        .parse::<i64>()
        .map_err(|_| UrlError::BadRequest(format!("Invalid value for '{name}': not a number")))
}

/// Decodes `%xx` escapes (malformed ones are kept as they are) and, in query strings, `+`.
pub fn percent_decode(input: &[u8], plus_is_space: bool) -> BString {
    let mut out = Vec::with_capacity(input.len());
    let mut i = 0;
    while i < input.len() {
        let b = input[i];
        if b == b'%'
            && i + 2 < input.len()
            && let (Some(h), Some(l)) = (hex(input[i + 1]), hex(input[i + 2]))
        {
            out.push(h << 4 | l);
            i += 3;
            continue;
        }
        out.push(if plus_is_space && b == b'+' { b' ' } else { b });
        i += 1;
    }
    out.into()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        Config::from_text(
            "repo.url=foo\nrepo.path=/a\nrepo.url=foo/bar\nrepo.path=/b\nrepo.url=with space\n\
             repo.path=/c\nrepo.url=a+b\nrepo.path=/d\nrepo.url=gone\nrepo.path=/e\nrepo.ignore=1\n",
            "t",
        )
    }

    fn get(path: &str, query: Option<&str>) -> PageRequest {
        parse(&config(), path, query).unwrap()
    }

    #[test]
    fn longest_repo_prefix_wins() {
        let r = get("/foo/bar/log/src/main.rs", None);
        assert_eq!(r.repo.as_deref(), Some("foo/bar"));
        assert_eq!(r.page, Page::Log);
        assert_eq!(
            r.path.as_ref().map(|p| p.to_string()),
            Some("src/main.rs".into())
        );
        let r = get("/foo/tree/", None);
        assert_eq!(r.repo.as_deref(), Some("foo"));
        assert_eq!(r.page, Page::Tree);
        assert_eq!(r.path, None);
    }

    #[test]
    fn spaces_and_plus_in_repo_urls() {
        assert_eq!(
            get("/with%20space/", None).repo.as_deref(),
            Some("with space")
        );
        assert_eq!(get("/a+b/refs/", None).repo.as_deref(), Some("a+b"));
    }

    #[test]
    fn query_forms() {
        let r = get("/", Some("url=foo/bar/commit/x&id=abc&h=1%2b2&q=commit+1"));
        assert_eq!(r.repo.as_deref(), Some("foo/bar"));
        assert_eq!(r.page, Page::Commit);
        assert_eq!(r.query.h.as_deref(), Some("1+2"));
        assert_eq!(r.query.q.as_deref(), Some("commit 1"));
        let r = get("/", Some("r=foo&p=log&path=dir/"));
        assert_eq!(r.repo.as_deref(), Some("foo"));
        assert_eq!(r.page, Page::Log);
        assert_eq!(r.path.as_ref().map(|p| p.to_string()), Some("dir".into()));
    }

    #[test]
    fn ignored_repos_and_prefixes() {
        let r = get("/gone/log/", None);
        assert_eq!(r.repo, None);
        assert_eq!(r.prefix.as_deref(), Some("gone/log/"));
        let r = get("/foo%2flog/", None);
        assert_eq!((r.repo.as_deref(), r.page), (Some("foo"), Page::Log));
    }

    #[test]
    fn pages_resolve_through_the_page_table() {
        let r = get("/foo/", None);
        assert_eq!((r.page, r.page_named), (Page::Summary, false));
        let r = get("/foo/summary", None);
        assert_eq!((r.page, r.page_named), (Page::Summary, true));
        assert_eq!(get("/", None).page, Page::Index);
        assert_eq!(get("/about/", None).page, Page::SiteAbout);
        assert_eq!(get("/foo/about/", None).page, Page::About);
        assert_eq!(get("/", Some("p=about")).page, Page::SiteAbout);
        for (path, query) in [
            ("/foo/ls_cache/", None),
            ("/foo/repolist/", None),
            ("/foo/nosuch/", None),
            ("/", Some("p=log")),
        ] {
            assert_eq!(parse(&config(), path, query), Err(UrlError::UnknownPage));
        }
    }

    #[test]
    fn bad_numbers_are_bad_requests() {
        assert!(parse(&config(), "/foo/log/", Some("ofs=abc")).is_err());
        assert_eq!(get("/foo/log/", Some("ofs=")).query.ofs, 0);
    }

    #[test]
    fn percent_decoding_keeps_malformed_escapes() {
        assert_eq!(percent_decode(b"a%2", false), "a%2");
        assert_eq!(percent_decode(b"%zz%41", false), "%zzA");
        assert_eq!(percent_decode(b"%ff", false), BString::from(vec![0xff]));
    }
}
